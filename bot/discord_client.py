"""The Discord client: the only code under bot/ that imports discord.

It is handed the engine, loads every cog in ``cogs/`` and syncs the slash
command tree (to one guild when ``GM_DEV_GUILD_ID`` is set, which is
instant, instead of globally, which can take an hour to show).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import signal

import aiohttp
import discord
from discord.ext import commands

import cogs
from bot.access import COMMANDS, INVITE_PERMISSIONS, INVITE_SCOPES
from bot.engine import MODEL_UNAVAILABLE, Engine, ModelUnavailable
from bot.errors import UserError
from bot.settings import ProcessSettings
from cogs.rendering import without_host_paths

log = logging.getLogger(__name__)


def cog_modules() -> list[str]:
    return list(cogs.EXTENSIONS)


SYNC_SCOPE = "discord:synced-commands"


def command_digest(tree: discord.app_commands.CommandTree, guild: discord.abc.Snowflake | None) -> str:
    """A fingerprint of the commands as Discord would receive them: names, options, descriptions."""
    payload = [command.to_dict(tree) for command in tree.get_commands(guild=guild)]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def mark_guild_only(tree: discord.app_commands.CommandTree) -> None:
    """Commands (or groups) with nothing usable in a DM are registered guild-only, so a DM does not list them
    only to refuse them (Discord sets contexts per top-level command, not per subcommand)."""
    for command in tree.get_commands():
        names = [command.qualified_name]
        if isinstance(command, discord.app_commands.Group):
            names = [c.qualified_name for c in command.walk_commands()]
        if not any(rule.in_dms for name in names if (rule := COMMANDS.get(name)) is not None):
            command.guild_only = True


class GameMasterBot(commands.AutoShardedBot):
    def __init__(self, engine: Engine, settings: ProcessSettings, *, force_sync: bool = False):
        intents = discord.Intents.default()
        intents.message_content = settings.message_content
        intents.members = settings.members_intent  # a member who leaves is heard at once, not found when next needed
        # No message of the bot's ever pings: not a GM reply naming @everyone, not a character called <@&role>.
        # Sharded in one process (Discord requires shards past 2,500 servers): as many as Discord recommends,
        # unless GM_SHARD_COUNT says. The members intent is for the leaving events: no server's member list is
        # fetched at start (a member not seen since is asked of Discord when needed).
        super().__init__(
            command_prefix=commands.when_mentioned, intents=intents, allowed_mentions=discord.AllowedMentions.none(),
            shard_count=settings.shard_count, chunk_guilds_at_startup=False,
        )  # fmt: skip
        self.engine = engine
        self.settings = settings
        self.force_sync = force_sync
        self._invite_said = False  # the invite link is printed at the first connection, not at every reconnect

    async def setup_hook(self) -> None:
        self.tree.error(self.on_app_command_error)  # the tree's documented way to set its on_error
        for module in cog_modules():
            await self.load_extension(module)
            log.info("Loaded %s", module)
        mark_guild_only(self.tree)
        await self.engine.start()
        await self.sync_commands(force=self.force_sync)

    async def sync_commands(self, *, force: bool = False) -> bool:
        """Send the slash commands to Discord when they changed since the last sync (or when forced).

        Discord rate-limits syncs and a global one can take an hour to show, so a start with the same
        commands as before does not sync; ``python -m bot sync`` forces one. What was synced last is kept
        in the database, per target (one guild with ``GM_DEV_GUILD_ID``, else global).
        """
        guild = discord.Object(id=self.settings.dev_guild_id) if self.settings.dev_guild_id else None
        if guild is not None:
            self.tree.copy_global_to(guild=guild)
        target = f"guild:{guild.id}" if guild else "global"
        digest = command_digest(self.tree, guild)
        synced_before = (await self.engine.remembered(SYNC_SCOPE)).get(target)
        if synced_before == digest and not force:
            log.info("Slash commands unchanged since the last sync (%s); not synced", target)
            return False
        synced = await self.tree.sync(guild=guild)
        await self.engine.remember(SYNC_SCOPE, target, digest)
        log.info("Synced %d slash commands (%s)", len(synced), target)
        return True

    async def on_app_command_error(
        self, interaction: discord.Interaction, error: discord.app_commands.AppCommandError | Exception
    ) -> None:
        """One handler for every command and button: a user's mistake gets its sentence, anything else one plain one."""
        cause = getattr(error, "original", error)
        if isinstance(cause, ModelUnavailable):  # its message names where the model runs: for the log only
            log.warning("Command %s: the model is unavailable: %s", getattr(interaction.command, "qualified_name", "?"),
                        cause)  # fmt: skip
            text = MODEL_UNAVAILABLE
        elif isinstance(cause, UserError):
            text = without_host_paths(str(cause))
        elif isinstance(cause, discord.app_commands.CheckFailure):
            text = str(cause) or "You cannot use that here."
        else:
            log.error("Command %s failed", getattr(interaction.command, "qualified_name", "?"), exc_info=cause)
            text = "Something went wrong on my side; it is logged. Your game is safe."
        try:
            if interaction.response.is_done():
                await interaction.followup.send(text, ephemeral=True)
            else:
                await interaction.response.send_message(text, ephemeral=True)
        except discord.HTTPException:
            log.warning("Could not tell the user about an error: %s", text)

    async def on_ready(self) -> None:
        log.info("Connected as %s to %d servers", self.user, len(self.guilds))
        if self.application_id is not None and not self._invite_said:
            self._invite_said = True
            link = invite_link(self.application_id)
            log.info("Invite the bot to a server: %s", link)
            print(f"Logged in as {self.user}. Invite it to a server (you need Manage Server there): {link}", flush=True)


def invite_link(application_id: int) -> str:
    """The link that adds the bot to a server with the permissions it checks for (bot/access.py), and its slash
    commands."""
    permissions = discord.Permissions(**dict.fromkeys(INVITE_PERMISSIONS, True))
    return discord.utils.oauth_url(application_id, permissions=permissions, scopes=INVITE_SCOPES)


async def serve(engine: Engine, settings: ProcessSettings) -> None:
    """Serve Discord until the connection fails for good, or SIGTERM or SIGINT (``docker stop``, Ctrl-C).

    On a signal: no new turn is taken, a reply being written gets ``GM_STOP_SECONDS`` to finish, then the
    connection closes; the caller closes the engine (background work stops at a safe point) and the database.
    """
    bot = GameMasterBot(engine, settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with bot:
            running = asyncio.create_task(bot.start(settings.discord_token or ""))
            stopped = asyncio.create_task(stop.wait())
            await asyncio.wait({running, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set():
                log.info("Stopping: running replies get %s s to finish", settings.stop_seconds)
                await engine.drain(settings.stop_seconds)
                await bot.close()
            else:
                stopped.cancel()
            await running
    except discord.LoginFailure:
        raise UserError("Discord refused DISCORD_TOKEN; copy the token again from the developer portal.") from None
    except discord.PrivilegedIntentsRequired:
        raise UserError(privileged_intents_refused(settings)) from None
    except (aiohttp.ClientConnectorError, OSError) as exc:
        raise UserError(f"Cannot reach Discord: {exc}") from None
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
    log.info("Stopped cleanly")


def privileged_intents_refused(settings: ProcessSettings) -> str:
    """What to do when Discord refuses the privileged intents the settings ask for."""
    asked = [
        (name, setting)
        for name, setting, on in [
            ("message-content", "GM_MESSAGE_CONTENT", settings.message_content),
            ("server-members", "GM_MEMBERS_INTENT", settings.members_intent),
        ]
        if on
    ]
    intents = " and ".join(f"the {name} intent ({setting}=true)" for name, setting in asked) or "a privileged intent"
    off = " or ".join(f"{setting}=false" for _, setting in asked) or "the GM_ intent settings to false"
    return (
        f"Discord refused {intents}: it is not enabled for the bot in the developer portal (Bot, Privileged "
        f"Gateway Intents). Enable it there, or set {off}."
    )


async def sync(engine: Engine, settings: ProcessSettings) -> None:
    """Log in, send the slash commands to Discord whatever was synced before, and log out."""
    bot = GameMasterBot(engine, settings, force_sync=True)
    try:
        async with bot:
            await bot.login(settings.discord_token or "")  # login runs setup_hook, which syncs
    except discord.LoginFailure:
        raise UserError("Discord refused DISCORD_TOKEN; copy the token again from the developer portal.") from None
    except (aiohttp.ClientConnectorError, OSError) as exc:
        raise UserError(f"Cannot reach Discord: {exc}") from None
