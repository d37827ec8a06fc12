"""The wire to an OpenAI-compatible model server: HTTP connections that a call's stop signal or the bot's going
down can cut at once, redirects kept to the same server, answers read within their size and time, streamed events
read line by line, and a call's figures from the server's ``usage`` (or llama.cpp's ``timings``).

No policy here: when to try again and when a server is down is :class:`bot.model.client.ServerClient`'s, which
slot a game's call takes :class:`bot.model.slots.SlotStates`'s, what a call asks
:class:`bot.model.server.ServerModel`'s.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from collections.abc import Iterator

from bot.model.base import Answer, CallStats, Interrupted, ModelUnavailable, StopSignal

BACKOFF = (0.5, 1.0, 2.0)  # seconds before each retry
# Bounds on what a server may send: a whole JSON answer, one line of a stream, and a streamed reply's
# characters a token (a server that ignores max_tokens is read no further than the reply's limit).
MAX_ANSWER_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = 256 * 1024
MAX_CHARS_PER_TOKEN = 16
# And its lines, whatever they hold: an event is two lines (its data, then a blank one), about one event a
# token, plus a few more (the role, the finish reason, the usage, keep-alive comments). Counting every line,
# not only text, stops a server that streams empty events or comments forever.
MAX_LINES_PER_TOKEN = 4
EXTRA_LINES = 100


class ServerError(ModelUnavailable):
    """The model server cannot be used; the message says what to check."""


class ServerDown(ServerError):
    """The model server does not answer, or broke off an answer: another server may serve the call."""


class Retryable(Exception):
    pass


class Overdue(Exception):
    """The answer was still coming when its time (``GM_MODEL_TIMEOUT``) ran out."""


class Endless(Exception):
    """The stream went on past its lines' bound without finishing the reply."""


class _SameServer(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only on the server ``GM_MODEL_URL`` names: the API key never goes to another host."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 (urllib's signature)
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if (old.scheme, old.netloc) != (new.scheme, new.netloc):
            raise ServerError(
                f"The model server at {_origin(old)} sent a redirect to another server ({_origin(new)[:80]}); "
                "it is not followed. Set GM_MODEL_URL to the server itself."
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _origin(url: urllib.parse.SplitResult) -> str:
    """``scheme://host:port`` without a user or password the URL may hold (a redirect's comes from the server)."""
    return f"{url.scheme}://{url.netloc.rpartition('@')[2]}"


# The connections opened by this thread's call that may be cut short (see ServerModel._cut_short), if any.
live_calls = threading.local()


# Every connection open now, of any call: the bot going down ends them (see ServerModel.abort), so it never waits
# minutes for a hung server's answer to a call it no longer wants.
OPEN_SOCKETS: weakref.WeakSet[socket.socket] = weakref.WeakSet()
OPEN_SOCKETS_LOCK = threading.Lock()


def _opened(sock: socket.socket | None) -> None:
    """A connection the current call opened: cut short with it, at once if its stop signal is already set."""
    if sock is not None:
        with OPEN_SOCKETS_LOCK:
            OPEN_SOCKETS.add(sock)
        gone = getattr(live_calls, "gone", None)
        if gone is not None and gone():  # the bot went down while it connected: after the sweep, or this sees it
            shut_socket(sock)
    sockets = getattr(live_calls, "sockets", None)
    if sockets is None or sock is None:
        return
    sockets.append(sock)
    if live_calls.stop.is_set():
        shut_socket(sock)


def shut_socket(sock: socket.socket) -> None:
    """End a connection from any thread: a read waiting on it returns at once, and the server sees it closed."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Registered:
    """A connection that says it opened (see :func:`_opened`)."""

    sock: socket.socket | None

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        _opened(self.sock)


class _Connection(_Registered, http.client.HTTPConnection):
    pass


class _SecureConnection(_Registered, http.client.HTTPSConnection):
    pass


class _Handler(urllib.request.HTTPHandler):
    def do_open(self, http_class, req, **kwargs):  # noqa: ANN001, ANN003, ANN201 (urllib's signature)
        return super().do_open(_Connection, req, **kwargs)


class _SecureHandler(urllib.request.HTTPSHandler):
    def do_open(self, http_class, req, **kwargs):  # noqa: ANN001, ANN003, ANN201 (urllib's signature)
        return super().do_open(_SecureConnection, req, **kwargs)


OPENER = urllib.request.build_opener(_SameServer(), _Handler(), _SecureHandler())


def whole_answer(answer: dict, started: float) -> Answer:
    """A whole (not streamed) answer's text and figures."""
    return Answer(
        answer["choices"][0]["message"].get("content") or "", call_figures(answer.get("usage"), started, started)
    )


def read_then_written(reading: CallStats, writing: CallStats, before: float) -> CallStats:
    """A prompt read in one call and its reply written in the next, ``before`` seconds after the first began, as
    one call: the prompt once, what each read of it, the reply's tokens, the time from the first call's start."""
    evaluated = reading.evaluated_tokens + writing.evaluated_tokens
    return CallStats(
        prompt_tokens=writing.prompt_tokens,
        reused_tokens=max(0, writing.prompt_tokens - evaluated),
        evaluated_tokens=evaluated,
        generated_tokens=writing.generated_tokens,
        first_token_seconds=before + writing.first_token_seconds,
        seconds=before + writing.seconds,
        state_restored=reading.state_restored,
    )


def usage_of(timings: dict) -> dict | None:
    """llama.cpp's ``timings`` (prompt tokens read, reused from the cache, written) as OpenAI's ``usage``."""
    try:
        read, cached, written = (int(timings.get(k) or 0) for k in ("prompt_n", "cache_n", "predicted_n"))
    except (TypeError, ValueError):
        return None
    return {"prompt_tokens": read + cached, "completion_tokens": written,
            "prompt_tokens_details": {"cached_tokens": cached}}  # fmt: skip


def call_figures(usage: dict | None, started: float, first: float | None) -> CallStats:
    """A call's figures from the server's ``usage`` and the times it was sent (``started``) and first wrote."""
    usage = usage or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    now = time.perf_counter()
    return CallStats(
        prompt_tokens=prompt,
        reused_tokens=cached,
        evaluated_tokens=prompt - cached,
        generated_tokens=int(usage.get("completion_tokens") or 0),
        first_token_seconds=(first - started) if first else 0.0,
        seconds=now - started,
    )


STREAM_DONE: dict = {}  # what stream_events yields for ``[DONE]``


def read_within(response, limit: int, deadline: float) -> bytes:
    """Up to ``limit`` bytes of ``response``, a piece at a time as they come; :class:`Overdue` past ``deadline``
    (a socket's timeout bounds one wait only: a server sending a byte a second would never reach it)."""
    data = bytearray()
    while len(data) < limit:
        if time.monotonic() > deadline:
            raise Overdue
        piece = response.read1(min(64 * 1024, limit - len(data)))
        if not piece:
            break
        data += piece
    return bytes(data)


def lines_within(response, deadline: float) -> Iterator[bytes]:
    """The lines of a stream as they come, each at most :data:`MAX_LINE_BYTES`; :class:`Overdue` past
    ``deadline``."""
    pending = bytearray()
    while True:
        if time.monotonic() > deadline:
            raise Overdue
        piece = response.read1(64 * 1024)
        if not piece:
            break
        pending += piece
        if b"\n" in piece:
            *lines, rest = pending.split(b"\n")
            pending = bytearray(rest)
            for line in lines:
                if len(line) > MAX_LINE_BYTES:
                    raise ValueError(f"a line of more than {MAX_LINE_BYTES:,} bytes")
                yield bytes(line)
        if len(pending) > MAX_LINE_BYTES:
            raise ValueError(f"a line of more than {MAX_LINE_BYTES:,} bytes")
    if pending:
        yield bytes(pending)


def stream_events(response, deadline: float, most_lines: int) -> Iterator[dict]:
    """The JSON payloads of a server-sent event stream, then :data:`STREAM_DONE` at ``[DONE]``; lines are bounded in
    size and in number, and the whole stream by ``deadline``."""
    for count, raw in enumerate(lines_within(response, deadline), 1):
        if count > most_lines:
            raise Endless(f"sent {most_lines:,} lines without finishing its reply")
        line = raw.decode("utf-8").strip()
        if not line.startswith("data:"):
            continue
        data = line.removeprefix("data:").strip()
        if data == "[DONE]":
            yield STREAM_DONE
            return
        event = json.loads(data)
        if not isinstance(event, dict):
            raise ValueError("an event that is not a JSON object")
        if "error" in event:
            raise ValueError(str(event["error"])[:300])
        yield event


def error_detail(error: urllib.error.HTTPError) -> str:
    try:
        payload = json.loads(error.read(64 * 1024))
        message = payload.get("error", payload)
        message = message.get("message", message) if isinstance(message, dict) else message
        text = " ".join(str(message).split())
        return text[:300] if text else str(error.reason)
    except (ValueError, OSError, AttributeError):
        return str(error.reason)


@contextlib.contextmanager
def cut_short(stop: StopSignal) -> Iterator[None]:
    """Within the block, the connections this thread's call opens are closed when ``stop`` is set, and what that
    breaks (a connection refused, an answer cut off) raises :class:`Interrupted`, not an error."""
    outer = getattr(live_calls, "sockets", None), getattr(live_calls, "stop", None)
    sockets: list[socket.socket] = []
    live_calls.sockets, live_calls.stop = sockets, stop

    def shut_all() -> None:
        for sock in list(sockets):
            shut_socket(sock)

    try:
        with stop.on_set(shut_all):
            yield
    except Exception:
        if stop.is_set():
            raise Interrupted from None
        raise
    finally:
        live_calls.sockets, live_calls.stop = outer


def shut_connections_to(url: str) -> None:
    """End every connection open now to ``url``'s port, of any call: the bot is going down."""
    where = urllib.parse.urlsplit(url)
    port = where.port or (443 if where.scheme == "https" else 80)
    with OPEN_SOCKETS_LOCK:
        sockets = list(OPEN_SOCKETS)
    for sock in sockets:
        with contextlib.suppress(OSError):
            if sock.getpeername()[1] == port:
                shut_socket(sock)
