"""Worlds, the world book and settings in Discord: /world, /lore and /config (F13, F20, F21)."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.engine import Engine
from bot.engine.settings import setting_names
from bot.errors import UserError
from cogs.access import TableCog, channel_key, say_pages
from cogs.game import world_choices
from cogs.rendering import fit_embed


def _keys(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [key.strip() for key in text.split(",") if key.strip()]


class WorldsCog(TableCog):
    world = app_commands.Group(name="world", description="The worlds this bot can run")
    lore = app_commands.Group(name="lore", description="This game's world book")

    def __init__(self, bot: commands.Bot, engine: Engine):
        self.bot = bot
        self.engine = engine

    @world.command(name="list", description="The worlds you can start")
    async def world_list(self, interaction: discord.Interaction) -> None:
        worlds = self.engine.worlds.worlds
        lines = [f"**{w.title}** (`{name}`): {w.pitch}" for name, w in sorted(worlds.items())]
        await say_pages(interaction, "\n".join(lines) or "No worlds.", ephemeral=True)

    @world.command(name="info", description="About one world")
    async def world_info(self, interaction: discord.Interaction, world: str) -> None:
        found = self.engine.worlds.get(world)
        embed = discord.Embed(title=found.title, description=found.pitch)
        embed.add_field(name="Chapters", value="\n".join(c.title for c in found.chapters)[:1024], inline=False)
        embed.add_field(name="Characters", value=(", ".join(n.name for n in found.npcs) or "none")[:1024])
        embed.add_field(name="Lore entries", value=str(len(found.lore)))
        await interaction.response.send_message(embed=fit_embed(embed), ephemeral=True)

    @world_info.autocomplete("world")
    async def _worlds(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return world_choices(self.engine, current)

    @world.command(name="reload", description="Read the world files again")
    async def world_reload(self, interaction: discord.Interaction) -> None:
        errors = self.engine.worlds.reload()
        text = f"Loaded {len(self.engine.worlds.worlds)} worlds."
        if errors:
            text += "\nLeft out:\n" + "\n".join(f"`{line}`" for e in errors for line in str(e).splitlines())
        await say_pages(interaction, text, ephemeral=True)

    @lore.command(name="list", description="The lore entries of this game")
    async def lore_list(self, interaction: discord.Interaction) -> None:
        game = await self.engine.current_game(channel_key(interaction.channel))
        listing = await self.engine.lore(game.id)
        lines = [
            f"`{i.entry.id}` [{'always on' if i.entry.always_on else ', '.join(i.entry.keys)}]: {i.entry.content}"
            for i in listing
        ]
        await say_pages(interaction, "\n".join(lines) or "No lore.", ephemeral=True)

    @lore.command(name="add", description="Add a lore entry to this game")
    @app_commands.describe(keys="Comma-separated keys", content="What the GM should know", priority="0 to 100")
    async def lore_add(
        self,
        interaction: discord.Interaction,
        keys: str,
        content: str,
        secondary_keys: str | None = None,
        priority: app_commands.Range[int, 0, 100] = 50,
        always_on: bool = False,
    ) -> None:
        game = await self.engine.current_game(channel_key(interaction.channel))
        entry = await self.engine.ledger.lore_add(
            game.id, keys=_keys(keys), content=content, secondary_keys=_keys(secondary_keys) or [],
            priority=priority, always_on=always_on,
        )  # fmt: skip
        await interaction.response.send_message(f"Lore `{entry.id}` added.", ephemeral=True)

    @lore.command(name="edit", description="Change a lore entry of this game")
    async def lore_edit(
        self,
        interaction: discord.Interaction,
        entry: str,
        content: str | None = None,
        keys: str | None = None,
        priority: app_commands.Range[int, 0, 100] | None = None,
    ) -> None:
        game = await self.engine.current_game(channel_key(interaction.channel))
        if content is None and keys is None and priority is None:
            raise UserError("Give the new content, keys or priority.")
        changed = await self.engine.ledger.lore_edit(
            game.id, entry, content=content, keys=_keys(keys), priority=priority
        )
        await interaction.response.send_message(f"Lore `{changed.id}` changed.", ephemeral=True)

    @lore.command(name="remove", description="Remove a lore entry from this game")
    async def lore_remove(self, interaction: discord.Interaction, entry: str) -> None:
        game = await self.engine.current_game(channel_key(interaction.channel))
        removed = await self.engine.ledger.lore_remove(game.id, entry)
        await interaction.response.send_message(f"Lore `{removed.id}` removed from this game.", ephemeral=True)

    @lore_edit.autocomplete("entry")
    @lore_remove.autocomplete("entry")
    async def _entries(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        game = await self.engine.store.active_game(channel_key(interaction.channel))
        if game is None:
            return []
        listing = await self.engine.lore(game.id)
        return [
            app_commands.Choice(name=f"{i.entry.id}: {i.entry.content}"[:100], value=i.entry.id)
            for i in listing
            if current.lower() in i.entry.id
        ][:25]


class ConfigCog(TableCog):
    """Per-game settings (F20): /config show|set|reset, for admins."""

    config = app_commands.Group(name="config", description="This game's settings")

    def __init__(self, bot: commands.Bot, engine: Engine):
        self.bot = bot
        self.engine = engine

    @config.command(name="show", description="This game's settings")
    async def show(self, interaction: discord.Interaction) -> None:
        game = await self.engine.current_game(channel_key(interaction.channel))
        values = await self.engine.game_settings(game.id)
        changed = await self.engine.settings.overrides(game.id)
        lines = [
            f"`{name}` = {value}" + (" (set for this game)" if name in changed else "")
            for name, value in values.items()
        ]
        buckets = await self.engine.buckets(game.id)
        lines.append("buckets: " + ", ".join(f"{k} {'on' if v else 'off'}" for k, v in buckets.model_dump().items()))
        await say_pages(interaction, "\n".join(lines), ephemeral=True)

    @config.command(name="set", description="Change one of this game's settings")
    @app_commands.describe(setting="The setting's name", value="Its new value")
    async def set(self, interaction: discord.Interaction, setting: str, value: str) -> None:
        game = await self.engine.current_game(channel_key(interaction.channel))
        bucket = setting.removeprefix("buckets.")
        if setting.startswith("buckets.") or bucket in ("pins", "lore", "glossary", "facts", "recall"):
            if value.lower() not in ("on", "off", "true", "false"):
                raise UserError(f"{setting}: on or off.")
            await self.engine.set_bucket(game.id, bucket, value.lower() in ("on", "true"))
        else:
            await self.engine.set_setting(game.id, setting, value)
        await interaction.response.send_message(f"`{setting}` is now {value} in this game.", ephemeral=True)

    @set.autocomplete("setting")
    async def _names(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        names = [*setting_names(), *(f"buckets.{b}" for b in ("pins", "lore", "glossary", "facts", "recall"))]
        return [app_commands.Choice(name=n, value=n) for n in names if current.lower() in n][:25]

    @config.command(name="reset", description="Put one of this game's settings back to the server's default")
    async def reset(self, interaction: discord.Interaction, setting: str) -> None:
        game = await self.engine.current_game(channel_key(interaction.channel))
        await self.engine.reset_setting(game.id, setting)
        await interaction.response.send_message(f"`{setting}` is back to the default.", ephemeral=True)


async def setup(bot: commands.Bot) -> None:
    await bot.add_cog(WorldsCog(bot, bot.engine))
    await bot.add_cog(ConfigCog(bot, bot.engine))
