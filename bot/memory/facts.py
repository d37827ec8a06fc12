"""The facts ledger's policy: what to ask the extractor, and how new facts meet old ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from bot.model.base import ChatMessage
from bot.store.models import Fact, FactKind, LogEntry, NewFact

MAX_FACTS_PER_CALL = 5


class ExtractedFact(BaseModel):
    kind: Literal["character", "item", "place", "decision", "thread", "term"]
    subject: str = Field(min_length=1, max_length=40)
    attribute: str = Field(min_length=1, max_length=30)
    value: str = Field(min_length=1, max_length=120)


class Extraction(BaseModel):
    """The extractor's answer; bounded so a small model cannot loop."""

    facts: list[ExtractedFact] = Field(max_length=MAX_FACTS_PER_CALL)


def extraction_messages(title: str, entries: Sequence[LogEntry]) -> list[ChatMessage]:
    system = (
        f'You record the facts of "{title}", a role-playing game. From the latest events, list up to '
        f"{MAX_FACTS_PER_CALL} new concrete facts worth remembering: characters (state, allegiance, "
        "where they are), items (who holds them, where they are), places, decisions and promises, open "
        "threads, coined terms. Each fact is a subject, an attribute and a value, for example "
        '{"kind": "item", "subject": "brass key", "attribute": "location", "value": "under the mat"}. '
        "Only what the events state. Answer in JSON."
    )
    user = "Latest events:\n" + "\n".join(e.line for e in entries)
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]


def sources_for(fact: ExtractedFact, entries: Sequence[LogEntry]) -> tuple[int, ...]:
    """The entries that mention the fact's subject; all of them when none names it."""
    subject = fact.subject.casefold()
    named = tuple(e.id for e in entries if subject in e.content.casefold())
    return named or tuple(e.id for e in entries)


@dataclass(frozen=True)
class Merge:
    """What to do with one new fact: add it, add it in place of a contradicted one, or fold it into a duplicate."""

    fact: NewFact
    supersedes: Fact | None = None
    duplicate_of: Fact | None = None


def merge(active: Sequence[Fact], new: Sequence[NewFact]) -> list[Merge]:
    """Same subject and attribute with the same value is a duplicate; with another value, a contradiction."""
    by_key = {fact.key: fact for fact in active}
    plan: list[Merge] = []
    for fact in new:
        old = by_key.get(fact.key)
        if old is not None and _same(old.value, fact.value):
            plan.append(Merge(fact, duplicate_of=old))
        elif old is not None:
            plan.append(Merge(fact, supersedes=old))
        else:
            plan.append(Merge(fact))
        by_key[fact.key] = old if plan[-1].duplicate_of else fact  # type: ignore[assignment]
    return plan


def _same(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()).strip(".") == " ".join(b.casefold().split()).strip(".")


def to_new_fact(fact: ExtractedFact, sources: tuple[int, ...], turn: int) -> NewFact:
    return NewFact(
        kind=FactKind(fact.kind),
        subject=" ".join(fact.subject.split()),
        attribute=" ".join(fact.attribute.split()),
        value=" ".join(fact.value.split()),
        sources=sources,
        turn=turn,
    )
