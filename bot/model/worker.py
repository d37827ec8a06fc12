"""One worker owns the model and runs its jobs, most urgent first, off the loop."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, TypeVar

from pydantic import BaseModel

from bot.model.base import LanguageModel, Messages
from bot.model.structured import Structured, generate_object

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")


class Priority(IntEnum):
    """Lower runs first: a waiting player is never behind maintenance."""

    PLAYER = 0
    PRIVATE = 1
    MAINTENANCE = 2


@dataclass(order=True)
class _Job:
    priority: int
    seq: int
    run: Callable[[], Any] = field(compare=False)
    future: asyncio.Future = field(compare=False)


_DONE = object()


class ModelWorker:
    """Runs model calls one at a time in a thread, from a priority queue.

    ``async with ModelWorker(model) as worker:`` starts and stops it.
    """

    def __init__(self, model: LanguageModel):
        self.model = model
        self._queue: asyncio.PriorityQueue[_Job] = asyncio.PriorityQueue()
        self._seq = itertools.count()
        self._task: asyncio.Task | None = None

    async def __aenter__(self) -> ModelWorker:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._serve(), name="model-worker")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        while not self._queue.empty():
            job = self._queue.get_nowait()
            if not job.future.done():
                job.future.cancel()

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    async def run(self, fn: Callable[[], R], *, priority: Priority) -> R:
        """Run ``fn`` (which calls the model) when its turn comes; return its result."""
        if self._task is None:
            raise RuntimeError("the model worker is not running")
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Job(int(priority), next(self._seq), fn, future))
        return await future

    async def generate(self, messages: Messages, *, max_tokens: int, priority: Priority = Priority.PLAYER) -> str:
        return await self.run(lambda: self.model.generate(messages, max_tokens=max_tokens), priority=priority)

    async def generate_object(
        self,
        messages: Messages,
        schema_type: type[T],
        *,
        fallback: T,
        max_tokens: int = 256,
        priority: Priority = Priority.MAINTENANCE,
    ) -> Structured[T]:
        return await self.run(
            lambda: generate_object(self.model, messages, schema_type, fallback=fallback, max_tokens=max_tokens),
            priority=priority,
        )

    async def stream(
        self, messages: Messages, *, max_tokens: int, priority: Priority = Priority.PLAYER
    ) -> AsyncIterator[str]:
        """The reply piece by piece. Leaving the loop early stops the model."""
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue = asyncio.Queue()
        stop = threading.Event()

        def produce() -> None:
            try:
                for piece in self.model.stream(messages, max_tokens=max_tokens):
                    if stop.is_set():
                        break
                    loop.call_soon_threadsafe(pieces.put_nowait, piece)
            finally:
                loop.call_soon_threadsafe(pieces.put_nowait, _DONE)

        job = asyncio.ensure_future(self.run(produce, priority=priority))
        try:
            while not job.done() or not pieces.empty():
                getter = asyncio.ensure_future(pieces.get())
                await asyncio.wait({getter, job}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    # The job ended first. Its pieces were queued before it
                    # finished (same thread, earlier callbacks), so the loop
                    # condition drains them.
                    getter.cancel()
                    continue
                piece = getter.result()
                if piece is _DONE:
                    break
                yield piece
            await job  # raise what the model raised, before or during the stream
        finally:
            stop.set()
            if not job.done():
                job.cancel()

    def count_tokens(self, text: str) -> int:
        # Tokenizing reads only the vocabulary, so it needs no turn in the queue.
        return self.model.count_tokens(text)

    async def _serve(self) -> None:
        while True:
            job = await self._queue.get()
            if job.future.cancelled():
                continue
            try:
                result = await asyncio.to_thread(job.run)
            except Exception as exc:
                if not job.future.done():
                    job.future.set_exception(exc)
            else:
                if not job.future.done():
                    job.future.set_result(result)
