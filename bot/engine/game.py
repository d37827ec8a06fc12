"""The engine's front door: what a front end (the Discord cogs, the terminal) asks of the games.

Each method is something a player or an admin does, or something a front
end shows; the work is done by the modules behind it, one job each:
:mod:`~bot.engine.turn.turns` (the turn pipeline, over :mod:`~bot.engine.turn.prompt`,
:mod:`~bot.engine.turn.drafting`, :mod:`~bot.engine.turn.narration` and
:mod:`~bot.engine.secrets.clues`), :mod:`~bot.engine.turn.rounds`, :mod:`~bot.engine.turn.edits`
(the game log's edits and retries), :mod:`~bot.engine.table.seats`,
:mod:`~bot.engine.table.notes`, :mod:`~bot.engine.upkeep.memory` (the memory's upkeep),
:mod:`~bot.engine.upkeep.ledger` (pins, facts, lore, glossary),
:mod:`~bot.engine.table.settings` and :mod:`~bot.engine.table.servers`. It calls the
store, the memory policy and the model; it knows nothing of Discord.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC, datetime

from bot import dice
from bot.cleantext import clean_text
from bot.engine.measures import Measures
from bot.engine.secrets.guard import LeakGuards
from bot.engine.secrets.reveals import Reveals
from bot.engine.secrets.reveals import shown as reveal_lines
from bot.engine.table.config import EngineConfig
from bot.engine.table.notes import PlayerNotes
from bot.engine.table.seats import Seats
from bot.engine.table.server_admin import ServerAdmin
from bot.engine.table.servers import Servers
from bot.engine.table.session import Sessions
from bot.engine.table.settings import GameSettings
from bot.engine.turn.drafting import REGENERATE, WITHHELD
from bot.engine.turn.edits import LogEdits
from bot.engine.turn.narration import Narrator
from bot.engine.turn.prompt import Prompts
from bot.engine.turn.results import (
    MODEL_FAILED,
    MODEL_UNAVAILABLE,
    GameStarted,
    ModelDown,
    ModelFailed,
    OnRoundClosed,
    OnText,
    PrivateMessage,
    RollResult,
    RoundState,
    TurnResult,
    asks_the_model,
)
from bot.engine.turn.rounds import Rounds
from bot.engine.turn.turns import PRIVATE_ONLY, Turns, coming_actions
from bot.engine.turn.warmup import WarmUps
from bot.engine.upkeep.ledger import Ledger, LoreListing, PinResult
from bot.engine.upkeep.meaning import MeaningIndex
from bot.engine.upkeep.memory import ChapterReport, CompactionReport, MemoryKeeper
from bot.engine.upkeep.status import MemoryStatus, memory_status
from bot.errors import UserError
from bot.memory.config import Buckets
from bot.memory.context import Budget, Context, ContextTrace
from bot.model.base import ModelUnavailable
from bot.model.embedding import Embedder
from bot.model.worker import ModelWorker
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
from bot.worlds import LoreEntry, World, WorldFileError, WorldLibrary

log = logging.getLogger(__name__)

# What a front end or a bench may import from here, beside the engine.
__all__ = [
    "MODEL_FAILED", "MODEL_UNAVAILABLE", "NO_GAME", "PRIVATE_ONLY", "REGENERATE", "WITHHELD", "Engine",
    "EngineConfig", "GameStarted", "ModelDown", "ModelFailed", "ModelUnavailable", "OnRoundClosed", "OnText",
    "PrivateMessage", "RollResult", "RoundState", "TurnResult",
]  # fmt: skip

NO_GAME = "There is no game here; start one first."


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
        self.settings = GameSettings(store, config.memory, config.reply_tokens)
        self.sessions = Sessions()
        self.meaning = MeaningIndex(store, worker, embedder, embedder_unavailable, config.vectors_bytes)
        self.memory = MemoryKeeper(
            store, worker, self.world_of, config.memory, self.settings, self.sessions, meaning=self.meaning,
            meaning_weight=config.meaning_weight,
        )  # fmt: skip
        self.guards = LeakGuards(store, self.meaning)
        self.reveals = Reveals(store, self.world_of, self.memory.cast, self.meaning)
        self.servers = Servers(store, worlds, max_total_bytes=config.server_worlds_bytes)
        self.seats = Seats(store, self.sessions)
        self.prompts = Prompts(
            store, worker, self.memory, self.settings, self.sessions, self.world_of, config, self.reveals
        )
        self.turns = Turns(
            store, self.seats, Narrator(worker, self.sessions), self.prompts, self.memory, self.guards,
            self.sessions, self.world_of, config, self.reveals,
        )  # fmt: skip
        self.rounds = Rounds(store, self.settings, self.sessions, self.turns, lambda: self.stopping)
        self.edits = LogEdits(store, self.sessions, self.memory, self.seats, self.turns)
        self.player_notes = PlayerNotes(store, self.seats)
        self.warmups = WarmUps(
            store, worker, self.prompts, self.sessions, lambda: self.stopping or not self.config.read_ahead
        )
        self.config = config
        self.measures = Measures(self)  # what a bench reads of the engine (bot.engine.measures)
        self.stopping = False  # set by drain(): the process is going down
        self._started = False

    @property
    def config(self) -> EngineConfig:
        return self._config

    @config.setter
    def config(self, config: EngineConfig) -> None:
        """A new config (a test's, a bench's) takes effect whole with the next turn: the prompt and turn
        settings, the memory's defaults and reply length under every game's own settings, and the byte caps."""
        self._config = self.prompts.config = self.turns.config = config
        self.settings.base, self.settings.reply_tokens = config.memory, config.reply_tokens
        self.meaning.cap_bytes = config.vectors_bytes
        self.servers.max_total_bytes = config.server_worlds_bytes

    @property
    def ledger(self) -> Ledger:
        return self.memory.ledger

    # The process

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

    async def close(self) -> None:
        """Stop background upkeep and round timers; stored actions wait for the next round."""
        for session in self.sessions:
            if session.round_timer is not None:
                session.round_timer.cancel()
        await self.warmups.close()
        await self.memory.close()
        await self.guards.close()
        await self.meaning.close()

    @property
    def writes_failing(self) -> int:
        """Writes to the database that failed since the last one saved (0: everything so far is saved)."""
        return self.store.failing_writes

    async def remembered(self, scope: str) -> dict[str, object]:
        """What a front end keeps for itself across restarts under ``scope`` (the commands it last sent)."""
        return await self.store.scope_values(scope)

    async def remember(self, scope: str, key: str, value: object) -> None:
        await self.store.set_scope_value(scope, key, value)

    def _check_running(self) -> None:
        if self.stopping:
            raise UserError("The GM is restarting; nothing was saved. Try again in a minute.")

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
        self.warmups.schedule(game.id)  # its first turn is not read cold (F35)
        log.info("Game %d started in %s with world %s", game.id, channel_key, world.id)
        return GameStarted(await self.store.game(game.id), world, entry)

    async def game_in(self, channel_key: str) -> Game | None:
        """The game being played in a channel; ``None`` if there is none."""
        return await self.store.active_game(channel_key)

    async def current_game(self, channel_key: str) -> Game:
        """The game being played in a channel, or a :class:`UserError` saying there is none."""
        game = await self.game_in(channel_key)
        if game is None:
            raise UserError(NO_GAME)
        return game

    async def active_games(self) -> list[Game]:
        return await self.store.games("active")

    async def games_of(self, user_key: str) -> list[Game]:
        """The active games ``user_key`` is seated in."""
        return await self.store.games_of(user_key)

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
        self.warmups.schedule(game.id)
        return game

    async def end_game(self, channel_key: str) -> Game:
        game = await self.current_game(channel_key)
        async with self.sessions[game.id].turn_lock:
            ended = await self.store.end_game(game.id)
            self.rounds.stop_timer(game.id)  # its round ends with the game: nothing is narrated into a finished one
            self.warmups.cancel(game.id)  # nor is its prompt read ahead
            # What the model kept for it goes too; in a thread, as it may wait for another game's state being
            # written (1.8 s measured), which the event loop, serving every other game, must not.
            await asyncio.to_thread(self.worker.model.drop_state, self.sessions[game.id].slot)
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

    async def history(self, game_id: int, limit: int = 20) -> list[LogEntry]:
        return await self.store.recent_log(game_id, limit)

    # Players

    async def join(self, game_id: int, user_key: str, name: str, description: str = "") -> Player:
        player = await self.seats.join(game_id, user_key, name, description)
        self.warmups.schedule(game_id)  # the players' line closes the frozen layer: read it again ahead of the turn
        return player

    async def leave(self, game_id: int, user_key: str) -> Player:
        player = await self.seats.leave(game_id, user_key)
        self.warmups.schedule(game_id)
        return player

    async def players(self, game_id: int, *, include_left: bool = False) -> list[Player]:
        """The seated players; ``include_left``: those who left too (the log still names them)."""
        return await self.store.players(game_id, include_left=include_left)

    async def player(self, game_id: int, user_key: str) -> Player | None:
        return await self.store.seated_player(game_id, user_key)

    async def release_seats(self, user_key: str, server: str) -> list[tuple[Game, Player]]:
        """``user_key`` is no longer in ``server`` (they left, or were banned): their seats in its games are
        released, so nothing more of those games reaches them; the games and the seats released, for the table."""
        released = []
        for game in await self.games_of(user_key):
            if await self.settings.server_of(game.id) == server:
                released.append((game, await self.leave(game.id, user_key)))
        return released

    async def private_memory(self, game_id: int, user_key: str) -> tuple[Player, PlayerMemory | None]:
        """The seated player and their private memory (F5; ``None`` before their first update)."""
        player = await self.seats.seated(game_id, user_key)
        return player, await self.memory.players.memory(game_id, player.id)

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
        self, game_id: int, user_key: str, text: str, *, message_id: str | None = None, on_text: OnText | None = None
    ) -> TurnResult:
        """Store a player's action, have the GM answer it, store and return the answer.

        ``on_text`` receives the reply piece by piece as the model writes it.
        If the model fails, the action stays in the log and :class:`ModelFailed`
        is raised, its ``turn`` the one the action was stored at (what a Retry
        answers); the next action is answered together with it.
        """
        text = self.check_action(text)
        async with self.sessions[game_id].turn_lock:
            game, action = await self.turns.store_action(game_id, user_key, text, message_id)
            try:
                return await self.turns.answer(game, action, on_text=on_text)
            except ModelFailed as failed:
                failed.turn = action.turn  # stored under the lock: a turn that ran meanwhile moved it on
                raise

    async def whisper(self, game_id: int, user_key: str, text: str) -> TurnResult:
        """A secret action: logged for that player alone, and the GM's whole answer goes to them alone.

        Nothing of it is public: the result's ``text`` is private too, and
        front ends deliver it with the result's ``private`` messages only.
        """
        text = self.check_action(text)
        async with self.sessions[game_id].turn_lock:
            game, action = await self.turns.store_action(game_id, user_key, text, None, private=True)
            player = await self.seats.seated(game_id, user_key)
            return await self.turns.answer(game, action, private_to=player)

    async def roll(self, game_id: int, user_key: str, expression: str, *, secret: bool = False) -> RollResult:
        """Roll dice into the log; a secret roll is seen by the roller and the GM only."""
        result = dice.roll(expression)  # raises before anything is stored
        async with self.sessions[game_id].turn_lock:
            player = await self.seats.seated(game_id, user_key)
            game = await self.store.game(game_id)
            visibility, visible_to = (Visibility.PRIVATE, (player.id,)) if secret else (Visibility.PUBLIC, ())
            (entry,) = await self.store.append(
                game_id,
                NewEntry(
                    turn=game.turn + 1, kind=EntryKind.ROLL, author=player.name, player_id=player.id,
                    content=result.text, visibility=visibility, visible_to=visible_to,
                ),
            )  # fmt: skip
        return RollResult(result, entry)

    async def preview(self, game_id: int, author: str, text: str, *, budget: Budget | None = None) -> Context:
        """The prompt the GM would be given if ``author`` did ``text`` now. Nothing is stored."""
        text = self.check_action(text)
        game = await self.store.game(game_id)
        action = LogEntry(
            id=0, game_id=game_id, turn=game.turn + 1, kind=EntryKind.ACTION, author=author, content=text,
            created_at=datetime.now(UTC),
        )  # fmt: skip
        return await self.prompts.build(game, action, budget=budget, remember=False)

    def turn_running(self, game_id: int) -> bool:
        """A turn, join, roll or edit holds the game: whatever comes next waits for it."""
        return self.sessions[game_id].turn_running

    async def unanswered(self, game_id: int) -> list[LogEntry]:
        """Actions stored for the coming turn that no reply answers yet: a failed turn, a crash, an open round."""
        return await coming_actions(self.store, await self.store.game(game_id))

    # The "round" turn policy: gather the players' actions, then narrate once

    async def turn_policy(self, game_id: int) -> str:
        return (await self.settings.turns(game_id))[0]

    async def add_to_round(
        self, game_id: int, user_key: str, text: str, *, on_closed: OnRoundClosed, message_id: str | None = None
    ) -> RoundState:
        """Store an action for this round; the GM answers once everyone has acted or the window ends.

        ``on_closed`` gets the GM's answer, from whichever closes the round.
        """
        text = self.check_action(text)
        return await self.rounds.add(game_id, user_key, text, on_closed=on_closed, message_id=message_id)

    async def resume_round(self, game_id: int, on_closed: OnRoundClosed) -> float | None:
        """After a restart, run the window of a round that had actions and no answer; ``None`` if there is none."""
        return await self.rounds.resume(game_id, on_closed)

    async def close_round(self, game_id: int, *, on_text: OnText | None = None) -> TurnResult | None:
        """Narrate the round's actions now; ``None`` if nobody has acted since the last reply."""
        return await self.rounds.close(game_id, on_text=on_text)

    # The game log's edits (F19)

    async def edit_entry(self, game_id: int, entry_id: int, text: str, *, user_key: str | None = None) -> LogEntry:
        """Change a logged message; summaries that covered it are rebuilt in the background."""
        return await self.edits.edit(game_id, entry_id, self.check_action(text), user_key=user_key)

    async def delete_entry(self, game_id: int, entry_id: int, *, user_key: str | None = None) -> LogEntry:
        """Take a logged message out of the game; summaries that covered it are rebuilt."""
        return await self.edits.delete(game_id, entry_id, user_key=user_key)

    async def last_action_of(self, game_id: int, user_key: str) -> LogEntry:
        return await self.edits.last_action_of(game_id, user_key)

    async def entry_by_message(self, message_id: str) -> LogEntry | None:
        return await self.store.entry_by_message(message_id)

    async def retry(self, game_id: int, *, on_text: OnText | None = None, user_key: str | None = None) -> TurnResult:
        """Write the GM's last answer again, or answer an action left unanswered (see :meth:`LogEdits.retry`)."""
        self._check_running()
        return await self.edits.retry(game_id, on_text=on_text, user_key=user_key)

    # Memory (F17, F18, F19)

    async def compact(self, game_id: int) -> CompactionReport:
        """Fold everything but the protected tail now, whatever the thresholds."""
        async with asks_the_model(game_id, "compacting"):
            return await self.memory.compact(game_id, force=True)

    async def next_chapter(self, game_id: int) -> ChapterReport:
        """Finish the current chapter now: recap, fold into the story, move on."""
        async with asks_the_model(game_id, "finishing the chapter"):
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

    async def uncovered_so_far(self, game_id: int) -> list[str]:
        """What the players' actions uncovered so far, each with the turn, who earned it and the condition that
        held (F39): for a game's admins only, so an author can tell why Maya got a clue and Tom did not."""
        return reveal_lines(await self.store.reveals(game_id), await self.store.players(game_id, include_left=True))

    # Pins, facts, lore, glossary, buckets (F11 to F14, F20)

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

    async def add_lore(self, game_id: int, **fields) -> LoreEntry:
        """A lore entry of this game's own (``keys``, ``content``, ``secondary_keys``, ``priority``, ``always_on``)."""
        return await self.ledger.lore_add(game_id, **fields)

    async def edit_lore(self, game_id: int, entry_id: str, **changes) -> LoreEntry:
        return await self.ledger.lore_edit(game_id, entry_id, **changes)

    async def remove_lore(self, game_id: int, entry_id: str) -> LoreEntry:
        return await self.ledger.lore_remove(game_id, entry_id)

    async def import_lore(self, game_id: int, entries: list[LoreEntry]) -> list[LoreEntry]:
        return await self.ledger.lore_import(game_id, entries)

    async def glossary(self, game_id: int) -> list[GlossaryTerm]:
        return await self.ledger.glossary(game_id)

    async def buckets(self, game_id: int) -> Buckets:
        return await self.settings.buckets(game_id)

    async def set_bucket(self, game_id: int, name: str, on: bool) -> Buckets:
        return await self.settings.set_bucket(game_id, name, on)

    # A player's own notes (F5)

    async def notes(self, game_id: int, user_key: str) -> list[str]:
        return await self.player_notes.of(game_id, user_key)

    async def add_note(self, game_id: int, user_key: str, text: str) -> list[str]:
        return await self.player_notes.add(game_id, user_key, text)

    async def remove_note(self, game_id: int, user_key: str, number: int) -> str:
        return await self.player_notes.remove(game_id, user_key, number)

    # Per-game settings (F20)

    async def game_settings(self, game_id: int) -> dict[str, object]:
        """Every per-game setting with its value for this game."""
        reply_tokens, memory = await self.settings.resolved(game_id)
        values: dict[str, object] = {"reply_tokens": reply_tokens}
        values.update({k: v for k, v in memory.model_dump().items() if k != "budgets"})
        values.update({f"budgets.{k}": v for k, v in memory.budgets.model_dump().items()})
        return values

    async def setting_sources(self, game_id: int) -> dict[str, str]:
        """Where each setting of a game that is not the bot's default comes from: ``game`` or ``server``."""
        return await self.settings.sources(game_id)

    async def capped_settings(self, game_id: int) -> dict[str, object]:
        """The game's settings whose stored value is past the host's ceiling (set before the host lowered it):
        the value stored, by name; :meth:`game_settings` gives the ceiling, which is what the game uses."""
        return {name: stored for name, (stored, _) in (await self.settings.capped(game_id)).items()}

    async def set_setting(self, game_id: int, name: str, value: str) -> dict[str, object]:
        await self.store.game(game_id)
        return await self.settings.set(game_id, name, value)

    async def reset_setting(self, game_id: int, name: str) -> None:
        """Take back a game's own value of a setting or a bucket switch (``buckets.NAME``)."""
        await self.settings.reset(game_id, name)

    async def server_of(self, game_id: int) -> str | None:
        """The server a game is played in (its id as a string); ``None`` outside one."""
        return await self.settings.server_of(game_id)

    # Servers and worlds (F21, F23)

    def server(self, server: str) -> ServerAdmin:
        """What a server's admins set for its games: worlds, GM role, the defaults of settings and buckets."""
        return ServerAdmin(server, self.store, self.servers, self.settings)

    def worlds_for(self, server: str | None) -> dict[str, World]:
        """The worlds a server may play (every shipped world outside one), by name."""
        return self.servers.visible(server)

    def world_for(self, server: str | None, name: str) -> World:
        """The world a name typed in a server stands for, or a :class:`UserError` listing the worlds there."""
        return self.servers.resolve(server, name)[1]

    def ships_world(self, name: str) -> bool:
        """Whether the bot ships a world of that name (a server's own world of the name hides it there)."""
        return name in self.worlds.worlds

    async def settled(self, game_id: int | None = None) -> None:
        """Wait until what the turns and joins left behind is done: the memory's upkeep (of ``game_id``, or of every
        game), the embedding of what they stored, and the prompt read ahead of the next turn, so that the next turn
        finds all of it (tests, benches)."""
        await self.memory.idle(game_id)
        await self.meaning.idle()
        await self.warmups.idle(game_id)

    def hold_upkeep(self) -> None:
        """Keep the memory's upkeep after each turn back until :meth:`release_upkeep`: turns are then measured
        alone (``bench turns``), or a batch of questions asked of one state of the memory."""
        self.memory.hold()

    def release_upkeep(self) -> None:
        """Run the upkeep held back since :meth:`hold_upkeep`."""
        self.memory.release()

    async def reload_worlds(self) -> tuple[int, list[WorldFileError]]:
        """Read the shipped world files again: how many worlds are loaded, and the files left out."""
        errors = await self.worlds.reload_in_thread()
        return len(self.worlds.worlds), errors
