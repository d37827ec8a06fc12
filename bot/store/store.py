"""All SQL, in one place: one SQLite file in WAL mode, one connection.

This file opens the database and keeps games, players and the turn log; the other tables live in the parts
:class:`Store` is built of (see :mod:`bot.store.base`).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite

from bot.errors import UserError
from bot.store.base import StorageError, inserted_id, storage_problem, timestamp
from bot.store.migrations import migrate
from bot.store.models import Game, LogEntry, NewEntry, Player, Visibility
from bot.store.private import PrivateStore, entry_from_row

__all__ = ["StorageError", "Store", "check_database"]


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


class Store(PrivateStore):
    """The game database. Open with ``async with await Store.open(path)``.

    Writes that touch more than one row go through :meth:`transaction`,
    which also keeps two games' writes from interleaving on the shared
    connection.
    """

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

    async def journal_mode(self) -> str:
        mode: str = await self._value("PRAGMA journal_mode")
        return mode

    async def applied_migrations(self) -> list[str]:
        return [row["name"] for row in await self._all("SELECT name FROM migrations ORDER BY rowid")]

    # Games

    async def create_game(self, channel_key: str, world_id: str, started_by: str | None = None) -> Game:
        now = timestamp()
        game_id = await self._insert(
            "INSERT INTO games (channel_key, world_id, created_at, updated_at, started_by) VALUES (?, ?, ?, ?, ?)",
            (channel_key, world_id, now, now, started_by), "A game is already running here; end it first.",
        )  # fmt: skip
        return await self.game(game_id)

    async def game(self, game_id: int) -> Game:
        return Game.model_validate(dict(await self._row("games", game_id, f"There is no game {game_id}.")))

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
                (timestamp(), game.channel_key),
            )
            await db.execute(
                "UPDATE games SET status = 'active', ended_at = NULL, updated_at = ? WHERE id = ?",
                (timestamp(), game_id),
            )
        return await self.game(game_id)

    async def end_game(self, game_id: int) -> Game:
        async with self.transaction() as db:
            now = timestamp()
            await db.execute(
                "UPDATE games SET status = 'ended', ended_at = ?, updated_at = ? WHERE id = ?", (now, now, game_id)
            )
        return await self.game(game_id)

    async def games(self, status: str | None = None) -> list[Game]:
        sql = "SELECT * FROM games" + (" WHERE status = ?" if status else "") + " ORDER BY id"
        return [Game.model_validate(dict(r)) for r in await self._all(sql, (status,) if status else ())]

    # Players

    async def add_player(self, game_id: int, user_key: str, name: str, description: str = "") -> Player:
        player_id = await self._insert(
            "INSERT INTO players (game_id, user_key, name, description, joined_at) VALUES (?, ?, ?, ?, ?)",
            (game_id, user_key, name, description, timestamp()), "You have already joined this game.",
        )  # fmt: skip
        return await self.player(player_id)

    async def player(self, player_id: int) -> Player:
        return Player.model_validate(dict(await self._row("players", player_id, f"There is no player {player_id}.")))

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
            await db.execute("UPDATE players SET left_at = ? WHERE id = ?", (timestamp(), player_id))

    # The turn log

    async def append(self, game_id: int, *entries: NewEntry, turn_done: int | None = None) -> list[LogEntry]:
        """Add entries to a game's log in one transaction; ``turn_done`` also advances the game's turn."""
        ids = []
        now = timestamp()
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
                entry_id = inserted_id(cursor)
                ids.append(entry_id)
                if public and entry.npcs:
                    await db.executemany(
                        "INSERT OR IGNORE INTO npc_witness (game_id, npc_id, entry_id, turn) VALUES (?, ?, ?, ?)",
                        [(game_id, npc, entry_id, entry.turn) for npc in entry.npcs],
                    )
                if public:  # recall by words feeds prompts and reports; private messages stay out of it
                    await self.index(db, game_id, f"entry:{entry_id}", _line(entry), entry.turn)
                else:  # by meaning, only for a turn whose answer goes to one who witnessed it (engine.upkeep.meaning)
                    await self.queue_vector(db, game_id, f"entry:{entry_id}", _line(entry), entry.turn,
                                            witnesses)  # fmt: skip
            if turn_done is not None:
                await db.execute("UPDATE games SET turn = ?, updated_at = ? WHERE id = ?", (turn_done, now, game_id))
            else:
                await db.execute("UPDATE games SET updated_at = ? WHERE id = ?", (now, game_id))
        return [await self.entry(entry_id) for entry_id in ids]

    async def entry(self, entry_id: int) -> LogEntry:
        return entry_from_row(await self._row("turn_log", entry_id, f"There is no log entry {entry_id}."))

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
            await db.execute(
                "UPDATE turn_log SET content = ?, edited_at = ? WHERE id = ?", (content, timestamp(), entry_id)
            )
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
            await db.execute("UPDATE turn_log SET deleted = 1, edited_at = ? WHERE id = ?", (timestamp(), entry_id))
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
        count: int = await self._value(sql, params)
        return count

    async def entry_before(self, game_id: int, entry_id: int) -> LogEntry | None:
        row = await self._one(
            "SELECT * FROM turn_log WHERE game_id = ? AND deleted = 0 AND id < ? ORDER BY id DESC LIMIT 1",
            (game_id, entry_id),
        )
        return entry_from_row(row) if row else None

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


def _line(entry: NewEntry, content: str | None = None) -> str:
    """The text a log entry is indexed under: the transcript line, with its author."""
    shown = content if content is not None else entry.content
    author = "GM" if entry.kind.value == "gm" else entry.author
    return f"{author}: {shown}"
