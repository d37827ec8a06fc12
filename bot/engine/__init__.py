"""Games, players and turns: :class:`Engine` is the front door (see :mod:`bot.engine.game`)."""

from bot.engine.game import NO_GAME, Engine
from bot.engine.table.config import EngineConfig
from bot.engine.table.server_admin import ServerAdmin
from bot.engine.table.settings import setting_names
from bot.engine.turn.results import (
    MODEL_UNAVAILABLE,
    GameStarted,
    ModelDown,
    ModelFailed,
    RollResult,
    RoundState,
    TurnResult,
)
from bot.memory.context import GM_ONLY_LAYERS
from bot.model.base import ModelUnavailable

__all__ = [
    "GM_ONLY_LAYERS",
    "MODEL_UNAVAILABLE",
    "NO_GAME",
    "Engine",
    "EngineConfig",
    "GameStarted",
    "ModelDown",
    "ModelFailed",
    "ModelUnavailable",
    "RollResult",
    "RoundState",
    "ServerAdmin",
    "TurnResult",
    "setting_names",
]
