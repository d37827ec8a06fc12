"""A model server that misbehaves, or a peer pretending to be one: each fault is one clear error, never a hang,
a leaked key or a partial reply stored as whole (a stub server on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path

import pytest

from bot.engine import Engine, EngineConfig
from bot.engine.game import ModelFailed
from bot.model import ModelWorker
from bot.model.base import ChatMessage
from bot.model.server import ServerError, ServerModel
from bot.model.wire import BACKOFF, MAX_ANSWER_BYTES, MAX_LINE_BYTES
from bot.store import EntryKind, Store
from bot.worlds import WorldLibrary
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


def test_a_completion_redirected_to_another_host_is_refused_and_the_key_stays_here():
    with StubServer() as elsewhere, StubServer() as server:
        server.redirect_to = elsewhere.url.replace("http://", "http://maya:hunter2@")
        model = ServerModel(server.url, "gm", api_key="sekrit-key")
        for call in (lambda: model.generate(CHAT, max_tokens=10), lambda: list(model.stream(CHAT, max_tokens=10))):
            with pytest.raises(ServerError, match="redirect") as refused:
                call()
            assert "sekrit" not in str(refused.value) and "hunter2" not in str(refused.value), refused.value
        assert [method for method, *_ in server.requests] == ["POST", "POST"]
        assert elsewhere.requests == [], "the other host was never asked, so it never saw the key"


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
        written = model.stream(CHAT, max_tokens=50)
        text = "".join(written)
        assert time.monotonic() - started < 60, "it returned; the stub would write forever"
        assert len(text.split()) <= 50 and written.stats.generated_tokens == 50


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("empty", "sent 300 lines without finishing its reply"),
        ("comments", "sent 300 lines without finishing its reply"),
        ("trickle", "did not finish its reply within 1 s (GM_MODEL_TIMEOUT)"),
    ],
)
def test_a_stream_that_goes_on_without_text_is_a_failed_call_not_a_hang(mode: str, said: str):
    with StubServer() as server:
        server.stream = mode
        model = ServerModel(server.url, "gm", timeout=1)
        with pytest.raises(ServerError, match=re.escape(said)):
            list(model.stream(CHAT, max_tokens=50))
        server.stream = "whole"
        assert "".join(model.stream(CHAT, max_tokens=50)).strip() == StubServer.REPLY


def test_a_json_answer_that_trickles_forever_is_a_failed_call_not_a_hang():
    with StubServer() as server:
        server.trickle = True
        model = ServerModel(server.url, "gm", timeout=1)
        with pytest.raises(ServerError, match=re.escape("did not finish its answer to /models within 1 s")):
            model.check()


def test_a_stream_line_is_read_up_to_its_bound_and_no_further():
    with StubServer() as server:
        model = ServerModel(server.url, "gm")
        server.line_pad = MAX_LINE_BYTES - 1000
        assert "".join(model.stream(CHAT, max_tokens=100)).strip() == StubServer.REPLY, "a long line is read"
        server.line_pad = MAX_LINE_BYTES
        with pytest.raises(ServerError, match=f"a line of more than {MAX_LINE_BYTES:,} bytes"):
            list(model.stream(CHAT, max_tokens=100))


@pytest.mark.parametrize("mode", ["cut", "empty", "trickle"])
async def test_a_stream_that_breaks_off_or_never_ends_fails_the_turn_and_the_retry_answers(
    mode: str, tmp_path: Path, worlds_dir: Path
):
    with StubServer() as server:
        server.stream = mode
        store = await Store.open(tmp_path / "gm.sqlite3")
        async with ModelWorker(ServerModel(server.url, "gm", timeout=1)) as worker:
            engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=40))
            game = (await engine.start_game("chan", "lighthouse")).game
            await engine.join(game.id, "maya", "Maya")
            shown: list[str] = []
            with pytest.raises(ModelFailed, match="your action is saved"):
                await engine.act(game.id, "maya", "I climb the stair.", on_text=shown.append)
            assert [e.content for e in await engine.unanswered(game.id)] == ["I climb the stair."]
            replies = [e.content for e in await store.log(game.id) if e.kind is EntryKind.GM]
            assert len(replies) == 1, "the opening only: no part of the broken reply is stored as the GM's answer"
            server.stream = "whole"
            result = await engine.retry(game.id)
            assert result.text == StubServer.REPLY
            assert await engine.unanswered(game.id) == []
            log = await store.log(game.id)
            assert [e.content for e in log if e.kind is EntryKind.GM] == [*replies, StubServer.REPLY]
            await engine.close()
        await store.close()


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


def test_ctrl_c_while_a_turn_waits_on_a_hung_server_exits_at_once(tmp_path, bot_env):
    """The player's turn waits on a server that took the call and says nothing: Ctrl-C once took minutes (the
    process waited for the call at exit); the call is ended and the bot exits, the action kept."""
    import signal
    import subprocess
    import sys

    from tests.conftest import bot_environment

    with StubServer() as server:
        server.hold_seconds = 300
        env = {**bot_environment(), **bot_env, "GM_MODEL_URL": server.url, "GM_MODEL_NAME": "gm",
               "GM_MODEL_TIMEOUT": "300", "PYTHONFAULTHANDLER": "1"}  # fmt: skip
        bot = subprocess.Popen(
            [sys.executable, "-m", "bot", "play", "lighthouse"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env,
        )  # fmt: skip
        try:
            bot.stdin.write("Maya\nI climb the stair.\n")
            bot.stdin.flush()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not (
                _stored_actions(bot_env["GM_DATABASE"])
                and any(path.endswith("chat/completions") for _, path, _ in server.requests)
            ):  # fmt: skip
                time.sleep(0.2)
            time.sleep(1.0)  # the turn's call is under way (its action stored first), and hangs
            interrupted = time.monotonic()
            bot.send_signal(signal.SIGINT)
            try:
                _, err = bot.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                bot.send_signal(signal.SIGABRT)  # its threads' stacks, for the failure below (PYTHONFAULTHANDLER)
                _, err = bot.communicate(timeout=30)
                pytest.fail(f"still running a minute after Ctrl-C; its threads:\n{err[-8000:]}")
            assert time.monotonic() - interrupted < 15, "it exits at once, not after the server's timeout"
            assert bot.returncode == 130 and "Traceback" not in err, err
        finally:
            if bot.poll() is None:
                bot.kill()
    assert _stored_actions(bot_env["GM_DATABASE"]) == ["I climb the stair."], "kept, for /retry when resumed"


def test_a_call_under_way_when_the_bot_goes_down_is_ended_and_not_tried_again():
    """The call waits on a server that took it and says nothing; abort() (the bot going down) ends it at once.
    Seen as a dropped connection, it was tried again half a second later, on a new connection no one would end:
    the process then waited for the server's timeout at exit."""
    import threading

    from bot.model.server import ServerDown

    with StubServer() as server:
        server.hold_seconds = 300
        model = ServerModel(server.url, "gm", timeout=300)
        failed: list[Exception] = []

        def call() -> None:
            try:
                model.generate(CHAT, max_tokens=10)
            except Exception as exc:
                failed.append(exc)

        caller = threading.Thread(target=call, daemon=True)  # a hang fails the test, not the session's exit
        caller.start()
        _wait_for(lambda: _completions(server) == 1)
        model.abort()
        caller.join(timeout=30)
        assert not caller.is_alive(), "ended at once, not after the server's timeout"
        assert isinstance(failed[0], ServerDown) and "stopping" in str(failed[0]), failed
        time.sleep(BACKOFF[0] * 2)
        assert _completions(server) == 1, "asked once, never again"
        server.hold_seconds = 0
        assert model.generate(CHAT, max_tokens=10).text == StubServer.REPLY, "a call made later is made as usual"


async def test_closing_the_worker_ends_a_call_waiting_on_a_hung_server(tmp_path):
    """Closing the worker stopped its runners first, and with them forgot that a call was under way: the call
    was not ended, and the process waited for it at exit (minutes, with a hung server)."""
    import asyncio

    with StubServer() as server:
        server.hold_seconds = 300
        model = ServerModel(server.url, "gm", timeout=300)
        async with ModelWorker(model) as worker:
            call = asyncio.ensure_future(worker.generate(CHAT, max_tokens=10))
            await asyncio.to_thread(_wait_for, lambda: _completions(server) == 1)
            call.cancel()  # the turn is gone (Ctrl-C); its call still waits in the worker's thread
        _wait_for(server.hung_up.is_set, within=10)
        assert _completions(server) == 1, "ended, not tried again"


def _completions(server: StubServer) -> int:
    return sum(path.endswith("chat/completions") for _, path, _ in server.requests)


def _wait_for(condition, *, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.02)


def _stored_actions(database: str) -> list[str]:
    """The players' actions in the bot's database so far (none while it is still being made)."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            return [row[0] for row in db.execute("SELECT content FROM turn_log WHERE kind = 'action'")]
    except sqlite3.Error:
        return []
