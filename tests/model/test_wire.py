"""The wire to a model server: a call's figures, answers read within their size and time, streamed events."""

from __future__ import annotations

import io
import time
import urllib.error

import pytest

from bot.model.base import CallStats
from bot.model.wire import (
    STREAM_DONE,
    Endless,
    Overdue,
    call_figures,
    error_detail,
    read_then_written,
    read_within,
    stream_events,
    usage_of,
    whole_answer,
)


def _response(data: bytes) -> io.BufferedReader:
    """Stands in for an HTTP response: it has ``read1``, as http.client's does."""
    return io.BufferedReader(io.BytesIO(data))


def _later() -> float:
    return time.monotonic() + 60


def test_llama_cpp_timings_read_as_openai_usage_and_broken_ones_as_none():
    assert usage_of({"prompt_n": 5, "cache_n": 95, "predicted_n": 12}) == {
        "prompt_tokens": 100,
        "completion_tokens": 12,
        "prompt_tokens_details": {"cached_tokens": 95},
    }
    assert usage_of({"prompt_n": None}) == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    assert usage_of({"prompt_n": "many"}) is None


def test_a_calls_figures_count_what_the_cache_spared_and_the_time_to_the_first_token():
    started = time.perf_counter()
    usage = {"prompt_tokens": 100, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 95}}
    stats = call_figures(usage, started, started + 0.25)
    assert (stats.prompt_tokens, stats.reused_tokens, stats.evaluated_tokens, stats.generated_tokens) == (
        100,
        95,
        5,
        12,
    )
    assert stats.first_token_seconds == pytest.approx(0.25) and stats.seconds >= 0
    none = call_figures(None, started, None)
    assert (none.prompt_tokens, none.evaluated_tokens, none.first_token_seconds) == (0, 0, 0.0)


def test_a_whole_answer_gives_its_text_or_nothing_and_its_figures():
    started = time.perf_counter()
    answer = whole_answer({"choices": [{"message": {"content": "Hello."}}], "usage": {"prompt_tokens": 7}}, started)
    assert answer.text == "Hello." and answer.stats.prompt_tokens == 7
    assert whole_answer({"choices": [{"message": {"content": None}}]}, started).text == ""


def test_a_prompt_read_in_one_call_and_written_in_the_next_counts_as_one_call():
    reading = CallStats(100, 0, 100, 0, 0.5, 0.5, state_restored=True)
    writing = CallStats(110, 100, 10, 20, 0.1, 1.0)
    both = read_then_written(reading, writing, before=0.5)
    assert (both.prompt_tokens, both.reused_tokens, both.evaluated_tokens, both.generated_tokens) == (110, 0, 110, 20)
    assert both.first_token_seconds == pytest.approx(0.6) and both.seconds == pytest.approx(1.5)
    assert both.state_restored


def test_an_answer_is_read_up_to_its_limit_and_never_past_its_deadline():
    assert read_within(_response(b"x" * 100), 40, _later()) == b"x" * 40
    assert read_within(_response(b"short"), 40, _later()) == b"short"
    with pytest.raises(Overdue):
        read_within(_response(b"late"), 40, time.monotonic() - 1)


def test_a_stream_yields_its_events_then_done_and_skips_what_is_not_data():
    stream = b': keep-alive\n\ndata: {"n": 1}\n\ndata: {"n": 2}\n\ndata: [DONE]\n\ndata: {"n": 3}\n'
    events = list(stream_events(_response(stream), _later(), most_lines=100))
    assert events == [{"n": 1}, {"n": 2}, STREAM_DONE]


def test_a_stream_that_reports_an_error_sends_no_object_or_never_ends_is_refused():
    with pytest.raises(ValueError, match="slot unavailable"):
        list(stream_events(_response(b'data: {"error": "slot unavailable"}\n'), _later(), most_lines=100))
    with pytest.raises(ValueError, match="not a JSON object"):
        list(stream_events(_response(b"data: [1, 2]\n"), _later(), most_lines=100))
    with pytest.raises(Endless, match="3 lines"):
        list(stream_events(_response(b'data: {"n": 1}\n' * 10), _later(), most_lines=3))
    with pytest.raises(Overdue):
        list(stream_events(_response(b'data: {"n": 1}\n'), time.monotonic() - 1, most_lines=100))


def test_a_servers_error_is_told_by_its_message_or_else_its_reason():
    def error(body: bytes) -> urllib.error.HTTPError:
        return urllib.error.HTTPError("http://model", 503, "Service Unavailable", {}, io.BytesIO(body))

    assert error_detail(error(b'{"error": {"message": "Loading   model"}}')) == "Loading model"
    assert error_detail(error(b'{"error": "busy"}')) == "busy"
    assert error_detail(error(b"<html>oops</html>")) == "Service Unavailable"
