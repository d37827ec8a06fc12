"""The store: games, players, the turn log and settings in one SQLite file."""

from bot.store.models import EntryKind, Game, GameStatus, LogEntry, NewEntry, Player, Visibility
from bot.store.store import Store

__all__ = ["EntryKind", "Game", "GameStatus", "LogEntry", "NewEntry", "Player", "Store", "Visibility"]
