"""Tests of bot.engine.table.session: what the process keeps for each game between turns, and the turn lock that
knows which task holds it."""

from __future__ import annotations

import asyncio

import pytest

from bot.engine.table.session import GameSession, Sessions, TurnLock


async def test_a_held_turn_lock_is_busy_and_known_held_by_its_task_alone():
    lock = TurnLock()
    assert not lock.locked() and not lock.busy() and not lock.held_here()
    async with lock as held:
        assert held is lock
        assert lock.locked() and lock.busy() and lock.held_here()
        lock.require("Storing an action")  # held here: no error

        async def elsewhere() -> bool:
            return lock.held_here()

        assert await asyncio.create_task(elsewhere()) is False, "another task does not hold it"
    assert not lock.locked() and not lock.busy() and not lock.held_here()


async def test_asking_again_for_a_turn_lock_already_held_is_refused_at_once_not_waited_for():
    lock = TurnLock()
    async with lock:
        async with asyncio.timeout(1):  # in this task: a lock that waited for itself would time out here
            with pytest.raises(RuntimeError, match="already held by this task: it is not re-entrant"):
                async with lock:
                    pass
            with pytest.raises(RuntimeError, match="not re-entrant"):
                async with lock.quietly():
                    pass
        assert lock.held_here(), "the refusal leaves the lock with its holder"
    assert not lock.locked()


async def test_code_that_changes_the_log_says_so_when_the_lock_is_not_held_by_its_task():
    lock = TurnLock()
    with pytest.raises(RuntimeError, match="Answering an action needs the game's turn lock"):
        lock.require("Answering an action")
    entered, leave = asyncio.Event(), asyncio.Event()

    async def holder() -> None:
        async with lock:
            entered.set()
            await leave.wait()

    task = asyncio.create_task(holder())
    await entered.wait()
    with pytest.raises(RuntimeError, match="Storing an action needs the game's turn lock"):
        lock.require("Storing an action")
    leave.set()
    await task


async def test_a_warm_up_holds_the_lock_quietly_so_no_one_is_told_the_gm_is_writing():
    lock = TurnLock()
    async with lock.quietly() as held:
        assert held is lock
        assert lock.locked() and lock.held_here() and not lock.busy()
    assert not lock.locked()
    async with lock:
        assert lock.busy(), "a turn after a quiet hold is busy again"


async def test_a_quiet_hold_is_let_go_even_when_its_work_fails():
    lock = TurnLock()
    with pytest.raises(ValueError):
        async with lock.quietly():
            raise ValueError("the prompt could not be built")
    assert not lock.locked() and not lock.held_here()


async def test_the_next_holder_waits_for_the_lock_and_gets_it_in_turn():
    lock = TurnLock()
    order: list[str] = []

    async def turn(name: str) -> None:
        async with lock:
            order.append(f"{name} in")
            await asyncio.sleep(0.01)
            order.append(f"{name} out")

    await asyncio.gather(turn("maya"), turn("tom"))
    assert order == ["maya in", "maya out", "tom in", "tom out"]


async def test_a_games_session_says_when_its_turn_round_and_upkeep_run():
    session = GameSession(3)
    assert session.slot == "game:3"
    assert not session.turn_running and not session.round_open and not session.upkeep_running
    assert session.last_prompt is None and session.turns_asked == 0 and not session.upkeep_again

    async with session.turn_lock:
        assert session.turn_running
    async with session.turn_lock.quietly():
        assert not session.turn_running, "a warm-up reading ahead is not a turn"

    release = asyncio.Event()
    session.round_timer = asyncio.create_task(release.wait())
    session.upkeep = asyncio.create_task(release.wait())
    await asyncio.sleep(0)
    assert session.round_open and session.upkeep_running
    release.set()
    await asyncio.gather(session.round_timer, session.upkeep)
    assert not session.round_open and not session.upkeep_running


async def test_sessions_are_made_on_first_use_one_per_game_and_kept():
    sessions = Sessions()
    assert list(sessions) == []
    first = sessions[1]
    assert isinstance(first, GameSession) and first.game_id == 1
    assert sessions[1] is first
    second = sessions[2]
    assert list(sessions) == [first, second]
    assert first.turn_lock is not second.turn_lock and first.memory_lock is not second.memory_lock


async def test_iterating_sessions_sees_a_copy_so_a_new_game_can_start_meanwhile():
    sessions = Sessions()
    sessions[1]
    seen = []
    for session in sessions:
        seen.append(session.game_id)
        sessions[session.game_id + 1]  # a game started while the sessions are walked
    assert seen == [1] and [s.game_id for s in sessions] == [1, 2]
