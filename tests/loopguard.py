"""asyncio's slow-callback detection as a test guard: one server's work must never stall the loop for all.

``async with slow_callbacks(bound) as slow:`` runs the block with the loop in debug mode, where asyncio logs
every callback (a task's step between two awaits) that ran longer than ``slow_callback_duration``; ``slow``
collects those lines. The bound is generous (a shared, noisy machine): what it catches is work that belongs
in a thread, which takes seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

SLOW_CALLBACK_BOUND = 0.5  # seconds; Discord's own deadline for an answer is 3


class _Collect(logging.Handler):
    def __init__(self, lines: list[str]):
        super().__init__(logging.WARNING)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Executing ") and " took " in message:
            self.lines.append(message)


@contextlib.asynccontextmanager
async def slow_callbacks(bound: float = SLOW_CALLBACK_BOUND) -> AsyncIterator[list[str]]:
    loop = asyncio.get_running_loop()
    debug, duration = loop.get_debug(), loop.slow_callback_duration
    logger = logging.getLogger("asyncio")
    lines: list[str] = []
    handler = _Collect(lines)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.WARNING)
    loop.set_debug(True)
    loop.slow_callback_duration = bound
    try:
        yield lines
    finally:
        # The step of the task that ran the block is timed when it ends: end it here, while watching.
        await asyncio.sleep(0)
        loop.set_debug(debug)
        loop.slow_callback_duration = duration
        logger.removeHandler(handler)
        logger.setLevel(level)
