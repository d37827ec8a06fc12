from __future__ import annotations

from pydantic import BaseModel, Field

from bot.model import ScriptedModel, generate_object


class Verdict(BaseModel):
    done: bool
    reason: str = Field(max_length=80)


FALLBACK = Verdict(done=False, reason="no answer")
ASK = []


def test_valid_json_comes_back_validated_on_first_try():
    model = ScriptedModel()
    model.enqueue('{"done": true, "reason": "the lamp is lit"}')
    result = generate_object(model, ASK, Verdict, fallback=FALLBACK)
    assert result.ok and result.attempts == 1
    assert result.value == Verdict(done=True, reason="the lamp is lit")
    assert model.calls[0].kind == "json"
    assert model.calls[0].schema["properties"]["reason"]["maxLength"] == 80


def test_a_raw_newline_inside_a_string_is_forgiven():
    model = ScriptedModel()
    model.enqueue('{"done": true, "reason": "the lamp\nis lit"}')
    result = generate_object(model, ASK, Verdict, fallback=FALLBACK)
    assert result.ok and result.attempts == 1 and result.value.reason == "the lamp\nis lit"


def test_broken_once_is_retried_with_the_error_shown():
    model = ScriptedModel()
    model.enqueue('{"done": true, "reason": ', '{"done": false, "reason": "not yet"}')
    result = generate_object(model, ASK, Verdict, fallback=FALLBACK)
    assert result.ok and result.attempts == 2
    assert result.value.reason == "not yet"
    assert len(result.errors) == 1
    retry_prompt = model.calls[1].messages
    assert retry_prompt[-2].content == '{"done": true, "reason": '
    assert "not valid" in retry_prompt[-1].content


def test_broken_twice_falls_back_visibly():
    model = ScriptedModel()
    model.enqueue("not json at all", '{"done": "perhaps", "reason": "x"}', '{"done": true, "reason": "late"}')
    result = generate_object(model, ASK, Verdict, fallback=FALLBACK)
    assert not result.ok
    assert result.value is FALLBACK
    assert result.attempts == 2 and len(result.errors) == 2
    assert len(model.calls) == 2, "one retry, not more"


def test_schema_violations_count_as_broken():
    model = ScriptedModel()
    model.enqueue('{"done": true, "reason": "' + "x" * 200 + '"}', '{"done": true}')
    result = generate_object(model, ASK, Verdict, fallback=FALLBACK)
    assert not result.ok
    assert "reason" in result.errors[0]


def test_a_model_that_raises_falls_back_too():
    model = ScriptedModel()
    model.enqueue(RuntimeError("decode failed"), '{"done": true, "reason": "ok"}')
    result = generate_object(model, ASK, Verdict, fallback=FALLBACK)
    assert result.ok and result.attempts == 2
    assert result.errors == ["model error: decode failed"]
