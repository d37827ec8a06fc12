"""What the engine hands a front end: a started game, a turn's result, a roll, a round's state, a failed turn."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from bot import dice
from bot.errors import UserError
from bot.memory.context import Context
from bot.model.base import CallStats, ModelUnavailable
from bot.store import Game, LogEntry, Player, Visibility
from bot.worlds import World

log = logging.getLogger(__name__)

OnText = Callable[[str], Awaitable[None] | None]

MODEL_FAILED = "The GM could not answer just now; your action is saved. Try again."
MODEL_UNAVAILABLE = "The model is unavailable just now; nothing is lost. Try again in a minute."
NOTHING_TO_SAY = "The GM had nothing to say; your action is saved. Try again."


class ModelFailed(UserError):
    """The model raised or said nothing; the player's action is kept, at ``turn`` (the turn a Retry answers)."""

    def __init__(self, message: str = MODEL_FAILED, *, turn: int):
        super().__init__(message)
        self.turn = turn


class ModelDown(UserError):
    """A command outside a turn (a compaction, a chapter's end) needed the model and could not use it: a model
    server down, its tokenizer failing. Members read :data:`MODEL_UNAVAILABLE`; what went wrong, which may name
    where the model runs, is logged."""

    def __init__(self, message: str = MODEL_UNAVAILABLE):
        super().__init__(message)


@dataclass(frozen=True)
class GameStarted:
    game: Game
    world: World
    opening: LogEntry


@dataclass(frozen=True)
class PrivateMessage:
    """What the GM told one player alone this turn; the front end delivers it to them only."""

    player: Player
    entry: LogEntry


@dataclass(frozen=True, kw_only=True)
class TurnResult:
    """What a front end renders after a turn."""

    game: Game
    turn: int
    action: LogEntry
    reply: LogEntry
    context: Context
    seconds: float
    first_text_seconds: float
    private: tuple[PrivateMessage, ...] = ()
    draft: str | None = None  # the first draft's public text, when the leak guard stopped it
    model: CallStats | None = None  # what the model's call cost: tokens read, reused, written
    raw: str = ""  # what the model wrote last, asides included, after the reply rules

    @property
    def text(self) -> str:
        return self.reply.content

    @property
    def public(self) -> bool:
        """Whether the reply goes to the channel; the answer to a secret action goes to its player only."""
        return self.reply.visibility is Visibility.PUBLIC


OnRoundClosed = Callable[[TurnResult], Awaitable[None]]


@dataclass(frozen=True)
class RollResult:
    roll: dice.Roll
    entry: LogEntry


@dataclass(frozen=True)
class RoundState:
    """A round under the "round" turn policy: who has acted, who the GM waits for."""

    turn: int
    acted: list[str]
    waiting: list[str]
    seconds: int


@contextlib.asynccontextmanager
async def asks_the_model(game_id: int, what: str) -> AsyncIterator[None]:
    """Around a command that waits on the model outside a turn: a model it cannot use is :class:`ModelDown`, a
    sentence for members; why (which may name the model server's address) goes to the log."""
    try:
        yield
    except Exception as exc:
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, ModelUnavailable):
            cause = cause.__cause__  # the memory's upkeep wraps the model's error in its own
        if cause is None:
            raise
        log.warning("Game %d: %s failed, the model is unavailable: %s", game_id, what, cause)
        raise ModelDown(MODEL_UNAVAILABLE) from exc
