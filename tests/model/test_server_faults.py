"""A model server that misbehaves, or a peer pretending to be one: each fault is one clear error, never a hang,
a leaked key or a partial reply stored as whole (a stub server on 127.0.0.1)."""

from __future__ import annotations

import time

import pytest

from bot.model.base import ChatMessage
from bot.model.server import MAX_ANSWER_BYTES, ServerError, ServerModel
from tests.model.stub_server import StubServer
from tests.test_cli import one_clear_line, run_bot

CHAT = [ChatMessage(role="user", content="Maya: I climb the stair.")]


def test_the_api_key_never_follows_a_redirect_to_another_host():
    with StubServer() as elsewhere, StubServer() as server:
        server.redirect_to = elsewhere.url
        model = ServerModel(server.url, "gm", api_key="sekrit-key")
        with pytest.raises(ServerError) as refused:
            model.check()
        assert "redirect" in str(refused.value) and "sekrit" not in str(refused.value)
        assert not any("Authorization" in headers or "authorization" in headers for *_, headers in elsewhere.requests)
        server.redirect_to = None
        model.check()
        assert server.requests[-1][2].get("Authorization") == "Bearer sekrit-key", "its own server gets the key"


def test_a_stream_cut_off_before_its_end_is_a_failed_call_not_a_whole_reply():
    with StubServer() as server:
        server.stream = "cut"
        model = ServerModel(server.url, "gm")
        pieces = []
        with pytest.raises(ServerError, match="broke off"):
            for piece in model.stream(CHAT, max_tokens=100):
                pieces.append(piece)
        assert pieces, "the text before the cut was shown as it came; the call still fails"
        server.stream = "whole"
        assert "".join(model.stream(CHAT, max_tokens=100)).strip() == StubServer.REPLY


def test_a_server_that_ignores_max_tokens_is_read_no_further_than_the_limit():
    with StubServer() as server:
        server.stream = "endless"
        model = ServerModel(server.url, "gm", timeout=10)
        started = time.monotonic()
        text = "".join(model.stream(CHAT, max_tokens=50))
        assert time.monotonic() - started < 60, "it returned; the stub would write forever"
        assert len(text.split()) <= 50 and model.last_call.generated_tokens == 50


@pytest.mark.parametrize("path", ["/models", "/chat/completions"])
def test_a_huge_answer_is_refused_without_reading_it_all(path: str):
    with StubServer() as server:
        server.pad_bytes = MAX_ANSWER_BYTES + 1024
        model = ServerModel(server.url, "gm")
        with pytest.raises(ServerError, match="larger than"):
            if path == "/models":
                model.check()
            else:
                model.generate(CHAT, max_tokens=10)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (["gm"], "answered /models without a list of models (data)"),
        ({"data": "gm"}, "answered /models without a list of models (data)"),
        ("gm", "answered /models without a list of models (data)"),
        (None, "answered /models without a list of models (data)"),
        ({"data": []}, "answered /models with no model ids in its list"),
        ({"data": [1, None, "gm"]}, "answered /models with no model ids in its list"),
        ({"data": [{"name": "gm"}, {"id": 7}]}, "answered /models with no model ids in its list"),
        ({"data": [{"id": "other"}]}, "serves other, not 'gm': set GM_MODEL_NAME to one of them"),
        (b"[" * 100_000, "answered /models with JSON nested too deeply"),
        (b"<html>502 Bad Gateway</html>", "answered /models with no JSON"),
    ],
)
def test_a_models_answer_of_another_shape_is_one_clear_error(answer: object, said: str):
    with StubServer() as server:
        server.models = answer
        model = ServerModel(server.url, "gm")
        with pytest.raises(ServerError) as refused:
            model.check()
        message = str(refused.value)
        assert message.startswith(f"The model server at {server.url} {said}"), message
        assert "\n" not in message and len(message) < 400, message


def test_a_models_answer_listing_the_model_among_others_is_accepted():
    with StubServer() as server:
        server.models = {"object": "list", "data": [{"id": "other"}, "junk", {"id": "gm", "object": "model"}]}
        ServerModel(server.url, "gm").check()


def test_a_deeply_nested_models_answer_at_start_is_one_clear_line(tmp_path, bot_env):
    with StubServer() as server:
        server.models = b"[" * 100_000
        env = {**bot_env, "GM_MODEL_URL": server.url, "GM_MODEL_NAME": "gm"}
        result = run_bot("play", "lighthouse", cwd=tmp_path, stdin="/quit\n", **env)
        line = one_clear_line(result)
        assert line == f"The model server at {server.url} answered /models with JSON nested too deeply.", line


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("not a url", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("ftp://example.com/v1", "http:// or https://"),
        ("http:///v1", "no host"),
        ("http://maya:hunter2@127.0.0.1:9/v1", "GM_MODEL_API_KEY"),
        ("http://h:abc/v1", "GM_MODEL_URL's port"),
        ("http://h:99999/v1", "GM_MODEL_URL's port"),
        ("http://[::1/v1", "GM_MODEL_URL is not a URL"),
        (f"http://{'a' * 64}.example/v1", "GM_MODEL_URL's host"),
        ("http://a..b/v1", "GM_MODEL_URL's host"),
    ],
)
def test_a_model_url_that_is_not_an_http_server_is_refused_at_start(tmp_path, url: str, said: str):
    result = run_bot("check", cwd=tmp_path, GM_MODEL_URL=url, GM_MODEL_NAME="gm")
    line = one_clear_line(result)
    assert said in line and "hunter2" not in result.stderr + result.stdout
