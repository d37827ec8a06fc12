"""What the process keeps for each game between turns; everything lasting is in the store.

One :class:`GameSession` per game owns its locks, the last prompt it sent
the model (to measure what the next one reuses), its round timer and its
background upkeep, as Red-DiscordBot's trivia keeps one session per channel.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bot.model.base import ChatMessage


class TurnLock:
    """A game's turn lock that knows which task holds it, so code that needs it held can check, not trust."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._holder: asyncio.Task | None = None

    async def __aenter__(self) -> TurnLock:
        await self._lock.acquire()
        self._holder = asyncio.current_task()
        return self

    async def __aexit__(self, *exc) -> None:
        self._holder = None
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def held_here(self) -> bool:
        """Whether the running task holds the lock."""
        return self._holder is not None and self._holder is asyncio.current_task()

    def require(self, what: str) -> None:
        """Raise unless the running task holds the lock: ``what`` changes the game's log in its order."""
        if not self.held_here():
            raise RuntimeError(f"{what} needs the game's turn lock, held by the task that calls it")


@dataclass(eq=False)
class GameSession:
    game_id: int
    # One turn, join, roll or edit at a time: the log's order is the story's.
    turn_lock: TurnLock = field(default_factory=TurnLock)
    # One memory job writing summaries at a time (compaction, chapters, rebuilds).
    memory_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # The last GM prompt with the reply that followed it: what the model's cache holds for this game.
    last_prompt: list[ChatMessage] | None = None
    turns_asked: int = 0  # GM replies asked of the model for this game by this process (a warm-up after one is late)
    round_timer: asyncio.Task | None = None
    upkeep: asyncio.Task | None = None
    upkeep_again: bool = False

    @property
    def slot(self) -> str:
        """The name the model keeps this game's state under."""
        return f"game:{self.game_id}"

    @property
    def turn_running(self) -> bool:
        """A turn, join, roll or edit holds the game: whatever comes next waits for it."""
        return self.turn_lock.locked()

    @property
    def round_open(self) -> bool:
        """A round's window is running: its actions wait for the others, not for a retry."""
        return self.round_timer is not None and not self.round_timer.done()

    @property
    def upkeep_running(self) -> bool:
        return self.upkeep is not None and not self.upkeep.done()


class Sessions:
    """The sessions of every game this process has touched, made on first use."""

    def __init__(self) -> None:
        self._sessions: dict[int, GameSession] = {}

    def __getitem__(self, game_id: int) -> GameSession:
        session = self._sessions.get(game_id)
        if session is None:
            session = self._sessions[game_id] = GameSession(game_id)
        return session

    def __iter__(self):
        return iter(list(self._sessions.values()))
