"""bench turns' players (bot/bench/turns.py): a turn the GM had nothing to say for is tried again, as a player would."""

from __future__ import annotations

import pytest

from bot.bench.turns import Run, played
from bot.engine import Engine
from bot.engine.turn.results import ModelFailed
from bot.model import ScriptedModel


async def _seated(engine: Engine) -> int:
    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.join(game.id, "maya", "Maya")
    await engine.warmups.idle()
    return game.id


async def test_a_turn_the_gm_had_nothing_to_say_for_is_retried_once_and_counted(
    engine: Engine, scripted: ScriptedModel
):
    game_id = await _seated(engine)
    answer = "The lamp room door swings open; oil and brass polish scent the stale air of the tower."
    scripted.enqueue("", "", answer)  # nothing, asked again: nothing, "Try again."; the player presses Retry
    run = Run("live")
    shown: list[str] = []
    result = await played(engine, game_id, "maya", "I open the lamp room door.", shown.append, run)
    assert result.text == answer and "".join(shown) == answer
    assert run.retried == 1


async def test_a_retry_with_nothing_to_say_again_is_the_players_error(engine: Engine, scripted: ScriptedModel):
    game_id = await _seated(engine)
    scripted.enqueue("", "", "", "")
    with pytest.raises(ModelFailed):
        await played(engine, game_id, "maya", "I open the lamp room door.", run=Run("live"))
