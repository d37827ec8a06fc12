"""Copies of the database that a server admin can restore: on demand, and every few hours while the bot runs.

SQLite's online backup API copies a consistent snapshot while the bot keeps
writing, so no one has to stop playing. Each copy is checked before it counts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path

from bot.errors import UserError

log = logging.getLogger(__name__)

BACKUP_GLOB = "gm-*.sqlite3"


def backup_database(source: Path, target: Path | str) -> Path:
    """Copy the database at ``source`` to ``target`` (a new file, or a folder to put a dated copy in: one that
    exists, or a name ending in ``/``)."""
    if not source.is_file():
        raise UserError(f"There is no database at {source} to back up.")
    folder = str(target).endswith(("/", os.sep))
    target = Path(target)
    if folder or target.is_dir():
        target = target / datetime.now().strftime("gm-%Y%m%d-%H%M%S.sqlite3")
    if target.exists():
        raise UserError(f"{target} exists already; give a new file's name or a folder.")
    partial = target.with_name(f".{target.name}.part")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(target.parent, os.W_OK):  # a read-only disk says so even to root
            raise UserError(f"Could not back up {source} to {target}: {target.parent} is not writable.")
        with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(partial)) as dst:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")  # the copy is one file, whatever mode the database is in
            check = dst.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise UserError(f"The copy at {target} failed its check ({check}); the database itself may be damaged.")
        partial.replace(target)
    except (OSError, sqlite3.Error) as exc:
        raise UserError(f"Could not back up {source} to {target}: {exc}") from None
    finally:
        _remove(partial, Path(f"{partial}-wal"), Path(f"{partial}-shm"), Path(f"{partial}-journal"))
    return target


def _remove(*paths: Path) -> None:
    """Delete what a copy left behind, where it can be (on a read-only disk, even a missing file cannot)."""
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass


def prune(folder: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` dated copies in ``folder``; return what went."""
    copies = sorted(folder.glob(BACKUP_GLOB))
    gone = copies[: max(0, len(copies) - keep)]
    for path in gone:
        path.unlink(missing_ok=True)
    return gone


async def back_up_every(database: Path, hours: float, keep: int) -> None:
    """Until cancelled: a dated copy in ``backups/`` beside the database every ``hours``, the newest ``keep`` kept."""
    folder = database.parent / "backups"
    while True:
        await asyncio.sleep(hours * 3600)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            copy = await asyncio.to_thread(backup_database, database, folder)
            await asyncio.to_thread(prune, folder, keep)
            log.info("Backed up the database to %s", copy)
        except (UserError, OSError) as exc:
            log.error("Periodic backup failed: %s", exc)
