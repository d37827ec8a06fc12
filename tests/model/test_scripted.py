"""The scripted model the tests and the benches play with: replies in the order given, then its default; calls
recorded; a stream cut at a stop string; and the figures a prefix-caching model would give, per game."""

from __future__ import annotations

import pytest

from bot.model import ChatMessage, ScriptedModel
from bot.model.scripted import DEFAULT_REPLY, found_nothing

SYSTEM = ChatMessage(role="system", content="You are the game master. " + "The lighthouse is dark. " * 20)


def _chat(*actions: str) -> list[ChatMessage]:
    return [SYSTEM, *(ChatMessage(role="user", content=action) for action in actions)]


def test_replies_come_in_order_then_the_default_and_each_call_is_recorded():
    model = ScriptedModel()
    model.enqueue("The door opens.", lambda messages: f"You said: {messages[-1].content}", RuntimeError("down"))
    assert model.generate(_chat("I knock."), max_tokens=20).text == "The door opens."
    assert model.generate(_chat("I wait."), max_tokens=20).text == "You said: I wait."
    with pytest.raises(RuntimeError, match="down"):
        model.generate_json(_chat("I ask."), {"type": "object"}, max_tokens=20)
    assert model.generate(_chat("I go."), max_tokens=20).text == DEFAULT_REPLY
    assert [call.kind for call in model.calls] == ["generate", "generate", "json", "generate"]
    assert model.calls[2].schema == {"type": "object"} and model.last("generate").messages[-1].content == "I go."


def test_a_stream_comes_in_pieces_and_ends_before_a_stop_string():
    model = ScriptedModel(chunk_chars=5)
    model.enqueue("The keeper nods.\nMaya: I follow him.")
    written = model.stream(_chat("I greet the keeper."), max_tokens=40, stop=["\nMaya:"])
    pieces = list(written)
    assert pieces == ["The k", "eeper", " nods", "."] and written.stats is not None
    assert model.last().kind == "stream"


def test_the_figures_say_what_a_caching_model_would_reuse_and_a_games_state_comes_back_after_another_call():
    model = ScriptedModel()
    first = model.stream(_chat("I climb the stair."), max_tokens=20, slot="game:1")
    "".join(first)
    assert first.stats is not None and first.stats.reused_tokens == 0, "nothing read before"
    model.generate([ChatMessage(role="system", content="You keep the memory of a game.")], max_tokens=20)
    again = model.stream(_chat("I climb the stair.", "I light the lamp."), max_tokens=20, slot="game:1")
    "".join(again)
    stats = again.stats
    assert stats is not None and stats.state_restored, "the game's own state, after a call for something else"
    assert stats.reused_tokens >= first.stats.prompt_tokens - 2
    assert stats.prompt_tokens == stats.reused_tokens + stats.evaluated_tokens


def test_the_background_jobs_that_answer_in_json_get_a_quiet_answer():
    assert found_nothing([ChatMessage(role="system", content="You record the facts of a game.")]) == '{"facts": []}'
    assert found_nothing([ChatMessage(role="system", content="You track the progress of a chapter.")]) == (
        '{"done": []}'
    )
    assert found_nothing([SYSTEM]) is None, "a GM turn is no job"
