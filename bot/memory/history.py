"""A game's values as histories (F40): which fact holds now in place of each superseded one, what each current one
replaced, and which turns told a value since changed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.memory.changes import ATTRIBUTE_NAMES, attribute_name
from bot.store.models import Fact
from bot.words import content_words


class ValueHistory:
    """A game's facts as chains of values: each superseded fact leads to the one that holds now."""

    def __init__(self, facts: Sequence[Fact]):
        self.facts = {f.id: f for f in facts}
        self._before: dict[int, list[Fact]] = {}
        for fact in facts:
            if fact.superseded_by is not None and fact.retracted_at is None:
                self._before.setdefault(fact.superseded_by, []).append(fact)

    def holds_now(self, fact_id: int) -> Fact | None:
        """The end of ``fact_id``'s chain of newer values, where a newer one superseded it and still holds."""
        fact, seen = self.facts.get(fact_id), set()
        while fact is not None and fact.superseded_by is not None and fact.id not in seen:
            seen.add(fact.id)
            fact = self.facts.get(fact.superseded_by)
        return fact if fact is not None and fact.id != fact_id and fact.active else None

    def earlier(self, fact: Fact) -> list[Fact]:
        """The values ``fact`` replaced, newest first."""
        chain, at = [], fact.id
        for _ in range(50):
            before = self._before.get(at)
            if not before:
                break
            newest = max(before, key=lambda f: f.id)
            chain.append(newest)
            at = newest.id
        return chain

    def told_by(self, entry_id: int, text: str = "", turn: int | None = None) -> list[Fact]:
        """The values that hold now in place of the ones ``entry_id`` told and that were superseded since; and,
        given its ``text`` and ``turn``, the changes recorded after it of a thing it names (it told of the oil
        barrel in the lamp room; the barrel was used up since), so no recalled turn tells an older value alone."""
        now = {}
        for fact in self.facts.values():
            if fact.superseded_by is not None and entry_id in fact.sources:
                current = self.holds_now(fact.id)
                # a turn that told the current value too ("carried the key down to the cellar and left it on a
                # barrel": two places, one superseding the other) told no older one
                if current is not None and entry_id not in current.sources:
                    now[current.id] = current
        if text and turn is not None:
            said = text.casefold()
            for fact in self.facts.values():
                if (
                    fact.active and fact.turn > turn and entry_id not in fact.sources
                    and attribute_name(fact.attribute) in ATTRIBUTE_NAMES and names_subject(said, fact.subject)
                ):  # fmt: skip
                    now[fact.id] = fact
        return list(now.values())


def names_subject(text: str, subject: str) -> bool:
    """Whether ``text`` (folded) names ``subject``: all of its content words."""
    words = [surface.casefold() for _, surface in content_words(subject)]
    return bool(words) and all(re.search(rf"(?<!\w){re.escape(w)}", text) for w in words)
