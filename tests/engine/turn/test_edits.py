"""The game log's edits through the engine: a reply written again, a message changed or taken back."""

from __future__ import annotations

import pytest

from bot.engine import Engine
from bot.errors import UserError
from bot.model import ScriptedModel
from bot.store import EntryKind
from tests.engine.upkeep.test_memory import start


async def test_retry_replaces_the_last_reply(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    await engine.act(game.id, "maya", "I open the hatch.")
    await engine.memory.idle(game.id)
    better = "The hatch swings up on rusted hinges, and cold air smelling of tar and rope rises from the hold below."
    memory_model.enqueue(better)
    result = await engine.retry(game.id)
    assert result.turn == 1 and result.text == better
    replies = [e for e in await engine.store.log(game.id, include_deleted=True) if e.kind is EntryKind.GM and e.turn]
    assert [(r.content, r.deleted) for r in replies] == [
        (replies[0].content, True),
        (better, False),
    ]
    assert "Maya: I open the hatch." in memory_model.last().prompt_text
    assert replies[0].content.startswith("The GM answers")
    assert replies[0].content not in memory_model.last().prompt_text


async def test_retry_before_any_turn_is_refused(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    with pytest.raises(UserError, match="no GM reply to retry"):
        await engine.retry(game.id)


async def test_edits_and_deletes_reach_the_next_prompt_and_only_the_author_may(engine, memory_model):
    game = await start(engine, "Maya", "Tom")
    await engine.act(game.id, "maya", "I whistle a sea shanty.")
    mine = await engine.last_action_of(game.id, "maya")
    with pytest.raises(UserError, match="only change your own"):
        await engine.edit_entry(game.id, mine.id, "Tom was here.", user_key="tom")
    await engine.edit_entry(game.id, mine.id, "I hum quietly.", user_key="maya")
    await engine.act(game.id, "tom", "I listen.")
    prompt = memory_model.last().prompt_text
    assert "I hum quietly." in prompt and "sea shanty" not in prompt
    await engine.delete_entry(game.id, mine.id, user_key="maya")
    await engine.act(game.id, "tom", "I listen again.")
    assert "I hum quietly." not in memory_model.last().prompt_text
