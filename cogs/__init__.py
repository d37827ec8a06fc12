"""Discord cogs: Discord in, Discord out. Every module here is loaded as an extension."""
