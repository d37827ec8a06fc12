"""No cold first turn (F35): a game's prompt is read ahead as soon as the game exists and when players join, at a
priority every player's turn comes before; the turn then finds it in its slot."""

from __future__ import annotations

import asyncio

from bot.engine import Engine
from bot.engine.turn.warmup import PLACEHOLDER
from bot.model import ScriptedModel
from bot.model.worker import Priority


async def test_a_new_game_is_read_ahead_and_again_when_a_player_joins(engine: Engine, scripted: ScriptedModel):
    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.warmups.idle(game.id)
    (first,) = scripted.prefilled
    assert first.slot == f"game:{game.id}" and first.messages[-1].content.endswith(PLACEHOLDER)
    assert "The supply boat bumps" in first.prompt_text, "the opening is read ahead with the frozen layer"
    await engine.join(game.id, "maya", "Maya")
    await engine.warmups.idle(game.id)
    assert len(scripted.prefilled) == 2 and "Maya" in scripted.prefilled[1].messages[0].content

    result = await engine.act(game.id, "maya", "I climb the stair.")
    stats = result.model
    assert stats.reused_tokens >= 0.8 * stats.prompt_tokens, "the first turn reads only what follows the read-ahead"
    records = [r for r in engine.worker.records if r.priority is Priority.PREFILL]
    assert len(records) == 2 and all(r.ok for r in records)


async def test_a_players_turn_comes_before_a_read_ahead_and_a_late_one_is_skipped(
    engine: Engine, scripted: ScriptedModel
):
    scripted.block.clear()  # the model reads the new game ahead, slowly
    game = (await engine.start_game("chan", "lighthouse")).game
    while not engine.worker._running:
        await asyncio.sleep(0.01)
    [(running, _)] = engine.worker._running.values()
    assert running.label == f"prefill game:{game.id}"
    await engine.join(game.id, "maya", "Maya")  # another read-ahead of it waits behind the running one
    turn = asyncio.create_task(engine.act(game.id, "maya", "I knock."))
    other = (await engine.start_game("elsewhere", "lighthouse")).game  # another game's read-ahead waits too
    for _ in range(1000):  # on a loaded machine the turn takes a while to reach the worker
        if scripted.interrupted:
            break
        await asyncio.sleep(0.01)
    assert scripted.interrupted == 1, "the read-ahead that was running gave way to the turn"
    scripted.block.set()
    assert (await asyncio.wait_for(turn, 10)).text
    await engine.warmups.idle()
    labels = [r.label for r in engine.worker.records]
    assert labels.index(f"game:{game.id}") < labels.index(f"prefill game:{other.id}"), "the player first"
    assert [call.slot for call in scripted.prefilled] == [f"game:{other.id}"]
    assert engine.warmups.skipped == 1, "the game's read-ahead, late after its turn, did not replace its state"


async def test_an_ended_game_drops_what_the_model_kept_for_it(engine: Engine, scripted: ScriptedModel):
    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.warmups.idle()
    await engine.end_game("chan")
    assert scripted.dropped == [f"game:{game.id}"]


async def test_a_game_ended_before_its_read_ahead_ran_is_not_read_ahead(engine: Engine, scripted: ScriptedModel):
    scripted.block.clear()  # the model is busy reading another game ahead
    busy = (await engine.start_game("busy", "lighthouse")).game
    while not engine.worker._running:
        await asyncio.sleep(0.01)
    game = (await engine.start_game("chan", "lighthouse")).game  # its read-ahead waits behind
    await asyncio.sleep(0.1)
    await engine.end_game("chan")
    scripted.block.set()
    await engine.warmups.idle()
    assert [call.slot for call in scripted.prefilled] == [f"game:{busy.id}"], "nothing read for an ended game"
    assert f"game:{game.id}" in scripted.dropped


async def test_ending_a_game_never_holds_the_event_loop_while_the_model_waits(engine: Engine, scripted: ScriptedModel):
    """Dropping an ended game's state waits for the model's state lock (another game's state being written, 1.8 s
    measured): in a thread, so the loop serves everyone else meanwhile."""
    import threading
    import time

    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.warmups.idle()
    slow = threading.Event()

    def drop(slot: str) -> None:
        slow.wait(1.0)  # as the lock held by another game's write
        scripted.dropped.append(slot)

    scripted.drop_state = drop
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.05)

    ticker = asyncio.create_task(tick())
    started = time.monotonic()
    await engine.end_game("chan")
    ticker.cancel()
    assert time.monotonic() - started >= 0.9 and ticks >= 10, "the loop went on while the state was dropped"
    assert scripted.dropped[-1] == f"game:{game.id}"
