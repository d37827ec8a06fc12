"""A test guard against stalling the event loop: one server's work must never stall the loop for all.

``async with slow_callbacks(bound) as slow:`` times every callback the loop runs inside the block (a task's step
between two awaits, as asyncio's debug mode does) and collects a line for each that held the loop past
``bound``. What counts is the time the loop's thread spent on the callback: running it, waiting inside it (a
blocking socket, a file, a lock, the GIL held by another thread). Two pauses that no code under test causes are
taken out, each measured, and both are named in the line: time the operating system kept the thread waiting for
a core (``/proc/thread-self/schedstat``'s run-queue wait, where Linux keeps it), which on a shared machine grows
with whatever else runs there; and the cyclic garbage collector's passes, which walk the whole process's heap
(a pytest session's, here) wherever the count of allocations happens to run out. The bound is generous (a
shared, noisy machine): what it catches is work that belongs in a thread, which takes seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

SLOW_CALLBACK_BOUND = 0.5  # seconds; Discord's own deadline for an answer is 3

_SCHEDSTAT = Path("/proc/thread-self/schedstat")


def _queued() -> float:
    """Seconds this thread has waited for a core so far (0 where the system does not say)."""
    try:
        return int(_SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class _Collector:
    """Seconds spent in the garbage collector while installed, in any thread (a pass holds the GIL)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._started: float | None = None

    def __call__(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            self.total += time.perf_counter() - self._started
            self._started = None


def _named(handle: asyncio.Handle) -> str:
    """A callback as asyncio's debug mode names it: a task's step by its task."""
    owner = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
    return repr(owner) if isinstance(owner, asyncio.Task) else repr(handle)


@contextlib.asynccontextmanager
async def slow_callbacks(bound: float = SLOW_CALLBACK_BOUND) -> AsyncIterator[list[str]]:
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    lines: list[str] = []
    collector = _Collector()
    run = asyncio.events.Handle._run

    def timed(handle: asyncio.Handle) -> None:
        if threading.get_ident() != loop_thread:
            run(handle)
            return
        started, queued, collected = time.perf_counter(), _queued(), collector.total
        try:
            run(handle)
        finally:
            took = time.perf_counter() - started
            queued, collected = _queued() - queued, collector.total - collected
            if took - queued - collected >= bound:
                lines.append(
                    f"Executing {_named(handle)} took {took:.3f} seconds ({queued:.3f} waiting for a core,"
                    f" {collected:.3f} collecting garbage)"
                )

    debug, duration = loop.get_debug(), loop.slow_callback_duration
    loop.set_debug(True)  # asyncio's own checks too: a call from the wrong thread, a coroutine never awaited
    loop.slow_callback_duration = bound  # and its own log of slow callbacks, as they are seen
    gc.callbacks.append(collector)
    asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
    try:
        await asyncio.sleep(0)  # the block starts a step of its own, timed as every other
        yield lines
    finally:
        # The step of the task that ran the block is timed when it ends: end it here, while watching.
        await asyncio.sleep(0)
        asyncio.events.Handle._run = run  # type: ignore[method-assign]
        gc.callbacks.remove(collector)
        loop.set_debug(debug)
        loop.slow_callback_duration = duration
