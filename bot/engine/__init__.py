"""Games, players and turns: :class:`Engine` is the front door (see :mod:`bot.engine.game`)."""

from bot.engine.config import EngineConfig
from bot.engine.game import NO_GAME, Engine
from bot.engine.results import GameStarted, ModelFailed, RollResult, RoundState, TurnResult
from bot.engine.server_admin import ServerAdmin

__all__ = [
    "NO_GAME",
    "Engine",
    "EngineConfig",
    "GameStarted",
    "ModelFailed",
    "RollResult",
    "RoundState",
    "ServerAdmin",
    "TurnResult",
]
