"""Tests of bot.engine.table.notes: a player's own notes, kept for them alone."""

from __future__ import annotations

import pytest

from bot.engine import Engine
from bot.engine.table.notes import MAX_NOTE_CHARS, MAX_NOTES
from bot.errors import UserError
from tests.engine.test_game import _game_with


async def test_notes_are_kept_in_order_for_their_player_alone_and_cleaned(engine: Engine):
    game = await _game_with(engine, "chan", "Maya", "Tom")
    assert await engine.notes(game.id, "maya") == []
    assert await engine.add_note(game.id, "maya", "  Wren\x1b[1m lied\n about   the boat ") == [
        "Wren lied about the boat"
    ]
    assert await engine.add_note(game.id, "maya", "Check the cellar.") == [
        "Wren lied about the boat",
        "Check the cellar.",
    ]
    assert await engine.notes(game.id, "maya") == ["Wren lied about the boat", "Check the cellar."]
    assert await engine.notes(game.id, "tom") == []


async def test_a_note_is_removed_by_its_number_and_a_number_out_of_range_is_refused(engine: Engine):
    game = await _game_with(engine)
    for text in ("one", "two", "three"):
        await engine.add_note(game.id, "maya", text)
    assert await engine.remove_note(game.id, "maya", 2) == "two"
    assert await engine.notes(game.id, "maya") == ["one", "three"]
    for number in (0, 3, -1):
        with pytest.raises(UserError, match=f"You have no note {number}"):
            await engine.remove_note(game.id, "maya", number)
    assert await engine.notes(game.id, "maya") == ["one", "three"]


async def test_empty_too_long_and_too_many_notes_are_refused_and_nothing_is_kept(engine: Engine):
    game = await _game_with(engine)
    with pytest.raises(UserError, match="Write the note"):
        await engine.add_note(game.id, "maya", " \x00\x1b[0m ")
    with pytest.raises(UserError, match=f"at most {MAX_NOTE_CHARS} characters"):
        await engine.add_note(game.id, "maya", "n" * (MAX_NOTE_CHARS + 1))
    assert await engine.notes(game.id, "maya") == []
    assert len(await engine.add_note(game.id, "maya", "n" * MAX_NOTE_CHARS)) == 1
    for i in range(MAX_NOTES - 1):
        await engine.add_note(game.id, "maya", f"note {i}")
    with pytest.raises(UserError, match=f"You have {MAX_NOTES} notes"):
        await engine.add_note(game.id, "maya", "one more")
    assert len(await engine.notes(game.id, "maya")) == MAX_NOTES


async def test_only_a_seated_player_has_notes(engine: Engine):
    game = await _game_with(engine)
    calls = [
        lambda: engine.notes(game.id, "tom"),
        lambda: engine.add_note(game.id, "tom", "hi"),
        lambda: engine.remove_note(game.id, "tom", 1),
    ]
    for call in calls:
        with pytest.raises(UserError, match="Join the game first"):
            await call()
