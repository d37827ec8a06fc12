"""The story's chapters through the engine: beats judged done, a broken judgement, a chapter's end."""

from __future__ import annotations

import json

import pytest

from bot.engine import Engine
from bot.errors import UserError
from bot.model import ScriptedModel
from tests.engine.upkeep.test_memory import play, scripted_memory, start


async def test_beats_judged_done_finish_the_chapter(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)

    def judge(messages):
        if messages[0].content.startswith("You track the progress"):
            return json.dumps({"done": ["land", "log-book"]})
        return scripted_memory(messages)

    memory_model.default = judge
    await play(engine, game.id, 1)
    status = await engine.memory_status(game.id)
    assert status.chapter_index == 1 and status.chapter_title == "The Lamp" and status.beats_done == []
    assert [r.text for r in status.chapter_recaps] == ["Recap: the chapter ended."]
    json_calls = [c for c in memory_model.calls if c.kind == "json" and "done" in c.schema["properties"]]
    assert json_calls and json_calls[0].schema["properties"]["done"]["items"]["enum"] == ["land", "log-book"]


async def test_a_broken_beat_judgement_changes_nothing(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)

    def judge(messages):
        if messages[0].content.startswith("You track the progress"):
            return '{"done": ["not-a-beat"]}'
        return scripted_memory(messages)

    memory_model.default = judge
    await play(engine, game.id, 2)
    status = await engine.memory_status(game.id)
    assert status.chapter_index == 0 and status.beats_done == []
    assert "beat judgement" in status.last_error


async def test_the_story_stays_about_flat_across_chapters(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    await play(engine, game.id, 40)
    before = (await engine.memory_status(game.id)).story_summary.words
    report = await engine.next_chapter(game.id)
    assert report.finished == "Arrival" and report.next == "The Lamp"
    assert report.story_words_after <= before
    last = await engine.next_chapter(game.id)
    assert last.finished == "The Lamp" and last.next is None
    with pytest.raises(UserError, match="already done"):
        await engine.next_chapter(game.id)
    await engine.act(game.id, "maya", "I look at the sea.")
    assert "Every chapter is done" in memory_model.last().messages[0].content
