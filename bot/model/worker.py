"""One worker owns the model and runs its jobs, most urgent first, off the loop.

Background work never holds a player up: a maintenance job that is running
when a more urgent one arrives is stopped at the model's next safe point
(between prompt chunks, between tokens; on a model server, its connection
closed), put back in the queue in its old place among the maintenance jobs,
and run again once nobody waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import itertools
import logging
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass, field
from enum import IntEnum
from typing import Any, TypeVar

from pydantic import BaseModel

from bot.model.base import (
    CallStats,
    Interrupted,
    LanguageModel,
    Messages,
    ModelUnavailable,
    StopSignal,
    StreamCall,
    Written,
)
from bot.model.structured import Structured, generate_object

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")


class Priority(IntEnum):
    """Lower runs first: a waiting player is never behind maintenance."""

    PLAYER = 0
    PRIVATE = 1
    PREFILL = 2  # a new game's prompt read ahead of its first turn: before the memory's upkeep, after any player
    MAINTENANCE = 3
    EMBEDDING = 4  # recall by meaning's background: after every other job


@dataclass(order=True)
class _Job:
    priority: int
    seq: int
    run: Callable[[], Any] = field(compare=False)
    future: asyncio.Future = field(compare=False)
    interruptible: bool = field(default=False, compare=False)
    label: str = field(default="", compare=False)
    queued_at: float = field(default_factory=time.perf_counter, compare=False)
    interruptions: int = field(default=0, compare=False)


@dataclass(frozen=True)
class JobRecord:
    """One finished model job, for benchmarks and status."""

    priority: Priority
    label: str
    queued_at: float
    started_at: float  # of the run that finished it
    ended_at: float
    busy_seconds: float  # the model's time on it, interrupted runs included
    interruptions: int
    stats: CallStats | None
    ok: bool

    @property
    def waited(self) -> float:
        return self.started_at - self.queued_at


_DONE = object()
RECORDS_KEPT = 10_000


class ModelWorker:
    """Runs model calls one at a time in a thread, from a priority queue.

    A model that serves several calls at once (a model server: its
    ``parallel``) gets as many runners, each taking the most urgent job
    waiting; their background calls are not interrupted, since none waits
    behind another, unless they share the players' cores
    (``background_yields``).

    ``async with ModelWorker(model) as worker:`` starts and stops it.
    """

    def __init__(self, model: LanguageModel):
        self.model = model
        self._closing = False  # close() began: a call whose thread starts now makes no request
        self.parallel = max(1, model.parallel)
        # Background jobs running at once, at most: the other places stay free for players' turns of any game.
        self.background_parallel = max(1, min(self.parallel, model.background_parallel))
        # A model whose calls share the same processor cores (a llama.cpp server on the CPU): a background call
        # beside a player's turn slows that turn, so background calls start only while no player's turn is under
        # way (see turn). A game's prompt read ahead counts as one there, as in process, where a turn interrupts
        # it: four tables started together on two cores (bench tables) read four worlds at once ahead of their
        # turns, each in a place a turn then waited for, and the turns came after all four readings.
        self.background_yields = self.parallel > 1 and model.background_yields
        # Whether a background call that has started gives way to a player's: always in process, where a call
        # waits for the one before it; on a server, where the background's calls share the players' cores. A job
        # log of one table through llama.cpp's server on two cores: a summary begun in the player's pause ran to its
        # end beside the player's next turn, which took twice as long to its first text.
        self.interrupts_background = self.parallel == 1 or self.background_yields
        self._background_running = 0
        self._players_running = 0
        self._turns_running = 0  # players' turns under way (see turn): their calls, and the moments between them
        self._deferred: list[_Job] = []  # background jobs taken while the background places were full
        self._queue: asyncio.PriorityQueue[_Job] = asyncio.PriorityQueue()
        self._seq = itertools.count()
        self._task: asyncio.Task | None = None
        self._more: list[asyncio.Task] = []  # the other runners of a parallel model
        # The runners' calls have threads of their own: the loop's shared ones may all be taken (four tables
        # started together: all six of a two-core machine's waited for the embedding model, the worlds' texts
        # embedded), and a player's call would wait for one.
        self._threads: ThreadPoolExecutor | None = None
        self._running: dict[int, tuple[_Job, StopSignal | None]] = {}  # the jobs running now, by seq
        self._busy: dict[int, float] = {}  # seconds of model time spent on each job so far, by seq
        self.records: deque[JobRecord] = deque(maxlen=RECORDS_KEPT)
        self.interruptions = 0
        # Structured answers by schema: valid at the first try ("first"), after the retry ("retry"), or not at all
        # ("fallback"), for bench quality.
        self.structured: defaultdict[str, Counter[str]] = defaultdict(Counter)

    async def __aenter__(self) -> ModelWorker:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def start(self) -> None:
        if self._task is None:
            self._closing = False
            self._threads = ThreadPoolExecutor(self.parallel, thread_name_prefix="model")
            self._task = asyncio.create_task(self._serve(), name="model-worker")
            self._more = [asyncio.create_task(self._serve(), name=f"model-worker-{n}") for n in range(1, self.parallel)]

    async def close(self) -> None:
        # A background call under way gives way now, at its next token, as it would to a player's turn: the process
        # would otherwise wait for it at exit (a summary: a minute and more on two busy cores). It is redone at the
        # next start, from what is stored.
        self._closing = True  # a call whose thread starts from now on makes no request (see _call)
        for _, stop in list(self._running.values()):
            if stop is not None:
                stop.set()
        calling = bool(self._running)  # known now: cancelling the runners below forgets their calls
        for task in self._more:
            task.cancel()
        for task in self._more:
            try:
                await task
            except asyncio.CancelledError:
                pass
        self._more = []
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        if self._threads is not None:
            # A call still running ends alone, as it did in the loop's threads; one waiting on a model server is
            # ended now (the process would wait for it at exit: minutes, with a hung server).
            if calling:
                self.model.abort()
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None
        while not self._queue.empty():
            self._deferred.append(self._queue.get_nowait())
        for job in self._deferred:
            if not job.future.done():
                job.future.cancel()
        self._deferred.clear()

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    async def run(
        self, fn: Callable[[], R], *, priority: Priority, label: str = "", interruptible: bool | None = None
    ) -> R:
        """Run ``fn`` (which calls the model) when its turn comes; return its result.

        Maintenance jobs may be interrupted and run again from the start, so
        ``fn`` must have no effect beyond its return value; a job that feeds
        a caller as it goes (a stream) is never interrupted.
        """
        if self._task is None:
            raise RuntimeError("the model worker is not running")
        if interruptible is None:
            interruptible = priority >= Priority.MAINTENANCE and self.interrupts_background
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        job = _Job(int(priority), next(self._seq), fn, future, interruptible, label or priority.name.lower())
        self._queue.put_nowait(job)
        self._interrupt(below=job.priority)
        return await future

    def _interrupt(self, *, below: int) -> None:
        """Stop the running calls that may be interrupted and are less urgent than ``below``, at their next safe
        point: each goes back to the queue."""
        for running, stop in list(self._running.values()):
            if stop is not None and running.priority > below:
                stop.set()

    async def generate(
        self, messages: Messages, *, max_tokens: int, priority: Priority = Priority.PLAYER, label: str = "generate"
    ) -> str:
        answer = await self.run(
            lambda: self.model.generate(messages, max_tokens=max_tokens), priority=priority, label=label
        )
        return answer.text

    async def generate_object(
        self,
        messages: Messages,
        schema_type: type[T],
        *,
        fallback: T,
        max_tokens: int = 256,
        priority: Priority = Priority.MAINTENANCE,
        label: str = "",
    ) -> Structured[T]:
        answer = await self.run(
            lambda: generate_object(self.model, messages, schema_type, fallback=fallback, max_tokens=max_tokens),
            priority=priority,
            label=label or schema_type.__name__,
        )
        outcome = "fallback" if not answer.ok else "first" if answer.attempts == 1 else "retry"
        self.structured[schema_type.__name__][outcome] += 1
        return answer

    @property
    def structured_calls(self) -> int:
        return sum(sum(outcomes.values()) for outcomes in self.structured.values())

    @property
    def structured_fallbacks(self) -> int:
        return sum(outcomes["fallback"] for outcomes in self.structured.values())

    def stream(
        self,
        messages: Messages,
        *,
        max_tokens: int,
        priority: Priority = Priority.PLAYER,
        slot: str | None = None,
        label: str = "turn",
        stop: Sequence[str] = (),
        fresh: bool = False,
        min_tokens: int = 0,
    ) -> ModelStream:
        """The reply piece by piece (``async for``). Leaving the loop early stops the model.

        ``slot`` names the game: its model state is kept for its next turn. The reply ends before any of ``stop``.
        ``fresh`` and ``min_tokens``: see :meth:`LanguageModel.stream`.
        """
        return ModelStream(
            self, messages, max_tokens=max_tokens, priority=priority, slot=slot, label=label, stop=stop, fresh=fresh,
            min_tokens=min_tokens,
        )  # fmt: skip

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``; it may block (a model server's tokenizer is a request): not for the event loop,
        where :meth:`count_many` is."""
        # Tokenizing reads only the vocabulary, so it needs no turn in the queue.
        return self.model.count_tokens(text)

    async def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text, counted in a thread: the loop never waits on a tokenizer."""
        return await asyncio.to_thread(lambda: [self.model.count_tokens(text) for text in texts])

    def running(self) -> list[tuple[Priority, str]]:
        """The priority and label of each job the model is running now (status, benches)."""
        return [(Priority(job.priority), job.label) for job, _ in list(self._running.values())]

    def busy_seconds(self, priority: Priority | None = None) -> float:
        """Model time of the finished jobs kept in ``records`` (of one priority, if given)."""
        return sum(r.busy_seconds for r in self.records if priority is None or r.priority == priority)

    async def _serve(self) -> None:
        while True:
            job = await self._queue.get()
            if job.future.cancelled():
                continue
            background = self.parallel > 1 and (
                job.priority >= Priority.MAINTENANCE or (job.priority == Priority.PREFILL and self.background_yields)
            )
            full = self._background_running >= self.background_parallel
            if background and (full or (self.background_yields and self._players_first)):
                self._deferred.append(job)  # back in the queue when a background place frees, or the players' turns end
                continue
            if background:
                self._background_running += 1
            else:
                self._players_running += 1
            try:
                await self._run(job)
            finally:
                if background:
                    self._background_running -= 1
                else:
                    self._players_running -= 1
                if background or not self._players_first:
                    self._release_deferred()

    @property
    def _players_first(self) -> bool:
        """A player's call runs, or a player's turn is under way (between two of its calls)."""
        return bool(self._players_running or self._turns_running)

    def _release_deferred(self) -> None:
        for waiting in self._deferred:
            self._queue.put_nowait(waiting)
        self._deferred.clear()

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """A player's turn, all of its calls: on a model whose background yields (see ``background_yields``), no
        background call starts between them. A turn makes several calls (a reply written again after the guard
        stopped a leak, a reply carried on); between two, the background work waiting would start, and the
        turn's next call share the cores with it (a job log of one table through llama.cpp's server on two cores:
        an extraction of 250 tokens began in the gap and ran beside the rest of the turn)."""
        self._turns_running += 1
        if self.background_yields:
            self._interrupt(below=Priority.PLAYER)  # the turn's own work before its first call has the cores too
        try:
            yield
        finally:
            self._turns_running -= 1
            if not self._players_first:
                self._release_deferred()

    async def _run(self, job: _Job) -> None:
        stop = StopSignal() if job.interruptible else None
        self._running[job.seq] = (job, stop)
        started = time.perf_counter()
        outcome: tuple[bool, Any]
        try:
            call = functools.partial(contextvars.copy_context().run, self._call, job.run, stop)
            outcome = (True, await asyncio.get_running_loop().run_in_executor(self._threads, call))
        except Interrupted:
            job.interruptions += 1
            self.interruptions += 1
            self._busy[job.seq] = self._busy.get(job.seq, 0.0) + time.perf_counter() - started
            log.debug("%s interrupted for a more urgent job; it runs again later", job.label)
            self._queue.put_nowait(job)  # same priority and sequence: first of its kind again
            return
        except Exception as exc:
            outcome = (False, exc)
        finally:
            self._running.pop(job.seq, None)
        ended = time.perf_counter()
        self.records.append(
            JobRecord(
                priority=Priority(job.priority), label=job.label, queued_at=job.queued_at, started_at=started,
                ended_at=ended, busy_seconds=self._busy.pop(job.seq, 0.0) + ended - started,
                interruptions=job.interruptions, stats=cost(outcome[1]) if outcome[0] else None, ok=outcome[0],
            )
        )  # fmt: skip
        if job.future.done():
            return
        if outcome[0]:
            job.future.set_result(outcome[1])
        else:
            job.future.set_exception(outcome[1])

    def _call(self, fn: Callable[[], R], stop: StopSignal | None) -> R:
        """In the runner's thread: ``fn`` with its stop signal the model's for this thread's call."""
        with self.model.calling(stop):
            if self._closing:  # closed while it waited for its thread: after the abort below, it would hang on
                raise ModelUnavailable("The model worker is closing.")  # a hung server, the process waiting at exit
            return fn()


def cost(result: Any) -> CallStats | None:
    """What a job's model calls cost, from what it gave back: the figures, or a value that carries them (an
    :class:`~bot.model.base.Answer`, a :class:`~bot.model.base.Written`, a :class:`Structured`)."""
    if isinstance(result, CallStats):
        return result
    stats = getattr(result, "stats", None)
    return stats if isinstance(stats, CallStats) else None


@dataclass(eq=False)
class ModelStream:
    """One streamed reply: iterate it for the pieces; ``stats`` holds the call's figures once it has ended."""

    worker: ModelWorker
    messages: Messages
    _: KW_ONLY
    max_tokens: int
    priority: Priority
    slot: str | None
    label: str
    stop: Sequence[str] = ()
    fresh: bool = False
    min_tokens: int = 0
    stats: CallStats | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.stop = tuple(self.stop)

    def __aiter__(self) -> AsyncGenerator[str, None]:
        """The pieces; close the iterator (``contextlib.aclosing``) when leaving early, so the model has
        stopped and ``stats`` is set once the loop is left."""
        return self._pieces()

    async def _pieces(self) -> AsyncGenerator[str, None]:
        model = self.worker.model
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue = asyncio.Queue()
        stop = threading.Event()
        writing = False  # the model has written a piece: it stops within a token when told to

        def produce() -> Written | None:
            try:
                asked = (self.messages, self.max_tokens, self.slot, tuple(self.stop), self.fresh, self.min_tokens)
                written = model.streamed(StreamCall(*asked))
                try:
                    for piece in written:
                        if stop.is_set():
                            break
                        loop.call_soon_threadsafe(pieces.put_nowait, piece)
                finally:
                    written.close()  # a reader that left early: the model stops, and says what it did
                self.stats = written.stats
                return written
            finally:
                loop.call_soon_threadsafe(pieces.put_nowait, _DONE)

        job = asyncio.ensure_future(
            self.worker.run(produce, priority=self.priority, label=self.label, interruptible=False)
        )
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
                writing = True
                yield piece
            await job  # raise what the model raised, before or during the stream
        finally:
            stop.set()
            if writing and not job.done():
                # The reader left early: the model stops at its next token. Waiting for that keeps the call's
                # figures (``stats``) and its time with the turn that made it.
                with contextlib.suppress(Exception):
                    await asyncio.shield(job)
            if not job.done():
                job.cancel()  # not waited for: still queued, it never runs; still reading its prompt, it ends alone
