"""The turn pipeline: storing and answering an action under the game's turn lock."""

from __future__ import annotations

import asyncio

import pytest

from bot.engine import Engine
from bot.store import EntryKind


async def test_storing_or_answering_an_action_without_the_games_turn_lock_is_refused(engine: Engine, scripted):
    """The lock that keeps a game's log in order is checked where it is needed, not trusted: a caller that forgot
    it, or holds another task's, is stopped before anything is stored."""
    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.join(game.id, "maya", "Maya")
    with pytest.raises(RuntimeError, match="turn lock"):
        await engine.turns.store_action(game.id, "maya", "I climb the stairs.", None)
    lock = engine.sessions[game.id].turn_lock
    async with lock:
        _, action = await engine.turns.store_action(game.id, "maya", "I climb the stairs.", None)
        other = asyncio.create_task(engine.turns.answer(game, action))  # another task: it does not hold it
        with pytest.raises(RuntimeError, match="turn lock"):
            await other
    assert [e for e in await engine.history(game.id, 10) if e.kind is EntryKind.GM and e.id > action.id] == []
