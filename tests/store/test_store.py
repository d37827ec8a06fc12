from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.store import EntryKind, NewEntry, Store, Visibility


async def test_unwritable_path_is_a_clear_error(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(UserError, match=r"Cannot open the database at .*file/gm.sqlite3"):
        await Store.open(blocker / "gm.sqlite3")


async def test_turn_log_keeps_everything_a_turn_records(store: Store):
    game = await store.create_game("chan", "lighthouse")
    maya = await store.add_player(game.id, "u1", "Maya", "a diver")
    action, reply = await store.append(
        game.id,
        NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", player_id=maya.id, content="I dive.", message_id="42"),
        NewEntry(turn=1, kind=EntryKind.GM, author="GM", content="Cold water.", visibility=Visibility.PRIVATE,
                 visible_to=(maya.id,)),
        turn_done=1,
    )  # fmt: skip
    assert (action.turn, action.kind, action.author, action.message_id) == (1, EntryKind.ACTION, "Maya", "42")
    assert action.visibility is Visibility.PUBLIC and action.created_at is not None
    assert reply.visibility is Visibility.PRIVATE and reply.visible_to == (maya.id,)
    assert (await store.game(game.id)).turn == 1
    assert [e.id for e in await store.log(game.id)] == [action.id, reply.id]
    assert [e.id for e in await store.recent_log(game.id, 1)] == [reply.id]


async def test_one_active_game_per_channel(store: Store):
    first = await store.create_game("chan", "lighthouse")
    with pytest.raises(UserError, match="already running"):
        await store.create_game("chan", "lighthouse")
    await store.end_game(first.id)
    second = await store.create_game("chan", "lighthouse")
    assert (await store.active_game("chan")).id == second.id
    assert (await store.reactivate_game(first.id)).status == "active"
    assert (await store.game(second.id)).status == "ended"


async def test_a_player_sits_once(store: Store):
    game = await store.create_game("chan", "lighthouse")
    player = await store.add_player(game.id, "u1", "Maya")
    with pytest.raises(UserError, match="already joined"):
        await store.add_player(game.id, "u1", "Maya again")
    await store.remove_player(player.id)
    assert await store.players(game.id) == []
    assert (await store.add_player(game.id, "u1", "Maya")).id != player.id


async def test_a_failed_transaction_writes_nothing(store: Store):
    game = await store.create_game("chan", "lighthouse")
    with pytest.raises(sqlite3.IntegrityError):
        await store.append(
            game.id,
            NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", content="first"),
            NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", player_id=999, content="no such player"),
        )
    assert await store.log(game.id) == []


async def test_public_entries_record_the_players_seated_then_and_private_ones_their_addressees(store: Store):
    game = await store.create_game("chan", "lighthouse")
    maya = await store.add_player(game.id, "u1", "Maya")
    (early,) = await store.append(game.id, NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", content="I wait."))
    tom = await store.add_player(game.id, "u2", "Tom")
    (both,) = await store.append(game.id, NewEntry(turn=1, kind=EntryKind.GM, author="GM", content="Fog."))
    (secret,) = await store.append(
        game.id,
        NewEntry(turn=1, kind=EntryKind.GM, author="GM to Tom", content="Oars.", visibility=Visibility.PRIVATE,
                 visible_to=(tom.id,)),
    )  # fmt: skip
    await store.remove_player(maya.id)
    (late,) = await store.append(game.id, NewEntry(turn=2, kind=EntryKind.GM, author="GM", content="Dawn."))
    assert early.visible_to == (maya.id,)
    assert both.visible_to == (maya.id, tom.id)
    assert secret.visible_to == (tom.id,)
    assert late.visible_to == (tom.id,)


async def test_one_helper_gets_a_row_or_says_it_is_missing_and_one_inserts_or_says_what_was_taken(store: Store):
    """The store's get-or-error and insert-or-error shapes are one helper each, used by games, players, entries,
    pins and facts alike."""
    game = await store.create_game("chan", "lighthouse")
    with pytest.raises(UserError, match="There is no game 999"):
        await store.game(999)
    with pytest.raises(UserError, match="There is no such pin"):
        await store.pin(999)
    with pytest.raises(UserError, match="already running here"):
        await store.create_game("chan", "lighthouse")
    assert [g.id for g in await store.games()] == [game.id], "the refused insert left nothing"
    sql = "INSERT INTO games (channel_key, world_id, created_at, updated_at) VALUES (?, ?, '', '')"
    with pytest.raises(UserError, match="taken"):
        await store._insert(sql, ("chan", "lighthouse"), "taken")
    new = await store._insert(sql, ("other", "lighthouse"), "taken")
    assert (await store._row("games", new, "missing"))["channel_key"] == "other"
