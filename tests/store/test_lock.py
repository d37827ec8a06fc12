"""One process per database (F30), whatever path names the file: the lock is on the database file itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.store.lock import DatabaseInUse, DatabaseLock
from tests.test_cli import TIMEOUT, holding_the_database, one_clear_line, run_bot


def _other_names(database: Path) -> tuple[Path, Path]:
    database.parent.mkdir(parents=True, exist_ok=True)
    database.touch()
    symlink = database.parent / "via-symlink.sqlite3"
    symlink.symlink_to(database)
    hardlink = database.parent / "via-hardlink.sqlite3"
    os.link(database, hardlink)
    return symlink, hardlink


def test_a_symlink_or_a_hard_link_to_a_held_database_finds_it_locked(tmp_path: Path):
    database = tmp_path / "data" / "gm.sqlite3"
    symlink, hardlink = _other_names(database)
    with DatabaseLock(database):
        for other in (symlink, hardlink, database):
            with pytest.raises(DatabaseInUse, match=f"pid {os.getpid()}"):
                DatabaseLock(other).acquire()
    with DatabaseLock(hardlink):  # and the other way round
        with pytest.raises(DatabaseInUse):
            DatabaseLock(database).acquire()
    with DatabaseLock(symlink):
        pass  # free again once released
    names = sorted(p.name for p in database.parent.iterdir())
    assert names == ["gm.sqlite3", "via-hardlink.sqlite3", "via-symlink.sqlite3"], "no lock file beside it"


def test_a_path_that_is_not_a_regular_file_is_refused_and_nothing_is_created_beside_it(tmp_path: Path):
    with pytest.raises(UserError, match="not a regular file"):
        DatabaseLock(Path(os.devnull)).acquire()
    assert not Path(f"{os.devnull}.lock").exists()
    with pytest.raises(UserError, match="is a folder"):
        DatabaseLock(tmp_path).acquire()


def test_a_second_bot_through_a_symlink_or_a_hard_link_is_refused(tmp_path: Path, play_env):
    database = Path(play_env["GM_DATABASE"])
    symlink, hardlink = _other_names(database)
    holder = holding_the_database(tmp_path, play_env)
    try:
        for other in (symlink, hardlink):
            second = run_bot("play", "lighthouse", "--db", str(other), stdin="/quit\n", cwd=tmp_path, **play_env)
            line = one_clear_line(second)
            assert line.startswith(f"Another bot process (pid {holder.pid}) is using {other}"), line
    finally:
        holder.communicate("/quit\n", timeout=TIMEOUT)
    after = run_bot("play", "lighthouse", "--db", str(hardlink), stdin="/quit\n", cwd=tmp_path, **play_env)
    assert after.returncode == 0, after.stderr
