"""The narrator's call: what the engine asks of the model for a player's turn."""

from __future__ import annotations

from bot.engine import Engine
from bot.engine.turn.narration import MIN_REPLY_TOKENS
from bot.model import ScriptedModel


async def test_a_turns_reply_is_asked_not_to_end_before_its_least_length_and_background_calls_are_not(
    engine: Engine, scripted: ScriptedModel
):
    started = await engine.start_game("chan", "lighthouse")
    await engine.join(started.game.id, "maya", "Maya")
    scripted.enqueue("The door groans open onto a stair of wet stone. Water drips somewhere below.")
    await engine.act(started.game.id, "maya", "I open the door.")
    turn = scripted.last("stream")
    assert turn.min_tokens == min(MIN_REPLY_TOKENS, turn.max_tokens // 4) > 0
    assert all(call.min_tokens == 0 for call in scripted.calls if call.kind != "stream")


async def test_an_action_the_notes_brief_answers_may_be_answered_short(engine: Engine, scripted: ScriptedModel):
    """Its answer is the reply, however short: made to go on, the default model told it again in asides."""
    started = await engine.start_game("chan", "lighthouse")
    await engine.join(started.game.id, "maya", "Maya")
    await engine.pin(started.game.id, "The chapel candles are laced with arsenic.", "Maya")
    scripted.enqueue("The chapel candles smell of bitter almonds: arsenic, laced into the wax.")
    await engine.act(started.game.id, "maya", "I lean close and sniff the chapel candles.")
    turn = scripted.last("stream")
    assert "arsenic" in turn.prompt_text.rsplit("I lean close", 1)[-1], "the pin is told beside the action"
    assert turn.min_tokens == 0
