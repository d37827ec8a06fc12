"""Per-game settings: overrides of the memory's knobs and the reply length, validated."""

from __future__ import annotations

import pytest

from bot.engine import Engine
from bot.errors import UserError
from bot.model import ScriptedModel
from tests.engine.upkeep.test_memory import play, start


async def test_per_game_settings_change_that_game_only(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    other = (await engine.start_game("elsewhere", "lighthouse")).game
    await engine.join(other.id, "tom", "Tom")
    await engine.set_setting(game.id, "trigger_messages", "6")
    await engine.set_setting(game.id, "reply_tokens", "64")
    await engine.set_setting(game.id, "budgets.secrets", "10")
    await play(engine, game.id, 5)
    for n in range(5):
        await engine.act(other.id, "tom", f"Other {n}.")
        await engine.memory.idle(other.id)
    mine, theirs = await engine.memory_status(game.id), await engine.memory_status(other.id)
    assert mine.folded_through > 0, "six messages make a chunk in this game"
    assert theirs.folded_through == 0, "the other game keeps the default of twenty"
    trace = await engine.last_trace(game.id)
    assert trace.reply_tokens == 64 and trace.layer("secrets").left_out
    mine_turns = [c for c in memory_model.calls if c.kind == "stream" and "Action 5:" in c.prompt_text]
    theirs_turns = [c for c in memory_model.calls if c.kind == "stream" and "Other 4." in c.prompt_text]
    assert mine_turns[-1].max_tokens == 64 and theirs_turns[-1].max_tokens == 128
    with pytest.raises(UserError, match="trigger_messages: Input should be greater than or equal to 2"):
        await engine.set_setting(game.id, "trigger_messages", "1")
