"""One process per database: two bots on one file would answer every turn twice, or end each other's games.

The lock is the operating system's (``flock`` on a file beside the
database), so it goes with the process however it ends, a crash or
``kill -9`` included: nothing stale is left to clear by hand.
"""

from __future__ import annotations

import os
from pathlib import Path

from bot.errors import UserError

try:
    import fcntl
except ImportError:  # not on Windows; there the lock is not taken
    fcntl = None


class DatabaseInUse(UserError):
    """Another process holds the database."""


class DatabaseLock:
    """Held while this process uses ``database``: ``with DatabaseLock(path):``."""

    def __init__(self, database: Path):
        self.path = database.with_name(database.name + ".lock")
        self._fd: int | None = None

    def __enter__(self) -> DatabaseLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def acquire(self) -> None:
        if fcntl is None:
            return
        database = self.path.with_suffix("")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UserError(f"Cannot open the database at {database}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise DatabaseInUse(
                f"Another bot process (pid {holder}) is using {database}; stop it first, "
                "or give this one its own database with --db or GM_DATABASE."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
