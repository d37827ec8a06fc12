"""Who is asking, where, and whether they may: :mod:`bot.access`'s table applied to every slash command.

Every cog derives from :class:`TableCog`, whose ``interaction_check`` runs
before each of its commands (discord.py calls it for every app command of
the cog, grouped ones included, and not for autocomplete). A command with
no row in the table is refused, so a new command cannot slip in unguarded.
"""

from __future__ import annotations

import logging

import discord
from discord import app_commands
from discord.ext import commands

from bot.access import (
    COMMANDS,
    IN_A_SERVER,
    REFUSALS,
    Access,
    Standing,
    allows,
    cannot_post,
    missing_permissions,
    needs_game,
)
from bot.discord_client import GameMasterBot
from bot.engine import NO_GAME, Engine
from bot.errors import UserError
from bot.store import Game
from cogs.rendering import embed_pages, pages

log = logging.getLogger(__name__)


# The engine knows channels and players by keys that say which front end they belong to: here "discord:" and an id.
KEY_PREFIX = "discord:"


def channel_key(channel: discord.abc.Snowflake | discord.abc.Messageable | None) -> str:
    return f"{KEY_PREFIX}{getattr(channel, 'id', 0)}"


def user_key(user: discord.abc.Snowflake) -> str:
    return f"{KEY_PREFIX}{user.id}"


def discord_id(key: str) -> int | None:
    """The Discord id in a channel's or a user's key; ``None`` for another front end's (the terminal's)."""
    return int(key.removeprefix(KEY_PREFIX)) if key.startswith(KEY_PREFIX) else None


def bot_of(interaction: discord.Interaction) -> GameMasterBot:
    """The bot an interaction came to: a :class:`GameMasterBot`, the one client that loads these cogs."""
    client = interaction.client
    if not isinstance(client, GameMasterBot):
        raise TypeError(f"the cogs run in a GameMasterBot, not in a {type(client).__name__}")
    return client


def channel_of(interaction: discord.Interaction) -> discord.abc.Messageable:
    """The channel a command or button comes from, where its answers go: one that takes messages, as every
    channel a command can be used in does (never a category or a forum itself)."""
    channel = interaction.channel
    if not isinstance(channel, discord.abc.Messageable):
        raise UserError("That works only in a channel that takes messages.")
    return channel


def server_of(interaction: discord.Interaction) -> str | None:
    """The server (guild) id an interaction comes from; ``None`` in a DM."""
    return str(interaction.guild_id) if interaction.guild_id else None


THREADS = (discord.ChannelType.public_thread, discord.ChannelType.private_thread, discord.ChannelType.news_thread)


def is_thread(channel: object) -> bool:
    return getattr(channel, "type", None) in THREADS


async def is_admin(interaction: discord.Interaction) -> bool:
    """Manage Server, or the server's GM role (``/config gm-role``; else the role named in ``GM_GM_ROLE``)."""
    member = interaction.user
    if not isinstance(member, discord.Member):
        return False
    if member.guild_permissions.manage_guild:
        return True
    bot = bot_of(interaction)
    role_id = await bot.engine.server(str(member.guild.id)).gm_role()
    if role_id is not None:
        return any(role.id == role_id for role in member.roles)
    gm_role = bot.settings.gm_role
    return bool(gm_role) and any(role.name == gm_role for role in member.roles)


def manages_server(interaction: discord.Interaction) -> bool:
    """Manage Server itself: what server-wide settings, worlds and the GM role need."""
    member = interaction.user
    return isinstance(member, discord.Member) and member.guild_permissions.manage_guild


class Refused(app_commands.CheckFailure):
    """The access table says no; the message says why and is shown to the asker alone."""


class TableCog(commands.Cog):
    """A cog whose every command goes through the access table first, and that finds the game of a channel."""

    def __init__(self, bot: GameMasterBot, engine: Engine):
        self.bot = bot
        self.engine = engine

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        await self.check_access(interaction)
        return True

    async def check_access(self, interaction: discord.Interaction, name: str | None = None) -> None:
        """Raise :class:`Refused` unless the table lets this person use this command here.

        ``name`` is the command a button stands for; a slash command names itself.
        """
        if name is None:
            name = interaction.command.qualified_name if interaction.command else "?"
        rule = COMMANDS.get(name)
        if rule is None:
            log.error("Command %s has no row in bot.access.COMMANDS; refused", name)
            raise Refused("That command is not available.")
        if interaction.guild is None and not rule.in_dms:
            raise Refused(IN_A_SERVER)
        if rule.posts and interaction.guild is not None:
            missing = missing_permissions(interaction.app_permissions, thread=is_thread(interaction.channel))
            if missing:
                raise Refused(cannot_post(missing))
        if rule.access is Access.OWNER:
            if not await bot_of(interaction).is_owner(interaction.user):
                raise Refused(REFUSALS[Access.OWNER])
            return
        admin = await is_admin(interaction)
        if rule.access is Access.ADMIN and not admin:
            raise Refused(REFUSALS[Access.ADMIN])
        if not needs_game(rule.access):
            return
        game = await self.game_in(interaction.channel)
        if game is None:
            raise Refused(NO_GAME)
        who = user_key(interaction.user)
        standing = Standing(
            seated=await self.engine.player(game.id, who) is not None, starter=game.started_by == who, admin=admin
        )
        if not allows(rule.access, standing):
            raise Refused(REFUSALS[rule.access])

    async def game_here(self, interaction: discord.Interaction) -> Game:
        """The game of the channel a command or button comes from; a :class:`UserError` says there is none."""
        return await self.engine.current_game(channel_key(interaction.channel))

    async def game_in(self, channel: discord.abc.Snowflake | discord.abc.Messageable | None) -> Game | None:
        """The game of a channel, or ``None`` (a plain message, an autocomplete: nothing to tell anyone)."""
        return await self.engine.game_in(channel_key(channel))

    async def wait_for_turn(self, interaction: discord.Interaction, game_id: int, what: str) -> None:
        """Answer at once when a running turn holds the game: the work waits for it, past Discord's 3 seconds.

        What the command then says goes in a followup (see :func:`say`).
        """
        if self.engine.turn_running(game_id) and not interaction.response.is_done():
            await interaction.response.send_message(
                f"The GM is writing; {what} as soon as its reply is done.", ephemeral=True
            )


async def say(interaction: discord.Interaction, content: str | None = None, **kwargs) -> None:
    """The command's answer: its response, or a followup once something was already said.

    A followup is refused once the interaction is 15 minutes old; a public
    answer then goes to the channel itself.
    """
    if not interaction.response.is_done():
        await interaction.response.send_message(content, **kwargs)
        return
    try:
        # Without text (embeds alone) the followup leaves its content out, as its default does.
        await interaction.followup.send(discord.utils.MISSING if content is None else content, **kwargs)
    except discord.HTTPException as exc:
        if not (isinstance(exc, discord.Forbidden) or expired(exc)) or kwargs.get("ephemeral"):
            raise
        kwargs.pop("ephemeral", None)
        await channel_of(interaction).send(content, **kwargs)


# Discord's answers to a followup of an interaction it no longer knows: past its 15 minutes the token is
# refused (401, "Invalid Webhook Token", 50027), or the webhook or interaction is unknown (10015, 10062).
EXPIRED_CODES = frozenset({50027, 10015, 10062})


def expired(error: discord.HTTPException) -> bool:
    """Whether ``error`` says the interaction's token is no longer usable: then the channel is the way left."""
    return isinstance(error, discord.NotFound) or error.status == 401 or error.code in EXPIRED_CODES


async def say_pages(interaction: discord.Interaction, text: str, **kwargs) -> None:
    """A long answer as several messages, numbered, rather than one cut at Discord's limit."""
    for piece in pages(text):
        await say(interaction, piece, **kwargs)


async def say_embeds(interaction: discord.Interaction, embeds: list[discord.Embed], **kwargs) -> None:
    """Embeds in as many messages as Discord's per-message limits need."""
    for group in embed_pages(embeds):
        await say(interaction, embeds=group, **kwargs)
