"""Games, players and turns: :class:`Engine` is the front door (see :mod:`bot.engine.game`)."""

from bot.engine.config import EngineConfig
from bot.engine.game import NO_GAME, Engine
from bot.engine.results import (
    MODEL_UNAVAILABLE,
    GameStarted,
    ModelDown,
    ModelFailed,
    RollResult,
    RoundState,
    TurnResult,
)
from bot.engine.server_admin import ServerAdmin
from bot.engine.settings import setting_names
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
