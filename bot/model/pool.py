"""Several model servers behind one model (F27, F33): ``GM_MODEL_URL=http://a:8080/v1,http://b:8080/v1``.

Each game sticks to one server, chosen by rendezvous hashing of the game's
slot name over the servers that answer: the choice is stable (its prompt
stays cached there) and spreads the games evenly. A server that does not
answer, or breaks off a reply, is left out for :data:`DOWN_SECONDS`; its
games go to the others, which read their prompts cold once. A call that
fails before any text was shown is sent to the next server at once; a reply
cut off after its first words fails as with one server (the action is kept
for /retry), and the retry goes to another server. Work of no game (the
memory's background calls) goes to the servers in turn.

Each server has places of its own, as many as it serves calls at once: a
call whose server's places are all taken goes to the next one with room,
so a server that hangs holds no more than its own places (the pool's are
their sum), and the games of the others are not kept waiting behind it.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import threading
import time
from collections.abc import Iterator, Sequence

from bot.model.base import Answer, CallStats, LanguageModel, Messages, StreamCall, Written
from bot.model.server import ServerDown, ServerModel

log = logging.getLogger(__name__)

DOWN_SECONDS = 30.0  # a server that failed is tried again after this long


class ServerPool(LanguageModel):
    def __init__(self, servers: Sequence[ServerModel]):
        if not servers:
            raise ValueError("a pool needs at least one server")
        self.servers = list(servers)
        self.name = self.servers[0].name
        self.parallel = sum(s.parallel for s in self.servers)
        self.background_parallel = sum(s.background_parallel for s in self.servers)
        self.background_yields = any(s.background_yields for s in self.servers)
        self.placement = f"on {len(self.servers)} model servers ({self.parallel} calls at once)"
        self._down: dict[str, float] = {}  # server url -> until when it is left out
        self._calls: dict[str, int] = {}  # server url -> its calls under way
        self._lock = threading.Lock()
        self._turn = itertools.count()

    @property
    def parameters(self) -> int | None:
        """The model's size, as the first server that says it says (they serve one model, by one name)."""
        return next((s.parameters for s in self.servers if s.parameters), None)

    @property
    def trained_context(self) -> int | None:
        """The shortest trained context a server says: a prompt must fit every one its game may move to."""
        known = [s.trained_context for s in self.servers if s.trained_context]
        return min(known) if known else None

    def sample_with(self, *, temperature: float, repeat_penalty: float) -> None:
        for server in self.servers:
            server.sample_with(temperature=temperature, repeat_penalty=repeat_penalty)

    @contextlib.contextmanager
    def calling(self, stop: threading.Event | None) -> Iterator[None]:
        with contextlib.ExitStack() as calls:
            for server in self.servers:
                calls.enter_context(server.calling(stop))
            yield

    @property
    def stop(self) -> threading.Event | None:
        return self.servers[0].stop

    @stop.setter
    def stop(self, value: threading.Event | None) -> None:
        for server in self.servers:
            server.stop = value

    # Which server

    def check(self) -> None:
        """Refuse at start when no server answers, or one serves another model; a server that does not answer is
        said in the log and left out for now."""
        failures = []
        for server in self.servers:
            try:
                server.check()
            except ServerDown as exc:
                failures.append(str(exc))
                self._mark_down(server, exc)
        if len(failures) == len(self.servers):
            raise ServerDown("No model server of GM_MODEL_URL answers: " + " / ".join(failures))

    def order(self, key: str | None) -> list[ServerModel]:
        """The servers to try for a call of ``key`` (a game's slot name; ``None``: in turn), the ones left out
        last."""
        if key is None:
            start = next(self._turn) % len(self.servers)
            ranked = self.servers[start:] + self.servers[:start]
        else:
            ranked = sorted(self.servers, key=lambda s: _weight(key, s.url), reverse=True)
        now = time.monotonic()
        with self._lock:
            up = [s for s in ranked if self._down.get(s.url, 0.0) <= now]
            room = [s for s in up if self._calls.get(s.url, 0) < s.parallel]
        return room + [s for s in up if s not in room] + [s for s in ranked if s not in up]

    @contextlib.contextmanager
    def _place(self, server: ServerModel) -> Iterator[None]:
        """One of ``server``'s places, for the call in the block."""
        with self._lock:
            self._calls[server.url] = self._calls.get(server.url, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._calls[server.url] -= 1

    def _mark_down(self, server: ServerModel, why: Exception) -> None:
        with self._lock:
            self._down[server.url] = time.monotonic() + DOWN_SECONDS
        log.warning("Model server %s left out for %g s: %s", server.url, DOWN_SECONDS, why)

    # Calls

    def _write(self, call: StreamCall, out: Written) -> Iterator[str]:
        failures: list[str] = []
        for server in self.order(call.slot):
            shown = False
            try:
                with self._place(server):
                    written = server.streamed(call)
                    try:
                        for piece in written:
                            shown = True
                            yield piece
                    finally:
                        written.close()  # a reader that leaves early stops the server's reply
                        out.stats = written.stats
                return
            except ServerDown as exc:
                self._mark_down(server, exc)
                if shown:
                    raise  # its first words are shown: the turn fails, its action kept for /retry
                failures.append(str(exc))
        raise ServerDown("No model server answers: " + " / ".join(failures))

    def generate(self, messages: Messages, *, max_tokens: int) -> Answer:
        return self._first(lambda server: server.generate(messages, max_tokens=max_tokens))

    def generate_json(self, messages: Messages, schema: dict, *, max_tokens: int) -> Answer:
        return self._first(lambda server: server.generate_json(messages, schema, max_tokens=max_tokens))

    def count_tokens(self, text: str) -> int:
        return self._first(lambda server: server.count_tokens(text))

    def prefill(self, messages: Messages, *, slot: str) -> CallStats | None:
        return self._first(lambda server: server.prefill(messages, slot=slot), key=slot)

    def drop_state(self, slot: str) -> None:
        for server in self.servers:
            server.drop_state(slot)

    def close(self) -> None:
        for server in self.servers:
            server.close()

    def abort(self) -> None:
        for server in self.servers:
            server.abort()

    def _first(self, call, *, key: str | None = None):
        """``call`` on the first server that answers."""
        failures: list[str] = []
        for server in self.order(key):
            try:
                with self._place(server):
                    return call(server)
            except ServerDown as exc:
                self._mark_down(server, exc)
                failures.append(str(exc))
        raise ServerDown("No model server answers: " + " / ".join(failures))


def _weight(key: str, url: str) -> int:
    """Rendezvous hashing: each game ranks the servers by this; the same game, the same order."""
    return int.from_bytes(hashlib.blake2b(f"{key}|{url}".encode(), digest_size=8).digest(), "big")
