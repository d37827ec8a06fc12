"""Games, players and turns."""

from bot.engine.game import Engine, EngineConfig, GameStarted, ModelFailed, RollResult, RoundState, TurnResult

__all__ = ["Engine", "EngineConfig", "GameStarted", "ModelFailed", "RollResult", "RoundState", "TurnResult"]
