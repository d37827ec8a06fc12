"""The store's tables for hidden information: players' private memories and the leak guard's record.

A part of :class:`bot.store.store.Store` (see :mod:`bot.store.base`). A private memory is saved against the
memory's version, so it builds on :class:`bot.store.summaries.SummaryStore`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import aiosqlite

from bot.store.base import inserted_id, timestamp
from bot.store.models import LeakHit, LogEntry, NewReveal, PlayerMemory, RevealRecord
from bot.store.summaries import SummaryStore
from bot.words import stem

_WORD = re.compile(r"\w+", re.UNICODE)


def _any_ending(term: str) -> str:
    """A term as an FTS5 query that matches it with any ending: the index's Porter stemmer makes "sniffed" "snif"
    but "sniff" "sniff", "brandy" "brandi", "hopeful" "hope", so the query is the start of the word those share
    (its first four letters at most, without a final "e", "y" or doubled letter), where it keeps three."""
    start = stem(term)
    if len(start) > 2 and start[-1] in "ey":
        start = start[:-1]
    if len(start) > 3 and start[-1] == start[-2]:
        start = start[:-1]
    start = start[:4]
    return f'"{start}" *' if len(start) >= 3 else f'"{term}"'  # \\w+ terms hold no quote


class PrivateStore(SummaryStore):
    """Players' private memories, who witnessed what, private messages, and what the leak guard caught."""

    # Private memory per player (F5)

    async def player_memory(self, game_id: int, player_id: int) -> PlayerMemory | None:
        """The player's current private memory; ``None`` before the first update."""
        row = await self._one(
            "SELECT * FROM player_memory WHERE game_id = ? AND player_id = ? AND replaced_by IS NULL"
            " ORDER BY id DESC LIMIT 1",
            (game_id, player_id),
        )
        return _memory(row) if row else None

    async def player_memories(self, game_id: int) -> list[PlayerMemory]:
        """Every player's current private memory in the game."""
        rows = await self._all(
            "SELECT * FROM player_memory WHERE game_id = ? AND replaced_by IS NULL ORDER BY player_id", (game_id,)
        )
        return [_memory(r) for r in rows]

    async def player_memory_version(self, memory_id: int) -> PlayerMemory | None:
        row = await self._one("SELECT * FROM player_memory WHERE id = ?", (memory_id,))
        return _memory(row) if row else None

    async def player_memory_history(self, game_id: int, player_id: int) -> list[PlayerMemory]:
        """Every version of a player's memory, oldest first."""
        rows = await self._all(
            "SELECT * FROM player_memory WHERE game_id = ? AND player_id = ? ORDER BY id", (game_id, player_id)
        )
        return [_memory(r) for r in rows]

    async def save_player_memory(
        self,
        game_id: int,
        player_id: int,
        summary: str,
        facts: Sequence[str],
        through_entry_id: int,
        sources: Sequence[int],
        *,
        expect_current: int | None,
        expect_version: int | None = None,
        done_redo: Sequence[int] = (),
    ) -> PlayerMemory | None:
        """Write a new version over ``expect_current``; ``None`` (nothing written) if another got there first.

        ``expect_version`` is the game's memory version when the update read the log: if a message was edited
        or deleted since, what was read may be gone, and nothing is written.
        """
        async with self.transaction() as db:
            current = await self.player_memory(game_id, player_id)
            if (current.id if current else None) != expect_current:
                return None
            if expect_version is not None and (await self.memory_state(game_id)).version != expect_version:
                return None
            cursor = await db.execute(
                "INSERT INTO player_memory (game_id, player_id, summary, facts, through_entry_id, sources, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (game_id, player_id, summary, json.dumps(list(facts)), through_entry_id,
                 json.dumps(list(sources)), timestamp()),
            )  # fmt: skip
            new_id = inserted_id(cursor)
            if current is not None:
                await db.execute("UPDATE player_memory SET replaced_by = ? WHERE id = ?", (new_id, current.id))
            for entry_id in done_redo:
                await db.execute(
                    "DELETE FROM player_memory_redo WHERE game_id = ? AND player_id = ? AND entry_id = ?",
                    (game_id, player_id, entry_id),
                )
        return _memory(await self._row("player_memory", new_id, f"The memory {new_id} just written is gone."))

    async def player_memory_redo(self, game_id: int) -> dict[int, list[int]]:
        """Per player, the edited or deleted entries their memory was built from."""
        rows = await self._all(
            "SELECT player_id, entry_id FROM player_memory_redo WHERE game_id = ? ORDER BY entry_id", (game_id,)
        )
        redo: dict[int, list[int]] = {}
        for row in rows:
            redo.setdefault(row["player_id"], []).append(row["entry_id"])
        return redo

    async def _mark_player_memories(self, db: aiosqlite.Connection, game_id: int, entry_id: int) -> None:
        """Players whose memory read ``entry_id`` get it rebuilt (F19)."""
        await db.execute(
            "INSERT OR IGNORE INTO player_memory_redo (game_id, player_id, entry_id)"
            " SELECT DISTINCT m.game_id, m.player_id, ? FROM player_memory m, json_each(m.sources) s"
            " WHERE m.game_id = ? AND s.value = ?",
            (entry_id, game_id, entry_id),
        )

    # What the world's NPCs witnessed (F6)

    async def npc_witnessed(
        self, game_id: int, npc_id: str, *, turns: int = 60, lines: int = 2
    ) -> tuple[list[int], list[str]]:
        """The newest turns ``npc_id`` was present for, and its newest witnessed lines, oldest first."""
        rows = await self._all(
            "SELECT w.turn, t.kind, t.author, t.content FROM npc_witness w JOIN turn_log t ON t.id = w.entry_id"
            " WHERE w.game_id = ? AND w.npc_id = ? AND t.deleted = 0 ORDER BY w.entry_id DESC LIMIT ?",
            (game_id, npc_id, turns * 4),
        )
        seen = [f"{'GM' if r['kind'] == 'gm' else r['author']}: {_clip(r['content'])}" for r in rows[:lines]]
        return sorted(set(r["turn"] for r in rows))[-turns:], seen[::-1]

    # The leak guard's record

    async def private_entries(self, game_id: int, limit: int = 200) -> list[LogEntry]:
        """The newest live private entries of a game, oldest first: the guard's private messages."""
        rows = await self._all(
            "SELECT * FROM turn_log WHERE game_id = ? AND deleted = 0 AND visibility = 'private'"
            " ORDER BY id DESC LIMIT ?",
            (game_id, limit),
        )
        return [entry_from_row(r) for r in reversed(rows)]

    async def said_in_public(self, game_id: int, words: Sequence[str], *, within: int = 4) -> bool:
        """Whether the game's public record (its public log and summaries) holds these words close together."""
        terms = [part.lower() for word in words for part in _WORD.findall(word)]  # "Silas's": silas, s
        if not terms:
            return False
        quoted = " ".join(_any_ending(term) for term in terms)
        query = f"NEAR({quoted}, {within + len(terms)})"
        row = await self._one(
            "SELECT 1 FROM recall_index WHERE recall_index MATCH ? AND game_id = ? LIMIT 1", (query, game_id)
        )
        return row is not None

    async def add_leak_hits(self, game_id: int, turn: int, hits: Sequence[dict[str, str]]) -> None:
        if not hits:
            return
        async with self.transaction() as db:
            await db.executemany(
                "INSERT INTO leak_hits (game_id, turn, audience, ref, phrase, sentence, action, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(game_id, turn, h["audience"], h["ref"], h["phrase"], h["sentence"], h["action"], timestamp())
                 for h in hits],
            )  # fmt: skip

    async def add_reveals(self, game_id: int, turn: int, entry_id: int, reveals: Sequence[NewReveal]) -> None:
        """Keep what the action ``entry_id`` uncovered, each with the condition that held."""
        if not reveals:
            return
        async with self.transaction() as db:
            await db.executemany(
                "INSERT INTO reveals (game_id, turn, entry_id, ref, lasts, player_id, why, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(game_id, turn, entry_id, r.ref, r.lasts, r.player_id, r.why, timestamp()) for r in reveals],
            )

    async def reveals(self, game_id: int, entry_id: int | None = None) -> list[RevealRecord]:
        """What the game's actions uncovered, oldest first (``entry_id``: that action's only)."""
        if entry_id is None:
            rows = await self._all("SELECT * FROM reveals WHERE game_id = ? ORDER BY id", (game_id,))
        else:
            rows = await self._all(
                "SELECT * FROM reveals WHERE game_id = ? AND entry_id = ? ORDER BY id", (game_id, entry_id)
            )
        return [RevealRecord.model_validate(dict(r)) for r in rows]

    async def leak_hits(self, game_id: int) -> list[LeakHit]:
        rows = await self._all("SELECT * FROM leak_hits WHERE game_id = ? ORDER BY id", (game_id,))
        return [LeakHit.model_validate(dict(r)) for r in rows]


def entry_from_row(row: aiosqlite.Row) -> LogEntry:
    data = dict(row)
    data["visible_to"] = tuple(json.loads(data["visible_to"]))
    data["npcs"] = tuple(json.loads(data["npcs"]))
    data["deleted"] = bool(data["deleted"])
    return LogEntry.model_validate(data)


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _memory(row: aiosqlite.Row) -> PlayerMemory:
    data = dict(row)
    data["facts"] = tuple(json.loads(data["facts"]))
    data["sources"] = tuple(json.loads(data["sources"]))
    return PlayerMemory.model_validate(data)
