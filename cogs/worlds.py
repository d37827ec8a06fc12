"""Worlds, the world book and settings in Discord: /world, /lore and /config (F13, F20, F21)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.engine import Engine, ServerAdmin, setting_names
from bot.errors import UserError
from bot.userfiles import MAX_WORLD_BYTES, over_limit
from bot.worlds import WorldFileError
from cogs.access import TableCog, is_admin, manages_server, say, say_pages, server_of
from cogs.game import world_choices
from cogs.rendering import fit_embed, plain, without_host_paths

if TYPE_CHECKING:
    from bot.discord_client import GameMasterBot

MANAGE_SERVER = "That changes the whole server: it needs the Manage Server permission."


def managed_server(engine: Engine, interaction: discord.Interaction) -> ServerAdmin:
    """The server's admin side, for a member who may change the whole server (Manage Server)."""
    server = server_of(interaction)
    if server is None or not manages_server(interaction):  # in a DM there is no server, nor its permission
        raise UserError(MANAGE_SERVER)
    return engine.server(server)


def _secretly(secret: bool) -> str:
    return " (secret: /lore list shows it to admins only)" if secret else ""


def _keys(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [key.strip() for key in text.split(",") if key.strip()]


class WorldsCog(TableCog):
    world = app_commands.Group(name="world", description="The worlds this bot can run")
    lore = app_commands.Group(name="lore", description="This game's world book")

    @world.command(name="list", description="The worlds you can start")
    async def world_list(self, interaction: discord.Interaction) -> None:
        server = server_of(interaction)
        worlds = self.engine.worlds_for(server)
        own = set(self.engine.server(server).own_worlds()) if server else set()
        lines = [
            f"**{w.title}** (`{name}`){' · this server' if name in own else ''}: {w.pitch}"
            for name, w in sorted(worlds.items())
        ]
        if server and (hidden := self.engine.server(server).hidden_worlds()):
            lines.append(f"Hidden here: {', '.join(hidden)} (/world restore)")
        await say_pages(interaction, "\n".join(lines) or "No worlds.", ephemeral=True)

    @world.command(name="info", description="About one world")
    async def world_info(self, interaction: discord.Interaction, world: str) -> None:
        found = self.engine.world_for(server_of(interaction), world)
        embed = discord.Embed(title=found.title, description=found.pitch)
        embed.add_field(name="Chapters", value="\n".join(c.title for c in found.chapters), inline=False)
        embed.add_field(name="Characters", value=", ".join(n.name for n in found.npcs) or "none")
        embed.add_field(name="Lore entries", value=str(len(found.lore)))
        await interaction.response.send_message(embed=fit_embed(embed), ephemeral=True)

    @world_info.autocomplete("world")
    async def _worlds(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return world_choices(self.engine, current, server_of(interaction))

    @world.command(name="add", description="Add a world to this server from a YAML file (see worlds/ for examples)")
    @app_commands.describe(file="The world's YAML file")
    async def world_add(self, interaction: discord.Interaction, file: discord.Attachment) -> None:
        admin = managed_server(self.engine, interaction)
        if file.size > MAX_WORLD_BYTES:  # refused before downloading
            raise UserError(f"{file.filename}: (file): {over_limit(file.size, MAX_WORLD_BYTES)}")
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            world = await admin.add_world(file.filename, await file.read())
        except WorldFileError as exc:
            problems = "\n".join(f"• {problem}" for problem in exc.problems)
            await say_pages(interaction, f"`{exc.path}` was not added:\n{problems}", ephemeral=True)
            return
        text = f"**{plain(world.title)}** (`{world.id}`) is added for this server only: /game start world:{world.id}"
        if self.engine.ships_world(world.id):  # the upload takes the shipped world's name here
            text += (
                f"\nIt has the id of a world the bot ships (`{world.id}`), which this server no longer sees; "
                f"/world remove world:{world.id} deletes the upload and brings the shipped one back."
            )
        await say(interaction, text, ephemeral=True)

    @world.command(name="remove", description="Remove one of this server's worlds, or hide a shipped one here")
    @app_commands.describe(world="The world")
    async def world_remove(self, interaction: discord.Interaction, world: str) -> None:
        done = await managed_server(self.engine, interaction).remove_world(world)
        if done == "hidden":
            text = f"`{world}` is hidden in this server; games already playing it go on. /world restore shows it again."
        else:
            text = f"`{world}` is removed from this server."
        await interaction.response.send_message(text, ephemeral=True)

    @world_remove.autocomplete("world")
    async def _removable(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return world_choices(self.engine, current, server_of(interaction))

    @world.command(name="restore", description="Show a shipped world this server had hidden")
    @app_commands.describe(world="The hidden world")
    async def world_restore(self, interaction: discord.Interaction, world: str) -> None:
        await managed_server(self.engine, interaction).restore_world(world)
        await interaction.response.send_message(f"`{world}` can be played here again.", ephemeral=True)

    @world_restore.autocomplete("world")
    async def _hidden(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        server = server_of(interaction)
        names = self.engine.server(server).hidden_worlds() if server else []
        return [app_commands.Choice(name=n, value=n) for n in names if current.lower() in n][:25]

    @world.command(name="reload", description="Read the world files again")
    async def world_reload(self, interaction: discord.Interaction) -> None:
        # The shipped worlds are every server's: the access table keeps this for the bot's owner.
        loaded, errors = await self.engine.reload_worlds()
        text = f"Loaded {loaded} worlds."
        if errors:
            lines = (line for e in errors for line in str(e).splitlines())
            text += "\nLeft out:\n" + "\n".join(f"`{without_host_paths(line)}`" for line in lines)
        await say_pages(interaction, text, ephemeral=True)

    @lore.command(name="list", description="The lore entries of this game")
    async def lore_list(self, interaction: discord.Interaction) -> None:
        game = await self.game_here(interaction)
        listing = await self.engine.lore(game.id)
        admin = await is_admin(interaction)
        shown = [i for i in listing if admin or not i.entry.secret]  # a clue-bearing entry is for admins
        lines = [
            f"`{i.entry.id}` [{'always on' if i.entry.always_on else ', '.join(i.entry.keys)}]"
            f"{' (secret)' if i.entry.secret else ''}: {i.entry.content}"
            for i in shown
        ]
        if len(shown) < len(listing):
            lines.append(f"({len(listing) - len(shown)} more, marked secret, for the game's admins.)")
        await say_pages(interaction, "\n".join(lines) or "No lore.", ephemeral=True)

    @lore.command(name="add", description="Add a lore entry to this game")
    @app_commands.describe(
        keys="Comma-separated keys", content="What the GM should know", priority="0 to 100",
        secret="It bears a clue: /lore list shows it to admins only (the GM still reads it)",
    )  # fmt: skip
    async def lore_add(
        self,
        interaction: discord.Interaction,
        keys: str,
        content: str,
        secondary_keys: str | None = None,
        priority: app_commands.Range[int, 0, 100] = 50,
        always_on: bool = False,
        secret: bool = False,
    ) -> None:
        game = await self.game_here(interaction)
        entry = await self.engine.add_lore(
            game.id, keys=_keys(keys), content=content, secondary_keys=_keys(secondary_keys) or [],
            priority=priority, always_on=always_on, secret=secret,
        )  # fmt: skip
        await interaction.response.send_message(f"Lore `{entry.id}` added{_secretly(entry.secret)}.", ephemeral=True)

    @lore.command(name="edit", description="Change a lore entry of this game")
    @app_commands.describe(secret="True: /lore list shows it to admins only; false: to everyone")
    async def lore_edit(
        self,
        interaction: discord.Interaction,
        entry: str,
        content: str | None = None,
        keys: str | None = None,
        priority: app_commands.Range[int, 0, 100] | None = None,
        secret: bool | None = None,
    ) -> None:
        game = await self.game_here(interaction)
        if content is None and keys is None and priority is None and secret is None:
            raise UserError("Give the new content, keys, priority or secret.")
        changed = await self.engine.edit_lore(
            game.id, entry, content=content, keys=_keys(keys), priority=priority, secret=secret
        )
        await interaction.response.send_message(
            f"Lore `{changed.id}` changed{_secretly(changed.secret)}.", ephemeral=True
        )

    @lore.command(name="remove", description="Remove a lore entry from this game")
    async def lore_remove(self, interaction: discord.Interaction, entry: str) -> None:
        game = await self.game_here(interaction)
        removed = await self.engine.remove_lore(game.id, entry)
        await interaction.response.send_message(f"Lore `{removed.id}` removed from this game.", ephemeral=True)

    @lore_edit.autocomplete("entry")
    @lore_remove.autocomplete("entry")
    async def _entries(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        game = await self.game_in(interaction.channel)
        if game is None:
            return []
        listing = await self.engine.lore(game.id)
        return [
            app_commands.Choice(name=f"{i.entry.id}: {i.entry.content}"[:100], value=i.entry.id)
            for i in listing
            if current.lower() in i.entry.id
        ][:25]


BUCKETS = ("pins", "lore", "glossary", "facts", "recall")
SCOPES = [app_commands.Choice(name="this game", value="game"), app_commands.Choice(name="this server", value="server")]


class ConfigCog(TableCog):
    """Settings (F20): a game's own, and a server's defaults for its games (Manage Server)."""

    config = app_commands.Group(name="config", description="This game's settings, or this server's defaults")

    @config.command(name="show", description="The settings and where each value comes from")
    @app_commands.describe(scope="This game's settings (default), or this server's defaults")
    @app_commands.choices(scope=SCOPES)
    async def show(self, interaction: discord.Interaction, scope: str = "game") -> None:
        if scope == "server":
            await self._show_server(interaction)
            return
        game = await self.game_here(interaction)
        values = await self.engine.game_settings(game.id)
        sources = await self.engine.setting_sources(game.id)
        capped = await self.engine.capped_settings(game.id)
        origin = {"game": "set for this game", "server": "this server's default"}
        lines = []
        for name, value in values.items():
            marks = [origin[sources[name]]] if name in sources else []
            if name in capped:
                marks.append(f"set to {capped[name]}, capped by the bot's host")
            lines.append(f"`{name}` = {value}" + (f" ({'; '.join(marks)})" if marks else ""))
        buckets = await self.engine.buckets(game.id)
        lines.append("buckets: " + ", ".join(f"{k} {'on' if v else 'off'}" for k, v in buckets.model_dump().items()))
        lines.append("Values without a mark are the bot's defaults.")
        await say_pages(interaction, "\n".join(lines), ephemeral=True)

    async def _show_server(self, interaction: discord.Interaction) -> None:
        admin = managed_server(self.engine, interaction)
        defaults = await admin.defaults()
        capped = await admin.capped_defaults()
        buckets = await admin.bucket_defaults()
        role = await admin.gm_role()
        lines = [
            f"`{name}` = {value}" + (f" (capped at {capped[name]} by the bot's host)" if name in capped else "")
            for name, value in sorted(defaults.items())
        ]
        lines += [f"`buckets.{name}` = {'on' if on else 'off'}" for name, on in sorted(buckets.items())]
        lines.append(f"GM role: <@&{role}>" if role else "GM role: none (Manage Server only)")
        if not defaults and not buckets:
            lines.insert(0, "No server defaults: new games take the bot's. /config set scope:this server ...")
        await say_pages(interaction, "\n".join(lines), ephemeral=True)

    @config.command(name="set", description="Change a setting of this game, or this server's default")
    @app_commands.describe(setting="The setting's name", value="Its new value", scope="This game (default) or server")
    @app_commands.choices(scope=SCOPES)
    async def set(self, interaction: discord.Interaction, setting: str, value: str, scope: str = "game") -> None:
        bucket = setting.removeprefix("buckets.")
        is_bucket = setting.startswith("buckets.") or bucket in BUCKETS
        if is_bucket and value.lower() not in ("on", "off", "true", "false"):
            raise UserError(f"{setting}: on or off.")
        on = value.lower() in ("on", "true")
        if scope == "server":
            admin = managed_server(self.engine, interaction)
            if is_bucket:
                await admin.set_bucket_default(bucket, on)
            else:
                await admin.set_default(setting, value)
            where = "for every game in this server that does not set its own"
        else:
            game = await self.game_here(interaction)
            if is_bucket:
                await self.engine.set_bucket(game.id, bucket, on)
            else:
                await self.engine.set_setting(game.id, setting, value)
            where = "in this game"
        await interaction.response.send_message(f"`{setting}` is now {value} {where}.", ephemeral=True)

    @set.autocomplete("setting")
    async def _names(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        names = [*setting_names(), *(f"buckets.{b}" for b in BUCKETS)]
        return [app_commands.Choice(name=n, value=n) for n in names if current.lower() in n][:25]

    @config.command(
        name="reset", description="Put a setting back to its default (the server's, or the bot's for the server)"
    )
    @app_commands.describe(setting="The setting's name", scope="This game (default) or server")
    @app_commands.choices(scope=SCOPES)
    async def reset(self, interaction: discord.Interaction, setting: str, scope: str = "game") -> None:
        if setting in BUCKETS:
            setting = f"buckets.{setting}"
        if scope == "server":
            await managed_server(self.engine, interaction).reset_default(setting)
            await interaction.response.send_message(f"`{setting}` is back to the bot's default here.", ephemeral=True)
            return
        game = await self.game_here(interaction)
        await self.engine.reset_setting(game.id, setting)
        await interaction.response.send_message(f"`{setting}` is back to the default.", ephemeral=True)

    @config.command(name="gm-role", description="The role whose members act as admins of games here")
    @app_commands.describe(role="The GM role; leave it out to have none (Manage Server only)")
    async def gm_role(self, interaction: discord.Interaction, role: discord.Role | None = None) -> None:
        await managed_server(self.engine, interaction).set_gm_role(role.id if role else None)
        text = f"Members of {role.mention} are admins of games here." if role else "No GM role: Manage Server only."
        await interaction.response.send_message(text, ephemeral=True)


async def setup(bot: GameMasterBot) -> None:
    await bot.add_cog(WorldsCog(bot, bot.engine))
    await bot.add_cog(ConfigCog(bot, bot.engine))
