"""Storage under faults (F30): a full disk, a damaged file, backups, and kill -9 in the middle of play."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.engine import Engine, EngineConfig
from bot.errors import UserError
from bot.model import ModelWorker
from bot.store import StorageError, Store
from bot.store.backup import prune
from bot.worlds import WorldLibrary
from tests.conftest import bot_environment
from tests.engine.upkeep.test_memory import start
from tests.test_cli import TIMEOUT, run_bot


async def test_a_full_disk_is_named_and_nothing_half_written(store: Store, worker: ModelWorker, worlds_dir):
    engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=64))
    game = await start(engine)
    await engine.act(game.id, "maya", "I climb.")
    await engine.memory.idle()
    before = [e.id for e in await store.log(game.id)]
    pages = (await store._one("PRAGMA page_count"))[0]
    await store._db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full: no page more
    with pytest.raises(StorageError) as refused:
        for n in range(40):  # one of these needs a page the file cannot grow
            await engine.act(game.id, "maya", f"I write a long line in the log, {n}: " + "word " * 300)
    assert str(refused.value).startswith("The disk holding the game's database is full: this was not saved.")
    await engine.memory.close()
    log = [e.id for e in await store.log(game.id)]
    assert log[: len(before)] == before, "what was saved before stays"
    await store._db.execute("PRAGMA max_page_count = 1073741823")  # space again: play goes on
    result = await engine.act(game.id, "maya", "I look down.")
    assert result.reply.content
    await engine.close()


async def test_a_full_disk_at_first_start_is_one_clear_line(tmp_path: Path, monkeypatch):
    async def full(db):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("bot.store.store.migrate", full)
    with pytest.raises(UserError) as refused:
        await Store.open(tmp_path / "gm.sqlite3")
    assert str(refused.value) == (
        f"Cannot use the database at {tmp_path / 'gm.sqlite3'}: The disk holding the game's database is full"
    )


def _damage(path: Path) -> None:
    with sqlite3.connect(path) as db:
        page = db.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(path.read_bytes())
    assert len(data) > 3 * page
    data[2 * page : 3 * page] = bytes(random.Random(1).randrange(256) for _ in range(page))  # a table's page
    path.write_bytes(bytes(data))


@pytest.mark.llm
def test_a_damaged_database_is_refused_with_how_to_recover(tmp_path: Path):
    env = _environment(tmp_path)
    first = run_bot("play", "lighthouse", stdin="Maya: I row.\n/quit\n", cwd=tmp_path, **env)
    assert first.returncode == 0, first.stderr
    database = Path(env["GM_DATABASE"])
    _damage(database)
    second = run_bot("play", "lighthouse", stdin="/quit\n", cwd=tmp_path, **env)
    line = second.stderr.strip().splitlines()[-1]
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert line.startswith(f"The database at {database} is damaged (")
    assert "Restore a backup" in line and ".recover" in line


@pytest.mark.llm
def test_a_backup_is_a_checked_copy_and_old_ones_are_pruned(tmp_path: Path):
    env = _environment(tmp_path)
    assert run_bot("play", "lighthouse", stdin="Maya: I row.\n/quit\n", cwd=tmp_path, **env).returncode == 0
    folder = tmp_path / "copies"
    folder.mkdir()
    made = run_bot("backup", str(folder), cwd=tmp_path, **env)
    assert made.returncode == 0, made.stderr
    [copy] = folder.glob("gm-*.sqlite3")
    with sqlite3.connect(copy) as db:
        assert db.execute("SELECT count(*) FROM turn_log WHERE content = 'I row.'").fetchone()[0] == 1
    again = run_bot("backup", str(copy), cwd=tmp_path, **env)
    assert again.returncode == 1 and again.stderr.strip().endswith(
        "exists already; give a new file's name or a folder."
    )
    for n in range(5):
        (folder / f"gm-2026010{n}-000000.sqlite3").write_bytes(copy.read_bytes())
    gone = prune(folder, keep=2)
    assert len(gone) == 4 and len(list(folder.glob("gm-*.sqlite3"))) == 2
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in folder.glob("gm-*.sqlite3")), (
        "no .part, .part-wal or .part-shm left behind"
    )
    with sqlite3.connect(copy) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete", "a copy is one whole file"
    made = run_bot("backup", str(tmp_path / "new-folder") + "/", cwd=tmp_path, **env)
    assert made.returncode == 0 and len(list((tmp_path / "new-folder").glob("gm-*.sqlite3"))) == 1, "a/ is a folder"


@pytest.mark.llm
def test_a_backup_onto_a_read_only_disk_is_one_clear_line(tmp_path: Path):
    env = _environment(tmp_path)
    assert run_bot("play", "lighthouse", stdin="/quit\n", cwd=tmp_path, **env).returncode == 0
    read_only = tmp_path / "ro"
    read_only.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(read_only)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"this machine lets no test mount a read-only disk: {mounted.stderr.decode().strip()}")
    try:
        refused = run_bot("backup", str(read_only / "copy.sqlite3"), cwd=tmp_path, **env)
    finally:
        subprocess.run(["umount", str(read_only)], check=True)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().startswith("Could not back up ") and "is not writable" in refused.stderr


def _environment(tmp_path: Path) -> dict[str, str]:
    from tests.conftest import FIXTURES

    worlds = tmp_path / "worlds"
    worlds.mkdir(exist_ok=True)
    (worlds / "lighthouse.yaml").write_text((FIXTURES / "worlds" / "lighthouse.yaml").read_text())
    return {
        "GM_WORLDS_DIR": str(worlds), "GM_DATABASE": str(tmp_path / "data" / "gm.sqlite3"), "GM_N_CTX": "2048",
        "GM_REPLY_TOKENS": "16", "GM_SEED": "5",
    }  # fmt: skip


def _recap_gm_lines(database: str) -> int:
    """How many "GM: " lines a resumed game's recap prints: the GM entries among its last entries (the opening
    for a new game). Counting only what comes after them tells the replies of this run."""
    from bot.terminal import RECAP_ENTRIES

    with sqlite3.connect(database) as db:
        rows = db.execute(
            "SELECT kind, visibility FROM turn_log WHERE deleted = 0 ORDER BY id DESC LIMIT ?", (RECAP_ENTRIES,)
        ).fetchall()
    return sum(1 for kind, visibility in rows if kind == "gm" and visibility == "public")


@pytest.mark.llm
def test_kill_9_at_random_points_loses_no_acknowledged_action(tmp_path: Path):
    """Five kills of `play` mid-game with the real model; after each, every action the GM answered is stored."""

    env = {**bot_environment(), **_environment(tmp_path)}
    rng = random.Random(9)
    answered: list[str] = []
    for round_ in range(5):
        recap = _recap_gm_lines(env["GM_DATABASE"]) if round_ else 1  # GM lines printed before any new turn
        process = subprocess.Popen(
            [sys.executable, "-m", "bot", "play", "lighthouse"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env, bufsize=1,
        )  # fmt: skip
        sent = []
        for n in range(3):
            action = f"ROUND{round_}ACTION{n} I search the rock."
            process.stdin.write(f"Maya: {action}\n")
            process.stdin.flush()
            sent.append(action)
        time.sleep(rng.uniform(0.5, 6.0))  # somewhere in loading, reading, writing or storing
        process.send_signal(signal.SIGKILL)
        out, _ = process.communicate(timeout=TIMEOUT)
        # An action is acknowledged once the GM's answer to it started: it was stored before the model ran.
        replies = out.count("GM: ") - (recap if "== The Lighthouse" in out else 0)
        answered += sent[: max(0, replies)]
        with sqlite3.connect(env["GM_DATABASE"]) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", f"round {round_}"
            stored = {row[0] for row in db.execute("SELECT content FROM turn_log WHERE kind = 'action'")}
        missing = [a for a in answered if a not in stored]
        assert not missing, f"round {round_}: acknowledged actions lost: {missing}"
    resumed = run_bot("play", "lighthouse", stdin="/quit\n", cwd=tmp_path, **_environment(tmp_path))
    assert resumed.returncode == 0 and "resuming game 1" in resumed.stdout, resumed.stderr


@pytest.mark.llm
def test_a_full_disk_during_play_is_said_once_and_the_session_does_not_claim_it_saved(tmp_path: Path):
    """The disk fills during play (no file of the process may grow past 36 kB: the database's shared memory
    fits, its write-ahead log soon does not): the log file beside the database says once that it stopped, and
    the session ends saying what was not saved."""
    env = _environment(tmp_path)
    assert run_bot("play", "lighthouse", stdin="/join Maya\nMaya: I row.\n/quit\n", cwd=tmp_path, **env).returncode == 0
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"  # a write past the limit fails instead of killing
        "resource.setrlimit(resource.RLIMIT_FSIZE, (36864, 36864))\n"
        "sys.argv = ['bot', 'play', 'lighthouse']\n"
        "import runpy; runpy.run_module('bot', run_name='__main__')\n"
    )
    log = tmp_path / "data" / "play.log"
    log.write_text(log.read_text() + "an older session's line\n" * 2000)  # past the limit: its next line fails
    environment = bot_environment() | env
    full = subprocess.run(
        [sys.executable, "-c", script], input="".join(f"Maya: I climb stair {n}.\n" for n in range(6)) + "/quit\n",
        capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=300,
    )  # fmt: skip
    out = full.stdout + full.stderr
    assert "Traceback" not in out and "Logging error" not in out, out
    assert "Game saved" not in out and "Not all of it was saved" in out, out
    assert full.stderr.count("play.log") <= 1, full.stderr
