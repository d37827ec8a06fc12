"""The store: games, players, the turn log and settings in one SQLite file."""

from bot.store.models import (
    EntryKind,
    Fact,
    FactKind,
    Game,
    GameStatus,
    GlossaryTerm,
    LogEntry,
    MemoryState,
    NewEntry,
    NewFact,
    NewSummary,
    Pin,
    Player,
    RecallHit,
    Summary,
    SummaryKind,
    Visibility,
)
from bot.store.store import Store

__all__ = [
    "EntryKind",
    "Fact",
    "FactKind",
    "Game",
    "GlossaryTerm",
    "GameStatus",
    "LogEntry",
    "MemoryState",
    "NewEntry",
    "NewFact",
    "NewSummary",
    "Pin",
    "Player",
    "RecallHit",
    "Store",
    "Summary",
    "SummaryKind",
    "Visibility",
]
