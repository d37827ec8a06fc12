"""Discord cogs: Discord in, Discord out. ``EXTENSIONS`` lists the modules loaded as extensions."""

EXTENSIONS = ("cogs.game", "cogs.memory", "cogs.worlds")
