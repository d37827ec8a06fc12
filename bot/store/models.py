"""What the store returns: pydantic models, never rows."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class GameStatus(StrEnum):
    ACTIVE = "active"
    ENDED = "ended"


class EntryKind(StrEnum):
    ACTION = "action"
    GM = "gm"
    ROLL = "roll"
    SYSTEM = "system"


class Visibility(StrEnum):
    PUBLIC = "public"
    PRIVATE = "private"


class Game(_Row):
    id: int
    channel_key: str
    world_id: str
    status: GameStatus
    turn: int = Field(description="The last turn the GM answered; 0 before the first.")
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None = None
    started_by: str | None = Field(default=None, description="The user key of whoever started it.")


class Player(_Row):
    id: int
    game_id: int
    user_key: str = Field(description="Who plays: a Discord user id, or a name in the terminal.")
    name: str = Field(description="The character's name.")
    description: str = ""
    joined_at: datetime
    left_at: datetime | None = None


class NewEntry(_Row):
    """A log entry before the store has given it an id and a time."""

    turn: int
    kind: EntryKind
    author: str
    content: str
    player_id: int | None = None
    visibility: Visibility = Visibility.PUBLIC
    visible_to: tuple[int, ...] = Field(
        default=(), description="Its witnesses: the players addressed, or for a public entry those seated then."
    )
    message_id: str | None = None
    npcs: tuple[str, ...] = Field(default=(), description="The world's NPCs present when it happened (public entries).")

    def seen_by(self, player_id: int) -> bool:
        return player_id in self.visible_to


class LogEntry(NewEntry):
    id: int
    game_id: int
    created_at: datetime
    edited_at: datetime | None = None
    deleted: bool = False

    @property
    def line(self) -> str:
        """The entry as one line of a transcript."""
        if self.kind is EntryKind.GM:
            if self.visibility is Visibility.PRIVATE:
                return f"{self.author}, privately: {self.content}"
            return f"GM: {self.content}"
        if self.kind is EntryKind.ROLL:
            return f"[{self.author} rolls {self.content}]"
        if self.kind is EntryKind.SYSTEM:
            return f"[{self.content}]"
        return f"{self.author}: {self.content}"


class SummaryKind(StrEnum):
    CHUNK = "chunk"  # one stretch of the log that left the hot window
    STORY = "story"  # the long-term story summary, one version per fold
    RECAP = "recap"  # a finished chapter, kept forever


class NewSummary(_Row):
    kind: SummaryKind
    content: str
    first_entry_id: int | None = None
    last_entry_id: int | None = None
    first_turn: int | None = None
    last_turn: int | None = None
    source_id: int | None = Field(default=None, description="For a story version: the summary folded in.")
    previous_id: int | None = Field(default=None, description="For a story version: the version it rewrote.")
    chapter_index: int | None = None


class Summary(NewSummary):
    id: int
    game_id: int
    created_at: datetime
    replaced_by: int | None = None
    stale: bool = False

    @property
    def words(self) -> int:
        return len(self.content.split())


class FrontSnapshot(BaseModel):
    """What the prompt's front shows of things that change every turn, fixed at the last compaction.

    Private memories and the glossary are updated after every turn; shown
    as they stood when the turns they cover left the recent window, the
    front of the prompt stays the same until the next compaction. A
    compaction may keep the story shown, the glossary and (when nothing
    private was folded) the private memories as they were, and add its
    chunk summary after those shown: the front then changes only from
    there (see ``bot.engine.upkeep.summaries.front_summaries``).
    """

    model_config = ConfigDict(frozen=True)

    memories: dict[int, int] = Field(default_factory=dict, description="Player id -> private memory version id.")
    glossary_through: int = Field(default=0, description="The last glossary term id the front shows.")
    notes_through: int = Field(
        default=0, description="The last log entry id when the front was fixed: the turn notes up to it are not shown."
    )
    story_through: int | None = Field(
        default=None,
        description="None: the front shows the latest story and chunk summary. A number: the story version that "
        "covers the log up to that entry id (0: none), then every chunk summary folded since.",
    )


class JobFailure(_Row):
    """A background job's failures on one input: what it would read next, and why it failed."""

    game_id: int
    job: str
    input: str
    failures: int
    reason: str
    parked_at_turn: int | None = None


class TurnNote(BaseModel):
    """What the GM was given for one turn beside its action: kept with it for later prompts (F16)."""

    model_config = ConfigDict(frozen=True)

    layer: str  # "scene", "lore" or "recall"
    ref: str
    text: str


class MemoryState(_Row):
    """Where a game's memory stands: what is folded, which summaries are current, the chapter."""

    game_id: int
    folded_through: int = Field(default=0, description="The last log entry id that summaries cover.")
    short_id: int | None = None
    story_id: int | None = None
    chapter_index: int = 0
    chapter_started_after: int = Field(default=0, description="The last log entry id before this chapter.")
    beats_done: tuple[str, ...] = ()
    version: int = Field(default=0, description="Bumped by every edit or delete of a logged message.")
    last_compaction_at: datetime | None = None
    last_error: str | None = None
    front: FrontSnapshot = Field(default_factory=FrontSnapshot)


class Pin(_Row):
    id: int
    game_id: int
    text: str
    author: str
    created_at: datetime
    removed_at: datetime | None = None
    moved_to_fact: int | None = None


class FactKind(StrEnum):
    CHARACTER = "character"
    ITEM = "item"
    PLACE = "place"
    DECISION = "decision"
    THREAD = "thread"
    TERM = "term"
    PINNED = "pinned"  # a pin that went over the cap


class NewFact(_Row):
    kind: FactKind
    subject: str
    attribute: str
    value: str
    sources: tuple[int, ...] = Field(default=(), description="The log entries the fact came from.")
    turn: int

    @property
    def key(self) -> tuple[str, str]:
        """Facts with one key describe the same thing; a different value contradicts."""
        return (" ".join(self.subject.casefold().split()), " ".join(self.attribute.casefold().split()))

    @property
    def text(self) -> str:
        if self.kind is FactKind.PINNED:
            return self.value
        return f"{self.subject}, {self.attribute}: {self.value}"


class Fact(NewFact):
    id: int
    game_id: int
    created_at: datetime
    superseded_by: int | None = None
    superseded_turn: int | None = None
    retracted_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.superseded_by is None and self.retracted_at is None


class GlossaryTerm(_Row):
    id: int
    game_id: int
    term: str
    definition: str
    source_entry_id: int | None = None
    created_at: datetime
    edited: bool = False


class RecallHit(_Row):
    ref: str  # "entry:12", "summary:3", "fact:7"
    text: str
    turn: int
    score: float
    part: int = 0  # found by meaning: the sentence nearest the question (1 for the first), 0 for the whole


class PlayerMemory(_Row):
    """One version of a player's private memory (F5): built only from what they witnessed."""

    id: int
    game_id: int
    player_id: int
    summary: str
    facts: tuple[str, ...] = ()
    through_entry_id: int = Field(description="The last log entry this version has taken in.")
    sources: tuple[int, ...] = Field(default=(), description="The entries this update read.")
    created_at: datetime
    replaced_by: int | None = None


class NewReveal(BaseModel):
    """What an action uncovered, and why (see :mod:`bot.memory.reveals`), before it is kept."""

    model_config = ConfigDict(frozen=True)

    ref: str
    why: str
    lasts: str = "game"  # for good ("game"), for one reply ("reply"), for its player ("player": a clue)
    player_id: int | None = None  # who earned it (a clue goes to them alone)


class RevealRecord(_Row):
    """What an action uncovered (F39): a truth, an NPC's secret, a clue or a beat, and the condition that held."""

    id: int
    game_id: int
    turn: int
    entry_id: int
    ref: str
    lasts: str  # "game", "reply" or "player"
    player_id: int | None = None
    why: str
    created_at: datetime


class LeakHit(_Row):
    """A sentence the leak guard stopped: what it gave away and what was done about it."""

    id: int
    game_id: int
    turn: int
    audience: str
    ref: str
    phrase: str
    sentence: str
    action: str
    created_at: datetime
