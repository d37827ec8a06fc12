"""What the process keeps for each game between turns; everything lasting is in the store.

One :class:`GameSession` per game owns its locks, the last prompt it sent
the model (to measure what the next one reuses), its round timer and its
background upkeep, as Red-DiscordBot's trivia keeps one session per channel.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from bot.model.base import ChatMessage


class TurnLock:
    """A game's turn lock that knows which task holds it, so code that needs it held can check, not trust.

    It is not re-entrant: a holder that asks for it again (a turn that calls join, a roll or an edit) is refused
    at once rather than left waiting for itself for ever. A warm-up holds it :meth:`quietly`: it keeps the log's
    order while the next prompt is built, but no one is told the GM is writing.
    """

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._holder: asyncio.Task | None = None
        self._quiet = False

    async def __aenter__(self) -> TurnLock:
        await self._acquire(quiet=False)
        return self

    async def __aexit__(self, *exc) -> None:
        self._holder = None
        self._quiet = False
        self._lock.release()

    @contextlib.asynccontextmanager
    async def quietly(self) -> AsyncIterator[TurnLock]:
        """Held for work that only reads ahead (a warm-up's prompt): :meth:`busy` stays false meanwhile."""
        await self._acquire(quiet=True)
        try:
            yield self
        finally:
            await self.__aexit__()

    async def _acquire(self, *, quiet: bool) -> None:
        if self.held_here():
            raise RuntimeError("The game's turn lock is already held by this task: it is not re-entrant")
        await self._lock.acquire()
        self._holder = asyncio.current_task()
        self._quiet = quiet

    def locked(self) -> bool:
        return self._lock.locked()

    def busy(self) -> bool:
        """Whether a turn, join, roll or edit holds the game (a warm-up reading ahead does not count)."""
        return self._lock.locked() and not self._quiet

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
        return self.turn_lock.busy()

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
