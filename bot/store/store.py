"""All SQL, in one place: one SQLite file in WAL mode, one connection."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from bot.errors import UserError
from bot.store.ledger import LedgerStore
from bot.store.migrations import migrate
from bot.store.models import (
    FrontSnapshot,
    Game,
    JobFailure,
    LogEntry,
    MemoryState,
    NewEntry,
    NewSummary,
    Player,
    Summary,
    SummaryKind,
    TurnNote,
    Visibility,
)
from bot.store.private import PrivateStore, entry_from_row
from bot.store.vectors import VectorStore

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(UTC).isoformat()


STORAGE_HINT = "An admin can find the details in the log."


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


def check_database(path: Path) -> None:
    """Refuse a database path that is not a usable file, or a file that fails SQLite's quick integrity check."""
    if path.exists() and not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file"
        raise UserError(f"The database path {path} is {kind}; set GM_DATABASE (or --db) to a file's path.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"Cannot open the database at {path}: {exc.strerror or exc}") from None
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        con = sqlite3.connect(path)
        try:
            problems = [row[0] for row in con.execute("PRAGMA quick_check").fetchall()]
        finally:
            con.close()
    except sqlite3.Error as exc:
        problems = [str(exc)]
    if problems != ["ok"]:
        detail = "; ".join(" ".join(str(problem).split()) for problem in problems[:3])
        raise UserError(
            f"The database at {path} is damaged ({detail}); nothing was changed. Restore a backup "
            f"(`python -m bot backup` makes them, GM_BACKUP_HOURS keeps them), or rescue what SQLite can with "
            f"`sqlite3 {path} .recover | sqlite3 recovered.sqlite3` and point GM_DATABASE at the result."
        )


class Store(LedgerStore, PrivateStore, VectorStore):
    """The game database. Open with ``async with await Store.open(path)``.

    Writes that touch more than one row go through :meth:`transaction`,
    which also keeps two games' writes from interleaving on the shared
    connection.
    """

    def __init__(self, db: aiosqlite.Connection, path: Path):
        self._db = db
        self.path = path
        self._write_lock = asyncio.Lock()
        self.failing_writes = 0  # writes that failed since the last one that was saved (a full disk, a read-only file)

    @classmethod
    async def open(cls, path: Path) -> Store:
        """Open (or create) the database, after checking the file is one and is sound."""
        await asyncio.to_thread(check_database, path)
        try:
            db = await aiosqlite.connect(path, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise UserError(f"Cannot open the database at {path}: {exc}") from None
        try:
            db.row_factory = aiosqlite.Row
            await db.execute("PRAGMA journal_mode=WAL")
            await db.execute("PRAGMA foreign_keys=ON")
            await db.execute("PRAGMA busy_timeout=5000")
            await migrate(db)
        except sqlite3.Error as exc:
            await db.close()
            raise UserError(f"Cannot use the database at {path}: {storage_problem(exc)}") from None
        except UserError as exc:
            await db.close()
            raise UserError(f"{path}: {exc}") from None
        return cls(db, path)

    async def close(self) -> None:
        await self._db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

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

    async def _all(self, sql: str, params: Iterable[Any] = ()) -> list[aiosqlite.Row]:
        try:
            async with self._db.execute(sql, tuple(params)) as cursor:
                return list(await cursor.fetchall())
        except sqlite3.Error as exc:
            raise StorageError(f"{storage_problem(exc)}. {STORAGE_HINT}") from exc

    async def journal_mode(self) -> str:
        row = await self._one("PRAGMA journal_mode")
        return row[0]

    async def applied_migrations(self) -> list[str]:
        return [row["name"] for row in await self._all("SELECT name FROM migrations ORDER BY rowid")]

    # Games

    async def create_game(self, channel_key: str, world_id: str, started_by: str | None = None) -> Game:
        now = _now()
        try:
            async with self.transaction() as db:
                cursor = await db.execute(
                    "INSERT INTO games (channel_key, world_id, created_at, updated_at, started_by) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (channel_key, world_id, now, now, started_by),
                )
                game_id = cursor.lastrowid
        except sqlite3.IntegrityError:
            raise UserError("A game is already running here; end it first.") from None
        return await self.game(game_id)

    async def game(self, game_id: int) -> Game:
        row = await self._one("SELECT * FROM games WHERE id = ?", (game_id,))
        if row is None:
            raise UserError(f"There is no game {game_id}.")
        return Game.model_validate(dict(row))

    async def active_game(self, channel_key: str) -> Game | None:
        row = await self._one("SELECT * FROM games WHERE channel_key = ? AND status = 'active'", (channel_key,))
        return Game.model_validate(dict(row)) if row else None

    async def last_game(self, channel_key: str, world_id: str | None = None) -> Game | None:
        """The channel's most recently played game (of that world, if given)."""
        sql = "SELECT * FROM games WHERE channel_key = ?"
        params: list[Any] = [channel_key]
        if world_id is not None:
            sql += " AND world_id = ?"
            params.append(world_id)
        row = await self._one(sql + " ORDER BY updated_at DESC, id DESC LIMIT 1", params)
        return Game.model_validate(dict(row)) if row else None

    async def reactivate_game(self, game_id: int) -> Game:
        """Make an ended game the channel's active one again."""
        async with self.transaction() as db:
            game = await self.game(game_id)
            await db.execute(
                "UPDATE games SET status = 'ended', ended_at = ? WHERE channel_key = ? AND status = 'active'",
                (_now(), game.channel_key),
            )
            await db.execute(
                "UPDATE games SET status = 'active', ended_at = NULL, updated_at = ? WHERE id = ?", (_now(), game_id)
            )
        return await self.game(game_id)

    async def end_game(self, game_id: int) -> Game:
        async with self.transaction() as db:
            now = _now()
            await db.execute(
                "UPDATE games SET status = 'ended', ended_at = ?, updated_at = ? WHERE id = ?", (now, now, game_id)
            )
        return await self.game(game_id)

    async def games(self, status: str | None = None) -> list[Game]:
        sql = "SELECT * FROM games" + (" WHERE status = ?" if status else "") + " ORDER BY id"
        return [Game.model_validate(dict(r)) for r in await self._all(sql, (status,) if status else ())]

    # Players

    async def add_player(self, game_id: int, user_key: str, name: str, description: str = "") -> Player:
        try:
            async with self.transaction() as db:
                cursor = await db.execute(
                    "INSERT INTO players (game_id, user_key, name, description, joined_at) VALUES (?, ?, ?, ?, ?)",
                    (game_id, user_key, name, description, _now()),
                )
                player_id = cursor.lastrowid
        except sqlite3.IntegrityError:
            raise UserError("You have already joined this game.") from None
        return await self.player(player_id)

    async def player(self, player_id: int) -> Player:
        row = await self._one("SELECT * FROM players WHERE id = ?", (player_id,))
        if row is None:
            raise UserError(f"There is no player {player_id}.")
        return Player.model_validate(dict(row))

    async def seated_player(self, game_id: int, user_key: str) -> Player | None:
        row = await self._one(
            "SELECT * FROM players WHERE game_id = ? AND user_key = ? AND left_at IS NULL", (game_id, user_key)
        )
        return Player.model_validate(dict(row)) if row else None

    async def players(self, game_id: int, *, include_left: bool = False) -> list[Player]:
        """The players seated in a game now (or ever, with ``include_left``), in the order they joined."""
        seated = "" if include_left else " AND left_at IS NULL"
        rows = await self._all(f"SELECT * FROM players WHERE game_id = ?{seated} ORDER BY id", (game_id,))
        return [Player.model_validate(dict(r)) for r in rows]

    async def games_of(self, user_key: str) -> list[Game]:
        """The active games a user is seated in, oldest first."""
        rows = await self._all(
            "SELECT g.* FROM games g JOIN players p ON p.game_id = g.id"
            " WHERE p.user_key = ? AND p.left_at IS NULL AND g.status = 'active' ORDER BY g.id",
            (user_key,),
        )
        return [Game.model_validate(dict(r)) for r in rows]

    async def remove_player(self, player_id: int) -> None:
        async with self.transaction() as db:
            await db.execute("UPDATE players SET left_at = ? WHERE id = ?", (_now(), player_id))

    # The turn log

    async def append(self, game_id: int, *entries: NewEntry, turn_done: int | None = None) -> list[LogEntry]:
        """Add entries to a game's log in one transaction; ``turn_done`` also advances the game's turn."""
        ids = []
        now = _now()
        async with self.transaction() as db:
            # A public entry's witnesses are the players seated at that moment; a private one names its own.
            async with db.execute(
                "SELECT id FROM players WHERE game_id = ? AND left_at IS NULL ORDER BY id", (game_id,)
            ) as cursor:
                seated = tuple(row[0] for row in await cursor.fetchall())
            for entry in entries:
                public = entry.visibility is Visibility.PUBLIC
                witnesses = seated if public else entry.visible_to
                cursor = await db.execute(
                    "INSERT INTO turn_log (game_id, turn, kind, author, player_id, visibility, visible_to,"
                    " content, created_at, message_id, npcs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        game_id,
                        entry.turn,
                        entry.kind.value,
                        entry.author,
                        entry.player_id,
                        entry.visibility.value,
                        json.dumps(list(witnesses)),
                        entry.content,
                        now,
                        entry.message_id,
                        json.dumps(list(entry.npcs) if public else []),
                    ),
                )
                ids.append(cursor.lastrowid)
                if public and entry.npcs:
                    await db.executemany(
                        "INSERT OR IGNORE INTO npc_witness (game_id, npc_id, entry_id, turn) VALUES (?, ?, ?, ?)",
                        [(game_id, npc, cursor.lastrowid, entry.turn) for npc in entry.npcs],
                    )
                if public:  # recall by words feeds prompts and reports; private messages stay out of it
                    await self.index(db, game_id, f"entry:{cursor.lastrowid}", _line(entry), entry.turn)
                else:  # by meaning, only for a turn whose answer goes to one who witnessed it (bot.engine.meaning)
                    await self.queue_vector(db, game_id, f"entry:{cursor.lastrowid}", _line(entry), entry.turn,
                                            witnesses)  # fmt: skip
            if turn_done is not None:
                await db.execute("UPDATE games SET turn = ?, updated_at = ? WHERE id = ?", (turn_done, now, game_id))
            else:
                await db.execute("UPDATE games SET updated_at = ? WHERE id = ?", (now, game_id))
        return [await self.entry(entry_id) for entry_id in ids]

    async def entry(self, entry_id: int) -> LogEntry:
        row = await self._one("SELECT * FROM turn_log WHERE id = ?", (entry_id,))
        if row is None:
            raise UserError(f"There is no log entry {entry_id}.")
        return entry_from_row(row)

    async def recent_log(self, game_id: int, limit: int) -> list[LogEntry]:
        """The last ``limit`` live entries of a game, oldest first."""
        rows = await self._all(
            "SELECT * FROM turn_log WHERE game_id = ? AND deleted = 0 ORDER BY id DESC LIMIT ?", (game_id, limit)
        )
        return [entry_from_row(r) for r in reversed(rows)]

    async def log(self, game_id: int, *, include_deleted: bool = False) -> list[LogEntry]:
        sql = "SELECT * FROM turn_log WHERE game_id = ?" + ("" if include_deleted else " AND deleted = 0")
        return [entry_from_row(r) for r in await self._all(sql + " ORDER BY id", (game_id,))]

    async def set_message_id(self, entry_id: int, message_id: str) -> None:
        async with self.transaction() as db:
            await db.execute("UPDATE turn_log SET message_id = ? WHERE id = ?", (message_id, entry_id))

    async def edit_entry(self, entry_id: int, content: str) -> LogEntry:
        """Change a logged message; summaries covering it become stale."""
        async with self.transaction() as db:
            entry = await self.entry(entry_id)
            await db.execute("UPDATE turn_log SET content = ?, edited_at = ? WHERE id = ?", (content, _now(), entry_id))
            if entry.visibility is Visibility.PUBLIC:
                await self.unindex(db, f"entry:{entry_id}")
                await self.index(db, entry.game_id, f"entry:{entry_id}", _line(entry, content), entry.turn)
            else:
                await self.forget_vector(db, f"entry:{entry_id}")
                await self.queue_vector(
                    db, entry.game_id, f"entry:{entry_id}", _line(entry, content), entry.turn, entry.visible_to
                )
            await self._mark_stale(db, entry.game_id, entry_id)
        return await self.entry(entry_id)

    async def delete_entry(self, entry_id: int) -> LogEntry:
        """Hide a logged message (kept for the record); summaries covering it become stale."""
        async with self.transaction() as db:
            entry = await self.entry(entry_id)
            await db.execute("UPDATE turn_log SET deleted = 1, edited_at = ? WHERE id = ?", (_now(), entry_id))
            await self.unindex(db, f"entry:{entry_id}")
            await self._mark_stale(db, entry.game_id, entry_id)
        return await self.entry(entry_id)

    async def entry_by_message(self, message_id: str) -> LogEntry | None:
        row = await self._one("SELECT * FROM turn_log WHERE message_id = ? ORDER BY id DESC LIMIT 1", (message_id,))
        return entry_from_row(row) if row else None

    async def log_between(self, game_id: int, after_id: int, through_id: int | None = None) -> list[LogEntry]:
        """Live entries with ``after_id < id <= through_id``, oldest first."""
        sql = "SELECT * FROM turn_log WHERE game_id = ? AND deleted = 0 AND id > ?"
        params: list[Any] = [game_id, after_id]
        if through_id is not None:
            sql += " AND id <= ?"
            params.append(through_id)
        return [entry_from_row(r) for r in await self._all(sql + " ORDER BY id", params)]

    async def count_entries(self, game_id: int, through_id: int | None = None) -> int:
        sql = "SELECT count(*) FROM turn_log WHERE game_id = ? AND deleted = 0"
        params: list[Any] = [game_id]
        if through_id is not None:
            sql += " AND id <= ?"
            params.append(through_id)
        return (await self._one(sql, params))[0]

    async def entry_before(self, game_id: int, entry_id: int) -> LogEntry | None:
        row = await self._one(
            "SELECT * FROM turn_log WHERE game_id = ? AND deleted = 0 AND id < ? ORDER BY id DESC LIMIT 1",
            (game_id, entry_id),
        )
        return entry_from_row(row) if row else None

    # Memory: summaries and where the game's memory stands

    async def memory_state(self, game_id: int) -> MemoryState:
        row = await self._one("SELECT * FROM memory_state WHERE game_id = ?", (game_id,))
        if row is None:
            return MemoryState(game_id=game_id)
        data = dict(row)
        data["beats_done"] = tuple(json.loads(data["beats_done"]))
        data["front"] = json.loads(data["front"] or "{}")
        return MemoryState.model_validate(data)

    async def save_memory_state(self, db: aiosqlite.Connection, state: MemoryState) -> None:
        """Write ``state`` inside a transaction the caller holds."""
        data = state.model_dump(mode="json")
        data["beats_done"] = json.dumps(list(state.beats_done))
        data["front"] = json.dumps(data["front"])
        columns = list(data)
        await db.execute(
            f"INSERT OR REPLACE INTO memory_state ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
            [data[c] for c in columns],
        )

    # Turn notes (F16): what each turn's prompt added beside its action

    async def save_turn_notes(self, game_id: int, entry_id: int, notes: Iterable[TurnNote]) -> None:
        payload = json.dumps([[n.layer, n.ref, n.text] for n in notes])
        async with self.transaction() as db:
            await db.execute(
                "INSERT OR REPLACE INTO turn_notes (entry_id, game_id, notes, created_at) VALUES (?, ?, ?, ?)",
                (entry_id, game_id, payload, _now()),
            )

    async def turn_notes(self, game_id: int, after_id: int) -> dict[int, list[TurnNote]]:
        """The notes of the game's entries after ``after_id``, by entry id."""
        rows = await self._all(
            "SELECT entry_id, notes FROM turn_notes WHERE game_id = ? AND entry_id > ? ORDER BY entry_id",
            (game_id, after_id),
        )
        return {
            row["entry_id"]: [
                TurnNote(layer=layer, ref=ref, text=text) for layer, ref, text in json.loads(row["notes"])
            ]
            for row in rows
        }

    # Background jobs that keep failing (parked, not retried after every turn)

    async def job_failures(self, game_id: int) -> dict[str, JobFailure]:
        rows = await self._all("SELECT * FROM job_failures WHERE game_id = ? ORDER BY job", (game_id,))
        return {row["job"]: JobFailure.model_validate(dict(row)) for row in rows}

    async def save_job_failure(self, failure: JobFailure) -> None:
        data = failure.model_dump()
        async with self.transaction() as db:
            await db.execute(
                f"INSERT OR REPLACE INTO job_failures ({', '.join(data)}) VALUES ({', '.join('?' for _ in data)})",
                list(data.values()),
            )

    async def clear_job_failures(self, game_id: int, job: str | None = None) -> None:
        async with self.transaction() as db:
            if job is None:
                await db.execute("DELETE FROM job_failures WHERE game_id = ?", (game_id,))
            else:
                await db.execute("DELETE FROM job_failures WHERE game_id = ? AND job = ?", (game_id, job))

    async def front_now(self, game_id: int) -> FrontSnapshot:
        """What the front would show if the prompt's front were fixed now: the latest memories and glossary."""
        memories = await self._all(
            "SELECT player_id, id FROM player_memory WHERE game_id = ? AND replaced_by IS NULL", (game_id,)
        )
        glossary = await self._one("SELECT max(id) FROM glossary WHERE game_id = ?", (game_id,))
        return FrontSnapshot(memories={r["player_id"]: r["id"] for r in memories}, glossary_through=glossary[0] or 0)

    async def add_summary(self, db: aiosqlite.Connection, game_id: int, summary: NewSummary) -> int:
        """Insert a summary inside a transaction the caller holds; return its id. Chunks are indexed for recall."""
        data = summary.model_dump(mode="json")
        columns = ["game_id", "created_at", *data]
        cursor = await db.execute(
            f"INSERT INTO summaries ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
            [game_id, _now(), *data.values()],
        )
        if summary.kind is SummaryKind.CHUNK:
            await self.index(db, game_id, f"summary:{cursor.lastrowid}", summary.content, summary.last_turn or 0)
        return cursor.lastrowid

    async def replace_summary(self, db: aiosqlite.Connection, old_id: int, new_id: int) -> None:
        await db.execute("UPDATE summaries SET replaced_by = ?, stale = 0 WHERE id = ?", (new_id, old_id))
        await self.unindex(db, f"summary:{old_id}")

    async def facts_to_redo(self, game_id: int) -> list[int]:
        rows = await self._all("SELECT entry_id FROM facts_redo WHERE game_id = ? ORDER BY entry_id", (game_id,))
        return [row[0] for row in rows]

    async def done_redo(self, db: aiosqlite.Connection, game_id: int, entry_ids: list[int]) -> None:
        for entry_id in entry_ids:
            await db.execute("DELETE FROM facts_redo WHERE game_id = ? AND entry_id = ?", (game_id, entry_id))

    async def summary(self, summary_id: int | None) -> Summary | None:
        if summary_id is None:
            return None
        row = await self._one("SELECT * FROM summaries WHERE id = ?", (summary_id,))
        return _summary(row) if row else None

    async def summaries(self, game_id: int, kind: str | None = None, *, current: bool = True) -> list[Summary]:
        """A game's summaries, oldest first; ``current`` leaves out those a rebuild replaced."""
        sql = "SELECT * FROM summaries WHERE game_id = ?"
        params: list[Any] = [game_id]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        if current:
            sql += " AND replaced_by IS NULL"
        return [_summary(r) for r in await self._all(sql + " ORDER BY id", params)]

    async def _mark_stale(self, db: aiosqlite.Connection, game_id: int, entry_id: int) -> None:
        """Everything derived from ``entry_id`` is redone: summaries covering it, facts citing it, private memories."""
        await self._mark_player_memories(db, game_id, entry_id)
        if await self.retract_facts_from(db, game_id, entry_id):
            await db.execute("INSERT OR IGNORE INTO facts_redo (game_id, entry_id) VALUES (?, ?)", (game_id, entry_id))
        await db.execute(
            "UPDATE summaries SET stale = 1 WHERE game_id = ? AND replaced_by IS NULL AND kind != 'story'"
            " AND first_entry_id <= ? AND last_entry_id >= ?",
            (game_id, entry_id, entry_id),
        )
        state = await self.memory_state(game_id)
        await self.save_memory_state(db, state.model_copy(update={"version": state.version + 1}))

    # Per-turn traces of what the GM was given

    async def save_trace(self, game_id: int, turn: int, trace: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO turn_traces (game_id, turn, created_at, trace) VALUES (?, ?, ?, ?)",
                (game_id, turn, _now(), trace),
            )

    async def traces(self, game_id: int, limit: int = 20) -> list[str]:
        """The game's latest turn traces, newest first."""
        rows = await self._all(
            "SELECT trace FROM turn_traces WHERE game_id = ? ORDER BY id DESC LIMIT ?", (game_id, limit)
        )
        return [row["trace"] for row in rows]

    # Settings: scope is "global", "guild:<id>" or "game:<id>".

    async def settings(self, scope: str) -> dict[str, Any]:
        rows = await self._all("SELECT key, value FROM settings WHERE scope = ? ORDER BY key", (scope,))
        return {row["key"]: json.loads(row["value"]) for row in rows}

    async def scopes(self, prefix: str) -> dict[str, dict[str, Any]]:
        """Every scope whose name starts with ``prefix``, with its settings."""
        rows = await self._all(
            "SELECT scope, key, value FROM settings WHERE substr(scope, 1, ?) = ? ORDER BY scope, key",
            (len(prefix), prefix),
        )
        found: dict[str, dict[str, Any]] = {}
        for row in rows:
            found.setdefault(row["scope"], {})[row["key"]] = json.loads(row["value"])
        return found

    async def set_setting(self, scope: str, key: str, value: Any) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO settings (scope, key, value, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (scope, key, json.dumps(value), _now()),
            )

    async def delete_setting(self, scope: str, key: str) -> None:
        async with self.transaction() as db:
            await db.execute("DELETE FROM settings WHERE scope = ? AND key = ?", (scope, key))


def _summary(row: aiosqlite.Row) -> Summary:
    data = dict(row)
    data["stale"] = bool(data["stale"])
    return Summary.model_validate(data)


def _line(entry: NewEntry, content: str | None = None) -> str:
    """The text a log entry is indexed under: the transcript line, with its author."""
    shown = content if content is not None else entry.content
    author = "GM" if entry.kind.value == "gm" else entry.author
    return f"{author}: {shown}"
