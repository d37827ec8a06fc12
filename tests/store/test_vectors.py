"""The store's side of recall by meaning (F31): what is queued for embedding, what its vectors follow, and an
older database migrated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite

from bot.store import EntryKind, NewEntry, NewFact, Store, Visibility
from bot.store.migrations import MIGRATIONS
from bot.store.models import FactKind


async def _game(store: Store):
    game = await store.create_game("chan", "lighthouse")
    maya = await store.add_player(game.id, "maya", "Maya")
    return game, maya


async def _todo(store: Store) -> dict[str, tuple]:
    return {t.ref: (t.text, t.audience) for t in await store.vector_todo(100)}


async def test_everything_recall_can_return_is_queued_private_messages_with_their_witnesses(store: Store):
    game, maya = await _game(store)
    action, private = await store.append(
        game.id,
        NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", player_id=maya.id, content="I open the door."),
        NewEntry(turn=1, kind=EntryKind.GM, author="GM to Maya", content="A key glints.", visibility=Visibility.PRIVATE,
                 visible_to=(maya.id,)),
    )  # fmt: skip
    async with store.transaction() as db:
        fact = await store.add_fact(
            db, game.id, NewFact(kind=FactKind.ITEM, subject="key", attribute="place", value="mat", turn=1)
        )
    todo = await _todo(store)
    assert todo[f"entry:{action.id}"] == ("Maya: I open the door.", None)
    assert todo[f"entry:{private.id}"] == ("GM: A key glints.", (maya.id,))
    assert todo[f"fact:{fact}"][1] is None


async def test_a_vector_follows_its_fragment_through_edits_deletes_and_superseded_facts(store: Store):
    game, maya = await _game(store)
    (action,) = await store.append(
        game.id, NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", player_id=maya.id, content="I hide the key.")
    )
    todo = await store.vector_todo(10)
    assert await store.save_vectors("m/2", 2, [(t, [b"\0" * 8]) for t in todo]) == [game.id] * len(todo)
    assert await store.vector_counts(game.id, "m/2") == (1, 0)

    [first_row] = [row_id for row_id, row in await store.vector_rows(game.id, "m/2") if row.part == 0]
    await store.edit_entry(action.id, "I bury the key.")
    assert await store.vector_counts(game.id, "m/2") == (0, 1), "the old vector is gone, the new text queued"
    assert (await _todo(store))[f"entry:{action.id}"][0] == "Maya: I bury the key."
    assert store.removed_vector_rows(game.id) == [first_row], "kept in memory, the old vector is marked gone"
    assert store.removed_vector_rows(game.id + 1) == [], "another game's vectors need not be read again"

    stale = await store.vector_todo(10)
    await store.edit_entry(action.id, "I drop the key in the well.")  # edited again before it was embedded
    assert await store.save_vectors("m/2", 2, [(t, [b"\0" * 8]) for t in stale]) == [], "not the stale text"
    assert (await _todo(store))[f"entry:{action.id}"][0] == "Maya: I drop the key in the well."

    await store.delete_entry(action.id)
    assert await _todo(store) == {} and await store.vector_counts(game.id, "m/2") == (0, 0)

    async with store.transaction() as db:
        old = await store.add_fact(
            db, game.id, NewFact(kind=FactKind.ITEM, subject="key", attribute="place", value="desk", turn=1)
        )
        new = await store.add_fact(
            db, game.id, NewFact(kind=FactKind.ITEM, subject="key", attribute="place", value="cellar", turn=2)
        )
    await store.save_vectors("m/2", 2, [(t, [b"\0" * 8]) for t in await store.vector_todo(10)])
    async with store.transaction() as db:
        await store.supersede_fact(db, old, new, 2)
    assert [row.ref for _, row in await store.vector_rows(game.id, "m/2")] == [f"fact:{new}"]


async def test_another_embedding_model_embeds_everything_again_and_drops_the_old_vectors(store: Store):
    game, maya = await _game(store)
    await store.append(
        game.id, NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", player_id=maya.id, content="I wait.")
    )
    assert await store.use_embedding_model("first/384") is False, "the first model of a database"
    await store.save_vectors("first/384", 384, [(t, [b"\0" * 1536]) for t in await store.vector_todo(10)])
    assert await store.use_embedding_model("first/384") is False and await store.vectors_waiting() == 0
    assert await store.use_embedding_model("other/768") is True
    assert await store.vectors_waiting() == 1 and await store.vector_counts(game.id, "first/384") == (0, 1)


async def test_an_older_database_has_everything_queued_when_it_is_migrated(tmp_path: Path):
    path = tmp_path / "old.sqlite3"
    async with aiosqlite.connect(path) as db:
        await db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for name, script in MIGRATIONS:
            if name == "m008_embeddings":
                break
            await db.executescript(f"BEGIN;\n{script}\nINSERT INTO migrations VALUES ('{name}', 'then');\nCOMMIT;")
        await db.execute("INSERT INTO games (id, channel_key, world_id, status, turn, created_at, updated_at)"
                         " VALUES (1, 'chan', 'lighthouse', 'active', 1, 'then', 'then')")  # fmt: skip
        await db.execute(
            "INSERT INTO turn_log (id, game_id, turn, kind, author, visibility, visible_to, content, created_at)"
            " VALUES (1, 1, 1, 'gm', 'GM', 'public', '[]', 'The lamp is out.', 'then'),"
            " (2, 1, 1, 'gm', 'GM to Maya', 'private', '[1]', 'You smell oil.', 'then')"
        )
        await db.execute(
            "INSERT INTO recall_index (text, ref, game_id, turn) VALUES ('GM: The lamp is out.', 'entry:1', 1, 1)"
        )
        await db.commit()
    store = await Store.open(path)
    try:
        assert await _todo(store) == {
            "entry:1": ("GM: The lamp is out.", None),
            "entry:2": ("GM: You smell oil.", (1,)),
        }
    finally:
        await store.close()
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT count(*) FROM migrations WHERE name = 'm008_embeddings'").fetchone() == (1,)
