"""The store: games, players, the turn log and settings in one SQLite file."""

from bot.store.models import (
    EntryKind,
    Game,
    GameStatus,
    LogEntry,
    MemoryState,
    NewEntry,
    NewSummary,
    Player,
    Summary,
    SummaryKind,
    Visibility,
)
from bot.store.store import Store

__all__ = [
    "EntryKind",
    "Game",
    "GameStatus",
    "LogEntry",
    "MemoryState",
    "NewEntry",
    "NewSummary",
    "Player",
    "Store",
    "Summary",
    "SummaryKind",
    "Visibility",
]
