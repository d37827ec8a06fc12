"""The connection every part of the store shares: a write is all of it or none, and a storage failure is told in
words a player or an admin can act on."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from bot.errors import UserError
from bot.store import Store
from bot.store.base import STORAGE_HINT, StorageError, StoreBase, inserted_id, storage_problem, timestamp

INSERT = "INSERT INTO settings (scope, key, value, updated_at) VALUES (?, ?, ?, '')"


def test_a_row_is_stamped_with_the_time_in_utc():
    stamp = datetime.fromisoformat(timestamp())
    assert stamp.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - stamp) < timedelta(seconds=5)


@pytest.mark.parametrize(
    "error, said",
    [
        ("database or disk is full", "The disk holding the game's database is full"),
        ("database disk image is malformed", "The game's database is damaged (restore a backup: python -m bot backup"),
        ("file is not a database", "The game's database is damaged"),
        ("attempt to write a readonly database", "The game's database cannot be written (the file or its folder is"),
        ("database is locked", "The game's database is busy with another program"),
        ("database table is BUSY", "The game's database is busy with another program"),
        ("no such table: nowhere", "The game's database failed (no such table: nowhere)"),
    ],
)
def test_each_storage_failure_is_named_plainly(error: str, said: str):
    assert storage_problem(sqlite3.OperationalError(error)).startswith(said)


def test_a_storage_error_is_one_a_player_is_shown():
    assert issubclass(StorageError, UserError)
    assert issubclass(Store, StoreBase)


async def test_a_transaction_writes_all_of_it_and_a_failure_inside_writes_none(store: Store):
    async with store.transaction() as db:
        await db.execute(INSERT, ("game:1", "a", "1"))
        await db.execute(INSERT, ("game:1", "b", "2"))
    assert await store.scope_values("game:1") == {"a": 1, "b": 2}

    with pytest.raises(ValueError, match="changed my mind"):
        async with store.transaction() as db:
            await db.execute(INSERT, ("game:1", "c", "3"))
            raise ValueError("changed my mind")
    assert await store.scope_values("game:1") == {"a": 1, "b": 2}, "the half-done write was rolled back"
    assert store.failing_writes == 0, "a caller's own error is not a storage failure"


async def test_a_broken_rule_of_the_schema_is_left_for_the_caller_to_explain(store: Store):
    with pytest.raises(sqlite3.IntegrityError):
        async with store.transaction() as db:
            await db.execute(INSERT, ("game:1", "a", "1"))
            await db.execute(INSERT, ("game:1", "a", "2"))  # (scope, key) is unique
    assert await store.scope_values("game:1") == {}
    assert store.failing_writes == 0


async def test_a_write_the_database_refuses_says_nothing_was_saved_and_is_counted_until_one_succeeds(store: Store):
    for n in (1, 2):
        with pytest.raises(StorageError) as refused:
            async with store.transaction() as db:
                await db.execute(INSERT, ("game:1", "a", "1"))
                await db.execute("INSERT INTO nowhere VALUES (1)")
        assert str(refused.value) == (
            f"The game's database failed (no such table: nowhere): this was not saved. {STORAGE_HINT}"
        )
        assert store.failing_writes == n
    assert await store.scope_values("game:1") == {}
    await store.set_scope_value("game:1", "a", 1)
    assert store.failing_writes == 0, "a saved write clears the count"


async def test_two_writers_take_turns_on_the_shared_connection(store: Store):
    order: list[str] = []

    async def write(name: str) -> None:
        async with store.transaction() as db:
            order.append(f"{name} begins")
            await db.execute(INSERT, (f"game:{name}", "x", "1"))
            await asyncio.sleep(0.01)
            order.append(f"{name} ends")

    await asyncio.gather(write("1"), write("2"))
    assert order in (
        ["1 begins", "1 ends", "2 begins", "2 ends"],
        ["2 begins", "2 ends", "1 begins", "1 ends"],
    ), order
    assert set(await store.scopes("game:")) == {"game:1", "game:2"}


async def test_a_writer_stopped_while_it_begins_leaves_the_connection_free_for_the_next(store: Store):
    """A background job cancelled at shutdown, at any point of opening its write: the next write still begins."""
    for ticks in range(6):

        async def write(ticks: int = ticks) -> None:
            async with store.transaction() as db:
                await db.execute(INSERT, ("cancelled", str(ticks), "1"))

        task = asyncio.create_task(write())
        for _ in range(ticks):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await store.set_scope_value("after", str(ticks), ticks)
    assert await store.scope_values("after") == {str(n): n for n in range(6)}


async def test_a_read_the_database_cannot_answer_is_a_storage_error(store: Store):
    with pytest.raises(StorageError, match=r"^The game's database failed \(no such table: nowhere\)\. An admin"):
        await store._one("SELECT * FROM nowhere")
    with pytest.raises(StorageError, match="no such table"):
        await store._all("SELECT * FROM nowhere")
    with pytest.raises(StorageError, match="returned no row"):
        await store._value("SELECT 1 WHERE 0")
    assert await store._value("SELECT count(*) FROM settings") == 0
    assert await store._one("SELECT * FROM settings") is None
    assert await store._all("SELECT * FROM settings") == []


async def test_an_insert_tells_its_new_rows_id(store: Store):
    async with store.transaction() as db:
        first = inserted_id(await db.execute(INSERT, ("s", "a", "1")))
        second = inserted_id(await db.execute(INSERT, ("s", "b", "1")))
    assert second == first + 1
    assert (await store._one("SELECT key FROM settings WHERE rowid = ?", (second,)))["key"] == "b"
    with pytest.raises(RuntimeError, match="no new row id"):
        inserted_id(SimpleNamespace(lastrowid=None))  # type: ignore[arg-type]
