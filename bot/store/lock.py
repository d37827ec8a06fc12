"""One process per database: two bots on one file would answer every turn twice, or end each other's games.

The lock is the operating system's ``flock`` on the database file itself,
so it holds whatever path names the file: a symlink to a database in use
finds it locked. It goes with the process however it ends, a crash or
``kill -9`` included: nothing stale is left to clear by hand. ``flock`` and
the byte-range locks SQLite takes on the same file are independent of each
other on Linux, and the descriptor stays open until the database is closed:
closing a descriptor of the file earlier would drop SQLite's own locks in
this process.

A database with a hard link is refused outright, held or not: SQLite keeps
changes not yet checkpointed in ``NAME-wal`` beside the name it was opened
by, so after a process using one name is killed, an open through the other
name never reads them, and they are lost one process after another.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from bot.errors import UserError, shortened

try:
    import fcntl
except ImportError:  # not on Windows; there the lock is not taken
    fcntl = None  # type: ignore[assignment]  # mypy cannot type a module name that may be None


class DatabaseInUse(UserError):
    """Another process holds the database."""


class DatabaseLock:
    """Held while this process uses ``database``: ``with DatabaseLock(path):``."""

    def __init__(self, database: Path):
        self.database = database
        self._fd: int | None = None

    def __enter__(self) -> DatabaseLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def acquire(self) -> None:
        if fcntl is None:
            return
        database = self.database
        check_database_path(database)
        try:
            database.parent.mkdir(parents=True, exist_ok=True)
            # An empty file is an empty SQLite database: creating it here lets the lock come first.
            fd = os.open(database, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UserError(f"Cannot open the database at {_shown(database)}: {exc.strerror or exc}") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            os.close(fd)
            if info.st_nlink > 1:
                raise UserError(_linked(database, info.st_nlink))
            raise UserError(f"The database path {database} is not a regular file; set GM_DATABASE (or --db) to one.")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(os.fstat(fd))
            os.close(fd)
            who = f" (pid {holder})" if holder else ""
            raise DatabaseInUse(
                f"Another bot process{who} is using {database}; stop it first, "
                "or give this one its own database with --db or GM_DATABASE."
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def check_database_path(database: Path) -> None:
    """Refuse in one line a database path that is not a regular file, or a name for one that can be made: said
    before anything (the play log) is written beside it."""
    try:
        info = database.stat()
    except FileNotFoundError:
        info = None  # a new database, made on first use
    except OSError as exc:  # a name too long for the file system, a file where a folder should be
        raise UserError(f"Cannot open the database at {_shown(database)}: {exc.strerror or exc}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise UserError(f"The database path {database} is {kind}; set GM_DATABASE (or --db) to a file's path.")
    if info is not None and info.st_nlink > 1:
        raise UserError(_linked(database, info.st_nlink))
    folder = database.absolute().parent
    while not folder.exists() and folder != folder.parent:  # the folders still to make: the nearest that is
        folder = folder.parent
    if not folder.is_dir():
        raise UserError(f"Cannot open the database at {_shown(database)}: {folder} is not a folder.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(
            f"Cannot open the database at {_shown(database)}: the folder {folder} is not writable "
            "(SQLite writes its journal beside the database)."
        )


def _linked(database: Path, names: int) -> str:
    return (
        f"The database {_shown(database)} has {names} names (hard links); changes made through one can be lost "
        "through another: use one name (copy it with `python -m bot backup`, or remove the other links)."
    )


def _shown(database: Path) -> str:
    return shortened(str(database), 200)


def lock_holder(file: os.stat_result) -> int | None:
    """The process holding a ``flock`` on ``file``, from Linux's ``/proc/locks``; ``None`` if that cannot be told."""
    where = f"{os.major(file.st_dev):02x}:{os.minor(file.st_dev):02x}:{file.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (a waiting lock has "->" after the number)
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        if fields[5] == where and fields[4].isdigit():
            return int(fields[4])
    return None
