"""The model behind an OpenAI-compatible server: llama-cpp-python's own server, serving the bundled model."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bot.engine import Engine, EngineConfig
from bot.engine.game import ModelFailed
from bot.model import ModelWorker
from bot.model.base import ChatMessage
from bot.model.server import ServerError, ServerModel
from bot.store import EntryKind, Store
from bot.worlds import WorldLibrary
from tests.conftest import GPU_LAYERS, loads_a_model
from tests.test_cli import run_bot

NAME = "smol"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server() -> tuple[subprocess.Popen, str]:
    """``python -m llama_cpp.server`` with the bundled model on 127.0.0.1; returns once it answers."""
    from bot.model.llama import bundled_model_path

    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_model_path()), "--model_alias", NAME,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--seed", "5", "--n_gpu_layers", GPU_LAYERS],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    return process, _answering(process, f"http://127.0.0.1:{port}/v1")


def _answering(process: subprocess.Popen, url: str) -> str:
    """``url`` once the server behind it answers."""
    for _ in range(600):  # it loads in seconds; the bound is for a loaded machine
        if process.poll() is not None:
            raise RuntimeError("llama_cpp.server exited at start")
        try:
            with urllib.request.urlopen(url + "/models", timeout=1) as answer:
                json.loads(answer.read())
                return url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("llama_cpp.server did not answer")


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="module")
@loads_a_model
def server():
    process, url = start_server()
    yield url
    stop_server(process)


@pytest.mark.slow
async def test_a_whole_game_is_played_through_the_server(server: str, tmp_path: Path, worlds_dir: Path):
    model = ServerModel(server, NAME, parallel=2)
    model.check()
    store = await Store.open(tmp_path / "gm.sqlite3")
    # The plumbing is under test here, not the reply rules: without them no stop strings are sent, at which
    # the 135M model sometimes stops before its first word.
    config = EngineConfig(n_ctx=2048, reply_tokens=32, shape_replies=False)
    async with ModelWorker(model) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
        game = (await engine.start_game("chan", "lighthouse")).game
        await engine.join(game.id, "maya", "Maya")
        shown: list[str] = []

        async def show(piece: str) -> None:
            shown.append(piece)

        for action in ("I climb the stair.", "I light the lamp."):
            try:
                result = await engine.act(game.id, "maya", action, on_text=show)
            except ModelFailed:  # the 135M model sometimes ends before its first word: the table's /retry
                result = await _retried(engine, game.id, show)
            assert result.text.strip() and result.model is not None and result.model.generated_tokens > 0
        await engine.memory.idle()
        await engine.close()
        assert shown, "the reply streamed"
        assert worker.structured_calls > 0, "the background memory asked the server for JSON"
        log = await engine.history(game.id, 10)
        turns = [e.kind for e in log if e.turn and e.kind in (EntryKind.ACTION, EntryKind.GM)]
        assert turns == [EntryKind.ACTION, EntryKind.GM] * 2
    await store.close()
    assert model.count_tokens("The lamp is lit.") > 0 and model.http._tokenize == "extras", "the server counts tokens"
    answer = json.loads(
        model.generate_json(
            [ChatMessage(role="user", content="A name for a cat.")],
            {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}}, "required": ["name"]},
            max_tokens=24,
        ).text
    )
    assert isinstance(answer["name"], str), "json_schema unknown to this server: json_object with the schema"


async def _retried(engine: Engine, game_id: int, show):
    for _ in range(4):
        try:
            return await engine.retry(game_id, on_text=show)
        except ModelFailed:
            continue
    raise AssertionError("five empty replies in a row")


def test_a_wrong_model_name_or_no_server_is_one_clear_sentence(server: str):
    with pytest.raises(ServerError, match=f"serves {NAME}, not 'gpt-4': set GM_MODEL_NAME"):
        ServerModel(server, "gpt-4").check()
    closed = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(ServerError, match="is not answering .*is it running"):
        ServerModel(closed, NAME, timeout=2).check()


@pytest.mark.llm
async def test_a_server_that_dies_during_a_game_fails_the_turn_and_keeps_the_action(tmp_path: Path, worlds_dir: Path):
    process, url = start_server()
    try:
        model = ServerModel(url, NAME, timeout=10)
        store = await Store.open(tmp_path / "gm.sqlite3")
        async with ModelWorker(model) as worker:
            engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=400))
            game = (await engine.start_game("chan", "lighthouse")).game
            await engine.join(game.id, "maya", "Maya")

            async def kill_on_first_piece(piece: str) -> None:
                stop_server(process)

            action = "Tell me the whole history of the lighthouse."
            try:  # killed at its first piece: the rest of the reply never comes
                await engine.act(game.id, "maya", action, on_text=kill_on_first_piece)
            except ModelFailed:
                pass
            else:  # the reply was whole before the kill took: the next turn finds no server, and says so
                action = "I climb the stair."
                with pytest.raises((ModelFailed, ServerError), match="GM could not answer|is not answering"):
                    await engine.act(game.id, "maya", action)
            assert [e.content for e in await engine.unanswered(game.id)] == [action]
            await engine.close()
        await store.close()
    finally:
        stop_server(process)


def test_the_terminal_plays_through_a_server(server: str, tmp_path: Path, play_env):
    played = run_bot(
        "play", "lighthouse", cwd=tmp_path, stdin="Maya: I knock.\n", GM_MODEL_URL=server, GM_MODEL_NAME=NAME,
        **play_env,
    )  # fmt: skip
    assert played.returncode == 0, played.stderr
    assert "GM:" in played.stdout or "The GM had nothing to say" in played.stdout, played.stdout
    wrong = run_bot("play", "lighthouse", cwd=tmp_path, GM_MODEL_URL=server, GM_MODEL_NAME="nope", **play_env)
    assert wrong.returncode == 1 and "set GM_MODEL_NAME to one of them" in wrong.stderr


class FaultyServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers garbage or stalls until told to behave."""

    REPLY = "The lamp flickers and the stair creaks."

    def __init__(self, mode: str):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.mode = mode  # "garbage", "stall" or "ok"
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, json.dumps({"data": [{"id": "gm"}]}).encode(), "application/json")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if server.mode == "stall":
                    server.release.wait(60)  # a server that took the request and never answers
                    return
                if server.mode == "garbage":
                    if body.get("stream"):
                        self._send(200, b'data: {"choices": [{"delta": {"cont\n\n', "text/event-stream")
                    else:
                        self._send(200, b"<html>502 Bad Gateway</html>", "text/html")
                    return
                if self.path.endswith("tokenize"):
                    self._send(200, json.dumps({"tokens": list(range(len(body.get("content", "")) // 4))}).encode())
                elif body.get("stream"):
                    events = [{"choices": [{"delta": {"content": word + " "}}]} for word in server.REPLY.split()]
                    events.append({"choices": [{"delta": {}, "finish_reason": "stop"}]})
                    stream = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                    self._send(200, stream.encode(), "text/event-stream")
                else:  # a structured call of the memory: an answer that fails validation, so it falls back
                    answer = {"choices": [{"message": {"content": "{}"}}], "usage": {"prompt_tokens": 1}}
                    self._send(200, json.dumps(answer).encode())

            def _send(self, status: int, data: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FaultyServer:
        import threading

        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("fault", ["garbage", "stall"])
async def test_a_server_answering_garbage_or_stalling_fails_the_turn_and_the_retry_answers(
    fault: str, tmp_path: Path, worlds_dir: Path
):
    with FaultyServer(fault) as faulty:
        model = ServerModel(faulty.url, "gm", timeout=1)
        store = await Store.open(tmp_path / "gm.sqlite3")
        async with ModelWorker(model) as worker:
            engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=40))
            game = (await engine.start_game("chan", "lighthouse")).game
            await engine.join(game.id, "maya", "Maya")
            with pytest.raises(ModelFailed, match="your action is saved"):
                await engine.act(game.id, "maya", "I climb the stair.")
            assert [e.content for e in await engine.unanswered(game.id)] == ["I climb the stair."]
            faulty.mode = "ok"
            faulty.release.set()
            result = await engine.retry(game.id)
            assert result.text == FaultyServer.REPLY
            assert await engine.unanswered(game.id) == []
            await engine.close()
        await store.close()


def start_server_with_embeddings() -> tuple[subprocess.Popen, str]:
    """llama-cpp-python's server with two models: the bundled chat model, and the bundled embedding model
    with embeddings on (it swaps between them as requests ask)."""
    from bot.model.llama import bundled_model_path
    from tests.embedding import bundled_embedder

    port = _free_port()
    config = {
        "host": "127.0.0.1", "port": port,
        "models": [
            {"model": str(bundled_model_path()), "model_alias": NAME, "n_ctx": 2048, "n_gpu_layers": int(GPU_LAYERS)},
            {"model": str(bundled_embedder()._llama.model_path), "model_alias": "minilm", "embedding": True,
             "n_ctx": 512, "n_batch": 512, "n_ubatch": 512},
        ],
    }  # fmt: skip
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"gm-server-{port}.json"
    path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--config_file", str(path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    return process, _answering(process, f"http://127.0.0.1:{port}/v1")


@pytest.mark.llm
async def test_recall_by_meaning_through_the_servers_embeddings(tmp_path: Path, worlds_dir: Path):
    from bot.model.embedding import ServerEmbedder
    from bot.settings import ProcessSettings
    from bot.startup import load_embedder
    from tests.embedding import bundled_embedder

    process, url = start_server_with_embeddings()
    try:
        settings = ProcessSettings(_env_file=None, model_url=url, model_name=NAME, embed_model="server:minilm")
        chat = ServerModel(url, NAME, timeout=30)
        embedder, problem = load_embedder(settings, chat)
        assert isinstance(embedder, ServerEmbedder) and problem is None
        assert embedder.dimension == 384 and embedder.name == "server:minilm" and embedder.server is chat
        text = "The lifeboat's oars were sawn halfway through."
        assert float(embedder.embed([text])[0] @ bundled_embedder().embed([text])[0]) > 0.99, "the same model"

        store = await Store.open(tmp_path / "gm.sqlite3")
        async with ModelWorker(chat) as worker:
            engine = Engine(
                store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=24, shape_replies=False),
                embedder=embedder,
            )  # fmt: skip
            game = (await engine.start_game("chan", "lighthouse")).game
            await engine.join(game.id, "maya", "Maya")
            try:
                await engine.act(game.id, "maya", "I check the lifeboat.")
            except ModelFailed:  # the 135M model sometimes says nothing: the embedding is under test here
                pass
            await engine.meaning.idle()
            query = await engine.meaning.query("Did anyone damage the rescue boat?")
            found = await engine.meaning.search(game.id, query, 5)
            assert found and (await engine.memory_status(game.id)).meaning.model == "server:minilm"
            await engine.close()
        await store.close()
    finally:
        stop_server(process)


async def test_a_server_without_embeddings_leaves_recall_on_words(tmp_path: Path):
    from bot.settings import ProcessSettings
    from bot.startup import load_embedder
    from tests.model.stub_server import StubServer

    with StubServer() as stub:
        stub.embeddings_status = 404  # a chat server started without --embedding
        settings = ProcessSettings(_env_file=None, model_url=stub.url, model_name="gm", embed_model="server:nomic")
        embedder, problem = load_embedder(settings, ServerModel(stub.url, "gm", timeout=5))
        assert embedder is None and problem.startswith("the embedding model server:nomic is unavailable")
        stub.embeddings_status = 200
        embedder, problem = load_embedder(settings, ServerModel(stub.url, "gm", timeout=5))
        assert embedder is not None and embedder.dimension == 8 and problem is None
    embedder, problem = load_embedder(ProcessSettings(_env_file=None, embed_model="server:nomic"))
    assert embedder is None and "GM_MODEL_URL" in problem


def test_background_work_waits_for_players_on_a_server_the_bot_started_on_the_cpu():
    from types import SimpleNamespace

    cpu = ServerModel("http://127.0.0.1:1/v1", "m", parallel=5, owner=SimpleNamespace(gpu_layers=0))
    gpu = ServerModel("http://127.0.0.1:1/v1", "m", parallel=5, owner=SimpleNamespace(gpu_layers=99))
    theirs = ServerModel("http://127.0.0.1:1/v1", "m", parallel=5)  # GM_MODEL_URL: its hardware is not known
    assert cpu.background_yields and not gpu.background_yields and not theirs.background_yields


def test_a_prompt_read_in_one_call_and_written_in_the_next_counts_as_one_reading():
    """A new game's prompt read in a call of its own, its reply in the next: the prompt counts once, as read
    (not as taken from the cache by the second call), and the reply's time from the first call's start."""
    from bot.model.base import CallStats
    from bot.model.wire import read_then_written

    reading = CallStats(prompt_tokens=2300, reused_tokens=0, evaluated_tokens=2300, generated_tokens=1,
                        first_token_seconds=12.0, seconds=12.0)  # fmt: skip
    writing = CallStats(prompt_tokens=2300, reused_tokens=2299, evaluated_tokens=1, generated_tokens=150,
                        first_token_seconds=0.2, seconds=3.0)  # fmt: skip
    both = read_then_written(reading, writing, before=12.5)
    assert (both.prompt_tokens, both.reused_tokens, both.evaluated_tokens) == (2300, 0, 2301)
    assert both.generated_tokens == 150
    assert both.first_token_seconds == 12.7 and both.seconds == 15.5
