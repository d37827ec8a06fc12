"""When to summarize, what, and how to ask for it: pure policy, no I/O.

The log after the fold marker is the hot window. The part of it before a
protected tail is cut greedily into chunks, each closed when it reaches the
message trigger or the token trigger, so chunk borders depend on the log
alone (with ``chunk_ends="scene"`` a chunk also closes where a scene ends, once
half as long). Closed chunks are folded together once the recent turns fill most of
their room in the prompt (the engine decides when), so the prompt's front
changes once for a block of turns rather than every few; only when the room
is about to run out before a chunk closed is the open one folded too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from bot.memory.config import MemoryConfig
from bot.model.base import ChatMessage
from bot.store.models import EntryKind, LogEntry, Visibility

T = TypeVar("T")

PRESERVE = (
    "Keep, in this order of priority: "
    "1. every named character and their state (where they are, hurt, allied, suspicious); "
    "2. what the players did, decided and promised; "
    "3. unresolved threads and open questions; "
    "4. concrete facts: places, objects, clues, names, numbers."
)


@dataclass(frozen=True)
class Chunk:
    entries: tuple[LogEntry, ...]

    @property
    def first_id(self) -> int:
        return self.entries[0].id

    @property
    def last_id(self) -> int:
        return self.entries[-1].id

    @property
    def turns(self) -> tuple[int, int]:
        return self.entries[0].turn, self.entries[-1].turn


@dataclass(frozen=True)
class Trigger:
    """How far the hot window is from the next compaction."""

    unsummarized_messages: int
    unsummarized_tokens: int
    messages_to_go: int
    tokens_to_go: int


_SENTENCE_END = re.compile(r"[.!?…][\"')\]]?(?=\s|$)")

# Where a scene ends, from the log alone (so chunk borders still depend on the log only): a line of the game's own
# (a session's date, a player joining or leaving), a player setting off elsewhere, or a GM reply that opens with a
# time skip or the players arriving somewhere else. Only an entry's first sentence counts.
_TIME_SKIP = re.compile(
    r"(?:(?:and|then|it is|it's|when)\s+)?"
    r"(?:(?:(?:some|much|a little|an hour|hours|days|weeks|years|moments) )?later\b|the next (?:morning|day|evening|"
    r"night|dawn)|next (?:morning|day)|the following (?:morning|day|evening|night|week)|that (?:night|evening|"
    r"afternoon)|by (?:nightfall|dawn|morning|noon|evening)|at (?:dawn|dusk|first light|daybreak|sunrise|sunset)|"
    r"(?:hours|days|weeks) pass|(?:some )?time passes|meanwhile)\b",
    re.IGNORECASE,
)
_ARRIVAL = re.compile(
    r"^(?:you|they|we|the (?:party|company|group|players)|\w+ and \w+)\s+(?:all\s+|finally\s+|soon\s+)?"
    r"(?:arrive|reach|enter|step (?:in|out)|come (?:to|into|out)|make (?:your|their|our) way|head (?:down|up|out|"
    r"back|into|to|for)|return to|climb (?:up|down|into|out)|set off|leave|walk (?:to|into|down|up|out)|go "
    r"(?:down|up|out|back|into|to))\b",
    re.IGNORECASE,
)
_SETTING_OFF = re.compile(
    r"^(?:i|we)\s+(?:go|head|walk|run|climb|return|make (?:my|our) way|set off|leave|travel|ride|sail|row|hurry|"
    r"follow \w+)\s+(?:to|into|down|up|back|out|for|towards?|across|through|inside|outside)\b",
    re.IGNORECASE,
)


def opens_scene(entry: LogEntry) -> bool:
    """Whether ``entry`` begins another scene: a line of the game's own, a player setting off elsewhere, a GM
    reply that opens with a time skip or an arrival."""
    if entry.kind is EntryKind.SYSTEM:
        return True
    first = _SENTENCE_END.split(" ".join(entry.content.split()), maxsplit=1)[0]
    if entry.kind is EntryKind.ACTION:
        return bool(_SETTING_OFF.match(first))
    if entry.kind is EntryKind.GM:
        return bool(_TIME_SKIP.match(first) or _ARRIVAL.match(first))
    return False


def eligible(unsummarized: Sequence[LogEntry], config: MemoryConfig) -> Sequence[LogEntry]:
    """The hot entries that may be summarized: all but the protected tail."""
    keep = config.protected_tail
    return unsummarized[: max(0, len(unsummarized) - keep)]


def plan_compaction(
    unsummarized: Sequence[LogEntry],
    tokens: Sequence[int],
    config: MemoryConfig,
    *,
    force: bool = False,
) -> list[Chunk]:
    """The chunks to fold now, oldest first. ``force`` also folds an unfinished last chunk."""
    candidates = eligible(unsummarized, config)
    chunks: list[Chunk] = []
    start, used = 0, 0
    scenes = config.chunk_ends == "scene"
    for index in range(len(candidates)):
        if scenes and index - start >= max(1, config.trigger_messages // 2) and opens_scene(candidates[index]):
            chunks.append(Chunk(tuple(candidates[start:index])))  # the scene ended with the entry before
            start, used = index, 0
        used += tokens[index]
        if index + 1 - start >= config.trigger_messages or used >= config.trigger_tokens:
            chunks.append(Chunk(tuple(candidates[start : index + 1])))
            start, used = index + 1, 0
    if force and start < len(candidates):
        chunks.append(Chunk(tuple(candidates[start:])))
    return chunks


def next_trigger(unsummarized: Sequence[LogEntry], tokens: Sequence[int], config: MemoryConfig) -> Trigger:
    """Messages and tokens to go before the next compaction; zero when a closed chunk is waiting."""
    candidates = len(eligible(unsummarized, config))
    closed = sum(len(c.entries) for c in plan_compaction(unsummarized, tokens, config))
    waiting = closed > 0
    open_tokens = sum(tokens[closed:candidates])
    return Trigger(
        unsummarized_messages=len(unsummarized),
        unsummarized_tokens=sum(tokens),
        messages_to_go=0 if waiting else max(0, config.trigger_messages - (candidates - closed)),
        tokens_to_go=0 if waiting else max(0, config.trigger_tokens - open_tokens),
    )


def render_entry(entry: LogEntry) -> str:
    """One log entry as a summarizer reads it."""
    return entry.line


def chunk_messages(title: str, entries: Sequence[LogEntry], bridge: LogEntry | None, words: int) -> list[ChatMessage]:
    """Ask for a summary of one chunk; the bridge is context, not material."""
    system = (
        f'You keep the memory of "{title}", a role-playing game. Summarize the new events '
        f"as a short paragraph of plain prose, in at most {words} words, past tense. {PRESERVE} "
        "Do not invent anything. Write only the summary."
    )
    parts = []
    if bridge is not None and bridge.visibility is Visibility.PUBLIC:
        parts.append(f"Just before (already summarized, for context only):\n{render_entry(bridge)}")
    # Summaries are public: what the GM told one player alone stays out of them.
    public = [e for e in entries if e.visibility is Visibility.PUBLIC]
    parts.append("New events:\n" + ("\n".join(render_entry(e) for e in public) or "(nothing public)"))
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content="\n\n".join(parts))]


def fold_messages(title: str, story: str | None, addition: str, words: int) -> list[ChatMessage]:
    """Ask for the story summary rewritten whole with ``addition`` folded in."""
    system = (
        f'You keep the memory of "{title}", a role-playing game. Rewrite the story so far '
        f"as one summary that includes what happened next. Rewrite the whole, never just append; "
        f"at most {words} words, past tense, plain prose. {PRESERVE} When space is short, compress "
        "older events before newer ones. Write only the summary."
    )
    user = f"Story so far:\n{story or '(nothing yet)'}\n\nWhat happened next:\n{addition}"
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]


def apply_ceiling(text: str, words: int, *, slack: float = 1.5) -> str:
    """A soft ceiling: text up to ``slack`` times ``words`` stands; longer is cut at a sentence end."""
    text = " ".join(text.split())
    tokens = text.split(" ")
    limit = int(words * slack)
    if len(tokens) <= limit:
        return text
    cut = " ".join(tokens[:limit])
    ends = list(_SENTENCE_END.finditer(cut))
    return cut[: ends[-1].end()] if ends else cut + "…"


MATERIAL_TOKENS = 1200  # the most one background call reads: a prompt that fits a 2k context with its answer


def in_batches(items: Sequence[T], costs: Sequence[int], limit: int = MATERIAL_TOKENS) -> list[list[T]]:
    """``items`` in order, cut into batches of at most ``limit`` tokens (an item bigger than that alone).

    Background work that fell behind reads its backlog in as few calls as fit,
    never in one prompt bigger than the model's context.
    """
    batches: list[list[T]] = []
    used = 0
    for item, cost in zip(items, costs, strict=True):
        if batches and used + cost <= limit:
            batches[-1].append(item)
            used += cost
        else:
            batches.append([item])
            used = cost
    return batches
