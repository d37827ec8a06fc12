"""The store's tables for pins, facts, game lore, the glossary and the recall index.

A part of :class:`bot.store.store.Store` (see :mod:`bot.store.base`). Whatever enters the recall index is
queued for its vector in the same transaction, so it builds on :class:`bot.store.vectors.VectorStore`.
"""

from __future__ import annotations

import json
import re
import sqlite3

import aiosqlite

from bot.errors import UserError
from bot.store.base import inserted_id, timestamp
from bot.store.models import Fact, GlossaryTerm, NewFact, Pin, RecallHit
from bot.store.vectors import VectorStore
from bot.worlds import LoreEntry

_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(terms: list[str]) -> str:
    """An FTS5 query matching any of ``terms``, each quoted so no word is read as an operator."""
    return " OR ".join(f'"{term}"' for term in dict.fromkeys(t.lower() for t in terms if _WORD.fullmatch(t)))


class LedgerStore(VectorStore):
    """Pins, facts, a game's own lore, the glossary, and the recall index by words."""

    # Pins (F11)

    async def add_pin(self, game_id: int, text: str, author: str) -> Pin:
        async with self.transaction() as db:
            cursor = await db.execute(
                "INSERT INTO pins (game_id, text, author, created_at) VALUES (?, ?, ?, ?)",
                (game_id, text, author, timestamp()),
            )
            pin_id = inserted_id(cursor)
        return await self.pin(pin_id)

    async def pin(self, pin_id: int) -> Pin:
        return Pin.model_validate(dict(await self._row("pins", pin_id, "There is no such pin.")))

    async def pins(self, game_id: int) -> list[Pin]:
        rows = await self._all("SELECT * FROM pins WHERE game_id = ? AND removed_at IS NULL ORDER BY id", (game_id,))
        return [Pin.model_validate(dict(r)) for r in rows]

    async def remove_pin(self, pin_id: int, *, moved_to_fact: int | None = None) -> None:
        async with self.transaction() as db:
            await db.execute(
                "UPDATE pins SET removed_at = ?, moved_to_fact = ? WHERE id = ?", (timestamp(), moved_to_fact, pin_id)
            )

    # Facts (F12)

    async def add_fact(self, db: aiosqlite.Connection, game_id: int, fact: NewFact) -> int:
        """Insert a fact inside a transaction the caller holds, and index it for recall."""
        cursor = await db.execute(
            "INSERT INTO facts (game_id, kind, subject, attribute, value, sources, turn, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (game_id, fact.kind.value, fact.subject, fact.attribute, fact.value, json.dumps(list(fact.sources)),
             fact.turn, timestamp()),
        )  # fmt: skip
        fact_id = inserted_id(cursor)
        await self.index(db, game_id, f"fact:{fact_id}", fact.text, fact.turn)
        return fact_id

    async def supersede_fact(self, db: aiosqlite.Connection, old_id: int, new_id: int, turn: int) -> None:
        await db.execute("UPDATE facts SET superseded_by = ?, superseded_turn = ? WHERE id = ?", (new_id, turn, old_id))
        await self.unindex(db, f"fact:{old_id}")

    async def merge_fact_sources(self, db: aiosqlite.Connection, fact_id: int, sources: tuple[int, ...]) -> None:
        """Add ``sources`` to a fact's, inside a transaction the caller holds (it may have been added in it)."""
        async with db.execute("SELECT sources FROM facts WHERE id = ?", (fact_id,)) as cursor:
            row = await cursor.fetchone()
        if row is None:
            raise UserError(f"There is no fact {fact_id} to add sources to.")
        merged = sorted(set(json.loads(row[0])) | set(sources))
        await db.execute("UPDATE facts SET sources = ? WHERE id = ?", (json.dumps(merged), fact_id))

    async def retract_facts_from(self, db: aiosqlite.Connection, game_id: int, entry_id: int) -> list[int]:
        """Retract the active facts that cite ``entry_id``; return their ids."""
        rows = await self._all(
            "SELECT id, sources FROM facts WHERE game_id = ? AND superseded_by IS NULL AND retracted_at IS NULL",
            (game_id,),
        )
        retracted = [row["id"] for row in rows if entry_id in json.loads(row["sources"])]
        for fact_id in retracted:
            await db.execute("UPDATE facts SET retracted_at = ? WHERE id = ?", (timestamp(), fact_id))
            await self.unindex(db, f"fact:{fact_id}")
            # The value it replaced holds again (a move edited away, a retried reply): one current value stays.
            async with db.execute(
                "SELECT * FROM facts WHERE superseded_by = ? AND retracted_at IS NULL", (fact_id,)
            ) as cursor:
                before = [_fact(row) for row in await cursor.fetchall()]
            for fact in before:
                await db.execute(
                    "UPDATE facts SET superseded_by = NULL, superseded_turn = NULL WHERE id = ?", (fact.id,)
                )
                await self.index(db, game_id, f"fact:{fact.id}", fact.text, fact.turn)
        return retracted

    async def facts(self, game_id: int, *, active_only: bool = True) -> list[Fact]:
        sql = "SELECT * FROM facts WHERE game_id = ?"
        if active_only:
            sql += " AND superseded_by IS NULL AND retracted_at IS NULL"
        return [_fact(r) for r in await self._all(sql + " ORDER BY id", (game_id,))]

    async def fact(self, fact_id: int) -> Fact:
        return _fact(await self._row("facts", fact_id, "There is no such fact."))

    async def checked_through(self, table: str, game_id: int) -> int:
        row = await self._one(f"SELECT through_entry_id FROM {table} WHERE game_id = ?", (game_id,))
        return row[0] if row else 0

    async def set_checked_through(self, db: aiosqlite.Connection, table: str, game_id: int, entry_id: int) -> None:
        await db.execute(
            f"INSERT INTO {table} (game_id, through_entry_id) VALUES (?, ?)"
            " ON CONFLICT (game_id) DO UPDATE SET through_entry_id = excluded.through_entry_id",
            (game_id, entry_id),
        )

    # Lore added, changed or removed at run time (F13); a row with a world entry's id overrides it

    async def game_lore(self, game_id: int) -> dict[str, LoreEntry | None]:
        """Each run-time lore id with its entry, or ``None`` where it was removed."""
        rows = await self._all("SELECT entry, removed_at FROM lore WHERE game_id = ? ORDER BY id", (game_id,))
        found: dict[str, LoreEntry | None] = {}
        for row in rows:
            entry = LoreEntry.model_validate_json(row["entry"])
            found[entry.id] = None if row["removed_at"] else entry
        return found

    async def put_lore(self, game_id: int, entry: LoreEntry, *, removed: bool = False) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO lore (game_id, entry, removed_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                (game_id, entry.model_dump_json(), timestamp() if removed else None, timestamp(), timestamp()),
            )

    # Glossary (F14)

    async def add_glossary(
        self, db: aiosqlite.Connection, game_id: int, term: str, definition: str, source_entry_id: int | None
    ) -> None:
        try:
            await db.execute(
                "INSERT INTO glossary (game_id, term, definition, source_entry_id, created_at) VALUES (?, ?, ?, ?, ?)",
                (game_id, term, definition, source_entry_id, timestamp()),
            )
        except sqlite3.IntegrityError:
            pass  # the term is known already

    async def glossary(self, game_id: int) -> list[GlossaryTerm]:
        rows = await self._all(
            "SELECT * FROM glossary WHERE game_id = ? AND removed_at IS NULL ORDER BY term COLLATE NOCASE", (game_id,)
        )
        return [GlossaryTerm.model_validate(dict(r)) for r in rows]

    async def edit_glossary(self, game_id: int, term: str, definition: str) -> None:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE glossary SET definition = ?, edited = 1 WHERE game_id = ? AND term = ? COLLATE NOCASE"
                " AND removed_at IS NULL",
                (definition, game_id, term),
            )
            if cursor.rowcount == 0:
                await db.execute(
                    "INSERT INTO glossary (game_id, term, definition, created_at, edited) VALUES (?, ?, ?, ?, 1)",
                    (game_id, term, definition, timestamp()),
                )

    async def remove_glossary(self, game_id: int, term: str) -> bool:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE glossary SET removed_at = ? WHERE game_id = ? AND term = ? COLLATE NOCASE"
                " AND removed_at IS NULL",
                (timestamp(), game_id, term),
            )
        return cursor.rowcount > 0

    # Recall (F15): one FTS5 index of turns, summaries and facts, ranked by BM25

    async def index(self, db: aiosqlite.Connection, game_id: int, ref: str, text: str, turn: int) -> None:
        """Make a fragment recallable: by its words now, by its meaning once the background has embedded it."""
        await db.execute(
            "INSERT INTO recall_index (text, ref, game_id, turn) VALUES (?, ?, ?, ?)", (text, ref, game_id, turn)
        )
        await self.queue_vector(db, game_id, ref, text, turn)

    async def unindex(self, db: aiosqlite.Connection, ref: str) -> None:
        await db.execute("DELETE FROM recall_index WHERE ref = ?", (ref,))
        await self.forget_vector(db, ref)

    async def following_entries(self, game_id: int, entry_ids: list[int]) -> dict[int, RecallHit]:
        """For each entry id, the next live entry of the same game (its reply, most often)."""
        if not entry_ids:
            return {}
        marks = ", ".join("?" for _ in entry_ids)
        rows = await self._all(
            "SELECT t.id AS hit, n.id AS id, n.author, n.kind, n.content, n.turn FROM turn_log t"
            " JOIN turn_log n ON n.id = (SELECT m.id FROM turn_log m WHERE m.game_id = t.game_id AND m.id > t.id"
            " AND m.deleted = 0 AND m.visibility = 'public' ORDER BY m.id LIMIT 1)"
            f" WHERE t.game_id = ? AND t.id IN ({marks})",
            (game_id, *entry_ids),
        )
        return {
            row["hit"]: RecallHit(
                ref=f"entry:{row['id']}",
                text=f"{'GM' if row['kind'] == 'gm' else row['author']}: {row['content']}",
                turn=row["turn"],
                score=0.0,
            )
            for row in rows
        }

    async def search_recall(self, game_id: int, terms: list[str], limit: int) -> list[RecallHit]:
        query = fts_query(terms)
        if not query:
            return []
        rows = await self._all(
            "SELECT ref, text, turn, bm25(recall_index) AS score FROM recall_index"
            " WHERE recall_index MATCH ? AND game_id = ? ORDER BY score LIMIT ?",
            (query, game_id, limit),
        )
        return [RecallHit(ref=r["ref"], text=r["text"], turn=r["turn"], score=-r["score"]) for r in rows]


def _fact(row: aiosqlite.Row) -> Fact:
    data = dict(row)
    data["sources"] = tuple(json.loads(data["sources"]))
    return Fact.model_validate(data)
