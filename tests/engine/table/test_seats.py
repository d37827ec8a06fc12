"""Tests of bot.engine.table.seats: joining a game as a character, leaving it, and being found seated."""

from __future__ import annotations

import pytest

from bot.engine import Engine
from bot.errors import UserError
from bot.store import EntryKind
from tests.engine.test_game import _game_with


async def test_joining_twice_or_with_a_taken_name_is_refused(engine: Engine):
    game = await _game_with(engine)
    with pytest.raises(UserError, match="already joined"):
        await engine.join(game.id, "maya", "Maya Two")
    with pytest.raises(UserError, match="Someone already plays MAYA"):
        await engine.join(game.id, "other", "MAYA")
    with pytest.raises(UserError, match="at most 40"):
        await engine.join(game.id, "other", "N" * 41)


@pytest.mark.parametrize("name", ["GM", "the Game Master", "Narrator", "gm: Maya"])
async def test_a_name_the_game_itself_uses_is_refused(engine: Engine, name: str):
    game = await _game_with(engine)
    with pytest.raises(UserError, match="a name the game itself uses"):
        await engine.join(game.id, "other", name)
    assert [p.user_key for p in await engine.players(game.id)] == ["maya"]


@pytest.mark.parametrize("name", ["", "   ", "_Maya", "Maya!", "<@123>"])
async def test_an_empty_name_or_one_of_other_characters_is_refused(engine: Engine, name: str):
    game = await _game_with(engine)
    with pytest.raises(UserError, match="a name|letters, digits"):
        await engine.join(game.id, "other", name)
    assert await engine.player(game.id, "other") is None


async def test_a_too_long_description_is_refused_and_a_name_is_cleaned_before_it_is_kept(engine: Engine):
    game = await _game_with(engine)
    with pytest.raises(UserError, match="at most 300"):
        await engine.join(game.id, "tom", "Tom", "d" * 301)
    player = await engine.join(game.id, "tom", "  Tom\x1b[31m   O'Hara\x00 ", " a  fisher\n")
    assert player.name == "Tom O'Hara" and player.description == "a fisher"
    assert (await engine.player(game.id, "tom")).name == "Tom O'Hara"


async def test_joining_and_leaving_are_lines_of_the_log_and_one_who_left_is_not_seated(engine: Engine):
    game = await _game_with(engine)
    await engine.join(game.id, "tom", "Tom", "a fisher")
    left = await engine.leave(game.id, "maya")
    assert left.name == "Maya"
    assert await engine.player(game.id, "maya") is None
    assert [p.name for p in await engine.players(game.id)] == ["Tom"]
    assert "Maya" in [p.name for p in await engine.players(game.id, include_left=True)]
    system = [e.content for e in await engine.store.log(game.id) if e.kind is EntryKind.SYSTEM]
    assert system == ["Maya joins the game.", "Tom joins the game: a fisher", "Maya leaves."]
    with pytest.raises(UserError, match="Join the game first"):
        await engine.leave(game.id, "maya")
    with pytest.raises(UserError, match="Join the game first"):
        await engine.seats.seated(game.id, "maya")
