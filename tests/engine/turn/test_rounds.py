"""Tests of bot.engine.turn.rounds: the "round" turn policy, one narration for all the players' actions."""

from __future__ import annotations

import asyncio

from bot.engine import Engine
from bot.store import EntryKind
from tests.engine.test_game import _game_with


async def test_an_ended_games_open_round_never_narrates(engine: Engine, scripted):
    game = await _game_with(engine, "chan", "Maya", "Tom")
    await engine.set_setting(game.id, "turn_policy", "round")
    await engine.set_setting(game.id, "round_seconds", "5")
    closed: list = []

    async def on_closed(result) -> None:
        closed.append(result)

    await engine.add_to_round(game.id, "maya", "I light the lamp.", on_closed=on_closed)
    timer = engine.sessions[game.id].round_timer
    assert timer is not None and not timer.done()
    await engine.end_game("chan")
    await asyncio.sleep(0)
    assert timer.cancelled() or timer.done(), "ending the game stops its round's timer"
    assert await engine.close_round(game.id) is None, "nor does a late close narrate it"
    assert closed == [] and not [c for c in scripted.calls if c.kind == "stream"]
    assert [e.kind for e in await engine.store.log(game.id)][-1] is EntryKind.ACTION, "nothing stored after"


async def test_a_round_closing_while_the_process_stops_calls_no_model(engine: Engine, scripted):
    game = await _game_with(engine, "chan", "Maya", "Tom")
    await engine.set_setting(game.id, "turn_policy", "round")
    await engine.add_to_round(game.id, "maya", "I light the lamp.", on_closed=lambda result: asyncio.sleep(0))
    await engine.drain(0)
    assert await engine.close_round(game.id) is None
    assert not [c for c in scripted.calls if c.kind == "stream"], "the action waits for the next start"


async def test_a_round_waits_for_every_seated_player_and_then_narrates_once_for_all(engine: Engine, scripted):
    game = await _game_with(engine, "chan", "Maya", "Tom")
    await engine.set_setting(game.id, "turn_policy", "round")
    scripted.enqueue("Maya's lamp flares as Tom hauls the door open, and the stair below breathes cold air at both.")
    closed: list = []

    async def on_closed(result) -> None:
        closed.append(result)

    first = await engine.add_to_round(game.id, "maya", "I light the lamp.", on_closed=on_closed)
    assert (first.acted, first.waiting) == (["Maya"], ["Tom"])
    assert closed == [] and not [c for c in scripted.calls if c.kind == "stream"], "the GM waits for Tom"
    second = await engine.add_to_round(game.id, "tom", "I open the door.", on_closed=on_closed)
    assert (second.turn, second.acted, second.waiting) == (first.turn, ["Maya", "Tom"], [])
    assert len(closed) == 1 and closed[0].text.startswith("Maya's lamp flares")
    assert len([c for c in scripted.calls if c.kind == "stream"]) == 1
    prompt = scripted.last().prompt_text
    assert "I light the lamp." in prompt and "I open the door." in prompt
    assert engine.sessions[game.id].round_timer is None, "the round closed before its window ended"
    assert await engine.close_round(game.id) is None, "nobody has acted since the reply"
