"""The connection every part of the store shares: reads, and writes in one transaction.

The store is one class, :class:`bot.store.store.Store`, built of parts kept
in their own files so each stays readable. Each part builds on this base, or
on the part whose tables it uses (the recall index queues vectors, summaries
are indexed for recall, private memories check the memory's version).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from bot.errors import UserError

log = logging.getLogger(__name__)

STORAGE_HINT = "An admin can find the details in the log."


def timestamp() -> str:
    """The time a row is written, as stored."""
    return datetime.now(UTC).isoformat()


def inserted_id(cursor: aiosqlite.Cursor) -> int:
    """The id of the row the INSERT just run on ``cursor`` added (sqlite3 sets it on every INSERT that succeeds)."""
    if cursor.lastrowid is None:
        raise RuntimeError("The INSERT reported no new row id")
    return cursor.lastrowid


class StorageError(UserError):
    """The database could not read or write: the message says so plainly, and whether anything was saved."""


def storage_problem(exc: sqlite3.Error) -> str:
    """What a SQLite error means, in words a player or an admin can act on."""
    text = str(exc).lower()
    if "full" in text:
        return "The disk holding the game's database is full"
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return "The game's database is damaged (restore a backup: python -m bot backup makes them)"
    if "readonly" in text or "read-only" in text:
        return "The game's database cannot be written (the file or its folder is read-only)"
    if "locked" in text or "busy" in text:
        return "The game's database is busy with another program"
    return f"The game's database failed ({exc})"


class StoreBase:
    """One SQLite connection. Writes that touch more than one row go through :meth:`transaction`, which also
    keeps two games' writes from interleaving on the shared connection."""

    def __init__(self, db: aiosqlite.Connection, path: Path):
        self._db = db
        self.path = path
        self._write_lock = asyncio.Lock()
        self.failing_writes = 0  # writes that failed since the last one that was saved (a full disk, a read-only file)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write: all of it or none. A storage failure becomes a :class:`StorageError` saying nothing was saved."""
        async with self._write_lock:
            try:
                await self._begin()
                try:
                    yield self._db
                except BaseException:
                    await self._db.rollback()
                    raise
                await self._db.commit()
                self.failing_writes = 0
            except sqlite3.IntegrityError:
                raise  # a rule of the schema, for the caller to explain
            except sqlite3.Error as exc:
                log.error("Database write failed: %s", exc)
                self.failing_writes += 1
                raise StorageError(f"{storage_problem(exc)}: this was not saved. {STORAGE_HINT}") from exc

    async def _begin(self) -> None:
        """BEGIN, which runs in the connection's thread even when the task awaiting it is cancelled (a background
        job stopped at shutdown): then the transaction it opened is rolled back, or the next one could not
        begin."""
        begin = asyncio.ensure_future(self._db.execute("BEGIN IMMEDIATE"))
        try:
            await asyncio.shield(begin)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await begin
                await self._db.rollback()
            raise

    async def _one(self, sql: str, params: Iterable[Any] = ()) -> aiosqlite.Row | None:
        try:
            async with self._db.execute(sql, tuple(params)) as cursor:
                return await cursor.fetchone()
        except sqlite3.Error as exc:
            raise StorageError(f"{storage_problem(exc)}. {STORAGE_HINT}") from exc

    async def _value(self, sql: str, params: Iterable[Any] = ()) -> Any:
        """The first column of the one row a query always returns (an aggregate such as ``count(*)``, a PRAGMA)."""
        row = await self._one(sql, params)
        if row is None:
            raise StorageError(f"The database returned no row for {sql!r}. {STORAGE_HINT}")
        return row[0]

    async def _row(self, table: str, row_id: int, missing: str) -> aiosqlite.Row:
        """The row of ``table`` with this id, or a :class:`UserError` saying ``missing``."""
        row = await self._one(f"SELECT * FROM {table} WHERE id = ?", (row_id,))
        if row is None:
            raise UserError(missing)
        return row

    async def _insert(self, sql: str, params: Iterable[Any], taken: str) -> int:
        """One INSERT in its own transaction: the new row's id, or a :class:`UserError` saying ``taken`` where a
        rule of the schema (a unique key) refused it."""
        try:
            async with self.transaction() as db:
                cursor = await db.execute(sql, tuple(params))
                return inserted_id(cursor)
        except sqlite3.IntegrityError:
            raise UserError(taken) from None

    async def _all(self, sql: str, params: Iterable[Any] = ()) -> list[aiosqlite.Row]:
        try:
            async with self._db.execute(sql, tuple(params)) as cursor:
                return list(await cursor.fetchall())
        except sqlite3.Error as exc:
            raise StorageError(f"{storage_problem(exc)}. {STORAGE_HINT}") from exc
