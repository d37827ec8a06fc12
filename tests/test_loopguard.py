"""The guard the event-loop tests stand on catches both ways of stalling the loop, and not a task that awaits."""

from __future__ import annotations

import asyncio
import time

from tests.loopguard import slow_callbacks


def _compute(seconds: float) -> int:
    until, n = time.thread_time() + seconds, 0
    while time.thread_time() < until:
        n += 1
    return n


async def test_work_done_on_the_loop_is_caught():
    async with slow_callbacks(0.2) as slow:
        _compute(0.3)
    assert len(slow) == 1 and "test_work_done_on_the_loop_is_caught" in slow[0], slow


async def test_a_blocking_wait_on_the_loop_is_caught():
    async with slow_callbacks(0.2) as slow:
        time.sleep(0.3)  # as a blocking socket or file read would
    assert len(slow) == 1, slow


async def test_work_in_a_thread_and_awaiting_are_not_caught():
    async with slow_callbacks(0.2) as slow:
        await asyncio.to_thread(time.sleep, 0.3)
        await asyncio.sleep(0.3)
        await asyncio.to_thread(_compute, 0.3)
    assert slow == [], slow
