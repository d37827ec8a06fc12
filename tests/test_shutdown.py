"""SIGTERM and SIGINT stop the bot cleanly: the running reply finishes, or its action waits for a retry (F29); the
Discord connection's close on either signal is tests/test_discord_client.py's."""

from __future__ import annotations

import asyncio

import pytest

from bot.engine import Engine
from bot.errors import UserError
from bot.model import ScriptedModel
from bot.store import EntryKind

LAMP = "The lamp catches with a soft whump, and yellow light climbs the spiral stair of the tower."


async def _a_held_turn(engine: Engine, scripted: ScriptedModel):
    game = (await engine.start_game("term:1", "lighthouse")).game
    await engine.join(game.id, "u:maya", "Maya")
    scripted.block.clear()
    scripted.enqueue(LAMP)
    turn = asyncio.create_task(engine.act(game.id, "u:maya", "I light the lamp."))
    while not (engine.sessions[game.id].turn_running and scripted.started):
        await asyncio.sleep(0.01)
    return game, turn


async def test_stopping_lets_the_running_reply_finish_and_takes_no_new_turn(engine: Engine, scripted: ScriptedModel):
    game, turn = await _a_held_turn(engine, scripted)
    draining = asyncio.create_task(engine.drain(seconds=600))
    while not engine.stopping:  # the drain has begun
        await asyncio.sleep(0)
    await asyncio.sleep(0.06)  # past one of its checks for running turns
    assert not draining.done(), "it waits for the reply being written"
    with pytest.raises(UserError, match="restarting"):
        await engine.act(game.id, "u:maya", "I climb the stair.")
    scripted.block.set()
    assert (await turn).text == LAMP
    assert await draining is True
    log = await engine.history(game.id, 2)
    assert [(e.kind, e.content) for e in log] == [
        (EntryKind.ACTION, "I light the lamp."),
        (EntryKind.GM, LAMP),
    ]


async def test_a_reply_that_outlasts_the_grace_leaves_its_action_for_a_retry(engine: Engine, scripted: ScriptedModel):
    game, turn = await _a_held_turn(engine, scripted)
    assert await engine.drain(seconds=0.1) is False
    turn.cancel()  # the process ends here
    scripted.block.set()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert [e.content for e in await engine.unanswered(game.id)] == ["I light the lamp."]
