"""Recall policy: what to search for before the GM writes, and which fragments to offer.

The index (SQLite FTS5 with BM25 by default) finds candidates; this module
turns the scene into search terms, fuses the rankings of several indexes,
leaves out what the prompt already holds, and labels each fragment with
its turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.memory.context import MemoryItem
from bot.store.models import RecallHit

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your yours
    yourself yourselves also get got go going gone let lets like make made many much one ones really said
    say says see seen tell told thing things think try way well went yes yeah oh ok okay gm""".split()
)

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
MAX_TERMS = 32


def query_terms(action: str, scene: Sequence[str] = ()) -> list[str]:
    """Search terms: the action's words first, then the scene's, without stopwords or repeats."""
    terms: dict[str, None] = {}
    for text in (action, *reversed(scene)):
        for word in _WORD.findall(text.lower()):
            word = word.split("'")[0]
            if word in STOPWORDS or (len(word) < 3 and not word.isdigit()):
                continue
            terms.setdefault(word)
            if len(terms) >= MAX_TERMS:
                return list(terms)
    return list(terms)


def fuse(rankings: Sequence[Sequence[RecallHit]], k: int = 60) -> list[RecallHit]:
    """Reciprocal rank fusion: one ranking from several indexes, each counted by rank, not by raw score."""
    scores: dict[str, float] = {}
    best: dict[str, RecallHit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking):
            scores[hit.ref] = scores.get(hit.ref, 0.0) + 1.0 / (k + rank + 1)
            best.setdefault(hit.ref, hit)
    order = sorted(scores, key=lambda ref: -scores[ref])
    return [best[ref].model_copy(update={"score": scores[ref]}) for ref in order]


def fragments(
    hits: Sequence[RecallHit],
    exclude: set[str],
    allowed_kinds: set[str],
    following: dict[int, RecallHit] | None = None,
) -> list[MemoryItem]:
    """Recalled fragments in rank order, labelled with their turn, leaving out what the prompt holds.

    A recalled turn brings the turn after it (``following``, by entry id): what was said is most
    often answered, or completed, by the next message.
    """
    items: list[MemoryItem] = []
    taken = set(exclude)
    for hit in hits:
        kind = hit.ref.split(":", 1)[0]
        if hit.ref in taken or kind not in allowed_kinds:
            continue
        taken.add(hit.ref)
        items.append(_item(hit, kind))
        after = (following or {}).get(_entry_id(hit.ref)) if kind == "entry" else None
        if after is not None and after.ref not in taken:
            taken.add(after.ref)
            items.append(_item(after, "entry"))
    return items


def _item(hit: RecallHit, kind: str) -> MemoryItem:
    label = "fact" if kind == "fact" else f"turn {hit.turn}"
    return MemoryItem(hit.ref, f"[{label}] {hit.text}")


def _entry_id(ref: str) -> int:
    return int(ref.split(":", 1)[1])
