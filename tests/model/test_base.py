"""The language model's small interface: a call's figures, a reply as it is written, the stop signal."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from bot.model.base import CallStats, ChatMessage, StopSignal, Written, schema_for


def test_a_calls_reuse_is_the_share_of_its_prompt_read_from_the_cache():
    assert CallStats(200, 150, 50, 10, 0.1, 0.5).reuse == 0.75
    assert CallStats(0, 0, 0, 0, 0.0, 0.0).reuse == 0.0


def test_two_calls_for_one_answer_add_up_and_the_second_starts_when_the_first_ended():
    first = CallStats(100, 80, 20, 5, 0.2, 1.0, state_restored=True)
    second = CallStats(110, 105, 5, 30, 0.1, 2.0)
    both = first.then(second)
    assert (both.prompt_tokens, both.reused_tokens, both.evaluated_tokens, both.generated_tokens) == (210, 185, 25, 35)
    assert both.first_token_seconds == pytest.approx(1.1) and both.seconds == pytest.approx(3.0)
    assert both.state_restored and first.then(None) is first


def test_a_written_reply_yields_its_pieces_and_records_its_figures_when_it_ends():
    stats = CallStats(10, 0, 10, 2, 0.1, 0.2)

    def make(written: Written):
        yield "Hello, "
        yield "traveller."
        written.stats = stats

    written = Written.of(make)
    assert written.stats is None
    assert "".join(written) == "Hello, traveller." and written.stats == stats


def test_a_written_reply_closed_early_stops_its_generator():
    closed = []

    def make(written: Written):
        try:
            while True:
                yield "word "
        finally:
            closed.append(True)

    written = Written.of(make)
    assert next(written) == "word "
    written.close()
    assert closed == [True]
    with pytest.raises(StopIteration):
        next(written)


def test_a_stop_signal_runs_its_hooks_when_set_at_once_if_already_set_and_not_after_the_block():
    signal = StopSignal()
    fired: list[str] = []
    with signal.on_set(lambda: fired.append("waiting")):
        assert fired == []
        signal.set()
        assert fired == ["waiting"] and signal.is_set()
    with signal.on_set(lambda: fired.append("late")):
        assert fired == ["waiting", "late"], "already set: the hook runs at once"
    signal.clear()
    with signal.on_set(lambda: fired.append("gone")):
        pass
    signal.set()
    assert fired == ["waiting", "late"], "a hook is dropped once its block ends"


def test_chat_messages_are_frozen_and_know_their_roles():
    message = ChatMessage(role="user", content="I open the door.")
    with pytest.raises(ValidationError):
        message.content = "changed"
    with pytest.raises(ValidationError):
        ChatMessage(role="narrator", content="x")


def test_a_schema_for_the_models_grammar_is_the_types_json_schema():
    class Beats(BaseModel):
        done: list[str]

    schema = schema_for(Beats)
    assert schema["type"] == "object" and schema["required"] == ["done"]
    assert schema["properties"]["done"] == {"items": {"type": "string"}, "title": "Done", "type": "array"}
