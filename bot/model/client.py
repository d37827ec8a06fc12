"""The HTTP client of an OpenAI-compatible model server: requests sent with the key, tried again after 0.5, 1 and 2
seconds where the server is busy or not reachable, answers read within their size and time, a server the bot
started waited for while its supervisor starts it again, and every call cut off at once when the bot goes down.

It knows nothing of games, slots or replies: :class:`bot.model.server.ServerModel` asks, and the slot policy
(:class:`bot.model.slots.SlotStates`) saves and restores slots, through it.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from bot.model.base import Interrupted
from bot.model.wire import (
    BACKOFF,
    MAX_ANSWER_BYTES,
    OPENER,
    Overdue,
    Retryable,
    ServerDown,
    ServerError,
    error_detail,
    live_calls,
    read_within,
    shut_connections_to,
)

if TYPE_CHECKING:
    from bot.model.llama_server import LlamaServer

log = logging.getLogger(__name__)


class ServerClient:
    """Requests to the server at ``url`` (its ``/v1`` root); ``stop``: the stop signal of the calling thread's call,
    if it may be interrupted; ``owner``: the llama.cpp server the bot started, waited for when it is started again.
    """

    def __init__(
        self, url: str, *, api_key: str | None = None, timeout: float = 120.0, owner: LlamaServer | None = None,
        stop: Callable[[], threading.Event | None] = lambda: None,
    ):  # fmt: skip
        self.url = url.rstrip("/")
        self.root = self.url.removesuffix("/v1")  # llama.cpp's own routes (/tokenize, /slots) sit beside /v1
        self.api_key = api_key
        self.timeout = timeout
        self.owner = owner
        self.stop = stop
        self.closed = False  # the bot is going down: no request is made, none waits for a restart
        self._aborts = 0  # requests ended by abort(): one under way then is not tried again
        self._calls = threading.local()  # the abort count when this thread's call began (see call())
        self._tokenize: str | None = None  # which tokenize route the server has: "llama.cpp", "extras" or "none"

    def close(self) -> None:
        self.closed = True
        self.abort()

    def abort(self) -> None:
        """End the requests under way at once: the bot is going down, and a hung server's answer would hold its exit
        for up to GM_MODEL_TIMEOUT. A request under way is not tried again (a retry would open a connection no one
        ends); a request made later is made as usual."""
        self._aborts += 1
        shut_connections_to(self.url)

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """One call of this thread (a worker's runner): an :meth:`abort` while it runs ends what it has under way,
        and it makes no request after, so a call that had not opened its connection yet when the bot went down
        does not open one that no one would end."""
        self._calls.aborts = self._aborts
        try:
            yield
        finally:
            del self._calls.aborts

    def request_json(
        self, method: str, path: str, body: dict | None, *, base: str | None = None, retries: bool = True
    ) -> dict:
        """The JSON answer to one request (``base``: another root than ``/v1``, such as :attr:`root`)."""
        response = self.open(method, path, body, base=base, retries=retries)
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

    def open(
        self, method: str, path: str, body: dict | None, *, base: str | None = None, retries: bool = True,
        waited: bool = False,
    ) -> Any:  # fmt: skip
        """The server's response to one request, not read yet (a stream is read as it comes)."""
        url = (base or self.url) + path
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        waits = [*BACKOFF, None] if retries else [None]
        aborts = getattr(self._calls, "aborts", self._aborts)
        for wait in waits:
            if self.closed or self._aborts != aborts:
                raise ServerDown(f"The model server at {self.url} is no longer used: the bot is stopping.")
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            live_calls.gone = lambda: self._aborts != aborts  # a connection made after an abort is ended at once
            try:
                return self._sent(request, path)
            except Retryable as exc:
                stop = self.stop()
                if stop is not None and stop.is_set():
                    raise Interrupted from None  # its connection was closed to let a more urgent call go first
                if self.closed or self._aborts != aborts:
                    raise ServerDown(
                        f"The model server at {self.url} is no longer used: the bot is stopping."
                    ) from None
                if wait is None and self.owner is not None and not waited and self._restarted_in_time():
                    return self.open(method, path, body, base=base, retries=False, waited=True)
                if wait is None:
                    raise ServerDown(self._not_answering(exc)) from None
                log.info("Model server: %s; trying again in %.1f s", exc, wait)
                time.sleep(wait)
            finally:
                live_calls.gone = None
        raise AssertionError("unreachable")

    def _sent(self, request: urllib.request.Request, path: str) -> Any:
        """One try of a request; :class:`Retryable` where another try may go through."""
        try:
            return OPENER.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            detail = error_detail(exc)
            if exc.code == 429 or exc.code >= 500 and "validation" not in detail:
                raise Retryable(f"HTTP {exc.code}: {detail}") from None
            if exc.code in (401, 403):
                key = f"The model server at {self.url} refused the key (HTTP {exc.code}); see GM_MODEL_API_KEY."
                raise ServerError(key) from None
            raise ServerError(f"The model server at {self.url} refused {path} (HTTP {exc.code}): {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            stop = self.stop()
            if isinstance(reason, TimeoutError) and not (stop is not None and stop.is_set()):
                # It took the call and said nothing for the whole timeout: hung, not starting up. Trying again
                # would hold the call (and a pool's next server) for minutes more.
                late = f"did not answer {path} within {self.timeout:g} s (GM_MODEL_TIMEOUT)"
                raise ServerDown(f"The model server at {self.url} {late}.") from None
            raise Retryable(str(reason)) from None

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

    # llama.cpp's own routes

    def slot_action(self, slot: int, action: str, filename: str) -> bool:
        """Save or restore a slot of llama.cpp's server, never cut short: a state half written or half read would
        cost more than the moment it takes (a call interrupted meanwhile stops when its reply is asked for)."""
        held = getattr(live_calls, "sockets", None)
        live_calls.sockets = None
        try:
            body = {"filename": filename}
            self.request_json("POST", f"/slots/{slot}?action={action}", body, base=self.root, retries=False)
        except ServerError as exc:
            log.warning("Model server: slot %d %s of %s failed (%s); the game reads its prompt cold", slot, action,
                        filename, exc)  # fmt: skip
            return False
        finally:
            live_calls.sockets = held
        return True

    @functools.lru_cache(maxsize=4096)  # noqa: B019 (one client lives as long as the process)
    def count(self, text: str, model: str) -> int:
        """Tokens of ``text`` by the server's tokenizer (llama.cpp's ``/tokenize``, llama-cpp-python's
        ``/extras/tokenize``), or, where it has neither, estimated at 4 characters a token (said once)."""
        if self._tokenize in (None, "llama.cpp"):
            try:
                answer = self.request_json("POST", "/tokenize", {"content": text}, base=self.root, retries=False)
                self._tokenize = "llama.cpp"
                return len(answer["tokens"])
            except (ServerError, KeyError, TypeError):
                if self._tokenize == "llama.cpp":
                    raise
        if self._tokenize in (None, "extras"):
            try:
                body = {"input": text, "model": model}
                answer = self.request_json("POST", "/extras/tokenize", body, base=self.root, retries=False)
                self._tokenize = "extras"
                return len(answer["tokens"])
            except (ServerError, KeyError, TypeError):
                if self._tokenize == "extras":
                    raise
        if self._tokenize is None:
            log.warning("The model server at %s cannot count tokens; estimating 4 characters a token", self.url)
            self._tokenize = "none"
        return (len(text) + 3) // 4
