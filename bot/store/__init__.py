"""The store: games, players, the turn log and the memory in one SQLite file.

The models (:mod:`bot.store.models`) are plain data that the memory policy reads too; :class:`Store` and
:class:`StorageError` are loaded on first use, so importing the models does not load the database driver.
"""

from typing import TYPE_CHECKING, Any

from bot.store.models import (
    EntryKind,
    Fact,
    FactKind,
    FrontSnapshot,
    Game,
    GameStatus,
    GlossaryTerm,
    JobFailure,
    LeakHit,
    LogEntry,
    MemoryState,
    NewEntry,
    NewFact,
    NewReveal,
    NewSummary,
    Pin,
    Player,
    PlayerMemory,
    RecallHit,
    RevealRecord,
    Summary,
    SummaryKind,
    TurnNote,
    Visibility,
)

if TYPE_CHECKING:
    from bot.store.store import StorageError, Store

__all__ = [
    "EntryKind",
    "Fact",
    "FactKind",
    "FrontSnapshot",
    "Game",
    "GlossaryTerm",
    "JobFailure",
    "LeakHit",
    "GameStatus",
    "LogEntry",
    "MemoryState",
    "NewEntry",
    "NewFact",
    "NewReveal",
    "NewSummary",
    "Pin",
    "Player",
    "PlayerMemory",
    "RecallHit",
    "RevealRecord",
    "StorageError",
    "Store",
    "Summary",
    "SummaryKind",
    "TurnNote",
    "Visibility",
]


def __getattr__(name: str) -> Any:
    if name in ("StorageError", "Store"):
        from bot.store import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
