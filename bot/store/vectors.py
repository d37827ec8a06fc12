"""The store's tables for recall by meaning (F31): each fragment's vector, and what is still to embed.

Whatever enters the word index (public messages, summaries, facts) is
queued here in the same transaction, and so is a private message, with the
players who witnessed it as its audience; whatever leaves it (an edit, a
delete, a superseded or retracted fact) loses its vector and its place in
the queue with it, so nothing found by meaning is ever stale.

A part of :class:`bot.store.store.Store` (see :mod:`bot.store.base`). The model the vectors are made with
is kept in the key-value table, so it builds on :class:`bot.store.keyvalues.KeyValueTable`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from bot.store.base import timestamp
from bot.store.keyvalues import KeyValueTable

log = logging.getLogger(__name__)

MODEL_SCOPE = "embedding"


@dataclass(frozen=True)
class VectorTodo:
    """A fragment waiting for its vector."""

    id: int
    game_id: int
    ref: str
    turn: int
    audience: tuple[int, ...] | None  # None: public; else the players who may see it
    text: str


@dataclass(frozen=True)
class VectorRow:
    ref: str
    part: int  # 0: the whole fragment, then its sentences
    turn: int
    audience: tuple[int, ...] | None
    text: str  # the fragment's, on its first part
    vector: bytes


class VectorStore(KeyValueTable):
    """Each fragment's vectors, and the fragments still to embed."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        super().__init__(db, path)
        # What left the table since the store was opened, for the vectors a process keeps in memory: the first
        # row of each fragment whose vectors went, per game, and how often every game's went at once.
        self._removed_rows: dict[int, list[int]] = {}
        self.vectors_epoch = 0

    def removed_vector_rows(self, game_id: int, since: int = 0) -> list[int]:
        """The ids of the first rows of ``game_id``'s fragments whose vectors left the table, from the
        ``since``-th on."""
        return self._removed_rows.get(game_id, [])[since:]

    def _note_removed(self, rows: Iterable[aiosqlite.Row]) -> None:
        """Note the rows ``DELETE ... RETURNING id, game_id, part`` removed."""
        for row_id, game_id, part in rows:
            if part == 0:
                self._removed_rows.setdefault(game_id, []).append(row_id)

    async def queue_vector(
        self, db: aiosqlite.Connection, game_id: int, ref: str, text: str, turn: int,
        audience: Sequence[int] | None = None,
    ) -> None:  # fmt: skip
        """Queue a fragment for embedding, inside the caller's transaction (a changed text takes a new place)."""
        await db.execute(
            "INSERT OR REPLACE INTO vector_todo (game_id, ref, turn, audience, text) VALUES (?, ?, ?, ?, ?)",
            (game_id, ref, turn, None if audience is None else json.dumps(list(audience)), text),
        )

    async def forget_vector(self, db: aiosqlite.Connection, ref: str) -> None:
        """A fragment that leaves recall: its vector and its place in the queue go too."""
        await db.execute("DELETE FROM vector_todo WHERE ref = ?", (ref,))
        cursor = await db.execute("DELETE FROM vectors WHERE ref = ? RETURNING id, game_id, part", (ref,))
        self._note_removed(await cursor.fetchall())

    async def vector_todo(self, limit: int) -> list[VectorTodo]:
        """What to embed next: the newest first, so a game in play is recalled by meaning before a backlog. A row
        that cannot be read as one (its text not text, its witnesses not a list of player ids) leaves the queue,
        said in the log: the fragment is recalled by words alone."""
        while True:
            rows = await self._all("SELECT * FROM vector_todo ORDER BY id DESC LIMIT ?", (limit,))
            todo, damaged = [], []
            for r in rows:
                audience = _audience(r["audience"])
                if not isinstance(r["text"], str) or not isinstance(r["ref"], str) or audience == DAMAGED:
                    damaged.append(r)
                else:
                    todo.append(VectorTodo(r["id"], r["game_id"], r["ref"], r["turn"], audience, r["text"]))
            if not damaged:
                return todo
            for r in damaged:
                log.warning("The embedding queue's row %s (%s) is damaged; it is dropped, its fragment recalled by "
                            "words alone", r["id"], str(r["ref"])[:60])  # fmt: skip
            async with self.transaction() as db:
                await db.executemany("DELETE FROM vector_todo WHERE id = ?", [(r["id"],) for r in damaged])

    async def save_vectors(self, model: str, dim: int, done: Iterable[tuple[VectorTodo, Sequence[bytes]]]) -> list[int]:
        """Write each queued fragment's vectors (its parts), only if it is still queued as it was read (an edit
        since queued it again, under a new id); returns the games that got vectors."""
        games = []
        async with self.transaction() as db:
            for todo, parts in done:
                cursor = await db.execute("DELETE FROM vector_todo WHERE id = ? AND text = ?", (todo.id, todo.text))
                if not cursor.rowcount:
                    continue
                audience = None if todo.audience is None else json.dumps(list(todo.audience))
                cursor = await db.execute("DELETE FROM vectors WHERE ref = ? RETURNING id, game_id, part", (todo.ref,))
                self._note_removed(await cursor.fetchall())
                await db.executemany(
                    "INSERT INTO vectors (game_id, ref, part, model, dim, turn, audience, text, vector)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(todo.game_id, todo.ref, part, model, dim, todo.turn, audience, todo.text if part == 0 else "",
                      vector) for part, vector in enumerate(parts)],
                )  # fmt: skip
                games.append(todo.game_id)
        return games

    async def vector_rows(
        self, game_id: int, model: str, *, after_id: int = 0, limit: int = -1
    ) -> list[tuple[int, VectorRow]]:
        """A game's vectors made by ``model`` (those written after ``after_id``, at most ``limit``: -1 for all),
        with their row ids."""
        rows = await self._all(
            "SELECT id, ref, part, turn, audience, text, vector FROM vectors"
            " WHERE game_id = ? AND model = ? AND id > ? ORDER BY id LIMIT ?",
            (game_id, model, after_id, limit),
        )
        return [
            (r["id"], VectorRow(r["ref"], r["part"], r["turn"], _audience(r["audience"]), r["text"], r["vector"]))
            for r in rows
        ]

    async def vector_texts(self, row_ids: Sequence[int]) -> dict[int, str]:
        """The texts of the fragments whose first rows have these ids (those still in the table)."""
        texts: dict[int, str] = {}
        for at in range(0, len(row_ids), 500):
            chunk = list(row_ids[at : at + 500])
            rows = await self._all(
                f"SELECT id, text FROM vectors WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk)
            )
            texts.update((r["id"], r["text"]) for r in rows if isinstance(r["text"], str))
        return texts

    async def vector_counts(self, game_id: int, model: str) -> tuple[int, int]:
        """Fragments of a game embedded by ``model``, and fragments waiting."""
        done: int = await self._value(
            "SELECT count(*) FROM vectors WHERE game_id = ? AND model = ? AND part = 0", (game_id, model)
        )
        waiting: int = await self._value("SELECT count(*) FROM vector_todo WHERE game_id = ?", (game_id,))
        return done, waiting

    async def queued_private_vectors(self, game_id: int, limit: int = 8) -> list[VectorTodo]:
        """A game's newest private messages still waiting to be embedded, with their witnesses."""
        rows = await self._all(
            "SELECT * FROM vector_todo WHERE game_id = ? AND audience IS NOT NULL ORDER BY id DESC LIMIT ?",
            (game_id, limit),
        )
        return [
            VectorTodo(r["id"], r["game_id"], r["ref"], r["turn"], _audience(r["audience"]), r["text"]) for r in rows
        ]

    async def vectors_waiting(self) -> int:
        waiting: int = await self._value("SELECT count(*) FROM vector_todo")
        return waiting

    async def use_embedding_model(self, model: str) -> bool:
        """Make ``model`` the one vectors are made with; ``True`` if it changed, when everything is queued again
        and the other model's vectors are dropped (they are never compared with this one's)."""
        current = (await self.scope_values(MODEL_SCOPE)).get("model")
        if current == model:
            return False
        async with self.transaction() as db:
            await db.execute("DELETE FROM vectors WHERE model != ?", (model,))
            await db.execute(
                "INSERT OR IGNORE INTO vector_todo (game_id, ref, turn, text)"
                " SELECT game_id, ref, turn, text FROM recall_index"
            )
            await db.execute(
                "INSERT OR IGNORE INTO vector_todo (game_id, ref, turn, audience, text)"
                " SELECT game_id, 'entry:' || id, turn, visible_to,"
                " (CASE kind WHEN 'gm' THEN 'GM' ELSE author END) || ': ' || content"
                " FROM turn_log WHERE visibility = 'private' AND deleted = 0"
            )
            await db.execute(
                "INSERT INTO settings (scope, key, value, updated_at) VALUES (?, 'model', ?, ?)"
                " ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (MODEL_SCOPE, json.dumps(model), timestamp()),
            )
        self.vectors_epoch += 1
        return current is not None


DAMAGED: tuple[int, ...] = ()  # witnesses that cannot be read: no one's, never everyone's


def _audience(raw: object) -> tuple[int, ...] | None:
    """A fragment's witnesses: ``None`` for a public one; :data:`DAMAGED` (nobody) when they cannot be read."""
    if raw is None:
        return None
    if not isinstance(raw, str | bytes | bytearray):
        return DAMAGED
    try:
        audience = json.loads(raw)
    except ValueError:
        return DAMAGED
    if not isinstance(audience, list) or not audience or not all(type(p) is int for p in audience):
        return DAMAGED
    return tuple(audience)
