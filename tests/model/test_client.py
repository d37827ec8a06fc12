"""The HTTP client of a model server: the key, the retries, counting tokens, slot routes, and going down."""

from __future__ import annotations

import logging
import socket

import pytest

from bot.model.client import ServerClient
from bot.model.wire import ServerDown, ServerError
from tests.model.stub_server import StubServer


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def test_a_request_carries_the_key_and_its_json_answer_comes_back():
    with StubServer("gm") as stub:
        client = ServerClient(stub.url + "/", api_key="sesame")
        assert client.request_json("GET", "/models", None) == {"data": [{"id": "gm"}]}
    method, path, headers = stub.requests[0]
    assert (method, path) == ("GET", "/v1/models")
    assert headers["Authorization"] == "Bearer sesame"


def test_tokens_are_counted_by_the_servers_tokenizer_at_its_root_and_remembered():
    with StubServer() as stub:
        client = ServerClient(stub.url)
        assert client.count("x" * 40, "gm") == 10
        assert client.count("x" * 40, "gm") == 10
    assert stub.paths() == ["/tokenize"], "llama.cpp's route, beside /v1, asked once for the same text"


def test_a_server_with_no_tokenizer_is_estimated_at_four_characters_a_token_said_once(caplog):
    with StubServer() as stub:
        stub.tokenize_status = 404
        client = ServerClient(stub.url)
        with caplog.at_level(logging.WARNING, logger="bot.model.client"):
            assert client.count("x" * 40, "gm") == 10
            assert client.count("y" * 8, "gm") == 2
    assert stub.paths() == ["/tokenize", "/extras/tokenize"], "each route tried once, then never again"
    assert [r.message for r in caplog.records if "estimating" in r.message] != []
    assert len([r for r in caplog.records if "estimating" in r.message]) == 1


def test_a_busy_server_is_asked_again_then_said_to_be_down_with_what_to_check():
    with StubServer() as stub:
        stub.tokenize_status = 503
        client = ServerClient(stub.url)
        with pytest.raises(ServerDown, match=r"is not answering \(HTTP 503.*is it running\? \(GM_MODEL_URL\)"):
            client.request_json("POST", "/tokenize", {"content": "x"}, base=client.root)
    assert stub.paths() == ["/tokenize"] * 4, "the first try and three more, after 0.5, 1 and 2 seconds"


def test_a_refused_key_is_one_clear_error_and_not_tried_again():
    with StubServer() as stub:
        stub.tokenize_status = 401
        client = ServerClient(stub.url, api_key="wrong")
        with pytest.raises(ServerError, match=r"refused the key \(HTTP 401\); see GM_MODEL_API_KEY"):
            client.request_json("POST", "/tokenize", {"content": "x"}, base=client.root)
    assert stub.paths() == ["/tokenize"]


def test_a_closed_client_makes_no_request():
    with StubServer() as stub:
        client = ServerClient(stub.url)
        client.close()
        with pytest.raises(ServerDown, match="the bot is stopping"):
            client.request_json("GET", "/models", None)
    assert stub.requests == []


def test_a_slot_save_that_fails_is_one_line_in_the_log_not_an_error(caplog):
    client = ServerClient(_closed_port_url())
    with caplog.at_level(logging.WARNING, logger="bot.model.client"):
        assert client.slot_action(0, "save", "game-1.bin") is False
    assert any("slot 0 save of game-1.bin failed" in r.message for r in caplog.records)


def test_a_call_under_way_when_the_bot_goes_down_makes_no_request_after_it():
    """A worker's call that had not opened its connection yet when abort() came (the bot going down) opens none:
    on a hung server it would wait out the timeout at exit. A call begun after the abort is made as usual."""
    with StubServer("gm") as stub:
        client = ServerClient(stub.url)
        with client.call():
            assert client.request_json("GET", "/models", None)
            client.abort()
            with pytest.raises(ServerDown, match="the bot is stopping"):
                client.request_json("GET", "/models", None)
        assert client.request_json("GET", "/models", None)
    assert len(stub.requests) == 2


def test_a_connection_made_while_the_bot_goes_down_is_ended_at_once(monkeypatch: pytest.MonkeyPatch):
    """abort() ends the connections open when it comes; one that connects just after its sweep ends itself."""
    import http.client
    import time

    with socket.socket() as hung:  # takes connections and never answers
        hung.bind(("127.0.0.1", 0))
        hung.listen(4)
        client = ServerClient(f"http://127.0.0.1:{hung.getsockname()[1]}/v1", timeout=30)
        connect = http.client.HTTPConnection.connect

        def connect_then_abort(self):
            connect(self)
            client.abort()  # the bot goes down between the connection and its being seen

        monkeypatch.setattr(http.client.HTTPConnection, "connect", connect_then_abort)
        began = time.monotonic()
        with client.call(), pytest.raises(ServerDown, match="the bot is stopping"):
            client.request_json("POST", "/chat/completions", {"messages": []})
        assert time.monotonic() - began < 10, "not the server's timeout"
