"""What recall searches with: the scene the GM is about to answer, and the indexes whose rankings are fused (F17,
F31)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.engine.table.config import MEANING_WEIGHT
from bot.engine.upkeep.meaning import MeaningIndex, Query
from bot.memory.recall import query_terms
from bot.store import RecallHit, Store

QUERY_WITH_SCENE = False  # the query by meaning: the action alone, or after the line before it


@dataclass(frozen=True)
class Scene:
    """What the GM is about to answer: the new action and the turns just before it.

    ``audience`` is the player a secret action's answer goes to alone: recall by meaning may then bring back
    the private messages they witnessed. ``query`` is the scene embedded for recall by meaning.
    """

    action: str
    recent: Sequence[str]
    audience: int | None = None
    query: Query | None = None

    @property
    def meaning(self) -> str:
        """What is searched for by meaning: the action, after the line it answers (the GM's last reply, most
        often: "I follow him" means nothing without it)."""
        return "\n".join([*self.recent[-1:], self.action]) if QUERY_WITH_SCENE else self.action


class RecallIndex:
    """One way of finding past fragments; more than one can be fused (an embedding index, say)."""

    name = "index"

    async def search(self, game_id: int, scene: Scene, limit: int) -> list[RecallHit]:
        raise NotImplementedError


class FullTextRecall(RecallIndex):
    """SQLite FTS5, ranked by BM25, over turns, summaries and facts."""

    name = "bm25"

    def __init__(self, store: Store):
        self.store = store

    async def search(self, game_id: int, scene: Scene, limit: int) -> list[RecallHit]:
        return await self.store.search_recall(game_id, query_terms(scene.action, scene.recent), limit)


class ActionRecall(FullTextRecall):
    """The same index searched with the new action's words alone: what the player asks about now."""

    name = "bm25-action"

    async def search(self, game_id: int, scene: Scene, limit: int) -> list[RecallHit]:
        return await self.store.search_recall(game_id, query_terms(scene.action), limit)


class MeaningRecall(RecallIndex):
    """The embedding index: fragments near the scene in meaning, whatever words they use (F31)."""

    name = "meaning"

    def __init__(self, meaning: MeaningIndex):
        self.meaning = meaning

    async def search(self, game_id: int, scene: Scene, limit: int) -> list[RecallHit]:
        return await self.meaning.search(game_id, scene.query, limit, scene.audience)


def recall_indexes(
    store: Store, meaning: MeaningIndex | None, meaning_weight: int = MEANING_WEIGHT
) -> list[RecallIndex]:
    """The rankings recall fuses: the action's own words count twice (once alone, once with the scene around
    it), its meaning ``meaning_weight`` times beside them."""
    action = ActionRecall(store)
    indexes: list[RecallIndex] = [action, action, FullTextRecall(store)]
    if meaning is not None and meaning.on:
        indexes += [MeaningRecall(meaning)] * meaning_weight
    return indexes
