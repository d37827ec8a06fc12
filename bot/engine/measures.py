"""The engine's second door: what a bench or a world author's fitting tool reads of a running engine.

The front door (:class:`bot.engine.game.Engine`) is what players and admins do. A bench also asks how the engine
came to what it did: how close in meaning a reply's sentence is to a secret, by the guard's own measure; where
recall ranked a turn for a question, index by index; how far the memory's upkeep is behind the table; which of
the model worker's records are one game's turns. Those answers are here, and the benches in :mod:`bot.bench`
read an engine through these two doors alone: the parts behind them (the meaning index, the ledger, the guards,
the upkeep) are the engine's own, free to change. Nothing here changes a game.

Reach it as ``engine.measures``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from bot.engine.secrets.guard import TurnGuard
from bot.engine.turn.narration import room_for_notes
from bot.engine.upkeep.indexes import Scene
from bot.store import Game, LogEntry, RecallHit

if TYPE_CHECKING:
    from bot.engine.game import Engine

# What recall ranks for a question: turns, summaries and facts, as a turn's recall does.
RECALLED_KINDS = frozenset({"entry", "summary", "fact"})


@dataclass(frozen=True)
class Ranked:
    """Recall's rankings for one question: the fused one the prompt's recall takes from, and each index's own by
    its name (``bm25-action``: the question's words, ``bm25``: with the scene's, ``meaning``)."""

    fused: list[RecallHit]
    by_index: dict[str, list[RecallHit]]


@dataclass(frozen=True)
class Lag:
    """How far the memory's upkeep is behind the table when a player acts."""

    facts_behind: int  # turns whose facts are not extracted yet
    fold_waiting: bool  # a closed chunk of the log waits for its summary


class Measures:
    """What a bench reads of ``engine`` (see the module)."""

    def __init__(self, engine: Engine):
        self._engine = engine

    @property
    def by_meaning(self) -> bool:
        """Whether the engine recalls and guards by meaning (an embedding model loaded), not by words alone."""
        return self._engine.meaning.on

    async def closeness(self, texts: Sequence[str], others: Sequence[str]) -> np.ndarray:
        """How close in meaning each of ``texts`` is to each of ``others`` (the other's closest part), shape (texts,
        others), on the scale the leak guard and the reveals judge by. Needs :attr:`by_meaning`."""
        if not self.by_meaning:
            raise RuntimeError("closeness in meaning needs an embedding model; this engine recalls by words alone")
        return await self._engine.meaning.closeness(texts, others)

    async def turn_guard(self, game: Game) -> TurnGuard:
        """The leak guard a new turn of ``game`` would be checked by, before any action of it."""
        return await self._engine.guards.for_turn(game, self._engine.world_of(game), "")

    async def uncovered(self, game_id: int) -> frozenset[str]:
        """The refs of what the game's actions uncovered for good (``truth:stair``, ``npc:meg:hides:0``)."""
        return await self._engine.reveals.uncovered(game_id)

    async def log(self, game_id: int) -> list[LogEntry]:
        """The game's whole log as stored, private entries included."""
        return await self._engine.store.log(game_id)

    async def ranked(self, game_id: int, question: str, limit: int = 400) -> Ranked:
        """Where recall ranks what the game holds for ``question`` asked as a turn's action with no scene around
        it, each index's ranking and the fused one, at most ``limit`` of each."""
        scene = Scene(action=question, recent=())
        query = await self._engine.meaning.query(scene.meaning)
        scene = Scene(action=question, recent=(), query=query)
        fused, named = await self._engine.ledger.ranked(game_id, scene, set(RECALLED_KINDS), set(), limit)
        return Ranked(fused, named)

    async def nearest(self, game_id: int, text: str, limit: int = 400) -> list[RecallHit]:
        """The game's fragments nearest ``text`` in meaning alone, best first (empty by words alone)."""
        query = await self._engine.meaning.query(text)
        return await self._engine.meaning.search(game_id, query, limit)

    @property
    def query_seconds(self) -> list[float]:
        """What embedding each turn's query cost, oldest first (the last thousand)."""
        return list(self._engine.meaning.query_seconds)

    def retry_room(self) -> int:
        """The tokens every prompt keeps free for what a retry adds (see bot.engine.turn.narration.room_for_notes):
        a bench that gives the memory a budget of the prompt adds them, or the memory gets that much less."""
        return room_for_notes(self._engine.worker.count_tokens)

    def slot(self, game_id: int) -> str:
        """The label the model worker's records of ``game_id``'s turns carry (``ModelWorker.records``)."""
        return self._engine.sessions[game_id].slot

    def replies_asked(self, game_id: int) -> int:
        """How many GM replies this process asked the model for in ``game_id`` (a regeneration or a re-ask counts)."""
        return self._engine.sessions[game_id].turns_asked

    async def lag(self, game_id: int) -> Lag:
        """How far the memory's upkeep of ``game_id`` is behind its log now."""
        store = self._engine.store
        checked = await store.checked_through("facts_checked", game_id)
        recent = await store.recent_log(game_id, 200)
        trigger = await self._engine.memory.trigger(game_id)
        return Lag(
            facts_behind=len({e.turn for e in recent if e.id > checked and e.turn}),
            fold_waiting=trigger.messages_to_go == 0 and trigger.tokens_to_go == 0,
        )

    async def embedded(self) -> None:
        """Wait until every fragment stored so far is embedded for recall by meaning, as the background does between
        turns (:meth:`Engine.settled` waits for the memory's upkeep and the read-ahead too)."""
        await self._engine.meaning.idle()

    async def fold_closed(self, game_id: int) -> None:
        """Fold the log's closed chunks into summaries and embed every fragment now, as the upkeep would after the
        last turn, without the protected tail's (:meth:`Engine.compact` folds that too)."""
        await self._engine.memory.compact(game_id)
        await self.embedded()
