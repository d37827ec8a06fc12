"""A model behind an OpenAI-compatible server (F27): llama.cpp's server, llama-cpp-python's, vLLM, Ollama.

``GM_MODEL_URL=http://HOST:PORT/v1`` sends every call there instead of to
the in-process model; ``GM_MODEL_NAME`` is the model the server serves
(checked against its ``/models`` at start) and ``GM_MODEL_API_KEY`` its key,
if it wants one. Replies stream (server-sent events); structured answers
ask for JSON that follows a schema (``response_format``: ``json_schema``,
or ``json_object`` with a ``schema`` where the server knows only that);
tokens are counted by the server (llama.cpp's ``/tokenize``,
llama-cpp-python's ``/extras/tokenize``) or, where it has neither, estimated.

A call that cannot connect, times out or gets a 5xx or 429 is tried again
after 0.5, 1 and 2 seconds; a stream that breaks after its first piece is
not (its text is already shown), and fails like a model error: the turn's
action is kept for /retry. ``GM_MODEL_TIMEOUT`` bounds both the wait for
any one piece of an answer and the whole answer once it has begun: a
server that keeps a stream alive without finishing it fails the call, as
one that falls silent does. ``GM_MODEL_PARALLEL`` calls run at once: the
server batches them, so several games are answered together; players'
turns still take the first free place. Prompts are sent with
``cache_prompt`` so llama.cpp's server keeps each slot's prefix (it gives a
request the slot whose cached prompt is most alike: a game finds its own);
vLLM's prefix caching needs nothing.

A background call the worker interrupts (a player's turn wants the cores
it shares) is cut short by closing its connection, whatever it is waiting
for (the answer's first byte, the next piece). llama.cpp's server, as
scripts/build-llama-server builds it, then cancels the call's work within a
step of its reading (see scripts/llama-server-cancel.py); another server may
finish it unread.

No third-party HTTP client: the standard library's, in the worker's thread. The requests themselves (the key,
the retries, the wait for a server the bot started to be started again) are :class:`bot.model.client.ServerClient`'s;
which slot holds which game's state, and the saves and restores, :class:`bot.model.slots.SlotStates`'s.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from bot.model.base import (
    Answer,
    CallStats,
    Dry,
    Interrupted,
    LanguageModel,
    Messages,
    StopSignal,
    StreamCall,
    Written,
)
from bot.model.client import ServerClient
from bot.model.slots import Held, SlotMap, SlotStates
from bot.model.wire import (
    EXTRA_LINES,
    MAX_CHARS_PER_TOKEN,
    MAX_LINES_PER_TOKEN,
    STREAM_DONE,
    Endless,
    Overdue,
    ServerDown,
    ServerError,
    call_figures,
    cut_short,
    read_then_written,
    stream_events,
    usage_of,
    whole_answer,
)

if TYPE_CHECKING:
    from bot.model.llama_server import LlamaServer

log = logging.getLogger(__name__)


class ServerModel(LanguageModel):
    """``slots``: the server's game slots, each game's calls sent to its own (``id_slot``), and background work to
    the slot after them; ``sampling``: llama.cpp's sampling fields, sent with every call; ``owner``: the server
    process this model started, stopped with it (see :mod:`bot.model.llama_server`)."""

    def __init__(
        self, url: str, model: str, *, api_key: str | None = None, timeout: float = 120.0, parallel: int = 1,
        slots: SlotMap | None = None, sampling: dict[str, Any] | None = None, owner: LlamaServer | None = None,
    ):  # fmt: skip
        self.http = ServerClient(url, api_key=api_key, timeout=timeout, owner=owner, stop=lambda: self.stop)
        self.url = self.http.url
        self.model = model
        self.name = model  # shown to members (/memory-status): the server's address goes to the log only
        self.timeout = timeout
        self.parallel = max(1, parallel)
        self.slots = slots
        self.states = SlotStates(slots, self.http) if slots is not None else None
        self.sampling = dict(sampling or {})
        self.owner = owner
        self._placement = f"on a model server ({self.parallel} calls at once)"
        # Background calls at once: with slots, the one spare slot; else all but one place, kept for a player.
        self.background_parallel = 1 if slots is not None else max(1, self.parallel - 1)
        # A server the bot started on the CPU shares its cores with every call: background work waits for players.
        self.background_yields = owner is not None and not owner.gpu_layers
        self._parameters: int | None = None  # the model's size and trained context, where the server says them
        self._trained_context: int | None = None
        self._json_format = "json_schema"
        # llama.cpp's server: it says in every streamed piece what the call has read and reused so far, so a reply
        # left early (the reply rules ended it) still has its figures. Known from /models, or the bot started it.
        self.llama_cpp = owner is not None

    @property
    def parameters(self) -> int | None:
        return self._parameters

    @property
    def trained_context(self) -> int | None:
        return self._trained_context

    def sample_with(self, *, temperature: float, repeat_penalty: float) -> None:
        # A llama.cpp server this bot started samples as the in-process model would; another server's sampling
        # is its admin's.
        if self.sampling:
            self.sampling.update(temperature=temperature, repeat_penalty=repeat_penalty)

    @property
    def placement(self) -> str:
        """Where it runs; while the server the bot started is being started again, that too (/memory-status)."""
        down = self.owner.down if self.owner is not None else None
        return f"{self._placement} ({down})" if down else self._placement

    @placement.setter
    def placement(self, value: str) -> None:
        self._placement = value

    def server_restarted(self) -> None:
        """The server the bot started was started again: its slots hold nothing; each game restores its file."""
        if self.slots is not None:
            self.slots.emptied()

    # Start-up

    def check(self) -> None:
        """Refuse at start a server that does not answer, or that does not serve ``GM_MODEL_NAME``."""
        listing = self.http.request_json("GET", "/models", None)
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            raise ServerError(f"The model server at {self.url} answered /models without a list of models (data).")
        served = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"]]
        if not served:
            raise ServerError(
                f"The model server at {self.url} answered /models with no model ids in its list (data); "
                "is it an OpenAI-compatible server with a model loaded?"
            )
        if self.model not in served:
            names = ", ".join(name[:60] for name in served[:10]) + (", ..." if len(served) > 10 else "")
            raise ServerError(
                f"The model server at {self.url} serves {names}, not {self.model!r}: set GM_MODEL_NAME to one of them."
            )
        # llama.cpp's server says the model's size and trained context: the defaults that depend on them follow.
        meta = next((m.get("meta") for m in data if isinstance(m, dict) and m.get("id") == self.model), None)
        if isinstance(meta, dict):
            self.llama_cpp = True
            if isinstance(meta.get("n_params"), int) and meta["n_params"] > 0:
                self._parameters = meta["n_params"]
            if isinstance(meta.get("n_ctx_train"), int) and meta["n_ctx_train"] > 0:
                self._trained_context = meta["n_ctx_train"]

    # Calls

    def generate(self, messages: Messages, *, max_tokens: int) -> Answer:
        started = time.perf_counter()
        with self._cut_short():
            if self._streamed:
                return self._gathered(messages, max_tokens)
            answer = self.http.request_json(
                "POST", "/chat/completions", self._body(messages, max_tokens, slot_id=self._spare)
            )
        return whole_answer(answer, started)

    @property
    def _streamed(self) -> bool:
        """Whether this thread's call asks for its answer as a stream, though it wants it whole: a call that may
        be interrupted does. A server finds a streamed call's connection closed when it next sends it a piece; a
        whole answer has nothing to send before its end, and llama.cpp's server, unless built with the change of
        scripts/llama-server-cancel.py, looks otherwise only after a second in which no call of any game had a
        piece to send, which never comes while a player's reply is written (a summary cut after a second ran on
        for 16 to 18 s beside the player's turn)."""
        return isinstance(self.stop, StopSignal)

    def _gathered(self, messages: Messages, max_tokens: int, extra: dict[str, Any] | None = None) -> Answer:
        """A whole answer, asked for as a stream (see ``_streamed``)."""
        written = Written.of(lambda out: self._stream(messages, max_tokens, self._spare, (), False, out, extra))
        try:
            text = "".join(written)
        finally:
            written.close()
        assert written.stats is not None
        return Answer(text, written.stats)

    def _write(self, call: StreamCall, written: Written) -> Iterator[str]:
        messages, max_tokens, slot, stop, fresh = call.messages, call.max_tokens, call.slot, call.stop, call.fresh
        with self._cut_short(), contextlib.ExitStack() as leases:
            held = leases.enter_context(self._leased(slot, messages))
            began = time.perf_counter()
            reading = None
            if held is not None and self.slots is not None and max_tokens > 1 and self.slots.reads_new(held.lease.slot):
                reading = self._read_first(held, messages, fresh)
                leases.close()  # its slot kept for the reply, and for a game of its world to copy meanwhile
                held = leases.enter_context(self._leased(slot, messages))  # its own slot (or its kin's copy first)
            if held is not None:
                slot_id: int | None = held.lease.slot
            elif self.slots is None:
                slot_id = None
            else:  # work of no game goes to the spare slot; a game whose slot is busy, to any free one
                slot_id = self._spare if slot is None else -1
            before = time.perf_counter() - began
            # A server that takes it (vLLM) does not end the reply before ``min_tokens``; llama.cpp's has no such field
            pieces = self._stream(
                messages, max_tokens, slot_id, stop, fresh, written,
                extra={"min_tokens": call.min_tokens} if call.min_tokens else None,
            )  # fmt: skip
            try:
                for piece in pieces:
                    if held is not None:
                        held.read = True  # the prompt read whole: a piece came, or the reply ended
                    yield piece
                if held is not None:
                    held.read = True
            finally:
                pieces.close()
                if reading is not None and written.stats is not None:
                    written.stats = read_then_written(reading, written.stats, before)

    def _read_first(self, held: Held, messages: Messages, fresh: bool) -> CallStats | None:
        """Read a new game's prompt from nothing in a call of its own (a one-token reply, thrown away); its lease
        then ends kept for the reply, leased again at once: a game of its world waiting to copy the slot copies it
        in between, once it is read, rather than after the whole reply is written as well (four tables started
        together through the server on two cores: the second game of a world waited 11 s more for its kin's
        reply)."""
        reading = Written()
        pieces = self._stream(messages, 1, held.lease.slot, (), fresh, reading)
        try:
            for _piece in pieces:
                pass
            held.read = held.kept = True
        finally:
            pieces.close()
        return reading.stats

    def _stream(
        self, messages: Messages, max_tokens: int, slot_id: int | None, stop: Sequence[str], fresh: bool, out: Written,
        extra: dict[str, Any] | None = None,
    ) -> Generator[str, None, None]:  # fmt: skip
        body = self._body(messages, max_tokens, stream=True, stop=stop, slot_id=slot_id, fresh=fresh) | (extra or {})
        started = time.perf_counter()
        first: float | None = None
        usage: dict | None = None
        timings: dict | None = None  # llama.cpp's figures so far, in each piece
        written: list[str] = []
        finish = None
        pieces = chars = 0
        response = self.http.open("POST", "/chat/completions", body)
        deadline = time.monotonic() + self.timeout
        try:
            for event in stream_events(response, deadline, max_tokens * MAX_LINES_PER_TOKEN + EXTRA_LINES):
                if self.stop is not None and self.stop.is_set():
                    raise Interrupted
                if event is STREAM_DONE:
                    break
                usage = event.get("usage") or usage
                timings = event.get("timings") or timings
                for choice in event.get("choices") or []:
                    finish = choice.get("finish_reason") or finish
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        first = first or time.perf_counter()
                        pieces, chars = pieces + 1, chars + len(piece)
                        if pieces > max_tokens or chars > max_tokens * MAX_CHARS_PER_TOKEN:
                            finish, usage = "length", None  # it ignores max_tokens: read no further
                            return
                        written.append(piece)
                        yield piece
            else:
                if finish is None:  # neither [DONE] nor a finish reason: the server died mid-reply
                    raise ServerDown(f"The model server at {self.url} broke off its reply before its end.")
        except Overdue:  # a hung server, or one that trickles: left out of a pool like one that does not answer
            late = f"did not finish its reply within {self.timeout:g} s (GM_MODEL_TIMEOUT); it was stopped."
            raise ServerDown(f"The model server at {self.url} {late}") from None
        except Endless as exc:
            raise ServerDown(f"The model server at {self.url} {exc}; it was stopped.") from None
        except (OSError, ValueError, AttributeError, TypeError, http.client.HTTPException) as exc:
            raise ServerDown(f"The model server at {self.url} broke off its reply: {exc}") from None
        finally:
            response.close()
            if not usage and isinstance(timings, dict):  # left early: llama.cpp's last figures
                usage = usage_of(timings)
            if not usage:  # a server that does not report usage in a stream: count what was sent and written
                generated = max_tokens if finish == "length" else self._count("".join(written))
                usage = {
                    "prompt_tokens": sum(self._count(m.content) for m in messages),
                    "completion_tokens": generated,
                }
            out.stats = call_figures(usage, started, first)

    def generate_json(self, messages: Messages, schema: dict, *, max_tokens: int) -> Answer:
        with self._cut_short():
            return self._generate_json(messages, schema, max_tokens=max_tokens)

    def _generate_json(self, messages: Messages, schema: dict, *, max_tokens: int) -> Answer:
        started = time.perf_counter()
        body = self._body(messages, max_tokens, slot_id=self._spare)
        for kind in dict.fromkeys([self._json_format, "json_object"]):
            body["response_format"] = (
                {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
                if kind == "json_schema"
                else {"type": "json_object", "schema": schema}
            )
            try:
                if self._streamed:
                    return self._gathered(messages, max_tokens, {"response_format": body["response_format"]})
                answer = self.http.request_json("POST", "/chat/completions", body)
            except ServerError as exc:
                if kind == "json_schema" and "json_schema" in str(exc):  # this server knows json_object only
                    self._json_format = "json_object"
                    continue
                raise
            return whole_answer(answer, started)
        raise ServerError(f"The model server at {self.url} takes no JSON schema.")

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    @contextlib.contextmanager
    def _cut_short(self) -> Iterator[None]:
        """Within the block, a call that may be interrupted (``stop``) is: setting its stop signal closes its
        connections, and what that breaks (a connection refused, an answer cut off) raises :class:`Interrupted`,
        not an error, with no retry."""
        stop = self.stop
        if not isinstance(stop, StopSignal):
            yield
            return
        with cut_short(stop):
            yield

    # Slots (a llama.cpp server whose slots this model assigns)

    def prefill(self, messages: Messages, *, slot: str) -> CallStats | None:
        """Read a game's prompt into its slot ahead of its turn: a one-token reply, thrown away."""
        if self.slots is None:
            return None
        written = self.stream(messages, max_tokens=1, slot=slot)
        for _ in written:
            pass
        return written.stats

    def drop_state(self, slot: str) -> None:
        if self.slots is not None:
            self.slots.forget(slot)

    def close(self) -> None:
        self.http.close()
        if self.owner is not None:
            self.owner.stop()

    def abort(self) -> None:
        """End the calls under way at once (see :meth:`ServerClient.abort`)."""
        self.http.abort()

    @contextlib.contextmanager
    def calling(self, stop: threading.Event | None) -> Iterator[None]:
        with super().calling(stop), self.http.call():
            yield

    @contextlib.contextmanager
    def _leased(self, label: str | None, messages: Messages) -> Iterator[Held | None]:
        """The game's slot for one call, ready (see :class:`SlotStates`); ``None`` for work of no game."""
        if self.states is None or label is None:
            yield None
            return
        with self.states.leased(label, messages[0].content if messages else None) as held:
            yield held

    def _count(self, text: str) -> int:
        return self.http.count(text, self.model)

    @property
    def _spare(self) -> int | None:
        """The slot for work of no game (the memory's background calls): the one after the games'."""
        return None if self.slots is None else self.slots.slots

    # HTTP

    def _body(
        self, messages: Messages, max_tokens: int, *, stream: bool = False, stop: Sequence[str] = (),
        slot_id: int | None = None, fresh: bool = False,
    ) -> dict[str, Any]:  # fmt: skip
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens,
            "cache_prompt": True,  # llama.cpp's server keeps the prompt's state for the next call
            **self.sampling,
        }
        if slot_id is not None:
            body["id_slot"] = slot_id
        if fresh and self.sampling:  # llama.cpp's DRY sampler, as the in-process model uses it
            dry = Dry()
            body.update(dry_multiplier=dry.multiplier, dry_base=dry.base, dry_allowed_length=dry.allowed,
                        dry_sequence_breakers=list(dry.breakers))  # fmt: skip
        if stop:
            body["stop"] = list(stop)[:4] if "api.openai.com" in self.url else list(stop)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
            if self.llama_cpp:
                body["timings_per_token"] = True
        return body
