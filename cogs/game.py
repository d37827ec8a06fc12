"""Games in channels: receives discord.py events and hands them to the engine (F1, F2, F3)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.access import missing_permissions
from bot.engine import Engine, ModelFailed, TurnResult
from bot.errors import UserError
from bot.store import Game, Visibility
from cogs.access import (
    TableCog,
    channel_key,
    channel_of,
    discord_id,
    expired,
    is_admin,
    is_thread,
    say,
    say_pages,
    server_of,
    user_key,
)
from cogs.buttons import JoinButton, LegacyButtons, RetryButton, join_view, retry_view
from cogs.rendering import LIMIT, StreamedReply, echo, pages, plain, split_message

if TYPE_CHECKING:
    from bot.discord_client import GameMasterBot

log = logging.getLogger(__name__)

SHOWN_TURNS = 500  # the latest turns whose reply messages are remembered, to mark one a retry replaces
REPLACED = "*(Replaced: this answer was written again, below.)*"
REFUSED = "Discord would not take the GM's reply just now. Your turn is saved: use /retry to see it again."
OPENING_REFUSED = (
    "Discord would not take the game's opening scene just now. The game is started and kept all the same: "
    "/join it, and the GM's first reply goes on from the opening."
)


def world_choices(engine: Engine, current: str, server: str | None) -> list[app_commands.Choice[str]]:
    """Autocomplete for a world option: the worlds this server may play whose name contains what was typed."""
    worlds = engine.worlds_for(server)
    names = [n for n in sorted(worlds) if current.lower() in n.lower()]
    return [app_commands.Choice(name=worlds[n].title[:100], value=n) for n in names[:25]]


def unanswered_notice(name: str | None) -> str:
    whose = f"**{plain(name)}**'s action" if name else "an action"
    return f"⚠️ The GM could not answer {whose}; it is saved. Press Retry, or use /retry."


class GameCog(TableCog):
    game = app_commands.Group(name="game", description="Start, end or look at this channel's game")

    def __init__(self, bot: GameMasterBot, engine: Engine):
        super().__init__(bot, engine)
        self._resumed = False
        self._shown: OrderedDict[tuple[int, int], list[discord.Message]] = OrderedDict()

    def _remember(self, result, messages: list[discord.Message]) -> None:
        """Which messages show a turn's reply, so a retry can mark them replaced (the latest turns only)."""
        self._shown[(result.game.id, result.turn)] = list(messages)
        while len(self._shown) > SHOWN_TURNS:
            self._shown.popitem(last=False)

    async def _mark_replaced(self, game_id: int, turn: int) -> None:
        """The messages of a reply that /retry wrote again say so, rather than read as the story."""
        for message in self._shown.pop((game_id, turn), []):
            try:
                await message.edit(content=REPLACED)
            except discord.HTTPException:
                log.info("Could not mark the replaced reply %s", message.id)

    async def cog_load(self) -> None:
        self.bot.add_dynamic_items(RetryButton, JoinButton)
        self.bot.add_view(LegacyButtons())

    @commands.Cog.listener()
    async def on_ready(self) -> None:
        """Once a process: turns that a stop cut off are offered again, and open rounds keep their windows."""
        if self._resumed:
            return
        self._resumed = True
        for game in await self.engine.active_games():
            if discord_id(game.channel_key) is not None:
                try:
                    await self._resume(game)
                except (discord.HTTPException, UserError) as exc:
                    log.warning("Could not resume game %d in %s: %s", game.id, game.channel_key, exc)

    async def _resume(self, game) -> None:
        pending = await self.engine.unanswered(game.id)
        if not pending:
            return
        channel = self._channel_of(game)
        if await self.engine.resume_round(game.id, self._round_poster(channel)) is not None:
            return
        if await self.engine.turn_policy(game.id) != "round":
            last = pending[-1]
            name = last.author if last.visibility is Visibility.PUBLIC else None  # nobody learns who whispered
            await channel.send(unanswered_notice(name), view=retry_view(game.id, last.turn))

    def _channel_of(self, game: Game) -> discord.PartialMessageable:
        channel_id = discord_id(game.channel_key)
        if channel_id is None:
            raise ValueError(f"game {game.id} is not played in Discord but in {game.channel_key}")
        return self.bot.get_partial_messageable(channel_id)

    @game.command(name="start", description="Start a game in this channel")
    @app_commands.describe(world="The world to play")
    async def game_start(self, interaction: discord.Interaction, world: str) -> None:
        channel = channel_of(interaction)
        started = await self.engine.start_game(
            channel_key(interaction.channel),
            world,
            started_by=user_key(interaction.user),
            server=server_of(interaction),
        )
        *first, last = pages(f"**{started.world.title}**\n{started.world.pitch}\nJoin with the button or /join.")
        for piece in first:  # a long pitch (a world may have 4,000 characters of it) in several messages
            await say(interaction, piece)
        await say(interaction, last, view=join_view(started.game.id))
        await self._show(channel, started.opening.content, interaction=interaction, refused=OPENING_REFUSED)

    @game_start.autocomplete("world")
    async def _worlds(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return world_choices(self.engine, current, server_of(interaction))

    @game.command(name="end", description="End this channel's game (it is kept)")
    async def game_end(self, interaction: discord.Interaction) -> None:
        game = await self.game_here(interaction)
        await self.wait_for_turn(interaction, game.id, "the game ends")
        ended = await self.engine.end_game(channel_key(interaction.channel))
        await say(interaction, f"The game ends after {ended.turn} turns. It is kept.")

    @game.command(name="status", description="What is being played here, and by whom")
    async def game_status(self, interaction: discord.Interaction) -> None:
        game = await self.game_here(interaction)
        world = self.engine.world_of(game)
        players = ", ".join(p.name for p in await self.engine.players(game.id)) or "nobody yet"
        await say_pages(interaction, f"**{world.title}**, turn {game.turn}. Players: {players}.", ephemeral=True)

    @app_commands.command(name="join", description="Join this channel's game as a character")
    @app_commands.describe(name="Your character's name", description="A few words about them")
    async def join(self, interaction: discord.Interaction, name: str, description: str = "") -> None:
        await self.join_as(interaction, name, description)

    async def join_as(self, interaction: discord.Interaction, name: str, description: str) -> None:
        """/join, and the Join button's form."""
        game = await self.game_here(interaction)
        await self.wait_for_turn(interaction, game.id, "you join")
        player = await self.engine.join(game.id, user_key(interaction.user), name, description)
        await say(interaction, f"{interaction.user.mention} joins as **{plain(player.name)}**.")

    @app_commands.command(name="leave", description="Leave this channel's game")
    async def leave(self, interaction: discord.Interaction) -> None:
        game = await self.game_here(interaction)
        await self.wait_for_turn(interaction, game.id, "you leave")
        player = await self.engine.leave(game.id, user_key(interaction.user))
        await say(interaction, f"**{plain(player.name)}** leaves the game.")

    @app_commands.command(name="act", description="Say what your character does")
    @app_commands.describe(action="What your character does or says")
    async def act(self, interaction: discord.Interaction, action: str) -> None:
        channel = channel_of(interaction)
        game = await self.game_here(interaction)
        self.engine.check_action(action)
        player = await self.engine.player(game.id, user_key(interaction.user))
        if player is None:  # left between the access check and now
            raise UserError("Join the game first with /join.")
        if len(echo(player.name, action)) > LIMIT:  # the echo must fit in one message, or the action is lost
            room = LIMIT - len(echo(player.name, "x")) + 1
            raise UserError(
                f"That action takes {len(plain(action.strip()))} characters as shown beside your name; "
                f"the room is {room}. Shorten it; nothing was saved."
            )
        if await self.engine.turn_policy(game.id) == "round":
            await self._round(interaction, game, player.name, action)
            return
        await interaction.response.send_message(echo(player.name, action))
        reply = StreamedReply(channel.send)
        try:
            async with channel.typing():
                result = await self.engine.act(game.id, user_key(interaction.user), action, on_text=reply.feed)
        except ModelFailed as failed:
            await say(interaction, unanswered_notice(player.name), view=retry_view(game.id, failed.turn))
            return
        await self.post_turn(channel, result, reply=reply, interaction=interaction)

    async def answer_again(self, interaction: discord.Interaction) -> None:
        """/retry and the Retry button: answer an action left unanswered, or write the last reply again."""
        channel = channel_of(interaction)
        game = await self.game_here(interaction)
        who = None if await is_admin(interaction) else user_key(interaction.user)
        await say(interaction, "The GM thinks again…", ephemeral=True)
        reply = StreamedReply(channel.send)
        async with channel.typing():
            result = await self.engine.retry(game.id, on_text=reply.feed, user_key=who)
        if result.turn == game.turn:  # the last reply was written again, not an unanswered action answered
            await self._mark_replaced(game.id, game.turn)
        await self.post_turn(channel, result, reply=reply, interaction=interaction)

    def _round_poster(self, channel: discord.abc.Messageable):
        """What a round posts when it closes, from whichever closes it: the last action, its timer, a restart."""
        return functools.partial(self.post_turn, channel)

    async def _round(self, interaction: discord.Interaction, game: Game, name: str, action: str) -> None:
        post = self._round_poster(channel_of(interaction))
        await interaction.response.send_message(echo(name, action))
        await self._seat_only_members(game, interaction.user)
        state = await self.engine.add_to_round(game.id, user_key(interaction.user), action, on_closed=post)
        if state.waiting:
            await interaction.followup.send(
                f"The GM answers when {', '.join(state.waiting)} has acted, or in {state.seconds} seconds.",
                ephemeral=True,
            )

    async def _where(self, game) -> str:
        """Which game a DM is about, for a player at several tables: its world, its number, its server."""
        server = await self.engine.server_of(game.id)
        guild = self.bot.get_guild(int(server)) if server else None
        return f"{self.engine.world_of(game).title}, game #{game.id}" + (f", {guild.name}" if guild else "")

    async def _deliver_private(
        self, channel: discord.abc.Messageable, result, interaction: discord.Interaction | None = None
    ) -> None:
        """Send each private aside of a turn to its player by DM, and nowhere else.

        With DMs closed, the player who asked reads it in an ephemeral followup of their own command; anyone
        else is told in the channel, by a mention of the person (never the text, nor the character), to open
        their DMs; the aside stays stored, and their private memory is written from it.
        """
        if not result.private:  # most turns: no settings to read for the asides' heading
            return
        where = await self._where(result.game)
        for aside in result.private:
            user_id = discord_id(aside.player.user_key)
            if user_id is None:  # a player of another front end: none is seated in a game played in Discord
                log.warning("Game %d: %s has no Discord id; the aside is stored", result.game.id, aside.player.name)
                continue
            if not await self._still_seated(result.game, user_id):
                continue  # they left the server: nothing more of the game reaches them, their seat is free
            text = f"🤫 Only you see this ({where}): {aside.entry.content}"
            try:
                user = self.bot.get_user(user_id) or await self.bot.fetch_user(user_id)
                for piece in split_message(text):  # an aside past Discord's 2,000 characters in several DMs
                    await user.send(piece)
                continue
            except discord.HTTPException:
                log.info("Could not DM player %s; trying the other ways", aside.player.name)
            if interaction is not None and interaction.user.id == user_id:
                try:
                    for piece in split_message(text):
                        await interaction.followup.send(piece, ephemeral=True)
                    continue
                except discord.HTTPException:
                    log.info("The interaction of %s has expired; telling them in the channel", aside.player.name)
            try:
                await channel.send(
                    f"<@{user_id}>, the GM has something for you alone, but I cannot DM you: allow direct "
                    "messages from this server's members (the server's Privacy Settings) to get what comes next.",
                    allowed_mentions=discord.AllowedMentions(users=[discord.Object(user_id)]),
                )
            except discord.HTTPException:
                log.warning("Could not tell %s either; the aside is stored", aside.player.name)

    async def post_turn(
        self, channel: discord.abc.Messageable, result: TurnResult, *, reply: StreamedReply | None = None,
        interaction: discord.Interaction | None = None,
    ) -> None:  # fmt: skip
        """The one way a turn reaches Discord: its asides by DM, and a public reply in the channel, ``reply`` (what
        streamed of it) finished with the whole text and remembered for a retry to mark. When Discord refuses the
        reply, the turn is stored all the same: the user is told so, in their command's followup if they gave one,
        else in the channel."""
        await self._deliver_private(channel, result, interaction)
        if not result.public:  # an answer to a secret action: to its player alone, by DM
            return
        shown = await self._show(channel, result.text, reply=reply, interaction=interaction)
        if shown is not None:
            self._remember(result, shown)

    async def _show(
        self, channel: discord.abc.Messageable, text: str, *, reply: StreamedReply | None = None,
        interaction: discord.Interaction | None = None, refused: str = REFUSED,
    ) -> list[discord.Message] | None:  # fmt: skip
        """Post the GM's stored ``text`` in the channel, ``reply`` (what streamed of it) finished with it: the
        messages, or ``None`` when Discord refuses them, after telling the user ``refused``."""
        try:
            return await (reply or StreamedReply(channel.send)).finish(text)
        except discord.HTTPException as exc:
            log.warning("Discord refused the GM's text in %s (%s); it is stored", channel_key(channel), exc)
            await self._tell_refused(channel, interaction, refused)
            return None

    async def _tell_refused(
        self, channel: discord.abc.Messageable, interaction: discord.Interaction | None, text: str
    ) -> None:
        """In the followup of the user's command if they gave one; else, or once it expired, in the channel."""
        if interaction is not None:
            try:
                await interaction.followup.send(text, ephemeral=True)
                return
            except discord.HTTPException as exc:
                why = "it expired" if expired(exc) else str(exc)
                log.info("Could not tell the user in their command's followup (%s); telling the channel", why)
        try:
            await channel.send(text)
        except discord.HTTPException:
            log.info("Could not tell %s either; what Discord refused is stored", channel_key(channel))

    @app_commands.command(name="whisper", description="Act in secret: only you and the GM know, and it answers by DM")
    @app_commands.describe(action="What your character does or says, unseen by the others")
    async def whisper(self, interaction: discord.Interaction, action: str) -> None:
        channel = channel_of(interaction)
        game = await self.game_here(interaction)
        self.engine.check_action(action)
        await interaction.response.send_message("🤫 Whispered to the GM; the answer comes by DM.", ephemeral=True)
        result = await self.engine.whisper(game.id, user_key(interaction.user), action)
        await self.post_turn(channel, result, interaction=interaction)

    @app_commands.command(name="notes", description="Your private notes for this game (only you see them)")
    @app_commands.describe(add="A note to keep", remove="The number of a note to remove")
    async def notes(self, interaction: discord.Interaction, add: str | None = None, remove: int | None = None) -> None:
        game = await self.game_here(interaction)
        who = user_key(interaction.user)
        if add is not None:
            await self.engine.add_note(game.id, who, add)
        if remove is not None:
            await self.engine.remove_note(game.id, who, remove)
        notes = await self.engine.notes(game.id, who)
        text = "\n".join(f"{i}. {note}" for i, note in enumerate(notes, 1)) or "No notes yet: /notes add:..."
        await say_pages(interaction, text, ephemeral=True)

    @app_commands.command(name="roll", description="Roll dice: 1d20+5, 4d6kh3, 1d20 adv")
    @app_commands.describe(dice="Dice notation")
    @app_commands.describe(secret="Only you (by DM) and the GM see the result")
    async def roll(self, interaction: discord.Interaction, dice: str, secret: bool = False) -> None:
        game = await self.game_here(interaction)
        await self.wait_for_turn(interaction, game.id, "your dice roll")
        rolled = await self.engine.roll(game.id, user_key(interaction.user), dice, secret=secret)
        if not secret:
            await say(interaction, f"**{plain(rolled.entry.author)}** rolls {rolled.roll.text}")
            return
        await say(interaction, "🎲 Rolled in secret; the result comes by DM.", ephemeral=True)
        text = f"🎲 Your secret roll ({await self._where(game)}): {rolled.roll.text}"  # which game, as asides say
        try:
            await interaction.user.send(text)
        except discord.HTTPException:
            await interaction.followup.send(text, ephemeral=True)

    # Plain messages (F2, with the message-content intent) and their edits and deletes (F19)

    @commands.Cog.listener()
    async def on_member_ban(self, guild: discord.Guild, user: discord.User | discord.Member) -> None:
        await self._gone(guild.id, user, "was banned from the server")

    @commands.Cog.listener()
    async def on_raw_member_remove(self, payload: discord.RawMemberRemoveEvent) -> None:  # the members intent
        await self._gone(payload.guild_id, payload.user, "left the server")

    async def _gone(self, guild_id: int, user: discord.abc.Snowflake, why: str) -> None:
        """A player no longer in a server loses their seats in its games: no more secrets by DM, no more turns."""
        for game, player in await self.engine.release_seats(user_key(user), str(guild_id)):
            channel = self._channel_of(game)
            try:
                await channel.send(f"**{plain(player.name)}**'s seat is free: their player {why}.")
            except discord.HTTPException:
                log.info("Could not tell game %d that %s's seat is free", game.id, player.name)

    async def _from_dm(self, message: discord.Message) -> None:
        """A DM to the bot is a secret action in the game the player is in (``#id`` picks one of several)."""
        text = message.content.strip()
        games = await self.engine.games_of(user_key(message.author))
        if not games or not text:
            await message.channel.send("You are in no game here; /join one in its channel first.")
            return
        chosen = games[0] if len(games) == 1 else None
        if text.startswith("#") and text[1:].split(" ", 1)[0].isdigit():
            number, _, text = text[1:].partition(" ")
            chosen = next((g for g in games if g.id == int(number)), None)
        if chosen is None:
            listing = ", ".join(f"#{g.id} {self.engine.world_of(g).title}" for g in games)
            await message.channel.send(f"You are in several games ({listing}); start your message with its number.")
            return
        if not await self._still_seated(chosen, message.author.id):
            await message.channel.send("You are no longer in that game's server; your seat there is free.")
            return
        try:
            result = await self.engine.whisper(chosen.id, user_key(message.author), text)
        except UserError as exc:
            await message.channel.send(str(exc))
            return
        await self.post_turn(message.channel, result)

    async def _still_seated(self, game: Game, user_id: int | None) -> bool:
        """Whether the player ``user_id`` is still a member of the server ``game`` is played in; one found gone
        loses their seats in its games. Leaving is heard as it happens only with the members intent
        (``GM_MEMBERS_INTENT``); without it, it is found here, before the game sends them anything or waits on
        them."""
        server = await self.engine.server_of(game.id)
        guild = self.bot.get_guild(int(server)) if server else None
        if guild is None or user_id is None:
            return True  # not a server's game, or a server the bot is not in: nothing to check against
        if guild.get_member(user_id) is not None:
            return True
        try:
            await guild.fetch_member(user_id)
        except discord.NotFound:
            await self._gone(guild.id, discord.Object(user_id), "left the server")
            return False
        except discord.HTTPException:
            return True  # Discord did not say: the game goes on
        return True

    async def _seat_only_members(self, game: Game, acting: discord.abc.User) -> None:
        """Before a round takes an action: the players it would wait for who left the server lose their seats,
        so the round does not wait out its window for them."""
        acted = {e.player_id for e in await self.engine.unanswered(game.id)}
        for player in await self.engine.players(game.id):
            if player.id not in acted and player.user_key != user_key(acting):
                await self._still_seated(game, discord_id(player.user_key))

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if message.guild is None and not message.author.bot:
            await self._from_dm(message)
            return
        settings = self.bot.settings
        text = message.content.strip()
        if message.author.bot or message.guild is None or not settings.message_content or not text:
            return
        if text.startswith(settings.ooc_prefix):
            return
        game = await self.game_in(message.channel)
        if game is None or await self.engine.player(game.id, user_key(message.author)) is None:
            return
        granted = message.channel.permissions_for(message.guild.me)
        if missing := missing_permissions(granted, thread=is_thread(message.channel)):
            log.warning("Game %d: cannot post in %s (missing %s); the message is not played", game.id,
                        channel_key(message.channel), ", ".join(missing))  # fmt: skip
            return
        if await self.engine.turn_policy(game.id) == "round":  # gathered like /act's, answered once for all
            await self._seat_only_members(game, message.author)
            try:
                state = await self.engine.add_to_round(
                    game.id, user_key(message.author), text, message_id=str(message.id),
                    on_closed=self._round_poster(message.channel),
                )  # fmt: skip
            except UserError as exc:
                await message.reply(str(exc), mention_author=False)
                return
            if state.waiting:
                with contextlib.suppress(discord.HTTPException):
                    await message.add_reaction("⏳")  # stored; the GM answers when the round closes
            return
        reply = StreamedReply(message.channel.send)
        try:
            async with message.channel.typing():
                result = await self.engine.act(
                    game.id, user_key(message.author), text, message_id=str(message.id), on_text=reply.feed
                )
        except ModelFailed as failed:
            notice = unanswered_notice(message.author.display_name)
            await message.reply(notice, view=retry_view(game.id, failed.turn), mention_author=False)
            return
        except UserError as exc:
            await message.reply(str(exc), mention_author=False)
            return
        await self.post_turn(message.channel, result, reply=reply)

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        entry = await self.engine.entry_by_message(str(payload.message_id))
        content = payload.data.get("content")
        if entry is None or entry.deleted or content is None or content.strip() == entry.content:
            return
        if content.strip().startswith(self.bot.settings.ooc_prefix):
            await self.engine.delete_entry(entry.game_id, entry.id)
            return
        try:
            await self.engine.edit_entry(entry.game_id, entry.id, content)
        except UserError:
            log.info("Edit of message %s not taken: %r", payload.message_id, content[:80])

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        entry = await self.engine.entry_by_message(str(payload.message_id))
        if entry is not None and not entry.deleted:
            await self.engine.delete_entry(entry.game_id, entry.id)


async def setup(bot: GameMasterBot) -> None:
    await bot.add_cog(GameCog(bot, bot.engine))
