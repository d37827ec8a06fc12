"""A background call to a model server that a player's turn interrupts (a server on the players' cores): its
connection is closed at once, whatever it waits for, and it ends as interrupted, not failed, with no retry (a stub
server on 127.0.0.1 that holds its answers as a server reading a long prompt does)."""

from __future__ import annotations

import threading
import time

import pytest

from bot.model.base import ChatMessage, Interrupted, StopSignal
from bot.model.pool import ServerPool
from bot.model.server import ServerModel
from bot.model.slots import SlotMap
from tests.model.stub_server import StubServer

CHAT = [ChatMessage(role="user", content="Summarise the scene.")]
SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}}}
CALLS = {
    "structured": lambda model: model.generate_json(CHAT, SCHEMA, max_tokens=200),
    "whole": lambda model: model.generate(CHAT, max_tokens=200),
    "read ahead": lambda model: model.prefill(CHAT, slot="game-1"),
}


def _completions(stub: StubServer) -> int:
    return sum(path.endswith("/chat/completions") for path in stub.paths())


def _stop_once_asked(stub: StubServer, stop: StopSignal) -> None:
    """Set ``stop`` once the server holds the call (a player's turn came while it waited for its answer)."""
    deadline = time.monotonic() + 30
    while not _completions(stub) and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()


@pytest.mark.parametrize("kind", list(CALLS))
def test_a_background_call_is_cut_short_when_its_stop_is_set_and_the_server_sees_it_hang_up(kind: str):
    with StubServer() as stub:
        stub.hold_seconds = 60  # far past the test: only a closed connection ends the call
        model = ServerModel(stub.url, "gm", timeout=30, parallel=2, slots=SlotMap(1))
        stop = StopSignal()
        threading.Thread(target=_stop_once_asked, args=(stub, stop), daemon=True).start()
        model.stop = stop
        with pytest.raises(Interrupted):
            CALLS[kind](model)
        assert stub.hung_up.wait(5), "the server saw the connection closed (llama.cpp's server then cancels the call)"
        assert _completions(stub) == 1, "an interrupted call is not retried"
        if model.slots is not None:
            assert not model.slots._busy, "the game's slot is free again"


def test_a_call_whose_stop_was_set_before_it_began_sends_nothing_that_runs():
    with StubServer() as stub:
        stub.hold_seconds = 60
        model = ServerModel(stub.url, "gm", timeout=30)
        stop = StopSignal()
        stop.set()
        model.stop = stop
        with pytest.raises(Interrupted):
            model.generate_json(CHAT, SCHEMA, max_tokens=200)
        assert _completions(stub) == 0, "its connection was closed as it opened"


def test_a_call_with_no_stop_or_a_stop_never_set_is_answered_as_before():
    with StubServer() as stub:
        stub.hold_seconds = 0.3
        model = ServerModel(stub.url, "gm", timeout=30)
        assert model.generate(CHAT, max_tokens=20).text == StubServer.REPLY
        model.stop = StopSignal()  # asked for as a stream (the stub's pieces are its words and a space each)
        assert model.generate(CHAT, max_tokens=20).text.strip() == StubServer.REPLY
        assert model.generate_json(CHAT, SCHEMA, max_tokens=20).text.strip() == StubServer.REPLY
        assert not stub.hung_up.is_set()


def test_each_thread_sees_its_own_calls_stop_so_a_player_beside_it_is_never_cut():
    with StubServer() as stub:
        stub.hold_seconds = 0.5
        model = ServerPool([ServerModel(stub.url, "gm", timeout=30)])
        background, answers = StopSignal(), {}

        def player() -> None:
            model.stop = None
            answers["player"] = model.generate(CHAT, max_tokens=20).text

        def summary() -> None:
            model.stop = background
            try:
                model.generate_json(CHAT, SCHEMA, max_tokens=200)
            except Interrupted:
                answers["summary"] = "interrupted"

        threads = [threading.Thread(target=summary), threading.Thread(target=player)]
        for thread in threads:
            thread.start()
        threading.Timer(0.2, background.set).start()
        for thread in threads:
            thread.join(10)
        assert answers == {"player": StubServer.REPLY, "summary": "interrupted"}
