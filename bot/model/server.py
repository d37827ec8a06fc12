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

No third-party HTTP client: the standard library's, in the worker's thread.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
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
from bot.model.slots import Held, Lease, SlotMap
from bot.model.wire import (
    BACKOFF,
    EXTRA_LINES,
    MAX_ANSWER_BYTES,
    MAX_CHARS_PER_TOKEN,
    MAX_LINES_PER_TOKEN,
    OPENER,
    STREAM_DONE,
    Endless,
    Overdue,
    Retryable,
    ServerDown,
    ServerError,
    call_figures,
    cut_short,
    error_detail,
    live_calls,
    read_then_written,
    read_within,
    shut_connections_to,
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
        self.url = url.rstrip("/")
        self.model = model
        self.name = model  # shown to members (/memory-status): the server's address goes to the log only
        self.api_key = api_key
        self.timeout = timeout
        self.parallel = max(1, parallel)
        self.slots = slots
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
        self._tokenize: str | None = None  # which tokenize route the server has: "llama.cpp", "extras" or "none"
        self.closed = False  # the bot is going down: no call is made, none waits for a restart
        self._aborts = 0  # calls ended by abort(): one under way then is not tried again

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
        listing = self.request_json("GET", "/models", None)
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
            answer = self.request_json(
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
        response = self._open("POST", "/chat/completions", body)
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
                answer = self.request_json("POST", "/chat/completions", body)
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
        self.closed = True
        self.abort()
        if self.owner is not None:
            self.owner.stop()

    def abort(self) -> None:
        """End the calls under way at once: the bot is going down, and a hung server's answer would hold its exit
        for up to GM_MODEL_TIMEOUT. A call under way is not tried again (a retry would open a connection no one
        ends); a call made later is made as usual."""
        self._aborts += 1
        shut_connections_to(self.url)

    @property
    def _spare(self) -> int | None:
        """The slot for work of no game (the memory's background calls): the one after the games'."""
        return None if self.slots is None else self.slots.slots

    @contextlib.contextmanager
    def _leased(self, label: str | None, messages: Messages) -> Iterator[Held | None]:
        """The game's slot for one call, its holder's state saved and the game's own restored first (or, for a
        game new to the slots, a copy of a slot whose prompt begins as its own); given back when the call ends."""
        if self.slots is None or label is None:
            yield None
            return
        with self.slots.leased(label, messages[0].content if messages else None) as held:
            if held is not None:
                self._ready(held.lease)
            yield held

    def _ready(self, lease: Lease) -> None:
        """Save the slot's holder's state, then restore the game's own (or copy its kin's) into the slot."""
        assert self.slots is not None
        if lease.save is not None and self._slot_action(lease.slot, "save", lease.save):
            self.slots.counted("saves")
            if self.slots.folder is not None:
                self.slots.folder.trim()
        if lease.copy_from is not None and lease.restore is not None:  # a copy: its file is the slot folder's
            try:
                saved = self._slot_action(lease.copy_from, "save", lease.restore)
            finally:
                self.slots.release_copied(lease.copy_from)
            if saved and self._slot_action(lease.slot, "restore", lease.restore):
                self.slots.counted("copies")
            if self.slots.folder is not None:
                self.slots.folder.drop(lease.restore)
        elif lease.restore is not None:
            if self._slot_action(lease.slot, "restore", lease.restore):
                self.slots.counted("restores")
            elif self.slots.folder is not None:
                self.slots.counted("failed")
                self.slots.folder.drop(lease.restore)

    def _slot_action(self, slot: int, action: str, filename: str) -> bool:
        """Save or restore a slot, never cut short: a state half written or half read would cost more than the
        moment it takes (a call interrupted meanwhile stops when its reply is asked for)."""
        root = self.url.removesuffix("/v1")
        held = getattr(live_calls, "sockets", None)
        live_calls.sockets = None
        try:
            body = {"filename": filename}
            self.request_json("POST", f"/slots/{slot}?action={action}", body, base=root, retries=False)
        except ServerError as exc:
            log.warning("Model server: slot %d %s of %s failed (%s); the game reads its prompt cold", slot, action,
                        filename, exc)  # fmt: skip
            return False
        finally:
            live_calls.sockets = held
        return True

    @functools.lru_cache(maxsize=4096)  # noqa: B019 (one model object lives as long as the process)
    def _count(self, text: str) -> int:
        root = self.url.removesuffix("/v1")
        if self._tokenize in (None, "llama.cpp"):
            try:
                tokens = self.request_json("POST", "/tokenize", {"content": text}, base=root, retries=False)["tokens"]
                self._tokenize = "llama.cpp"
                return len(tokens)
            except (ServerError, KeyError, TypeError):
                if self._tokenize == "llama.cpp":
                    raise
        if self._tokenize in (None, "extras"):
            try:
                body = {"input": text, "model": self.model}
                tokens = self.request_json("POST", "/extras/tokenize", body, base=root, retries=False)["tokens"]
                self._tokenize = "extras"
                return len(tokens)
            except (ServerError, KeyError, TypeError):
                if self._tokenize == "extras":
                    raise
        if self._tokenize is None:
            log.warning("The model server at %s cannot count tokens; estimating 4 characters a token", self.url)
            self._tokenize = "none"
        return (len(text) + 3) // 4

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

    def request_json(
        self, method: str, path: str, body: dict | None, *, base: str | None = None, retries: bool = True
    ) -> dict:
        response = self._open(method, path, body, base=base, retries=retries)
        with response:
            try:
                data = read_within(response, MAX_ANSWER_BYTES + 1, time.monotonic() + self.timeout)
            except Overdue:
                late = f"did not finish its answer to {path} within {self.timeout:g} s (GM_MODEL_TIMEOUT)."
                raise ServerDown(f"The model server at {self.url} {late}") from None
            except (OSError, http.client.HTTPException) as exc:
                raise ServerError(f"The model server at {self.url} broke off its answer to {path}: {exc}") from None
            if len(data) > MAX_ANSWER_BYTES:
                raise ServerError(
                    f"The model server at {self.url} answered {path} with more than {MAX_ANSWER_BYTES:,} bytes "
                    f"(larger than any answer it should give); it was not read."
                )
            try:
                return json.loads(data)
            except ValueError as exc:
                raise ServerError(f"The model server at {self.url} answered {path} with no JSON: {exc}") from None
            except RecursionError:  # "[[[[..." deeper than the parser's stack
                deep = f"The model server at {self.url} answered {path} with JSON nested too deeply."
                raise ServerError(deep) from None

    def _open(
        self, method: str, path: str, body: dict | None, *, base: str | None = None, retries: bool = True,
        waited: bool = False,
    ):  # fmt: skip
        url = (base or self.url) + path
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        waits = [*BACKOFF, None] if retries else [None]
        aborts = self._aborts
        for wait in waits:
            if self.closed:
                raise ServerDown(f"The model server at {self.url} is no longer used: the bot is stopping.")
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                try:
                    return OPENER.open(request, timeout=self.timeout)
                except urllib.error.HTTPError as exc:
                    detail = error_detail(exc)
                    if exc.code == 429 or exc.code >= 500 and "validation" not in detail:
                        raise Retryable(f"HTTP {exc.code}: {detail}") from None
                    if exc.code in (401, 403):
                        key = f"The model server at {self.url} refused the key (HTTP {exc.code}); see GM_MODEL_API_KEY."
                        raise ServerError(key) from None
                    refused = f"The model server at {self.url} refused {path} (HTTP {exc.code}): {detail}"
                    raise ServerError(refused) from None
                except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                    reason = getattr(exc, "reason", exc)
                    if isinstance(reason, TimeoutError) and not (self.stop is not None and self.stop.is_set()):
                        # It took the call and said nothing for the whole timeout: hung, not starting up. Trying
                        # again would hold the call (and a pool's next server) for minutes more.
                        late = f"did not answer {path} within {self.timeout:g} s (GM_MODEL_TIMEOUT)"
                        raise ServerDown(f"The model server at {self.url} {late}.") from None
                    raise Retryable(str(reason)) from None
            except Retryable as exc:
                if self.stop is not None and self.stop.is_set():
                    raise Interrupted from None  # its connection was closed to let a more urgent call go first
                if self.closed or self._aborts != aborts:
                    raise ServerDown(
                        f"The model server at {self.url} is no longer used: the bot is stopping."
                    ) from None
                if wait is None and self.owner is not None and not waited and self._restarted_in_time():
                    return self._open(method, path, body, base=base, retries=False, waited=True)
                if wait is None:
                    raise ServerDown(self._not_answering(exc)) from None
                log.info("Model server: %s; trying again in %.1f s", exc, wait)
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _restarted_in_time(self) -> bool:
        """The server the bot started is not answering: wait, within the call's timeout, for its supervisor to
        start it again (see LlamaServer.supervise); whether it serves again."""
        if self.owner is None:
            return False
        log.info("Model server: llama.cpp's server is not answering; the call waits for it to be started again")
        return self.owner.wait_serving(self.timeout)

    def _not_answering(self, why: object) -> str:
        if self.owner is not None:
            return (
                f"llama.cpp's server, which the bot started (GM_SERVER_SLOTS), is not answering ({why}); it is "
                "being started again"
            )
        return f"The model server at {self.url} is not answering ({why}); is it running? (GM_MODEL_URL)"
