"""Every command answers within Discord's deadline, whatever the model is doing (F2, F29).

A turn is started through the engine and held mid-reply by the scripted
model's ``block`` event; the command is then run as SimCord's only
operation. It must be answered while the turn still holds the game (Discord
gives three seconds), and its result must be shown once the turn is done.
"""

from __future__ import annotations

import asyncio

import pytest

from bot.engine import Engine
from bot.model import ScriptedModel

# A bound on waiting for something that, when the code is right, happens at once; not a speed test.
PATIENCE = 400


async def _hold_a_turn(engine: Engine, scripted: ScriptedModel, channel, maya) -> asyncio.Task:
    """A turn of Maya's that holds the game's lock: the model is blocked mid-reply."""
    game = await engine.current_game(f"discord:{channel.id}")
    scripted.block.clear()
    turn = asyncio.create_task(engine.act(game.id, f"discord:{maya.id}", "I wait for the storm."))
    for _ in range(PATIENCE):
        if engine.sessions[game.id].turn_running and scripted.started:
            return turn
        await asyncio.sleep(0.01)
    raise AssertionError("the turn never started")


async def _answered_during(simcord_env, scripted: ScriptedModel, turn: asyncio.Task, command) -> tuple:
    """Run ``command`` while ``turn`` is held; return its result and the first answer it gave during the turn."""
    backend = simcord_env.backend
    before = set(backend.interactions)
    running = asyncio.create_task(command)
    answer = None
    try:
        for _ in range(PATIENCE):
            new = [i for key, i in backend.interactions.items() if key not in before]
            if new and new[0].responded:
                assert not turn.done()
                answer = backend.get_message(new[0].channel_id, new[0].message_id).content
                break
            await asyncio.sleep(0.01)
    finally:
        scripted.block.set()  # let the turn end whatever happened, so nothing waits forever
    await turn
    return await running, answer


@pytest.mark.parametrize(
    ("who", "command", "options", "shown"),
    [
        ("maya", "roll", {"dice": "1d20"}, "**Maya** rolls 1d20"),
        ("tom", "join", {"name": "Tom"}, "joins as **Tom**."),
        ("maya", "leave", {}, "**Maya** leaves the game."),
        ("maya", "game end", {}, "The game ends after 1 turns."),
    ],
)
async def test_a_command_during_a_turn_answers_at_once_and_finishes_after_it(
    simcord_env, table, engine: Engine, scripted: ScriptedModel, who, command, options, shown
):
    channel, maya, tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    turn = await _hold_a_turn(engine, scripted, channel, maya)
    actor = {"maya": maya, "tom": tom}[who]
    result, answer = await _answered_during(simcord_env, scripted, turn, actor.slash(channel, command, **options))
    assert answer is not None, "no answer while the GM was writing: Discord would say the application did not respond"
    assert answer.startswith("The GM is writing"), answer
    assert result.ephemeral, "the notice is for the asker alone"
    followups = [m.content for m in result.followups]
    assert any(shown in text for text in followups), followups
    assert not any(m.ephemeral for m in result.followups), "the result is shown to the table"


async def test_a_command_with_no_turn_running_answers_directly(simcord_env, table, engine: Engine):
    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    result = await maya.slash(channel, "roll", dice="1d20")
    assert result.response.content.startswith("**Maya** rolls 1d20")
    assert not result.followups


async def test_a_bad_roll_during_a_turn_is_refused_in_the_followup(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    turn = await _hold_a_turn(engine, scripted, channel, maya)
    result, answer = await _answered_during(simcord_env, scripted, turn, maya.slash(channel, "roll", dice="banana"))
    assert answer.startswith("The GM is writing")
    assert [m.ephemeral for m in result.followups] == [True]
    assert "dice" in result.followups[0].content.lower(), result.followups[0].content
