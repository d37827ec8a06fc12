"""One process per database (F30), whatever path names the file: the lock is on the database file itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.store.lock import DatabaseInUse, DatabaseLock
from tests.test_cli import TIMEOUT, holding_the_database, one_clear_line, run_bot


def _symlink(database: Path) -> Path:
    database.parent.mkdir(parents=True, exist_ok=True)
    database.touch()
    symlink = database.parent / "via-symlink.sqlite3"
    symlink.symlink_to(database)
    return symlink


def _hard_link(database: Path) -> Path:
    hardlink = database.parent / "via-hardlink.sqlite3"
    os.link(database, hardlink)
    return hardlink


def test_a_symlink_to_a_held_database_finds_it_locked(tmp_path: Path):
    database = tmp_path / "data" / "gm.sqlite3"
    symlink = _symlink(database)
    with DatabaseLock(database):
        for other in (symlink, database):
            with pytest.raises(DatabaseInUse, match=f"pid {os.getpid()}"):
                DatabaseLock(other).acquire()
    with DatabaseLock(symlink):  # and the other way round
        with pytest.raises(DatabaseInUse):
            DatabaseLock(database).acquire()
    with DatabaseLock(symlink):
        pass  # free again once released
    names = sorted(p.name for p in database.parent.iterdir())
    assert names == ["gm.sqlite3", "via-symlink.sqlite3"], "no lock file beside it"


def test_a_database_with_a_hard_link_is_refused_by_either_name_held_or_not(tmp_path: Path):
    """The lock would stop two processes at once, but changes a killed process left in NAME-wal are never read
    through the other name: a database has one name."""
    database = tmp_path / "data" / "gm.sqlite3"
    symlink = _symlink(database)
    hardlink = _hard_link(database)
    for name in (database, hardlink, symlink):
        with pytest.raises(UserError, match="has 2 names .* use one name"):
            DatabaseLock(name).acquire()
    hardlink.unlink()
    with DatabaseLock(database):  # one name again
        hardlink = _hard_link(database)
        with pytest.raises(UserError, match="has 2 names"):
            DatabaseLock(hardlink).acquire()
    assert sorted(p.name for p in database.parent.iterdir()) == [
        "gm.sqlite3",
        "via-hardlink.sqlite3",
        "via-symlink.sqlite3",
    ]


def test_a_path_that_is_not_a_regular_file_is_refused_and_nothing_is_created_beside_it(tmp_path: Path):
    with pytest.raises(UserError, match="not a regular file"):
        DatabaseLock(Path(os.devnull)).acquire()
    assert not Path(f"{os.devnull}.lock").exists()
    with pytest.raises(UserError, match="is a folder"):
        DatabaseLock(tmp_path).acquire()


def test_a_second_bot_through_a_symlink_or_a_hard_link_is_refused(tmp_path: Path, play_env):
    database = Path(play_env["GM_DATABASE"])
    symlink = _symlink(database)
    holder = holding_the_database(tmp_path, play_env)
    try:
        second = run_bot("play", "lighthouse", "--db", str(symlink), stdin="/quit\n", cwd=tmp_path, **play_env)
        line = one_clear_line(second)
        assert line.startswith(f"Another bot process (pid {holder.pid}) is using {symlink}"), line
        hardlink = _hard_link(database)
        second = run_bot("play", "lighthouse", "--db", str(hardlink), stdin="/quit\n", cwd=tmp_path, **play_env)
        assert one_clear_line(second).startswith(f"The database {hardlink} has 2 names (hard links)")
    finally:
        holder.communicate("/quit\n", timeout=TIMEOUT)
    for name in (database, hardlink):
        refused = run_bot("games", "--db", str(name), cwd=tmp_path, **play_env)
        assert one_clear_line(refused).startswith(f"The database {name} has 2 names (hard links)")
    assert not (database.parent / "via-hardlink.sqlite3-wal").exists(), "nothing was written through the link"
    hardlink.unlink()
    after = run_bot("play", "lighthouse", "--db", str(symlink), stdin="/quit\n", cwd=tmp_path, **play_env)
    assert after.returncode == 0, after.stderr
