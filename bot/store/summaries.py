"""The store's tables for the memory: summaries, where the game's memory stands, turn notes, parked jobs, traces.

A part of :class:`bot.store.store.Store` (see :mod:`bot.store.base`). Chunk summaries enter the recall index,
so it builds on :class:`bot.store.ledger.LedgerStore`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import aiosqlite

from bot.store.base import inserted_id, timestamp
from bot.store.ledger import LedgerStore
from bot.store.models import FrontSnapshot, JobFailure, MemoryState, NewSummary, Summary, SummaryKind, TurnNote


class SummaryStore(LedgerStore):
    """What the memory's upkeep reads and writes, beside the log itself."""

    # Where the game's memory stands

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
                (entry_id, game_id, payload, timestamp()),
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

    # Summaries, and what the prompt's front would show

    async def front_now(self, game_id: int) -> FrontSnapshot:
        """What the front would show if the prompt's front were fixed now: the latest memories and glossary."""
        memories = await self._all(
            "SELECT player_id, id FROM player_memory WHERE game_id = ? AND replaced_by IS NULL", (game_id,)
        )
        glossary: int | None = await self._value("SELECT max(id) FROM glossary WHERE game_id = ?", (game_id,))
        logged: int | None = await self._value("SELECT max(id) FROM turn_log WHERE game_id = ?", (game_id,))
        return FrontSnapshot(
            memories={r["player_id"]: r["id"] for r in memories},
            glossary_through=glossary or 0,
            notes_through=logged or 0,
        )

    async def add_summary(self, db: aiosqlite.Connection, game_id: int, summary: NewSummary) -> int:
        """Insert a summary inside a transaction the caller holds; return its id. Chunks are indexed for recall."""
        data = summary.model_dump(mode="json")
        columns = ["game_id", "created_at", *data]
        cursor = await db.execute(
            f"INSERT INTO summaries ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
            [game_id, timestamp(), *data.values()],
        )
        summary_id = inserted_id(cursor)
        if summary.kind is SummaryKind.CHUNK:
            await self.index(db, game_id, f"summary:{summary_id}", summary.content, summary.last_turn or 0)
        return summary_id

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

    async def chunks_after(self, game_id: int, entry_id: int, through: int) -> list[Summary]:
        """The current chunk summaries of the log entries after ``entry_id`` up to ``through``, oldest first."""
        rows = await self._all(
            "SELECT * FROM summaries WHERE game_id = ? AND kind = ? AND replaced_by IS NULL AND first_entry_id > ?"
            " AND last_entry_id <= ? ORDER BY first_entry_id",
            (game_id, SummaryKind.CHUNK.value, entry_id, through),
        )
        return [_summary(r) for r in rows]

    # Per-turn traces of what the GM was given

    async def save_trace(self, game_id: int, turn: int, trace: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO turn_traces (game_id, turn, created_at, trace) VALUES (?, ?, ?, ?)",
                (game_id, turn, timestamp(), trace),
            )

    async def traces(self, game_id: int, limit: int = 20) -> list[str]:
        """The game's latest turn traces, newest first."""
        rows = await self._all(
            "SELECT trace FROM turn_traces WHERE game_id = ? ORDER BY id DESC LIMIT ?", (game_id, limit)
        )
        return [row["trace"] for row in rows]


def _summary(row: aiosqlite.Row) -> Summary:
    data = dict(row)
    data["stale"] = bool(data["stale"])
    return Summary.model_validate(data)
