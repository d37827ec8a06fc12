"""Each player's private memory (F5): what their character knows, built from what they witnessed alone.

Pure policy: which entries a player's update may read, the prompt that
updates it, and how an answer is tidied to its bounds (3 to 5 sentences,
at most 10 facts). The engine runs the updates; the store keeps versions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints, field_validator

from bot.memory.compaction import MATERIAL_TOKENS, in_batches
from bot.model.base import ChatMessage
from bot.store.models import EntryKind, LogEntry, Player, PlayerMemory, Visibility

MAX_FACTS = 10
MAX_SENTENCES = 5

FactText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=140)]


class PrivateMemoryAnswer(BaseModel):
    """The updater's answer; bounded so a small model cannot loop."""

    summary: str = Field(min_length=1, max_length=700)
    facts: list[FactText] = Field(default_factory=list, max_length=MAX_FACTS)

    @field_validator("facts", mode="before")
    @classmethod
    def _without_blanks(cls, facts: object) -> object:
        """A blank fact says nothing and is left out, not the whole answer with it: the grammar lets a string of
        spaces through, which the bundled model wrote, and both tries of its answer fell back on it."""
        if isinstance(facts, list):
            return [fact for fact in facts if not (isinstance(fact, str) and not fact.strip())]
        return facts


def witnessed(entries: Sequence[LogEntry], player_id: int) -> list[LogEntry]:
    """The entries ``player_id`` saw: public ones while seated, private ones addressed to them."""
    return [e for e in entries if not e.deleted and e.seen_by(player_id)]


def material(
    entries: Sequence[LogEntry],
    player: Player,
    after_id: int,
    count: Callable[[str], int],
    limit: int = MATERIAL_TOKENS,
) -> list[list[LogEntry]]:
    """What an update reads: the player's witnessed entries after ``after_id``, in calls of at most ``limit``
    tokens (a backlog or a rebuild takes several)."""
    seen = witnessed([e for e in entries if e.id > after_id], player.id)
    return in_batches(seen, [count(entry_line(e, player)) for e in seen], limit)


def entry_line(entry: LogEntry, player: Player) -> str:
    """An entry as the player knows it; what was theirs alone is marked so."""
    if entry.visibility is Visibility.PUBLIC:
        return entry.line
    if entry.kind is EntryKind.GM:
        return f"(only you) GM, privately: {entry.content}"
    if entry.kind is EntryKind.ROLL:
        return f"(only you) [{entry.author} rolls {entry.content}]"
    return f"(only you, secretly) {entry.author}: {entry.content}"


def update_messages(
    title: str, player: Player, previous: PlayerMemory | None, entries: Sequence[LogEntry]
) -> list[ChatMessage]:
    system = (
        f'You keep the private memory of {player.name}, a player\'s character in "{title}", a role-playing '
        f"game. Write what {player.name} knows from their own point of view: a summary of 3 to 5 "
        f"sentences, and up to {MAX_FACTS} short key facts (what they know, who they trust, what they "
        f"intend). Use only the memory and the events given; {player.name} knows nothing else. Keep what "
        "was marked (only you): it is their secret. Answer in JSON."
    )
    parts = []
    if previous is not None:
        facts = "\n".join(f"- {fact}" for fact in previous.facts) or "(none)"
        parts.append(f"Memory so far:\n{previous.summary}\nKey facts:\n{facts}")
    else:
        parts.append("Memory so far: (nothing yet)")
    parts.append(f"What {player.name} witnessed since:\n" + "\n".join(entry_line(e, player) for e in entries))
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content="\n\n".join(parts))]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def tidy(answer: PrivateMemoryAnswer) -> tuple[str, tuple[str, ...]]:
    """The summary cut to at most five sentences, the facts deduplicated and capped."""
    sentences = [s for s in _SENTENCE_END.split(" ".join(answer.summary.split())) if s]
    summary = " ".join(sentences[:MAX_SENTENCES])
    facts: dict[str, str] = {}
    for fact in answer.facts:
        text = " ".join(fact.split())
        facts.setdefault(text.casefold(), text)
    return summary, tuple(list(facts.values())[:MAX_FACTS])
