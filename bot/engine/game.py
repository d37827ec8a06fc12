"""Games and turns. Calls the store, the memory policy and the model; knows nothing of Discord."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot import dice
from bot.cleantext import clean_text
from bot.engine.guard import LeakGuards, TurnGuard
from bot.engine.ledger import Ledger, LoreListing, PinResult
from bot.engine.meaning import MeaningIndex
from bot.engine.memory import ChapterReport, CompactionReport, MemoryKeeper
from bot.engine.servers import Servers
from bot.engine.session import Sessions
from bot.engine.settings import GameSettings
from bot.engine.shaping import ReplyShaper, Shaped, says_enough
from bot.engine.status import MemoryStatus, memory_status
from bot.errors import UserError
from bot.memory.config import Buckets, MemoryConfig
from bot.memory.context import Budget, Context, ContextTrace, build_context, shared_prefix_share, squeeze_to_fit
from bot.memory.leaks import complete_sentences, content_words, sentences, strip
from bot.memory.private import PrivateNote, PublicStream, split_reply
from bot.model.base import CallStats, ChatMessage, ModelUnavailable
from bot.model.embedding import Embedder
from bot.model.worker import ModelWorker, Priority
from bot.store import (
    EntryKind,
    Fact,
    Game,
    GlossaryTerm,
    LogEntry,
    NewEntry,
    Pin,
    Player,
    PlayerMemory,
    Store,
    Visibility,
)
from bot.worlds import World, WorldLibrary

log = logging.getLogger(__name__)

OnText = Callable[[str], Awaitable[None] | None]

PRIVATE_ONLY = "(The GM answers privately.)"
WITHHELD = "(The GM keeps that to themselves.)"
# Notes for one more try, on the action's message of that call only: never stored, never in a later prompt.
# They name no markup: a model that copies a note copies no aside syntax (the shaper drops a copied note).
SAY_SOMETHING_NEW = (
    "(Your last reply only repeated the player's action or an earlier reply, or told the table nothing. Write "
    "what happens next, in new words, as the GM, for everyone at the table.)"
)
REGENERATE = (
    "(GM note: your draft gave away GM-only knowledge in public. Write the reply again without revealing any "
    "secret, whatever the player asked; keep to what the players have found. A private thing goes only in an "
    "aside to the one player who earned it.)"
)
NO_GAME = "There is no game here; start one first."
# A beat's private clue goes to the acting player when their action shares content words with the clue's first
# sentence (what earns it: "Whoever sniffs the brandy glass on the desk ..."): two when the model told the clue in
# public (it judged the clue due), three when it left it unsaid (a model that writes no asides). An aside of the
# turn holding this many of the clue's words gave it already.
EARNED_WORDS = 2
EARNED_WORDS_UNSAID = 3
TOLD_WORDS = 3
# On a turn whose action plainly earns a clue, a public sentence with this many of the clue's own words that the
# action did not use tells it ("found it to be sharp and bitter"): the guard keeps it from the channel, and the
# clue goes to the player by DM. Measured with bench quality on Qwen2.5 1.5B, which told the clue in public in
# other words than the guard's runs of four.
EARNED_CLUE_TOLD = 2
MODEL_FAILED = "The GM could not answer just now; your action is saved. Try again."
# Names the log and the prompt give to the game's own voices: a player by one of them would read as narration.
RESERVED_NAMES = frozenset({"gm", "the gm", "game master", "the game master", "dm", "system", "narrator", "bot"})
NAME_PATTERN = re.compile(r"[^\W_][\w '’.-]*")
MAX_NAME_CHARS = 40
MAX_DESCRIPTION_CHARS = 300


@dataclass(frozen=True)
class EngineConfig:
    n_ctx: int = 4096
    reply_tokens: int = 300
    max_action_chars: int = 2000
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    shape_replies: bool = True  # take out of replies what the GM must not write (see bot.engine.shaping)
    full_guide: bool = True  # the frozen layer's full guide and example reply (see bot.memory.context.world_brief)

    @property
    def budget(self) -> Budget:
        return Budget(n_ctx=self.n_ctx, reply_tokens=self.reply_tokens, **self.memory.budgets.model_dump())


@dataclass(frozen=True)
class GameStarted:
    game: Game
    world: World
    opening: LogEntry


@dataclass(frozen=True)
class PrivateMessage:
    """What the GM told one player alone this turn; the front end delivers it to them only."""

    player: Player
    entry: LogEntry


@dataclass(frozen=True)
class TurnResult:
    """What a front end renders after a turn."""

    game: Game
    turn: int
    action: LogEntry
    reply: LogEntry
    context: Context
    seconds: float
    first_text_seconds: float
    private: tuple[PrivateMessage, ...] = ()
    draft: str | None = None  # the first draft's public text, when the leak guard stopped it
    model: CallStats | None = None  # what the model's call cost: tokens read, reused, written
    raw: str = ""  # what the model wrote last, asides included, after the reply rules

    @property
    def text(self) -> str:
        return self.reply.content

    @property
    def public(self) -> bool:
        """Whether the reply goes to the channel; the answer to a secret action goes to its player only."""
        return self.reply.visibility is Visibility.PUBLIC


@dataclass(frozen=True)
class RollResult:
    roll: dice.Roll
    entry: LogEntry


@dataclass(frozen=True)
class RoundState:
    """A round under the "round" turn policy: who has acted, who the GM waits for."""

    turn: int
    acted: list[str]
    waiting: list[str]
    seconds: int


OnRoundClosed = Callable[["TurnResult"], Awaitable[None]]


@dataclass(frozen=True)
class _Shaping:
    """What a turn's reply is shaped by: the seated players, the actions it answers, the last replies."""

    names: list[str]
    actions: list[str]
    recent: list[str]
    enabled: bool = True
    public: bool = True  # the reply is for the channel: one with nothing outside its asides says nothing new

    def shaper(self) -> ReplyShaper:
        return ReplyShaper(self.names, self.actions, self.recent, enabled=self.enabled)


@dataclass(frozen=True)
class _Narration:
    """What the model wrote for one call, and how long it took to start."""

    text: str
    first_text: float
    stats: CallStats | None
    shaped: Shaped | None = None
    nothing_new: bool = False  # all it said was an echo or a repeat, or too little: held back from the screen


@dataclass(frozen=True)
class _Drafted:
    """A reply ready to store: its public text, its private asides, and the draft the guard stopped (if any)."""

    public: str
    notes: list[PrivateNote]
    draft: str | None
    narration: _Narration  # the first call's: the one the player waited for
    raw: str  # what the model wrote last, asides and all: what its cache now holds
    clues: tuple[str, ...] = ()  # the beats whose private clue the model told in public (stopped by the guard)


class ModelFailed(UserError):
    """The model raised or said nothing; the player's action is kept."""


class Engine:
    """Runs every game of the process: one lock per game, one shared model worker."""

    def __init__(
        self, store: Store, worker: ModelWorker, worlds: WorldLibrary, config: EngineConfig, *,
        embedder: Embedder | None = None, embedder_unavailable: str | None = None,
    ):  # fmt: skip
        """``embedder`` recalls by meaning beside the words (F31); ``None``: words alone, and
        ``embedder_unavailable`` says why, when a model was asked for and did not load."""
        self.store = store
        self.worker = worker
        self.worlds = worlds
        self.config = config
        self.settings = GameSettings(store, config.memory, config.reply_tokens)
        self.sessions = Sessions()
        self.meaning = MeaningIndex(store, worker, embedder, embedder_unavailable)
        self.memory = MemoryKeeper(
            store, worker, self.world_of, config.memory, self.settings, self.sessions, meaning=self.meaning
        )
        self.guards = LeakGuards(store, self.meaning)
        self.servers = Servers(store, worlds)
        self.stopping = False  # set by drain(): the process is going down
        self._started = False

    async def drain(self, seconds: float) -> bool:
        """Take no new turn, and let the running ones finish for up to ``seconds``; ``False`` if one still runs.

        An action whose reply did not finish stays stored without one: it is offered again after a restart.
        """
        self.stopping = True
        deadline = time.monotonic() + seconds
        while any(session.turn_running for session in self.sessions):
            if time.monotonic() >= deadline:
                log.warning("Stopping with a reply unfinished; its action is kept and offered again on restart")
                return False
            await asyncio.sleep(0.05)
        return True

    def _check_running(self) -> None:
        if self.stopping:
            raise UserError("The GM is restarting; nothing was saved. Try again in a minute.")

    async def start(self) -> None:
        """Read the servers' worlds, and catch up in the background on what the last process left undone: the
        memory's upkeep of every active game (what was queued when it stopped is found again from the game's
        log, so nothing is lost at a stop), and what is not embedded yet (an older database's games, or every
        fragment again after the embedding model changed). Once: a second call does nothing."""
        if self._started:
            return
        self._started = True
        await self.servers.load()
        if self.meaning.unavailable:
            log.warning("Recall by words alone: %s", self.meaning.unavailable)
        self.meaning.notify()
        for game in await self.store.games("active"):
            with contextlib.suppress(UserError):  # a world gone since: its game says so on its next turn
                self.guards.warm(self.world_of(game))
            self.memory.schedule(game.id)  # jobs with nothing new skip; the rest run at the lowest priority

    @property
    def writes_failing(self) -> int:
        """Writes to the database that failed since the last one saved (0: everything so far is saved)."""
        return self.store.failing_writes

    async def close(self) -> None:
        """Stop background upkeep and round timers; stored actions wait for the next round."""
        for session in self.sessions:
            if session.round_timer is not None:
                session.round_timer.cancel()
        await self.memory.close()
        await self.guards.close()
        await self.meaning.close()

    # Games

    async def start_game(
        self, channel_key: str, world_name: str, *, started_by: str | None = None, server: str | None = None
    ) -> GameStarted:
        """A new game in a channel; ``started_by`` may end it (see :mod:`bot.access`).

        In a ``server``, the world is one that server may play (its own, or a shipped one it does not hide),
        and the game takes that server's default settings.
        """
        world_id, world = self.servers.resolve(server, world_name)
        game = await self.store.create_game(channel_key, world_id, started_by)
        if server is not None:
            await self.settings.set_server_of(game.id, server)
        npcs = await self.memory.present_npcs(game, world.opening)
        opening = NewEntry(turn=0, kind=EntryKind.GM, author="GM", content=world.opening, npcs=npcs)
        (entry,) = await self.store.append(game.id, opening)
        self.guards.warm(world)
        log.info("Game %d started in %s with world %s", game.id, channel_key, world.id)
        return GameStarted(await self.store.game(game.id), world, entry)

    async def current_game(self, channel_key: str) -> Game:
        game = await self.store.active_game(channel_key)
        if game is None:
            raise UserError(NO_GAME)
        return game

    async def resume_game(self, channel_key: str, world_name: str | None = None) -> Game | None:
        """The channel's last game (of that world), active again; ``None`` if there is none."""
        world_id = self.worlds.get(world_name).id if world_name else None
        game = await self.store.last_game(channel_key, world_id)
        if game is None:
            return None
        if game.status != "active":
            game = await self.store.reactivate_game(game.id)
        with contextlib.suppress(UserError):
            self.guards.warm(self.world_of(game))
        return game

    async def end_game(self, channel_key: str) -> Game:
        game = await self.current_game(channel_key)
        session = self.sessions[game.id]
        async with session.turn_lock:
            ended = await self.store.end_game(game.id)
            timer, session.round_timer = session.round_timer, None
        if timer is not None:
            timer.cancel()  # its round ends with the game: nothing is narrated into a finished one
        log.info("Game %d ended", game.id)
        return ended

    def world_of(self, game: Game) -> World:
        if "/" in game.world_id:  # a server's own world
            world = self.servers.world(game.world_id)
            if world is None:
                raise UserError(f"This game's world {game.world_id!r} was removed from the server.")
            return world
        try:
            return self.worlds.get(game.world_id)
        except UserError:
            raise UserError(f"This game's world {game.world_id!r} is not loaded; fix or restore its file.") from None

    # Players

    async def join(self, game_id: int, user_key: str, name: str, description: str = "") -> Player:
        name = " ".join(clean_text(name).split())
        description = " ".join(clean_text(description).split())
        if not name:
            raise UserError("Give your character a name.")
        if name.casefold() in RESERVED_NAMES or name.casefold().startswith(("gm ", "gm:")):
            raise UserError(f"{name!r} is a name the game itself uses; choose another for your character.")
        if not NAME_PATTERN.fullmatch(name):
            raise UserError("A character's name is letters, digits, spaces, apostrophes, hyphens and full stops.")
        if len(name) > MAX_NAME_CHARS:
            raise UserError(f"A character name is at most {MAX_NAME_CHARS} characters.")
        if len(description) > MAX_DESCRIPTION_CHARS:
            raise UserError(f"A character description is at most {MAX_DESCRIPTION_CHARS} characters.")
        async with self.sessions[game_id].turn_lock:
            players = await self.store.players(game_id)
            if any(p.user_key == user_key for p in players):
                raise UserError("You have already joined this game.")
            if any(p.name.casefold() == name.casefold() for p in players):
                raise UserError(f"Someone already plays {name}; choose another name.")
            player = await self.store.add_player(game_id, user_key, name, description)
            game = await self.store.game(game_id)
            joined = f"{name} joins the game" + (f": {description}" if description else ".")
            await self.store.append(
                game_id, NewEntry(turn=game.turn + 1, kind=EntryKind.SYSTEM, author="system", content=joined)
            )
        return player

    async def leave(self, game_id: int, user_key: str) -> Player:
        async with self.sessions[game_id].turn_lock:
            player = await self._seated(game_id, user_key)
            await self.store.remove_player(player.id)
            game = await self.store.game(game_id)
            await self.store.append(
                game_id,
                NewEntry(turn=game.turn + 1, kind=EntryKind.SYSTEM, author="system", content=f"{player.name} leaves."),
            )
        return player

    async def players(self, game_id: int) -> list[Player]:
        return await self.store.players(game_id)

    async def player(self, game_id: int, user_key: str) -> Player | None:
        return await self.store.seated_player(game_id, user_key)

    async def _seated(self, game_id: int, user_key: str) -> Player:
        player = await self.store.seated_player(game_id, user_key)
        if player is None:
            raise UserError("Join the game first.")
        return player

    # Turns

    def check_action(self, text: str) -> str:
        """The action as it will be stored, or a :class:`UserError` saying what is wrong."""
        self._check_running()
        text = clean_text(text).strip()
        if not text:
            raise UserError("Say what your character does.")
        if len(text) > self.config.max_action_chars:
            raise UserError(f"That action is {len(text)} characters long; the limit is {self.config.max_action_chars}.")
        return text

    async def act(
        self,
        game_id: int,
        user_key: str,
        text: str,
        *,
        message_id: str | None = None,
        on_text: OnText | None = None,
    ) -> TurnResult:
        """Store a player's action, have the GM answer it, store and return the answer.

        ``on_text`` receives the reply piece by piece as the model writes it.
        If the model fails, the action stays in the log and :class:`ModelFailed`
        is raised; the next action is answered together with it.
        """
        text = self.check_action(text)
        async with self.sessions[game_id].turn_lock:
            game, action = await self._store_action(game_id, user_key, text, message_id)
            context = await self._context(game, action)
            return await self._answer(game, action, context, on_text)

    async def whisper(self, game_id: int, user_key: str, text: str) -> TurnResult:
        """A secret action: logged for that player alone, and the GM's whole answer goes to them alone.

        Nothing of it is public: the result's ``text`` is private too, and
        front ends deliver it with the result's ``private`` messages only.
        """
        text = self.check_action(text)
        async with self.sessions[game_id].turn_lock:
            game, action = await self._store_action(game_id, user_key, text, None, private=True)
            player = await self._seated(game_id, user_key)
            context = await self._context(game, action)
            return await self._answer(game, action, context, None, private_to=player)

    # The "round" turn policy: gather the players' actions, then narrate once

    async def turn_policy(self, game_id: int) -> str:
        return (await self.settings.turns(game_id))[0]

    async def add_to_round(
        self,
        game_id: int,
        user_key: str,
        text: str,
        *,
        on_closed: OnRoundClosed,
        message_id: str | None = None,
    ) -> RoundState:
        """Store an action for this round; the GM answers once everyone has acted or the window ends.

        ``on_closed`` gets the GM's answer, from whichever closes the round.
        """
        text = self.check_action(text)
        _, seconds = await self.settings.turns(game_id)
        async with self.sessions[game_id].turn_lock:
            _, action = await self._store_action(game_id, user_key, text, message_id)
            turn = action.turn
            pending = [e for e in await self.store.recent_log(game_id, 200) if e.turn == turn]
            acted = {e.player_id for e in pending if e.kind is EntryKind.ACTION}
            players = await self.store.players(game_id)
            waiting = [p.name for p in players if p.id not in acted]
        state = RoundState(turn, [p.name for p in players if p.id in acted], waiting, seconds)
        session = self.sessions[game_id]
        if not waiting:
            timer, session.round_timer = session.round_timer, None
            if timer is not None:
                timer.cancel()
            result = await self.close_round(game_id)
            if result is not None:
                await on_closed(result)
        elif session.round_timer is None or session.round_timer.done():
            session.round_timer = asyncio.create_task(self._round_timer(game_id, seconds, on_closed))
        return state

    async def _store_action(
        self, game_id: int, user_key: str, text: str, message_id: str | None, *, private: bool = False
    ) -> tuple[Game, LogEntry]:
        """Log a seated player's action for the coming turn; the caller holds the game's lock."""
        player = await self._seated(game_id, user_key)
        game = await self.store.game(game_id)
        if game.status != "active":
            raise UserError("This game has ended.")
        if private:
            seen = {"visibility": Visibility.PRIVATE, "visible_to": (player.id,)}
        else:
            seen = {"npcs": await self.memory.present_npcs(game, text)}
        (action,) = await self.store.append(
            game_id,
            NewEntry(turn=game.turn + 1, kind=EntryKind.ACTION, author=player.name, player_id=player.id,
                     content=text, message_id=message_id, **seen),
        )  # fmt: skip
        return game, action

    async def resume_round(self, game_id: int, on_closed: OnRoundClosed) -> float | None:
        """After a restart, run the window of a round that had actions and no answer; ``None`` if there is none.

        The window keeps its end: the seconds left from its first action (none, if it is already over).
        """
        policy, seconds = await self.settings.turns(game_id)
        session = self.sessions[game_id]
        pending = await self.unanswered(game_id)
        if policy != "round" or not pending or session.round_open:
            return None
        opened = pending[0].created_at
        opened = opened if opened.tzinfo else opened.replace(tzinfo=UTC)  # the store writes UTC
        left = max(0.0, seconds - (datetime.now(UTC) - opened).total_seconds())
        session.round_timer = asyncio.create_task(self._round_timer(game_id, left, on_closed))
        log.info("Game %d: the open round closes in %.0f s", game_id, left)
        return left

    async def _round_timer(self, game_id: int, seconds: float, on_closed: OnRoundClosed) -> None:
        await asyncio.sleep(seconds)
        self.sessions[game_id].round_timer = None
        try:
            result = await self.close_round(game_id)
            if result is not None:
                await on_closed(result)
        except Exception:
            log.exception("Game %d: closing the round failed; the actions are kept", game_id)

    async def close_round(self, game_id: int, *, on_text: OnText | None = None) -> TurnResult | None:
        """Narrate the round's actions now; ``None`` if nobody has acted since the last reply."""
        async with self.sessions[game_id].turn_lock:
            game = await self.store.game(game_id)
            if game.status != "active" or self.stopping:  # an ended game, or a process going down: no new call
                return None
            turn = game.turn + 1
            pending = [e for e in await self.store.recent_log(game_id, 200) if e.turn == turn]
            actions = [e for e in pending if e.kind is EntryKind.ACTION]
            if not actions:
                return None
            context = await self._context(game, actions[-1])
            return await self._answer(game, actions[-1], context, on_text)

    async def _answer(
        self,
        game: Game,
        action: LogEntry,
        context: Context,
        on_text: OnText | None,
        *,
        private_to: Player | None = None,
    ) -> TurnResult:
        """Have the model answer ``context``; guard and store the reply and its private asides; record the trace.

        A public turn streams to ``on_text`` and posts in the channel; the
        answer to a secret action (``private_to``) goes to that player alone,
        asides included.
        """
        turn = action.turn
        started = time.perf_counter()
        max_tokens = min(context.trace.reply_tokens, max(16, self.config.n_ctx - context.tokens))
        by_name = {p.name: p for p in await self.store.players(game.id)}
        if private_to is not None:
            by_name[private_to.name] = private_to
        recent = await self.store.recent_log(game.id, 50)
        acted = [e for e in recent if e.turn == turn and e.kind is EntryKind.ACTION]
        unlocked = " ".join(e.content for e in acted if e.visibility is Visibility.PUBLIC)
        earning = {} if private_to is not None else await self._clues_earned_by(game, action)
        guard = await self.guards.for_turn(game, self.world_of(game), unlocked, earning, EARNED_CLUE_TOLD)
        said = [e.content for e in recent if e.kind is EntryKind.GM and e.visibility is Visibility.PUBLIC and e.turn]
        shaping = _Shaping(
            list(by_name), [e.content for e in acted], said[-3:], self.config.shape_replies, public=private_to is None
        )
        if private_to is None:
            drafted = await self._public_reply(
                game.id, turn, context, max_tokens, on_text, guard, list(by_name), shaping
            )
        else:
            drafted = await self._private_reply(game.id, turn, context, max_tokens, private_to, list(by_name), shaping)
        earned = await self._earned_clues(game, action, drafted) if private_to is None else []
        notes = [await self._guard_note(guard, turn, by_name[note.name], note) for note in [*drafted.notes, *earned]]
        seconds = time.perf_counter() - started

        entries = []
        if private_to is None:
            npcs = await self.memory.present_npcs(game, unlocked, drafted.public)  # NPCs hear public actions only
            entries.append(
                NewEntry(turn=turn, kind=EntryKind.GM, author="GM", content=drafted.public or PRIVATE_ONLY, npcs=npcs)
            )
        entries += [
            NewEntry(turn=turn, kind=EntryKind.GM, author=f"GM to {note.name}", content=note.text,
                     visibility=Visibility.PRIVATE, visible_to=(by_name[note.name].id,))
            for note in notes
        ]  # fmt: skip
        stored = await self.store.append(game.id, *entries, turn_done=turn)
        asides = stored[len(stored) - len(notes) :]
        private = tuple(PrivateMessage(by_name[n.name], e) for n, e in zip(notes, asides, strict=True))
        trace = context.trace.model_copy(update=_turn_figures(drafted.narration, seconds))
        if private_to is not None:
            trace = trace.model_copy(update={"private_to": private_to.id})
        await self.store.save_trace(game.id, turn, trace.model_dump_json())
        self.sessions[game.id].last_prompt = [*context.messages, ChatMessage(role="assistant", content=drafted.raw)]
        self.memory.schedule(game.id)
        _log_turn(game.id, turn, trace)
        answered = Context(context.messages, trace, context.notes)
        return TurnResult(
            await self.store.game(game.id), turn, action, stored[0], answered, seconds, drafted.narration.first_text,
            private, drafted.draft, drafted.narration.stats, drafted.raw,
        )  # fmt: skip

    async def _public_reply(
        self, game_id: int, turn: int, context: Context, max_tokens: int, on_text: OnText | None,
        guard: TurnGuard, names: list[str], shaping: _Shaping,
    ) -> _Drafted:  # fmt: skip
        """A reply for the channel, streamed a checked sentence at a time; a leak is written again, then cut."""
        narration = await self._narrate(game_id, turn, context, max_tokens, on_text, guard=guard, shaping=shaping)
        raw = narration.text
        public, notes = split_reply(raw, names)
        hits = await guard.check(public)
        if not hits:
            return _Drafted(public, notes, None, narration, raw)
        draft = public
        clues = [h.ref.removeprefix("clue:") for h in hits if h.ref.startswith("clue:")]
        await guard.record(turn, "channel", hits, "regenerated")
        raw = (await self._narrate(game_id, turn, _warned(context), max_tokens, None, shaping=shaping)).text
        public, notes = split_reply(raw, names)
        hits = await guard.check(public)
        if hits:
            clues += [h.ref.removeprefix("clue:") for h in hits if h.ref.startswith("clue:")]
            await guard.record(turn, "channel", hits, "removed")
            public = strip(public, hits) or WITHHELD
        return _Drafted(public, notes, draft, narration, raw, tuple(dict.fromkeys(clues)))

    async def _earned_clues(self, game: Game, action: LogEntry, drafted: _Drafted) -> list[PrivateNote]:
        """The private clues the acting player's action earned and no aside of the turn gave: a beat's clue the
        model told in public (the guard kept it from the channel), or one of this chapter's it left unsaid (a small
        model rarely writes asides). Each goes to that player alone, once, as the world means."""
        if action.player_id is None:
            return []
        world = self.world_of(game)
        beats = {b.id: b for chapter in world.chapters for b in chapter.beats}
        wanted = dict.fromkeys(drafted.clues, EARNED_WORDS)
        for ref in await self._due_clues(game):
            wanted.setdefault(ref, EARNED_WORDS_UNSAID)
        asides = [{stem for stem, _ in content_words(n.text)} for n in drafted.notes]
        given: list[str] | None = None
        earned = []
        for ref, needed in wanted.items():
            clue = beats[ref].private_clue if ref in beats else None
            if not clue or not _earns(action.content, clue, needed):  # it stays unsaid
                continue
            words = {stem for stem, _ in content_words(clue)}
            if any(len(aside & words) >= TOLD_WORDS for aside in asides):
                continue  # the model gave it in an aside of its own
            if given is None:
                given = [e.content for e in await self.store.private_entries(game.id)]
            if clue in given:
                continue  # a clue is given once
            earned.append(PrivateNote(action.author, clue))
        return earned

    async def _due_clues(self, game: Game) -> list[str]:
        """The beats of the current chapter, not done yet, that carry a private clue."""
        world = self.world_of(game)
        state = await self.store.memory_state(game.id)
        if state.chapter_index >= len(world.chapters):
            return []
        beats = world.chapters[state.chapter_index].beats
        return [b.id for b in beats if b.private_clue and b.id not in state.beats_done]

    async def _clues_earned_by(self, game: Game, action: LogEntry) -> dict[str, frozenset[str]]:
        """The clues that ``action`` plainly earns (see :data:`EARNED_WORDS_UNSAID`), each with its own words that
        the action did not use: what a public sentence would tell it by."""
        if action.player_id is None or action.visibility is not Visibility.PUBLIC:
            return {}
        world = self.world_of(game)
        beats = {b.id: b for chapter in world.chapters for b in chapter.beats}
        did = {stem for stem, _ in content_words(action.content)}
        return {
            f"clue:{ref}": frozenset({stem for stem, _ in content_words(beats[ref].private_clue)} - did)
            for ref in await self._due_clues(game)
            if _earns(action.content, beats[ref].private_clue, EARNED_WORDS_UNSAID)
        }

    async def _private_reply(
        self, game_id: int, turn: int, context: Context, max_tokens: int, player: Player, names: list[str],
        shaping: _Shaping,
    ) -> _Drafted:  # fmt: skip
        """The answer to a secret action: all of it, asides to that player included, goes to them alone."""
        narration = await self._narrate(game_id, turn, context, max_tokens, None, shaping=shaping)
        public, notes = split_reply(narration.text, names)
        whole = " ".join([public, *(n.text for n in notes if n.name == player.name)]).strip()
        return _Drafted(
            "", [PrivateNote(player.name, whole or "The GM says nothing.")], None, narration, narration.text
        )

    async def _guard_note(self, guard: TurnGuard, turn: int, player: Player, note: PrivateNote) -> PrivateNote:
        """A private message without what is private to other players."""
        hits = await guard.check(note.text, audience=player.id)
        if not hits:
            return note
        await guard.record(turn, f"DM to {player.name}", hits, "removed")
        return PrivateNote(note.name, strip(note.text, hits) or WITHHELD)

    async def preview(self, game_id: int, author: str, text: str, *, budget: Budget | None = None) -> Context:
        """The prompt the GM would be given if ``author`` did ``text`` now. Nothing is stored."""
        text = self.check_action(text)
        game = await self.store.game(game_id)
        action = LogEntry(
            id=0, game_id=game_id, turn=game.turn + 1, kind=EntryKind.ACTION, author=author, content=text,
            created_at=datetime.now(UTC),
        )  # fmt: skip
        return await self._context(game, action, budget=budget, remember=False)

    async def _context(
        self,
        game: Game,
        action: LogEntry,
        *,
        before_id: int | None = None,
        budget: Budget | None = None,
        remember: bool = True,
    ) -> Context:
        """The prompt for answering ``action``, from the memory and the unsummarized log."""
        world = self.world_of(game)
        reply_tokens, memory = await self.settings.resolved(game.id)
        budget = budget or Budget(n_ctx=self.config.n_ctx, reply_tokens=reply_tokens, **memory.budgets.model_dump())
        state = await self.store.memory_state(game.id)
        hot = await self.store.log_between(game.id, state.folded_through, before_id)
        hot = [e for e in hot if e.id != action.id][-memory.history_limit :]
        view = await self.memory.view(game, state, hot, await self.store.players(game.id), action, memory)
        previous = self.sessions[game.id].last_prompt if remember else None
        count = self.worker.count_tokens

        def build() -> Context:
            built = build_context(
                world, view, action, budget, count, reply_words=max(30, budget.reply_tokens * 3 // 5),
                full_guide=self.config.full_guide,
            )  # fmt: skip
            built = squeeze_to_fit(built, budget.n_ctx, count)
            if previous is not None:
                built.trace.prefix_reuse = shared_prefix_share(previous, built.messages, count)
            return built

        try:  # counting tokens may wait on a tokenizer (a model server's): never on the loop
            context = await asyncio.to_thread(build)
        except ModelUnavailable as exc:
            log.warning("Game %d: counting the prompt's tokens failed: %s", game.id, exc)
            raise ModelFailed(MODEL_FAILED) from exc
        if not remember:
            return context
        if context.notes and action.id not in view.notes:  # kept with the action, so later prompts show it there
            await self.store.save_turn_notes(game.id, action.id, context.notes)
        log.debug("Game %d prompt:\n%s", game.id, "\n---\n".join(m.content for m in context.messages))
        return context

    async def _narrate(
        self,
        game_id: int,
        turn: int,
        context: Context,
        max_tokens: int,
        on_text: OnText | None,
        *,
        guard: TurnGuard | None = None,
        shaping: _Shaping | None = None,
        retried: bool = False,
        hold_back: bool = False,
    ) -> _Narration:
        """The model's whole reply; ``on_text`` sees its public part as it comes, a sentence at a time if guarded.

        With ``shaping``, the model stops at a seated player's line and the reply loses what
        :mod:`bot.engine.shaping` takes out, before anyone sees it.
        A reply that said nothing new (only the action again, or an earlier reply, or nothing
        before a player's line), or of which the rules left too little to stand as a reply (see
        :func:`says_enough`), is held back and asked for once more, with a note to say something new: the
        first try shows nothing until it has said enough.
        """
        if shaping is not None and shaping.enabled and not retried:  # one more try if the first said nothing new
            began = time.perf_counter()
            first = await self._narrate(
                game_id, turn, context, max_tokens, on_text, guard=guard, shaping=shaping, retried=True, hold_back=True
            )
            if not first.nothing_new:
                return first
            log.info("Game %d turn %d: the reply said nothing new, or too little; asked again", game_id, turn)
            waited = time.perf_counter() - began
            again = await self._narrate(
                game_id, turn, _nudged(context), max_tokens, on_text, guard=guard, shaping=shaping, retried=True
            )
            stats = first.stats.then(again.stats) if first.stats is not None else again.stats
            return dataclasses.replace(again, first_text=again.first_text + waited, stats=stats)
        started = time.perf_counter()
        first_text: float | None = None
        pieces: list[str] = []
        public = PublicStream()  # private asides never reach the screen, even half-written
        held = ""  # with a guard, text waits until its sentence is complete and checked
        # The first try of a public reply shows nothing until it has said enough to stand as a reply.
        short: str | None = "" if hold_back and shaping is not None and shaping.enabled and shaping.public else None

        async def show(text: str) -> None:
            nonlocal on_text, held
            if guard is not None:
                held += text
                text, held = complete_sentences(held)
                if text and await guard.check(text):
                    on_text = None  # it leaks: show nothing more; the guard's final reply replaces it
                    return
            if text and on_text is not None and not await _show(on_text, text):
                on_text = None  # the front end failed; it still gets the whole reply

        async def take(piece: str) -> None:
            nonlocal first_text, short
            if not piece:
                return
            pieces.append(piece)
            shown = public.feed(piece)
            if short is not None:
                short += shown
                if not says_enough(short, shaping.actions):
                    return
                shown, short = short, None
            if first_text is None:
                first_text = time.perf_counter() - started
            if shown and on_text is not None:
                await show(shown)

        shaper = shaping.shaper() if shaping is not None else ReplyShaper((), enabled=False)
        slot = self.sessions[game_id].slot
        # No stop sequences: the reply rules end a reply at a player's line, a few tokens later, and so know that
        # they took it out (a reply they left too little of is asked for once more).
        stream = self.worker.stream(
            context.messages, max_tokens=max_tokens, priority=Priority.PLAYER, slot=slot, label=slot
        )
        try:
            async with contextlib.aclosing(aiter(stream)) as reading:
                async for piece in reading:
                    await take(shaper.feed(piece))
                    if shaper.done:
                        break  # leaving the stream stops the model (closing it waits for that)
            written = stream.stats.generated_tokens if stream.stats else 0
            rest = shaper.finish(cut_by_length=written >= max_tokens)
            empty = not rest.strip() and not "".join(pieces).strip()  # it stopped at once, at a player's line
            if hold_back and shaping is not None and shaping.public and not empty:  # all of it in asides
                empty = not split_reply("".join(pieces) + rest, shaping.names)[0].strip()
            if hold_back and (shaper.said_nothing_new or empty):  # not shown: the caller asks once more
                return _Narration(rest, first_text or 0.0, stream.stats, shaper.shaped, nothing_new=True)
            await take(rest)
            if short is not None and shaper.shaped.dropped:  # the rules left too little of it: asked once more
                return _Narration("".join(pieces), 0.0, stream.stats, shaper.shaped, nothing_new=True)
            if short:  # a short reply as the model meant it: shown whole
                first_text = time.perf_counter() - started
                if on_text is not None:
                    await show(short)
        except Exception as exc:
            log.exception("Game %d turn %d: the model failed", game_id, turn)
            raise ModelFailed(MODEL_FAILED) from exc
        if shaper.shaped.dropped:
            log.info("Game %d turn %d: taken out of the reply: %r", game_id, turn, shaper.shaped.dropped)
        if guard is not None and held and on_text is not None:
            held, rest = "", held
            if not await guard.check(rest):
                await _show(on_text, rest)
        reply = "".join(pieces).strip()
        if not reply:
            log.warning("Game %d turn %d: the model returned an empty reply", game_id, turn)
            raise ModelFailed("The GM had nothing to say; your action is saved. Try again.")
        return _Narration(reply, first_text or 0.0, stream.stats, shaper.shaped)

    async def roll(self, game_id: int, user_key: str, expression: str, *, secret: bool = False) -> RollResult:
        """Roll dice into the log; a secret roll is seen by the roller and the GM only."""
        result = dice.roll(expression)  # raises before anything is stored
        async with self.sessions[game_id].turn_lock:
            player = await self._seated(game_id, user_key)
            game = await self.store.game(game_id)
            seen = {"visibility": Visibility.PRIVATE, "visible_to": (player.id,)} if secret else {}
            (entry,) = await self.store.append(
                game_id,
                NewEntry(
                    turn=game.turn + 1, kind=EntryKind.ROLL, author=player.name, player_id=player.id,
                    content=result.text, **seen,
                ),
            )  # fmt: skip
        return RollResult(result, entry)

    # Memory (F17, F18, F19)

    async def compact(self, game_id: int) -> CompactionReport:
        """Fold everything but the protected tail now, whatever the thresholds."""
        return await self.memory.compact(game_id, force=True)

    async def next_chapter(self, game_id: int) -> ChapterReport:
        """Finish the current chapter now: recap, fold into the story, move on."""
        return await self.memory.finish_chapter(game_id)

    async def memory_status(self, game_id: int) -> MemoryStatus:
        game = await self.store.game(game_id)
        return await memory_status(self, game)

    async def last_trace(
        self, game_id: int, *, player_id: int | None = None, everything: bool = False
    ) -> ContextTrace | None:
        """What the GM was given on the last turn (for /recall).

        A turn that answered a secret action is seen by that player (``player_id``) and by admins
        (``everything``) only: for everyone else the last turn is the last public one.
        """
        for text in await self.store.traces(game_id):
            trace = ContextTrace.model_validate_json(text)
            if everything or trace.private_to is None or trace.private_to == player_id:
                return trace
        return None

    async def edit_entry(self, game_id: int, entry_id: int, text: str, *, user_key: str | None = None) -> LogEntry:
        """Change a logged message; summaries that covered it are rebuilt in the background."""
        text = self.check_action(text)
        async with self.sessions[game_id].turn_lock:
            entry = await self._own_entry(game_id, entry_id, user_key)
            edited = await self.store.edit_entry(entry.id, text)
        self.memory.schedule(game_id)
        return edited

    async def delete_entry(self, game_id: int, entry_id: int, *, user_key: str | None = None) -> LogEntry:
        """Take a logged message out of the game; summaries that covered it are rebuilt."""
        async with self.sessions[game_id].turn_lock:
            entry = await self._own_entry(game_id, entry_id, user_key)
            deleted = await self.store.delete_entry(entry.id)
        self.memory.schedule(game_id)
        return deleted

    async def last_action_of(self, game_id: int, user_key: str) -> LogEntry:
        player = await self._seated(game_id, user_key)
        for entry in reversed(await self.store.recent_log(game_id, 200)):
            if entry.player_id == player.id and entry.kind is EntryKind.ACTION:
                return entry
        raise UserError("You have no recent action to change.")

    async def entry_by_message(self, message_id: str) -> LogEntry | None:
        return await self.store.entry_by_message(message_id)

    async def _own_entry(self, game_id: int, entry_id: int, user_key: str | None) -> LogEntry:
        entry = await self.store.entry(entry_id)
        if entry.game_id != game_id or entry.deleted:
            raise UserError("That message is not part of this game.")
        if user_key is not None:
            player = await self.store.seated_player(game_id, user_key)
            if player is None or entry.player_id != player.id:
                raise UserError("You can only change your own messages.")
        return entry

    async def retry(self, game_id: int, *, on_text: OnText | None = None, user_key: str | None = None) -> TurnResult:
        """Write the GM's last answer again; the old one and its private asides leave the log.

        The answer to a secret action is written again for that player alone, and only they
        may ask for it when ``user_key`` says who asks (``None``: an admin or the terminal).
        """
        self._check_running()
        async with self.sessions[game_id].turn_lock:
            game = await self.store.game(game_id)
            recent = await self.store.recent_log(game_id, 200)
            unanswered = [e for e in recent if e.turn == game.turn + 1 and e.kind is EntryKind.ACTION]
            if unanswered:  # the last turn failed or was cut off: answer it, and leave the reply before alone
                if self.sessions[game_id].round_open:
                    raise UserError("The round is still open: the GM answers once everyone has acted or time is up.")
                action, first = unanswered[-1], None
            else:
                answers = [e for e in recent if e.kind is EntryKind.GM and e.turn == game.turn]
                if not answers or game.turn == 0:
                    raise UserError("There is no GM reply to retry yet.")
                first = answers[0]
                action = next((e for e in reversed(recent) if e.id < first.id and e.kind is EntryKind.ACTION), None)
                if action is None:
                    raise UserError("There is no action to answer again.")
            secret = action.visibility is Visibility.PRIVATE
            if secret and user_key is not None:
                asker = await self.store.seated_player(game_id, user_key)
                if asker is None or asker.id != action.player_id:
                    raise UserError("The last answer was to someone's secret action; only they can retry it.")
            if first is not None:
                for old in answers:
                    await self.store.delete_entry(old.id)
            context = await self._context(game, action, before_id=first.id if first else None)
            if secret:
                player = await self.store.player(action.player_id)
                return await self._answer(game, action, context, None, private_to=player)
            return await self._answer(game, action, context, on_text)

    async def unanswered(self, game_id: int) -> list[LogEntry]:
        """Actions stored for the coming turn that no reply answers yet: a failed turn, a crash, an open round."""
        game = await self.store.game(game_id)
        recent = await self.store.recent_log(game_id, 200)
        return [e for e in recent if e.turn == game.turn + 1 and e.kind is EntryKind.ACTION]

    # Pins, facts, lore, glossary, buckets (F11 to F14, F20)

    @property
    def ledger(self) -> Ledger:
        return self.memory.ledger

    async def pin(self, game_id: int, text: str, author: str) -> PinResult:
        return await self.ledger.pin(game_id, text, author)

    async def unpin(self, game_id: int, which: str) -> Pin:
        return await self.ledger.unpin(game_id, which)

    async def pins(self, game_id: int) -> list[Pin]:
        return await self.store.pins(game_id)

    async def facts(self, game_id: int, *, include_superseded: bool = False) -> list[Fact]:
        return await self.ledger.facts(game_id, include_superseded=include_superseded)

    async def lore(self, game_id: int) -> list[LoreListing]:
        return await self.ledger.lore(game_id)

    async def glossary(self, game_id: int) -> list[GlossaryTerm]:
        return await self.ledger.glossary(game_id)

    async def buckets(self, game_id: int) -> Buckets:
        return await self.ledger.buckets(game_id)

    async def set_bucket(self, game_id: int, name: str, on: bool) -> Buckets:
        return await self.ledger.set_bucket(game_id, name, on)

    # A player's private memory (F5): what their character knows, from what they witnessed

    async def private_memory(self, game_id: int, user_key: str) -> tuple[Player, PlayerMemory | None]:
        """The seated player and their private memory (``None`` before their first update)."""
        player = await self._seated(game_id, user_key)
        return player, await self.memory.players.memory(game_id, player.id)

    async def games_of(self, user_key: str) -> list[Game]:
        """The active games ``user_key`` is seated in."""
        return await self.store.games_of(user_key)

    async def server_of(self, game_id: int) -> str | None:
        """The server a game is played in (its id as a string); ``None`` outside one."""
        return await self.settings.server_of(game_id)

    async def release_seats(self, user_key: str, server: str) -> list[tuple[Game, Player]]:
        """``user_key`` is no longer in ``server`` (they left, or were banned): their seats in its games are
        released, so nothing more of those games reaches them; the games and the seats released, for the table."""
        released = []
        for game in await self.games_of(user_key):
            if await self.settings.server_of(game.id) == server:
                released.append((game, await self.leave(game.id, user_key)))
        return released

    # A player's own notes (F5): private reminders the GM is not promised to read

    async def notes(self, game_id: int, user_key: str) -> list[str]:
        await self._seated(game_id, user_key)
        return list((await self.store.settings(f"notes:{game_id}")).get(user_key, []))

    async def add_note(self, game_id: int, user_key: str, text: str) -> list[str]:
        text = " ".join(clean_text(text).split())
        if not text:
            raise UserError("Write the note after the command.")
        if len(text) > 500:
            raise UserError("A note is at most 500 characters.")
        notes = await self.notes(game_id, user_key)
        if len(notes) >= 50:
            raise UserError("You have 50 notes; remove one first.")
        await self.store.set_setting(f"notes:{game_id}", user_key, [*notes, text])
        return [*notes, text]

    async def remove_note(self, game_id: int, user_key: str, number: int) -> str:
        notes = await self.notes(game_id, user_key)
        if not 1 <= number <= len(notes):
            raise UserError(f"You have no note {number}; /notes lists them.")
        removed = notes.pop(number - 1)
        await self.store.set_setting(f"notes:{game_id}", user_key, notes)
        return removed

    # Per-game settings (F20)

    async def game_settings(self, game_id: int) -> dict[str, object]:
        """Every per-game setting with its value for this game."""
        reply_tokens, memory = await self.settings.resolved(game_id)
        values: dict[str, object] = {"reply_tokens": reply_tokens}
        values.update({k: v for k, v in memory.model_dump().items() if k != "budgets"})
        values.update({f"budgets.{k}": v for k, v in memory.budgets.model_dump().items()})
        return values

    async def set_setting(self, game_id: int, name: str, value: str) -> dict[str, object]:
        await self.store.game(game_id)
        return await self.settings.set(game_id, name, value)

    async def reset_setting(self, game_id: int, name: str) -> None:
        """Take back a game's own value of a setting or a bucket switch (``buckets.NAME``)."""
        if name.startswith("buckets."):
            await self.ledger.reset_bucket(game_id, name.removeprefix("buckets."))
        else:
            await self.settings.reset(game_id, name)

    async def reset_server_setting(self, server: str, name: str) -> None:
        """Take back a server's default of a setting or a bucket switch (``buckets.NAME``)."""
        if name.startswith("buckets."):
            await self.ledger.reset_server_bucket(server, name.removeprefix("buckets."))
        else:
            await self.settings.reset_for_server(server, name)

    async def history(self, game_id: int, limit: int = 20) -> list[LogEntry]:
        return await self.store.recent_log(game_id, limit)


async def _show(on_text: OnText, piece: str) -> bool:
    try:
        shown = on_text(piece)
        if shown is not None:
            await shown
    except Exception:
        log.exception("Showing the reply as it streams failed; it is still stored whole")
        return False
    return True


def _earns(action: str, clue: str, needed: int) -> bool:
    """Whether an action does what a clue is for: ``needed`` content words of the clue's first sentence ("Whoever
    sniffs the brandy glass on the desk ...")."""
    how = {stem for stem, _ in content_words(sentences(clue)[0])}
    return len({stem for stem, _ in content_words(action)} & how) >= needed


def _turn_figures(narration: _Narration, seconds: float) -> dict[str, object]:
    """What a turn's trace records of its cost, for /memory-status and the log."""
    figures: dict[str, object] = {
        "first_text_seconds": round(narration.first_text, 3),
        "reply_seconds": round(seconds, 3),
    }
    if narration.stats is not None:
        figures.update(
            model_prompt_tokens=narration.stats.prompt_tokens,
            model_reused_tokens=narration.stats.reused_tokens,
            model_evaluated_tokens=narration.stats.evaluated_tokens,
            model_generated_tokens=narration.stats.generated_tokens,
        )
    return figures


def _log_turn(game_id: int, turn: int, trace: ContextTrace) -> None:
    hot = trace.layer("hot")
    model = (
        f", model read {trace.model_evaluated_tokens} of {trace.model_prompt_tokens} prompt tokens"
        if trace.model_prompt_tokens is not None
        else ""
    )
    log.info(
        "Game %d turn %d: prompt %d tokens (hot %d, left out %d, reuse %.0f%%)%s, first text %.2fs, reply %.2fs",
        game_id, turn, trace.total_tokens, len(hot.items), len(hot.left_out), 100 * (trace.prefix_reuse or 0),
        model, trace.first_text_seconds or 0.0, trace.reply_seconds or 0.0,
    )  # fmt: skip
    if trace.overflow:
        log.warning("Game %d turn %d: %s", game_id, turn, trace.overflow)


def _nudged(context: Context) -> Context:
    """``context`` with a note on its last message: the last try said nothing new, say something new."""
    *front, last = context.messages
    nudged = ChatMessage(role=last.role, content=f"{last.content}\n\n{SAY_SOMETHING_NEW}")
    return Context([*front, nudged], context.trace)


def _warned(context: Context) -> Context:
    """``context`` with a note on its last message: the draft leaked, write it again."""
    *front, last = context.messages
    return Context([*front, ChatMessage(role=last.role, content=f"{last.content}\n\n{REGENERATE}")], context.trace)
