"""Tests of bot.store.migrations: the database's schema steps, applied once each, whole or not at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.store import Store
from bot.store.migrations import MIGRATIONS


async def test_migrations_from_empty_create_every_table(tmp_path: Path):
    path = tmp_path / "new" / "gm.sqlite3"
    store = await Store.open(path)
    try:
        assert await store.applied_migrations() == [name for name, _ in MIGRATIONS]
        assert await store.journal_mode() == "wal"
    finally:
        await store.close()
    tables = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"migrations", "games", "players", "turn_log", "settings"} <= tables


async def test_reopening_keeps_data_and_applies_nothing_twice(tmp_path: Path):
    path = tmp_path / "gm.sqlite3"
    store = await Store.open(path)
    game = await store.create_game("chan", "lighthouse")
    await store.close()

    store = await Store.open(path)
    try:
        assert await store.applied_migrations() == [name for name, _ in MIGRATIONS]
        assert (await store.active_game("chan")).id == game.id
    finally:
        await store.close()
    count = sqlite3.connect(path).execute("SELECT count(*) FROM migrations").fetchone()[0]
    assert count == len(MIGRATIONS)


async def test_a_new_step_is_applied_on_reopen(tmp_path: Path, monkeypatch):
    path = tmp_path / "gm.sqlite3"
    await (await Store.open(path)).close()
    extra = ("m999_test_column", "ALTER TABLE games ADD COLUMN note TEXT;")
    monkeypatch.setattr("bot.store.migrations.MIGRATIONS", [*MIGRATIONS, extra])
    store = await Store.open(path)
    try:
        assert (await store.applied_migrations())[-1] == "m999_test_column"
    finally:
        await store.close()


async def test_a_database_from_a_newer_release_is_refused_naming_both_versions(tmp_path: Path):
    path = tmp_path / "gm.sqlite3"
    await (await Store.open(path)).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO migrations (name, applied_at) VALUES ('m099_from_the_future', 'later')")
    before = path.read_bytes()
    with pytest.raises(UserError) as refused:
        await Store.open(path)
    said = str(refused.value)
    assert said.startswith(f"{path}: ") and "newer release" in said
    assert "m099_from_the_future" in said and MIGRATIONS[-1][0] in said and "nothing was changed" in said
    assert path.read_bytes() == before


async def test_a_failing_step_leaves_nothing_half_done(tmp_path: Path, monkeypatch):
    path = tmp_path / "gm.sqlite3"
    await (await Store.open(path)).close()
    broken = ("m999_broken", "CREATE TABLE half (x INTEGER); INSERT INTO nowhere VALUES (1);")
    monkeypatch.setattr("bot.store.migrations.MIGRATIONS", [*MIGRATIONS, broken])
    with pytest.raises(UserError, match="Cannot use the database"):
        await Store.open(path)
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM migrations WHERE name = 'm999_broken'").fetchone()[0] == 0


async def test_upgrading_takes_out_what_older_versions_derived_from_private_messages(tmp_path: Path, monkeypatch):
    """Before m004, facts, glossary terms and recaps read private messages too; m005 takes that out."""
    path = tmp_path / "old.sqlite3"
    older = [step for step in MIGRATIONS if step[0] < "m004"]
    monkeypatch.setattr("bot.store.migrations.MIGRATIONS", older)
    now = "2026-01-01T00:00:00+00:00"
    async with await Store.open(path) as store:
        # Rows as that older version wrote them: its games table has fewer columns than today's store writes.
        async with store.transaction() as db:
            await db.execute(
                "INSERT INTO games (id, channel_key, world_id, created_at, updated_at)"
                " VALUES (1, 'chan', 'lighthouse', ?, ?)",
                (now, now),
            )
        game = await store.game(1)
        maya = await store.add_player(game.id, "maya", "Maya")
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO turn_log (id, game_id, turn, kind, author, visibility, visible_to, content, created_at)"
        " VALUES (1, ?, 1, 'gm', 'GM', 'public', '[]', 'The rock.', ?),"
        " (2, ?, 1, 'gm', 'GM to Maya', 'private', ?, 'The key is in the cave.', ?)",
        (game.id, now, game.id, f"[{maya.id}]", now),
    )
    db.execute(
        "INSERT INTO facts (id, game_id, kind, subject, attribute, value, sources, turn, created_at)"
        " VALUES (1, ?, 'item', 'key', 'location', 'cave', '[2]', 1, ?),"
        " (2, ?, 'place', 'rock', 'state', 'cold', '[1]', 1, ?)",
        (game.id, now, game.id, now),
    )
    db.execute("INSERT INTO recall_index (text, ref, game_id, turn) VALUES ('key: cave', 'fact:1', ?, 1)", (game.id,))
    db.execute(
        "INSERT INTO glossary (game_id, term, definition, source_entry_id, created_at) VALUES (?, 'Cave', 'x', 2, ?)",
        (game.id, now),
    )
    db.execute(
        "INSERT INTO summaries (game_id, kind, content, first_entry_id, last_entry_id, created_at)"
        " VALUES (?, 'recap', 'Maya learned the key is in the cave.', 1, 2, ?)",
        (game.id, now),
    )
    db.commit()
    db.close()
    monkeypatch.setattr("bot.store.migrations.MIGRATIONS", MIGRATIONS)
    async with await Store.open(path) as store:
        facts = {f.id: f for f in await store.facts(game.id, active_only=False)}
        assert facts[1].retracted_at is not None and facts[2].retracted_at is None
        assert await store.search_recall(game.id, ["cave"], 5) == []
        assert await store.glossary(game.id) == []
        assert [s.stale for s in await store.summaries(game.id, "recap")] == [True]
