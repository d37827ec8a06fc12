"""The llama.cpp server the bot started is started again when it dies, and a game's next turn is answered after
the restart; a wrapper script's server goes with the bot. Run against a stand-in for the server's binary
(tests/model/fake_llama_server.py), so these need no build of llama.cpp."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

import pytest

from bot.engine import Engine, EngineConfig
from bot.model import ModelWorker
from bot.model.server import ServerModel
from bot.settings import ProcessSettings
from bot.startup import _started_server, choose_model
from bot.store import EntryKind, Store
from bot.worlds import WorldLibrary
from tests.conftest import FIXTURES
from tests.model.fake_llama_server import REPLY

FAKE = Path(__file__).with_name("fake_llama_server.py")


def _binary(folder: Path, *, wrapper: bool = False) -> Path:
    """The stand-in as ``llama-server``, beside the VERSION file the bot checks; ``wrapper``: a shell script that
    runs it as a child (as an admin's wrapper does), not in its place."""
    import llama_cpp

    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / "llama-server"
    run = f'{sys.executable} {FAKE} "$@"'
    binary.write_text(f"#!/bin/sh\n{run}\n" if wrapper else f"#!/bin/sh\nexec {run}\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    (folder / "VERSION").write_text(llama_cpp.__version__ + "\n")
    return binary


def _started(tmp_path: Path, **changes) -> ServerModel:
    settings = ProcessSettings(
        model="tiny", database=tmp_path / "data" / "gm.sqlite3", n_ctx=2048, server_slots=2,
        llama_server=_binary(tmp_path / "bin", **changes), model_timeout=30,
    )  # fmt: skip
    model = _started_server(settings, choose_model(settings))
    assert isinstance(model, ServerModel), "the stand-in serves"
    return model


def test_a_server_killed_is_started_again_and_the_next_call_waits_for_it(tmp_path: Path, caplog):
    caplog.set_level(logging.INFO)
    model = _started(tmp_path)
    try:
        assert model.generate([], max_tokens=8).text == REPLY
        killed = time.monotonic()
        os.kill(model.owner.process.pid, signal.SIGKILL)
        answer = model.generate([], max_tokens=8)  # waits for the restart instead of failing
        print(f"answered {time.monotonic() - killed:.1f} s after the kill")
        assert answer.text == REPLY and model.owner.restarts == 1
        said = caplog.text
        assert "llama-server stopped (exit status -9)" in said and "llama-server is serving again" in said
        assert "GM_MODEL_URL" not in said, "the admin never set it: the log does not blame it"
    finally:
        model.close()


def test_while_it_is_started_again_memory_status_says_so(tmp_path: Path):
    model = _started(tmp_path)
    try:
        os.kill(model.owner.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        seen = ""
        while time.monotonic() < deadline and not seen:
            seen = model.placement if "started again" in model.placement else ""
            time.sleep(0.05)
        assert "llama.cpp's server stopped (exit status -9); it is being started again" in seen
        assert model.owner.wait_serving(30) and "started again" not in model.placement
    finally:
        model.close()


async def test_a_kill_mid_game_loses_nothing_and_the_next_turn_is_answered_after_the_restart(tmp_path: Path, caplog):
    worlds = tmp_path / "worlds"
    worlds.mkdir()
    shutil.copy(FIXTURES / "worlds" / "lighthouse.yaml", worlds)
    model = _started(tmp_path)
    store = await Store.open(tmp_path / "game.sqlite3")
    try:
        async with ModelWorker(model) as worker:
            engine = Engine(store, worker, WorldLibrary(worlds), EngineConfig(n_ctx=2048, shape_replies=False))
            game = (await engine.start_game("chan", "lighthouse")).game
            await engine.join(game.id, "maya", "Maya")
            first = await engine.act(game.id, "maya", "I climb the tower stair.")
            assert first.text == REPLY.strip()
            os.kill(model.owner.process.pid, signal.SIGKILL)
            killed = time.monotonic()
            after = await engine.act(game.id, "maya", "I light the lamp.")  # it waits for the restart: no /retry
            print(f"the next turn was answered {time.monotonic() - killed:.1f} s after the kill")
            assert after.text == REPLY.strip()
            log = await store.log(game.id)
            actions = [e.content for e in log if e.kind is EntryKind.ACTION]
            assert actions == ["I climb the tower stair.", "I light the lamp."], "nothing lost"
            stopped = [r.getMessage() for r in caplog.records if "llama-server stopped" in r.getMessage()]
            assert stopped and "killed by signal 9" in stopped[0], "why it stopped, not what it wrote before"
            await engine.close()
    finally:
        await store.close()
        model.close()


def test_a_server_dying_but_not_yet_gone_is_not_taken_for_one_that_serves(tmp_path: Path):
    """Killed, a server closes its port before its process is gone: a call refused in between found the process
    running and took the server for serving, and the turn failed with "not answering" instead of waiting for
    the restart (seen with make test's CPUs busy). A process that answers nothing is not a server that serves."""
    import subprocess

    model = _started(tmp_path)
    owner = model.owner
    try:
        owner.stop()
        owner._stopping.clear()
        owner.process = subprocess.Popen(["sleep", "30"])  # running, answering nothing
        assert owner.down is None and owner._up.is_set()
        started = time.monotonic()
        assert not owner.wait_serving(1.0)
        assert time.monotonic() - started >= 1.0, "it waited for the server to answer"
    finally:
        owner.stop()
        model.close()


def test_a_local_process_without_the_key_cannot_have_the_server_save_a_slot(tmp_path: Path):
    """The server the bot started asks a key of every call; the key is in its environment, not its command line,
    which any local user can read."""
    import urllib.error
    import urllib.request

    model = _started(tmp_path)
    try:
        root = model.url.removesuffix("/v1")
        anyone = urllib.request.Request(f"{root}/slots/0?action=save", data=b'{"filename": "x.bin"}', method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(anyone, timeout=10)
        assert refused.value.code == 401
        assert model.owner.api_key not in " ".join(model.owner.command())
        assert model.generate([], max_tokens=8).text == REPLY, "the bot's own calls carry the key"
    finally:
        model.close()


@pytest.mark.skipif(os.name != "posix", reason="process groups")
def test_a_wrapper_scripts_server_stops_with_the_bot(tmp_path: Path):
    model = _started(tmp_path, wrapper=True)
    shell = model.owner.process.pid
    children = [p for p in Path("/proc").glob("[0-9]*") if _parent(p) == shell]
    assert children, "the wrapper runs the server as its child"
    model.close()
    time.sleep(0.5)
    assert not [p for p in children if p.exists() and _state(p) != "Z"], "the wrapper's server went with it"


def _parent(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _state(proc: Path) -> str:
    try:
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def test_a_port_another_program_took_is_refused_not_used(tmp_path: Path):
    """Another HTTP server took the port between its check and the start: its health answer is not taken for the
    server the bot started."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from bot.model.llama import bundled_model_path
    from bot.model.llama_server import LlamaServer, LlamaServerError

    class Other(BaseHTTPRequestHandler):
        def log_message(self, *_args) -> None:
            pass

        def do_GET(self) -> None:
            body = json.dumps({"status": "ok", "data": [{"id": "something-else"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    other = ThreadingHTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    slow = tmp_path / "bin" / "llama-server"
    slow.parent.mkdir(parents=True)
    slow.write_text("#!/bin/sh\nsleep 30\n")  # a server still loading, that would fail to bind the port
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    server = LlamaServer(slow, bundled_model_path(), "smol", slots=1, n_ctx=512, slot_dir=tmp_path / "slots",
                         port=other.server_address[1])  # fmt: skip
    try:
        with pytest.raises(LlamaServerError, match="answers, but not as this llama-server"):
            server.start(timeout=10)
        assert server.process is None, "what it started was stopped"
    finally:
        server.stop()
        other.shutdown()
