"""The language model behind one small interface.

Implementations are synchronous and not safe to call concurrently: the
:class:`~bot.model.worker.ModelWorker` owns one and calls it from a thread,
one job at a time.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bot.errors import UserError


class ChatMessage(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


Messages = Sequence[ChatMessage]


class ModelUnavailable(UserError):
    """The model cannot be reached or used just now (a model server down, its tokenizer failing): the turn is
    kept for /retry. The message is for the log and admins; it may name where the model runs."""


class Interrupted(Exception):  # noqa: N818 - a signal, not an error
    """A call stopped at a safe point because someone more urgent is waiting; it is run again later."""


class StopSignal(threading.Event):
    """Set by the worker when a call that may be interrupted must give way. A call that checks it between
    steps (prompt chunks, tokens) needs nothing more; one that waits on something it cannot check meanwhile (a
    model server's answer, read from a socket) registers, with :meth:`on_set`, how to cut that wait short."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._hooks: dict[int, Callable[[], None]] = {}
        self._keys = itertools.count()

    def set(self) -> None:
        with self._lock:
            super().set()
            hooks = list(self._hooks.values())
        for hook in hooks:
            hook()

    @contextlib.contextmanager
    def on_set(self, hook: Callable[[], None]) -> Iterator[None]:
        """Within the block, ``hook`` runs when the signal is set (at once if it already is), in the setter's
        thread: it must be quick and must not raise."""
        with self._lock:
            key = next(self._keys)
            self._hooks[key] = hook
            fired = self.is_set()
        if fired:
            hook()
        try:
            yield
        finally:
            with self._lock:
                self._hooks.pop(key, None)


@dataclass(frozen=True)
class CallStats:
    """What one model call cost: the figures behind a turn's latency."""

    prompt_tokens: int
    reused_tokens: int  # read from the model's cache (the previous call, or the game's saved state)
    evaluated_tokens: int  # prompt tokens actually read
    generated_tokens: int
    first_token_seconds: float
    seconds: float
    state_restored: bool = False  # the game's saved state was loaded before reading

    @property
    def reuse(self) -> float:
        return self.reused_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def then(self, later: CallStats | None) -> CallStats:
        """This call and a ``later`` one made for the same answer, as one: what both read, wrote and took."""
        if later is None:
            return self
        return CallStats(
            prompt_tokens=self.prompt_tokens + later.prompt_tokens,
            reused_tokens=self.reused_tokens + later.reused_tokens,
            evaluated_tokens=self.evaluated_tokens + later.evaluated_tokens,
            generated_tokens=self.generated_tokens + later.generated_tokens,
            first_token_seconds=self.seconds + later.first_token_seconds,
            seconds=self.seconds + later.seconds,
            state_restored=self.state_restored,
        )


@dataclass(frozen=True)
class Answer:
    """What one model call gave back, as one value: its text and what it cost."""

    text: str
    stats: CallStats | None = None  # None: the model could say nothing of its cost


class Written(Iterator[str]):
    """A reply as it is written: iterate it for the pieces. ``stats`` holds the call's figures once it has ended,
    read to its end or closed early (the model stops at its next token and says what it did).

    A model makes one with :meth:`of`, from a generator that is handed the ``Written`` to record its figures in
    when it ends."""

    def __init__(self) -> None:
        self.stats: CallStats | None = None
        self._pieces: Iterator[str] = iter(())

    @classmethod
    def of(cls, make: Callable[[Written], Iterator[str]]) -> Written:
        written = cls()
        written._pieces = make(written)
        return written

    def __iter__(self) -> Written:
        return self

    def __next__(self) -> str:
        return next(self._pieces)

    def close(self) -> None:
        close = getattr(self._pieces, "close", None)
        if close is not None:
            close()


@dataclass(frozen=True)
class Dry:
    """llama.cpp's DRY sampler ("don't repeat yourself"): a token that would extend a run of tokens already in the
    context by more than ``allowed`` is penalised, ``multiplier * base ** (run - allowed)``: a name said again costs
    little, a sentence said again a great deal. Over the whole context, prompt included, so that what the earlier
    replies said is what a reply is kept from saying again."""

    multiplier: float = 0.8
    base: float = 1.75
    allowed: int = 2
    breakers: tuple[str, ...] = ("\n", ":", '"', "*")  # a run does not go on across these


@dataclass(frozen=True)
class StreamCall:
    """One streamed call, as :meth:`LanguageModel.stream` was asked for it."""

    messages: Messages
    max_tokens: int
    slot: str | None = None
    stop: tuple[str, ...] = ()
    fresh: bool = False
    min_tokens: int = 0


class LanguageModel(ABC):
    """Generate text, stream it, generate JSON for a schema, count tokens.

    ``stop`` is set by the worker while a call that may be interrupted runs
    (background work): an implementation checks it at safe points, between
    prompt chunks and between generated tokens, and raises
    :class:`Interrupted`. It belongs to the call, not the model: each thread
    that calls the model sees its own call's (a model server's calls run in
    several threads at once, each its own to stop). Each call gives back
    what it cost with what it wrote: an :class:`Answer`, or a
    :class:`Written` whose ``stats`` are set when it ends. The model keeps no figures of its own between calls,
    so calls made at once (a model server's) never mix them.
    """

    name: str = "model"
    placement: str = ""  # where it runs, in words: "on the CPU (2 threads)", "all 31 layers on NVIDIA H100 ..."
    origin: str = ""  # which model plays and why, in one line, said at start

    # What it can do, declared by each model: the worker and start-up read these and never guess.
    parallel: int = 1  # calls it serves at once
    background_parallel: int = 1  # of those, how many the memory's background work may take at once
    background_yields: bool = False  # its calls share the players' cores: background work waits for their turns

    @property
    def parameters(self) -> int | None:
        """Its size in parameters; None where it is not known (a model server that does not say). The defaults
        that depend on it (see :mod:`bot.model.sizing`) follow."""
        return None

    @property
    def trained_context(self) -> int | None:
        """The context it was trained with (a longer one reads garbage past it); None where it is not known."""
        return None

    def sample_with(self, *, temperature: float, repeat_penalty: float) -> None:  # noqa: B027 - most sample as told
        """Sample replies with these (the settings sized for the model, see
        :func:`bot.startup.settle_for_model`); a model whose sampling is not the bot's to set ignores them."""

    def abort(self) -> None:  # noqa: B027 - a model in this process has nothing outside to end
        """End at once every call waiting on something outside this process (the bot is stopping)."""

    @contextlib.contextmanager
    def calling(self, stop: threading.Event | None) -> Iterator[None]:
        """One call made by this thread, ``stop`` its stop signal where it may be interrupted: the worker's runners
        make each call within one."""
        self.stop = stop
        try:
            yield
        finally:
            self.stop = None

    @property
    def stop(self) -> threading.Event | None:
        """The stop signal of the call this thread is making, if it may be interrupted."""
        calls = self.__dict__.get("_calls")
        return getattr(calls, "stop", None) if calls is not None else None

    @stop.setter
    def stop(self, value: threading.Event | None) -> None:
        calls = self.__dict__.get("_calls") or self.__dict__.setdefault("_calls", threading.local())
        calls.stop = value

    @abstractmethod
    def generate(self, messages: Messages, *, max_tokens: int) -> Answer:
        """The whole reply to a chat, with its figures."""

    def stream(
        self, messages: Messages, *, max_tokens: int, slot: str | None = None, stop: Sequence[str] = (),
        fresh: bool = False, min_tokens: int = 0,
    ) -> Written:  # fmt: skip
        """The reply to a chat, piece by piece as it is written; its figures in ``stats`` once it has ended.

        ``slot`` names whose prompt this is (a game): its state is kept after
        the call and restored before that slot's next one, whatever ran in
        between. The reply ends before the first of the ``stop`` strings.
        ``fresh``: the last try said only what the prompt already said; a model that can keeps this one from
        repeating its context (llama.cpp's DRY sampler). ``min_tokens``: a model that can does not end the reply
        before it has written this many tokens (a stop string or ``max_tokens`` still ends it).
        """
        call = StreamCall(messages, max_tokens, slot, tuple(stop), fresh, min(min_tokens, max_tokens - 1))
        return Written.of(lambda written: self._write(call, written))

    def streamed(self, call: StreamCall) -> Written:
        """:meth:`stream`, as ``call`` asks it (a model that serves another's calls passes them on so)."""
        return self.stream(
            call.messages, max_tokens=call.max_tokens, slot=call.slot, stop=call.stop, fresh=call.fresh,
            min_tokens=call.min_tokens,
        )  # fmt: skip

    @abstractmethod
    def _write(self, call: StreamCall, written: Written) -> Iterator[str]:
        """The pieces of ``call``'s reply as they are written (see :meth:`stream`), its figures set on ``written``
        when it ends, or when its reader leaves early."""

    @abstractmethod
    def generate_json(self, messages: Messages, schema: dict, *, max_tokens: int) -> Answer:
        """Raw text of a reply constrained (where the model can) to a JSON schema, with its figures.

        Validation, the retry and the fallback are the caller's business:
        see :func:`bot.model.structured.generate_object`.
        """

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with the model's own tokenizer."""

    def prefill(self, messages: Messages, *, slot: str) -> CallStats | None:
        """Read ``messages`` into ``slot``'s kept state ahead of its turn, and what that cost (a model that keeps
        none does nothing: None)."""
        return None

    def drop_state(self, slot: str) -> None:  # noqa: B027
        """Forget what is kept for ``slot`` (its game ended)."""

    def flush_states(self) -> int:
        """Write the states kept in memory to disk (the bot stops); how many."""
        return 0

    def close(self) -> None:  # noqa: B027 - optional: most models hold nothing beyond memory
        """Let go of what the model holds outside this process (a model server it started)."""


# ChatML-style templates wrap each message in about five tokens of markup.
TEMPLATE_TOKENS_PER_MESSAGE = 6


def schema_for(schema_type: type[BaseModel]) -> dict:
    """The JSON schema the model's grammar is compiled from."""
    return schema_type.model_json_schema()
