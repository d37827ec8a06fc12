"""The turn pipeline: a player's action into the log, its prompt, the GM's reply drafted, guarded and stored.

:meth:`Turns.answer` runs one turn: it gathers what shapes the reply (the
seated players, the turn's actions, the last replies, the leak guard),
drafts it (:mod:`bot.engine.turn.drafting`, over :mod:`bot.engine.turn.narration`),
adds the private clues the action earned (:mod:`bot.engine.secrets.clues`), and
stores the reply, its asides and the prompt's trace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.engine.secrets.clues import EARNED_CLUE_TOLD, Clues, earned_words
from bot.engine.secrets.guard import LeakGuards, TurnGuard
from bot.engine.secrets.probes import OUT_OF_PLAY, out_of_play
from bot.engine.secrets.reveals import Reveals
from bot.engine.table.config import EngineConfig
from bot.engine.table.seats import Seats
from bot.engine.table.session import Sessions
from bot.engine.turn.answers import referents
from bot.engine.turn.drafting import Drafted, Drafts, guard_note
from bot.engine.turn.narration import Narration, Narrator, Request, Shaping
from bot.engine.turn.prompt import Prompts
from bot.engine.turn.results import OnText, PrivateMessage, TurnResult
from bot.engine.upkeep.memory import MemoryKeeper
from bot.errors import UserError
from bot.memory.context import Context, ContextTrace
from bot.memory.private import PrivateNote
from bot.memory.transcript import RECENT_REPLIES
from bot.model.base import ChatMessage
from bot.store import EntryKind, Game, LogEntry, NewEntry, NewReveal, Player, Store, Visibility
from bot.worlds import World

log = logging.getLogger(__name__)

PRIVATE_ONLY = "(The GM answers privately.)"
# How far back the log is read for the coming turn's actions and the last reply: a turn is a few lines (a round
# of a full table, a few dozen), well within the newest 200.
TURN_WINDOW = 200


async def coming_actions(store: Store, game: Game) -> list[LogEntry]:
    """The actions stored for the coming turn of ``game`` (as read now): no reply answers them yet."""
    recent = await store.recent_log(game.id, TURN_WINDOW)
    return [e for e in recent if e.turn == game.turn + 1 and e.kind is EntryKind.ACTION]


@dataclass(frozen=True)
class _Table:
    """Who a turn's reply is for: the seated players by name, and the turn's public actions (they may open a
    truth)."""

    by_name: dict[str, Player]
    unlocked: str


@dataclass(eq=False)
class Turns:
    """Stores actions and answers them, one turn of a game at a time: the caller holds the game's turn lock,
    and both say so if it does not."""

    store: Store
    seats: Seats
    narrator: Narrator
    prompts: Prompts
    memory: MemoryKeeper
    guards: LeakGuards
    sessions: Sessions
    world_of: Callable[[Game], World]
    config: EngineConfig
    reveals: Reveals
    drafts: Drafts = field(init=False)
    clues: Clues = field(init=False)

    def __post_init__(self) -> None:
        self.drafts = Drafts(self.narrator)
        self.clues = Clues(self.store, self.world_of)

    async def store_action(
        self, game_id: int, user_key: str, text: str, message_id: str | None, *, private: bool = False
    ) -> tuple[Game, LogEntry]:
        """Log a seated player's action for the coming turn."""
        self.sessions[game_id].turn_lock.require("Storing an action")
        player = await self.seats.seated(game_id, user_key)
        game = await self.store.game(game_id)
        if game.status != "active":
            raise UserError("This game has ended.")
        # A private action is seen by its player alone; a public one by those seated, and the NPCs present.
        visibility, visible_to = (Visibility.PRIVATE, (player.id,)) if private else (Visibility.PUBLIC, ())
        npcs = () if private else await self.memory.present_npcs(game, text)
        (action,) = await self.store.append(
            game_id,
            NewEntry(turn=game.turn + 1, kind=EntryKind.ACTION, author=player.name, player_id=player.id,
                     content=text, message_id=message_id, visibility=visibility, visible_to=visible_to, npcs=npcs),
        )  # fmt: skip
        return game, action

    async def answer(
        self, game: Game, action: LogEntry, *, before_id: int | None = None, on_text: OnText | None = None,
        private_to: Player | None = None,
    ) -> TurnResult:  # fmt: skip
        """Have the model answer ``action``; guard and store the reply and its private asides; record the trace.

        A public turn streams to ``on_text`` and posts in the channel; the answer to a secret action
        (``private_to``) goes to that player alone, asides included. ``before_id``: the prompt holds the log
        before that entry only (a reply written again).
        """
        self.sessions[game.id].turn_lock.require("Answering an action")
        async with self.drafts.narrator.worker.turn():  # its calls, and the moments between them, come first
            return await self._answer(game, action, before_id, on_text, private_to)

    async def _answer(
        self, game: Game, action: LogEntry, before_id: int | None, on_text: OnText | None, private_to: Player | None
    ) -> TurnResult:
        held = self.config.secrets == "held"
        acted = await self._acted(game, action)
        # With the secrets held, a request of the GM out of the story for what the game hides is no action: it
        # uncovers nothing, earns nothing, and the reply need not answer it; alone, the engine answers it (F39).
        # With every secret in the prompt, the guard alone keeps them, as before the engine held them.
        world = self.world_of(game)
        playing = [a for a in acted if not (held and out_of_play(a.content, world))]
        # What the turn's actions uncover is the engine's decision, made before the narrator writes (F39).
        uncovers = await self.reveals.for_turn(game, action, playing) if held and private_to is None else []
        context = await self.prompts.build(game, action, before_id=before_id, uncovers=uncovers)
        started = time.perf_counter()
        table, request, guard = await self._prepare(game, action, context, private_to, playing or acted, uncovers)
        if not playing and acted:
            log.info("Game %d turn %d: asked out of the story for what the game hides; the engine answers", game.id,
                     action.turn)  # fmt: skip
            drafted = await self.drafts.engine_line(OUT_OF_PLAY, on_text, private_to)
            earned = []
        elif private_to is None:
            drafted = await self.drafts.public(request, on_text, guard)
            if held:
                players = list(table.by_name.values())
                earned = await self.clues.from_reveals(game, uncovers, drafted.notes, players, action.content)
            else:
                earned = await self.clues.to_give(game, (playing or [action])[-1], drafted.clues, drafted.notes)
        else:
            drafted = await self.drafts.secret(request, private_to)
            earned = []
        turn = action.turn
        guarded = [
            await guard_note(guard, turn, table.by_name[n.name], n, answer=private_to is not None)
            for n in [*drafted.notes, *earned]
        ]
        notes = [note for note in guarded if note is not None]
        seconds = time.perf_counter() - started
        stored, private = await self._store_reply(game, turn, drafted, notes, table, public=private_to is None)
        # What the turn says changed (a thing moved, a code, a side) is in the memory before the next turn (F40).
        await self.memory.ledger.record_changes(game.id, [*acted, stored])
        trace = context.trace.model_copy(update=_turn_figures(drafted.narration, seconds))
        if private_to is not None:
            trace = trace.model_copy(update={"private_to": private_to.id})
        await self.store.save_trace(game.id, turn, trace.model_dump_json())
        self.sessions[game.id].last_prompt = [*context.messages, ChatMessage(role="assistant", content=drafted.raw)]
        self.memory.schedule(game.id)
        _log_turn(game.id, turn, trace)
        return TurnResult(
            game=await self.store.game(game.id), turn=turn, action=action, reply=stored,
            context=Context(context.messages, trace, context.notes), seconds=seconds,
            first_text_seconds=drafted.narration.first_text, private=private, draft=drafted.draft,
            model=drafted.narration.stats, raw=drafted.raw,
        )  # fmt: skip

    async def _acted(self, game: Game, action: LogEntry) -> list[LogEntry]:
        """The actions of ``action``'s turn, oldest first."""
        recent = await self.store.recent_log(game.id, 50)
        return [e for e in recent if e.turn == action.turn and e.kind is EntryKind.ACTION]

    async def _prepare(
        self, game: Game, action: LogEntry, context: Context, private_to: Player | None, acted: list[LogEntry],
        uncovers: list[NewReveal],
    ) -> tuple[_Table, Request, TurnGuard]:  # fmt: skip
        """Who the reply is for, what it is asked with, and the guard it passes."""
        max_tokens = min(context.trace.reply_tokens, max(16, self.config.n_ctx - context.tokens))
        by_name = {p.name: p for p in await self.store.players(game.id)}
        if private_to is not None:
            by_name[private_to.name] = private_to
        recent = await self.store.recent_log(game.id, 50)
        unlocked = " ".join(e.content for e in acted if e.visibility is Visibility.PUBLIC)
        world = self.world_of(game)
        if self.config.secrets == "held":
            # The engine judged what the actions uncover: those are no secret in this reply; a clue one earned is
            # told in public by a sentence holding its own words (it goes to its player by DM).
            uncovered = await self.reveals.uncovered(game.id) | {r.ref for r in uncovers}
            earning = {} if private_to is not None else earned_words(world, action, uncovers)
            guard = await self.guards.for_turn(game, world, "", earning, EARNED_CLUE_TOLD, uncovered)
        else:
            earning = {} if private_to is not None else await self.clues.earned_by(game, acted[-1])
            guard = await self.guards.for_turn(game, world, unlocked, earning, EARNED_CLUE_TOLD)
        said = [e.content for e in recent if e.kind is EntryKind.GM and e.visibility is Visibility.PUBLIC and e.turn]
        actions = [e.content for e in acted]
        named = frozenset().union(*(referents(self.world_of(game), a) for a in actions))
        shaping = Shaping(
            list(by_name), actions, said[-RECENT_REPLIES:], self.config.shape_replies, public=private_to is None,
            referents=named, actors=tuple(e.author for e in acted if e.author),
            brief=tuple(note.text for note in context.notes if note.layer == "brief"),
        )  # fmt: skip
        return _Table(by_name, unlocked), Request(game.id, action.turn, context, max_tokens, shaping), guard

    async def _store_reply(
        self, game: Game, turn: int, drafted: Drafted, notes: list[PrivateNote], table: _Table, *, public: bool
    ) -> tuple[LogEntry, tuple[PrivateMessage, ...]]:
        """Store the reply (for the channel, when ``public``) and its asides, and close the turn."""
        entries = []
        if public:
            npcs = await self.memory.present_npcs(game, table.unlocked, drafted.public)  # NPCs hear public actions only
            entries.append(
                NewEntry(turn=turn, kind=EntryKind.GM, author="GM", content=drafted.public or PRIVATE_ONLY, npcs=npcs)
            )
        by_name = table.by_name
        entries += [
            NewEntry(turn=turn, kind=EntryKind.GM, author=f"GM to {note.name}", content=note.text,
                     visibility=Visibility.PRIVATE, visible_to=(by_name[note.name].id,))
            for note in notes
        ]  # fmt: skip
        stored = await self.store.append(game.id, *entries, turn_done=turn)
        asides = stored[len(stored) - len(notes) :]
        private = tuple(PrivateMessage(by_name[n.name], e) for n, e in zip(notes, asides, strict=True))
        return stored[0], private


def _turn_figures(narration: Narration, seconds: float) -> dict[str, object]:
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
