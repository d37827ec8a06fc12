"""The facts ledger's policy: what to ask the extractor, and how new facts meet old ones."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from bot.memory.changes import Change, attribute_name, same_subject
from bot.model.base import ChatMessage
from bot.store.models import Fact, FactKind, LogEntry, NewFact
from bot.words import STOPWORDS

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
    """What to do with one new fact: add it, add it in place of a contradicted one, or fold it into a duplicate.

    The fact it replaces or repeats is a stored one, or (``*_step``) one added by an earlier step of the same
    plan: an extractor may name one subject and attribute twice in one answer.
    """

    fact: NewFact
    supersedes: Fact | None = None
    duplicate_of: Fact | None = None
    supersedes_step: int | None = None
    duplicate_of_step: int | None = None

    @property
    def adds(self) -> bool:
        return self.duplicate_of is None and self.duplicate_of_step is None


def same_key(fact: NewFact, subjects: Sequence[str]) -> tuple[str, str]:
    """A fact's key, its subject matched to one the memory holds ("candlestick" to "swan candlestick") and its
    attribute named one way ("whereabouts", "place": "location"): how the facts job and play name one thing."""
    return (" ".join(same_subject(fact.subject, subjects).casefold().split()), attribute_name(fact.attribute))


_ENDED = re.compile(
    r"\b(?:destroyed|burned|burnt|smashed|broken|shattered|crushed|drowned|dead|killed|sunk|eaten|drunk|spent|"
    r"used up|gone|melted|torn up|ruined|dissolved|blown up|consumed|no more|empty)\b",
    re.I,
)


def ends(fact: NewFact) -> bool:
    """Whether ``fact`` says its subject stopped existing (burned, used up, dead): its place and holder end too."""
    return attribute_name(fact.attribute) == "state" and bool(_ENDED.search(fact.value))


def same_thing(fact: NewFact, other: NewFact) -> bool:
    """Whether two facts are of one subject, however each names it."""
    return same_subject(other.subject, [fact.subject]) == fact.subject


def merge(active: Sequence[Fact], new: Sequence[NewFact]) -> list[Merge]:
    """Same subject and attribute with the same value is a duplicate; with another value, a contradiction.

    Within one answer the last value wins; the ones it replaces are kept as superseded, with their sources.
    """
    subjects = [fact.subject for fact in active]
    holders: dict[tuple[str, str], Fact | int] = {same_key(fact, subjects): fact for fact in active}
    plan: list[Merge] = []
    for fact in new:
        key = same_key(fact, subjects)
        holder = holders.get(key)
        if holder is None:
            step = Merge(fact)
        elif _same(holder.value if isinstance(holder, Fact) else plan[holder].fact.value, fact.value):
            step = (
                Merge(fact, duplicate_of=holder) if isinstance(holder, Fact) else Merge(fact, duplicate_of_step=holder)
            )
        else:
            step = Merge(fact, supersedes=holder) if isinstance(holder, Fact) else Merge(fact, supersedes_step=holder)
        plan.append(step)
        if step.adds:
            holders[key] = len(plan) - 1
            subjects.append(fact.subject)
    return plan


def grounded(fact: ExtractedFact, entries: Sequence[LogEntry], known: Collection[str] = ()) -> bool:
    """Whether the events name the fact's subject: a small model copies its prompt's example otherwise. A subject
    the memory already holds (``known``) may be told by a pronoun or another name, where the events say its value:
    "the panicked boy drops it into the old cistern beneath the Tannery Bridge" is where the Dyers' guild seal lies
    now (bench change, held out: a change told so was the facts job's, and was left out)."""
    text = " ".join(e.content for e in entries).casefold()
    words = [w for w in re.findall(r"[^\W_]+", fact.subject.casefold()) if len(w) > 2]
    if any(re.search(rf"(?<!\w){re.escape(w)}", text) for w in words):
        return True
    if " ".join(fact.subject.casefold().split()) not in {" ".join(k.casefold().split()) for k in known}:
        return False
    said = [
        w for w in re.findall(r"[^\W_]+", fact.value.casefold()) if w.isdigit() or len(w) > 2 and w not in STOPWORDS
    ]
    found = sum(1 for w in said if re.search(rf"(?<!\w){re.escape(w)}", text))
    return bool(said) and 2 * found >= len(said) + 1  # most of the value's words, all of a short one's


def _same(a: str, b: str) -> bool:
    """One value said two ways: "in the chapel bell" and "the chapel bell"."""
    return _plain(a) == _plain(b)


def _plain(value: str) -> str:
    said = " ".join(value.casefold().split()).strip(".")
    return re.sub(r"^(?:(?:in|on|at|inside|into|onto|under|with)\s+)?(?:(?:the|a|an)\s+)?", "", said)


def changes_as_facts(changes: Sequence[Change], sources: tuple[int, ...], turn: int) -> list[NewFact]:
    """Changes found in play (see :mod:`bot.memory.changes`) as facts, to merge as the extractor's are."""
    return [
        NewFact(kind=FactKind(c.kind), subject=c.subject, attribute=c.attribute, value=c.value, sources=sources,
                turn=turn)
        for c in changes
    ]  # fmt: skip


def history_text(current: Fact, earlier: Sequence[Fact]) -> str:
    """A fact that holds now, with the values it replaced, newest first: "swan candlestick, location: the well
    (before: on the chapel altar until turn 230; in the vestry until turn 140)"."""
    mixed = len({attribute_name(f.attribute) for f in [current, *earlier]}) > 1  # a place, then a holder
    before = [
        f"{_as_held(f) if mixed else f.value} until turn {f.superseded_turn}"
        for f in earlier if f.superseded_turn is not None
    ][:3]  # fmt: skip
    return current.text + (f" (before: {'; '.join(before)})" if before else "")


def _as_held(fact: Fact) -> str:
    """An older value of another attribute, said as what it was: "held by Corwin Thale" before a place."""
    return f"held by {fact.value}" if attribute_name(fact.attribute) == "holder" else fact.value


def to_new_fact(fact: ExtractedFact, sources: tuple[int, ...], turn: int) -> NewFact:
    return NewFact(
        kind=FactKind(fact.kind),
        subject=" ".join(fact.subject.split()),
        attribute=" ".join(fact.attribute.split()),
        value=" ".join(fact.value.split()),
        sources=sources,
        turn=turn,
    )
