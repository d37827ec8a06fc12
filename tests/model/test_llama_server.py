"""llama.cpp's own server, started by the bot (GM_SERVER_SLOTS), and two of them behind one GM_MODEL_URL.

These run against a real ``llama-server`` serving the bundled model when one is built (``sh
scripts/build-llama-server .venv``, a few minutes once); without one they are skipped, saying so. What needs no
server (a binary missing, of another version, dying at start) runs always.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from bot import startup
from bot.engine import Engine, EngineConfig
from bot.engine.game import ModelFailed
from bot.model import ModelWorker, llama_server
from bot.model.base import ChatMessage, Interrupted, StopSignal
from bot.model.llama import LlamaModel
from bot.model.llama_server import LlamaServer, LlamaServerError, find_binary
from bot.model.pool import ServerPool
from bot.model.server import ServerModel
from bot.model.slots import file_name
from bot.settings import ProcessSettings
from bot.startup import _started_server, choose_model
from bot.store import EntryKind, Store
from bot.worlds import WorldLibrary
from tests.conftest import GPU_LAYERS, loads_a_model


def _built() -> Path | None:
    try:
        return find_binary(os.environ.get("GM_LLAMA_SERVER"))
    except LlamaServerError:
        return None


# `make test` builds the server before the suite runs; a bare pytest without it skips these, but never under CI,
# where a missing build fails them.
needs_server = pytest.mark.skipif(
    _built() is None and not os.environ.get("CI"),
    reason="needs llama.cpp's server, not built here: `make server` (a few minutes, once per machine) or `make test` "
    "builds it and these run",
)
HELLO = [ChatMessage(role="system", content="You are the narrator of a short story. " * 20),
         ChatMessage(role="user", content="The door opens.")]  # fmt: skip


def _settings(tmp_path: Path, **changes) -> ProcessSettings:
    return ProcessSettings(
        model="tiny", database=tmp_path / "data" / "gm.sqlite3", n_ctx=2048, n_gpu_layers=int(GPU_LAYERS),
        seed=5, **changes,
    )  # fmt: skip


@pytest.fixture
@loads_a_model
def started(tmp_path: Path):
    settings = _settings(tmp_path, server_slots=2)
    model = _started_server(settings, choose_model(settings))
    assert isinstance(model, ServerModel) and model.owner is not None
    yield model
    model.close()


@pytest.fixture
@loads_a_model
def started_short_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """As ``started``, reading prompts in steps of 32 tokens: a fraction of a second each on any machine, so a
    player's reply sends a piece well within every second."""
    monkeypatch.setattr(llama_server, "CPU_BATCH", 32)
    settings = _settings(tmp_path, server_slots=2)
    model = _started_server(settings, choose_model(settings))
    assert isinstance(model, ServerModel) and model.owner is not None
    yield model
    model.close()


def _server(tmp_path: Path, name: str) -> LlamaServer:
    from bot.model.llama import bundled_model_path

    return LlamaServer(
        _built(), bundled_model_path(), alias="smol", slots=1, n_ctx=2048, slot_dir=tmp_path / name,
        gpu_layers=int(GPU_LAYERS), threads=1,  # two servers on the machine's cores
    )  # fmt: skip


@needs_server
@pytest.mark.slow
async def test_the_bot_starts_llama_server_and_each_game_keeps_its_slot(started: ServerModel, store: Store,
                                                                        worlds_dir: Path):  # fmt: skip
    process = started.owner.process
    assert started.parallel == 3 and started.parameters and started.sampling["seed"] == 5
    config = EngineConfig(n_ctx=2048, reply_tokens=24, shape_replies=False)
    async with ModelWorker(started) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
        games = [(await engine.start_game(f"chan{n}", "lighthouse")).game for n in range(2)]
        reuse = {}
        for game in games:
            await engine.join(game.id, "maya", "Maya")
        for action in ("I climb the stair.", "I light the lamp."):
            for game in games:  # the two games take turns: each finds its own prompt in its slot
                result = await engine.act(game.id, "maya", action)
                reuse[game.id, action] = result.model.reuse
        await engine.memory.idle()
        await engine.close()
    assert all(reuse[g.id, "I light the lamp."] > 0.5 for g in games), reuse
    assert worker.structured_calls > 0  # background work went to the spare slot
    started.close()
    assert process.poll() is not None, "the server stops with the bot"


@needs_server
def test_more_games_than_slots_take_turns_through_files_and_a_damaged_one_is_read_cold(
    started: ServerModel, caplog: pytest.LogCaptureFixture
):
    def reply(game: str):
        written = started.stream(HELLO, max_tokens=4, slot=game)
        return "".join(written), written.stats

    for game in ("game:1", "game:2", "game:3"):  # two slots: game 3 takes game 1's, saving it
        reply(game)
    assert started.slots.saves == 1
    _, back = reply("game:1")  # game 1 again: game 2 is saved, game 1 restored from its file
    assert started.slots.restores == 1 and back.reused_tokens > 0
    folder = started.slots.folder.folder
    (folder / file_name("game:2")).write_bytes(b"not a slot file at all")
    caplog.set_level(logging.WARNING)
    text, cold = reply("game:2")  # restoring it fails: one line, the file goes, the prompt is read cold
    assert cold.prompt_tokens > 0
    assert started.slots.failed == 1 and not (folder / file_name("game:2")).exists()
    assert sum("slot" in r.message and "restore" in r.message for r in caplog.records) == 1


@needs_server
def test_a_reply_left_early_still_says_what_it_read_and_reused(started: ServerModel):
    """The reply rules often end a reply early: the stream is closed before the server's usage comes, and its
    figures come from llama.cpp's timings in each piece (reading them as nothing reused counted a cached prompt
    as read cold)."""
    "".join(started.stream(HELLO, max_tokens=4, slot="game:1"))
    written = started.stream(HELLO, max_tokens=64, slot="game:1")
    next(written), next(written)
    written.close()
    assert written.stats.reused_tokens >= started.count_tokens(HELLO[0].content), written.stats
    assert 0 < written.stats.generated_tokens < 64


@needs_server
def test_a_background_call_cut_short_stops_on_the_server_while_a_players_reply_is_written(
    started_short_steps: ServerModel,
):
    """A summary that a player's turn interrupts is cut short by closing its connection. llama.cpp's server
    looked whether a client was still there only after a second in which no call had a piece to send, never while
    a player's reply streamed: the summary's prompt of 3,000 tokens was read to its end beside the turn (20 s on
    two cores). Built as scripts/build-llama-server builds it, the server stops the summary while the player's
    reply is written, before the summary's prompt is read."""
    started = started_short_steps
    root = started.url.removesuffix("/v1")
    endless = {"ignore_eos": True}  # the player's reply goes on to its limit: pieces keep coming meanwhile
    key = started.http.api_key  # the server the bot starts answers its own key alone
    background = ServerModel(started.url, started.model, api_key=key, timeout=120, slots=started.slots)
    player = ServerModel(started.url, started.model, api_key=key, timeout=120, sampling=endless)
    spare = started.slots.slots
    log = [ChatMessage(role="user", content=" ".join(f"Night {n}: the lamp was lit and the tide came in."
                                                     for n in range(120)))]  # fmt: skip

    def spare_slot() -> dict:
        asked = urllib.request.Request(f"{root}/slots", headers={"Authorization": f"Bearer {key}"})
        with urllib.request.urlopen(asked, timeout=10) as response:
            return json.load(response)[spare]

    stop, outcome = StopSignal(), {}

    def summarise() -> None:
        background.stop = stop
        try:
            background.generate(log, max_tokens=200)
            outcome["summary"] = "finished"
        except Interrupted:
            outcome["summary"] = "interrupted"

    thread = threading.Thread(target=summarise)
    thread.start()
    deadline = time.monotonic() + 60
    while not spare_slot()["is_processing"] and time.monotonic() < deadline:
        time.sleep(0.05)
    written = player.stream(HELLO, max_tokens=400)
    stopped_while_writing = False
    try:
        next(written)  # the player's reply has begun
        stop.set()
        looked = time.monotonic()
        for _ in written:
            if time.monotonic() - looked > 0.2:
                looked = time.monotonic()
                if not spare_slot()["is_processing"]:
                    stopped_while_writing = True
                    break
    finally:
        written.close()
        stop.set()
        thread.join(120)
    assert outcome == {"summary": "interrupted"}
    assert stopped_while_writing, "the server stopped the summary before the player's reply ended"
    summary = spare_slot()
    assert summary["next_token"][0]["n_decoded"] == 0, "it stopped before the summary's first token"
    assert summary["n_prompt_tokens"] < started.count_tokens(log[0].content), "while it read the prompt"


@needs_server
def test_a_new_game_starts_from_a_copy_of_a_slot_of_its_world_and_reads_only_what_differs(started: ServerModel):
    """As in process, where a new game starts from another game's state of its world, a new game's slot is copied
    from a slot whose prompt begins as its own: its first call reads only what differs."""
    world = "You are the narrator of a short story set in a lighthouse on a rock in the sea. " * 30

    def first_call(players: str, action: str, game: str):
        written = started.stream([ChatMessage(role="system", content=world + players),
                                  ChatMessage(role="user", content=action)], max_tokens=4, slot=game)  # fmt: skip
        "".join(written)
        return written.stats

    first = first_call("Players: Maya.", "Maya climbs the stair.", "game:1")
    second = first_call("Players: Tom and Ines.", "Tom lights a match.", "game:2")
    assert started.slots.copies == 1
    assert first.reused_tokens < 10, "the first game read its beginning cold"
    assert second.reused_tokens >= started.count_tokens(world) - 5, (first, second)
    assert not list(started.slots.folder.folder.glob("copy-*")), "the copy's file is gone once restored"


@needs_server
@pytest.mark.llm
@pytest.mark.slow
async def test_two_servers_one_killed_mid_game_lose_no_turn(tmp_path: Path, store: Store, worlds_dir: Path):
    servers = [_server(tmp_path, "a"), _server(tmp_path, "b")]
    try:
        for server in servers:
            server.start()
        pool = ServerPool([ServerModel(s.url, "smol", api_key=s.api_key, timeout=120, parallel=2) for s in servers])
        pool.check()
        config = EngineConfig(n_ctx=2048, reply_tokens=200, shape_replies=False)
        async with ModelWorker(pool) as worker:
            engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
            game = (await engine.start_game("chan", "lighthouse")).game
            await engine.join(game.id, "maya", "Maya")
            slot = engine.sessions[game.id].slot
            await engine.act(game.id, "maya", "I climb the stair.")
            home = pool.order(slot)[0]
            doomed = next(s for s in servers if s.url == home.url)

            async def kill_on_first_piece(piece: str) -> None:
                if doomed.process is not None:
                    doomed.process.kill()

            action = "Tell me the whole history of the lighthouse, at length."
            try:  # the home server dies at the reply's first piece: the turn fails, its action is kept
                await engine.act(game.id, "maya", action, on_text=kill_on_first_piece)
                cut = False
            except ModelFailed:
                cut = True
            if cut:
                assert [e.content for e in await engine.unanswered(game.id)] == [action]
                retried = await engine.retry(game.id)  # the other server answers the retry
                assert retried.text.strip()
            after = await engine.act(game.id, "maya", "I light the lamp.")  # and every turn after
            assert after.text.strip()
            assert not doomed.healthy(), "answered by the other server: the game's own is dead"
            await engine.memory.idle()
            await engine.close()
            log = await engine.history(game.id, 20)
        turns = [e.kind for e in log if e.turn and e.kind in (EntryKind.ACTION, EntryKind.GM)]
        assert turns == [EntryKind.ACTION, EntryKind.GM] * 3, "no turn lost"
    finally:
        for server in servers:
            server.stop()


# What needs no server: a binary missing, of another version, or dying at start is one line, and the bot plays
# the in-process model.


def _fake_binary(folder: Path, script: str, version: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / "llama-server"
    binary.write_text("#!/bin/sh\n" + script + "\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    if version is not None:
        (folder / "VERSION").write_text(version + "\n")
    return binary


def _installed() -> str:
    import llama_cpp

    return llama_cpp.__version__


@pytest.mark.parametrize(
    ("script", "version", "said"),
    [
        (None, None, "names .* which is not an executable file"),
        ("exit 0", "0.0.1", "was built from llama-cpp-python 0.0.1, but .* is installed: run `sh scripts/build"),
        ("echo 'error: unknown argument: --cache-reuse' >&2; exit 3", "installed", "stopped at start \\(exit status "
         "3\\): error: unknown argument"),
    ],
)  # fmt: skip
def test_a_server_binary_missing_of_another_version_or_dying_at_start_is_one_line(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    script: str | None,
    version: str | None,
    said: str,
):
    if script is None:
        binary = tmp_path / "nowhere" / "llama-server"
    else:
        binary = _fake_binary(tmp_path / "bin", script, _installed() if version == "installed" else version)
    caplog.set_level(logging.WARNING)
    settings = _settings(tmp_path, server_slots=2, llama_server=binary)
    chosen = []
    monkeypatch.setattr(startup, "choose_model", lambda s: chosen.append(s) or choose_model(s))
    model = startup.load_model(settings)
    assert isinstance(model, LlamaModel), "the in-process model plays"
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and "The model plays in process" in lines[0], lines
    assert re.search(said, lines[0]), lines[0]
    assert len(chosen) == 1, "the model file is chosen once, for the server and then in process"


def test_on_a_cpu_the_server_runs_without_flash_attention_as_the_in_process_model_does(tmp_path: Path):
    def command(gpu_layers: int) -> list[str]:
        server = LlamaServer(Path("llama-server"), tmp_path / "m.gguf", "m", slots=2, n_ctx=2048,
                             slot_dir=tmp_path / "slots", gpu_layers=gpu_layers)  # fmt: skip
        return server.command()

    on_cpu = command(0)
    assert on_cpu[on_cpu.index("--flash-attn") + 1] == "off"
    assert "--flash-attn" not in command(99), "on a GPU the server's own choice stays"
    # And it reads prompts in short steps, so that a call it cancels stops within about a second, and a reply
    # written while another slot reads comes at a token a step.
    assert on_cpu[on_cpu.index("--batch-size") + 1] == on_cpu[on_cpu.index("--ubatch-size") + 1] == "64"
    assert "--batch-size" not in command(99)


def test_the_server_takes_the_physical_cores_the_process_may_run_on_unless_told(tmp_path: Path, monkeypatch):
    """llama-server's own default counts every core of the machine: given fewer CPUs (a container's, a test
    worker's), its threads would share them and wait on each other."""
    from bot.model import llama_server

    def threads(**given) -> tuple[str, str]:
        command = LlamaServer(Path("llama-server"), tmp_path / "m.gguf", "m", slots=1, n_ctx=2048,
                              slot_dir=tmp_path / "slots", **given).command()  # fmt: skip
        return command[command.index("--threads") + 1], command[command.index("--threads-batch") + 1]

    monkeypatch.setattr(llama_server, "physical_cores", lambda: 3)
    assert threads() == ("3", "3")
    assert threads(threads=5) == ("5", "5")
