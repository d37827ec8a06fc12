"""Copies of the database an admin can restore: made while the bot plays, checked before they count, the oldest
dated ones pruned."""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.store import EntryKind, NewEntry, Store
from bot.store.backup import BACKUP_GLOB, back_up_every, backup_database, prune

DATED = re.compile(r"^gm-\d{8}-\d{6}\.sqlite3$")


async def played(path: Path) -> Store:
    """A store left open, as the bot keeps it, with one action in its log."""
    store = await Store.open(path)
    game = await store.create_game("chan", "lighthouse")
    await store.append(game.id, NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", content="I row."))
    return store


def rows(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


async def test_a_copy_made_while_the_bot_plays_holds_what_was_saved_in_one_checked_file(tmp_path: Path):
    store = await played(tmp_path / "gm.sqlite3")
    try:
        assert await store.journal_mode() == "wal"
        copy = backup_database(tmp_path / "gm.sqlite3", tmp_path / "copies" / "monday.sqlite3")
    finally:
        await store.close()
    assert copy == tmp_path / "copies" / "monday.sqlite3"
    assert rows(copy, "SELECT author, content FROM turn_log") == [("Maya", "I row.")]
    assert rows(copy, "PRAGMA journal_mode") == [("delete",)], "a copy is one whole file"
    assert rows(copy, "PRAGMA integrity_check") == [("ok",)]
    assert sorted(p.name for p in copy.parent.iterdir()) == ["monday.sqlite3"], "nothing half-written left beside it"


async def test_a_copy_into_a_folder_is_dated_and_a_name_ending_in_a_slash_is_a_new_folder(tmp_path: Path):
    await (await played(tmp_path / "gm.sqlite3")).close()
    existing = tmp_path / "backups"
    existing.mkdir()
    dated = backup_database(tmp_path / "gm.sqlite3", existing)
    assert dated.parent == existing and DATED.match(dated.name), dated
    fresh = backup_database(tmp_path / "gm.sqlite3", f"{tmp_path / 'new' / 'folder'}/")
    assert fresh.parent == tmp_path / "new" / "folder" and DATED.match(fresh.name), fresh
    assert list(fresh.parent.glob(BACKUP_GLOB)) == [fresh], "the dated name is one prune finds"


def test_a_copy_never_overwrites_a_file(tmp_path: Path):
    source = tmp_path / "gm.sqlite3"
    with sqlite3.connect(source) as db:
        db.execute("CREATE TABLE t (x)")
    taken = tmp_path / "copy.sqlite3"
    taken.write_text("yesterday's copy")
    with pytest.raises(UserError, match=r"copy\.sqlite3 exists already; give a new file's name or a folder\.$"):
        backup_database(source, taken)
    assert taken.read_text() == "yesterday's copy"


def test_there_must_be_a_database_to_copy(tmp_path: Path):
    with pytest.raises(UserError, match=r"^There is no database at .*missing\.sqlite3 to back up\.$"):
        backup_database(tmp_path / "missing.sqlite3", tmp_path / "copy.sqlite3")
    assert not (tmp_path / "copy.sqlite3").exists()


def test_a_file_that_is_no_database_is_refused_in_one_line_and_leaves_nothing_behind(tmp_path: Path):
    source = tmp_path / "gm.sqlite3"
    source.write_bytes(b"this is not a database at all, just text " * 200)
    with pytest.raises(UserError, match=r"^Could not back up .*gm\.sqlite3 to .*copy\.sqlite3: "):
        backup_database(source, tmp_path / "out" / "copy.sqlite3")
    assert list((tmp_path / "out").iterdir()) == [], "no copy and no partial file"


def test_pruning_keeps_the_newest_dated_copies_and_nothing_else_is_touched(tmp_path: Path):
    names = [f"gm-2026010{n}-120000.sqlite3" for n in range(1, 6)]
    for name in names:
        (tmp_path / name).write_text(name)
    (tmp_path / "notes.txt").write_text("keep me")
    (tmp_path / "monday.sqlite3").write_text("a copy an admin named")
    gone = prune(tmp_path, keep=2)
    assert [p.name for p in gone] == names[:3], "the oldest go first"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*names[3:], "monday.sqlite3", "notes.txt"])
    assert prune(tmp_path, keep=2) == [] and prune(tmp_path, keep=10) == []


async def test_periodic_backups_run_while_the_bot_does(tmp_path: Path):
    store = await Store.open(tmp_path / "gm.sqlite3")
    await store.close()
    task = asyncio.create_task(back_up_every(tmp_path / "gm.sqlite3", hours=0.0002, keep=2))
    for _ in range(400):
        if len(list((tmp_path / "backups").glob("gm-*.sqlite3"))) >= 1:
            break
        await asyncio.sleep(0.05)
    task.cancel()
    assert list((tmp_path / "backups").glob("gm-*.sqlite3"))
    assert backup_database(tmp_path / "gm.sqlite3", tmp_path / "one.sqlite3").exists()


async def test_a_periodic_backup_that_fails_is_logged_and_the_next_is_still_tried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.ERROR, logger="bot.store.backup")
    task = asyncio.create_task(back_up_every(tmp_path / "gm.sqlite3", hours=0.0002, keep=2))
    try:
        for _ in range(400):
            if len([r for r in caplog.records if "Periodic backup failed" in r.getMessage()]) >= 2:
                break
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
    failures = [r.getMessage() for r in caplog.records if "Periodic backup failed" in r.getMessage()]
    assert len(failures) >= 2, "the loop went on after the first failure"
    assert failures[0].startswith("Periodic backup failed: There is no database at ")
    with pytest.raises(asyncio.CancelledError):
        await task  # it was still running: only cancelling stops it
