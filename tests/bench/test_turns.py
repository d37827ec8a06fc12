"""bench turns (bot/bench/turns.py): a turn the GM had nothing to say for is tried again, as a player would; the
three runs with the real model, and the live run alone, end with their figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.bench.turns import Run, played
from bot.engine import Engine
from bot.engine.turn.results import ModelFailed
from bot.model import ScriptedModel
from tests.bench.test_cli import figures
from tests.test_cli import run_bot


async def _seated(engine: Engine) -> int:
    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.join(game.id, "maya", "Maya")
    await engine.warmups.idle()
    return game.id


async def test_a_turn_the_gm_had_nothing_to_say_for_is_retried_once_and_counted(
    engine: Engine, scripted: ScriptedModel
):
    game_id = await _seated(engine)
    answer = "The lamp room door swings open; oil and brass polish scent the stale air of the tower."
    scripted.enqueue("", "", answer)  # nothing, asked again: nothing, "Try again."; the player presses Retry
    run = Run("live")
    shown: list[str] = []
    result = await played(engine, game_id, "maya", "I open the lamp room door.", shown.append, run)
    assert result.text == answer and "".join(shown) == answer
    assert run.retried == 1


async def test_a_retry_with_nothing_to_say_again_is_the_players_error(engine: Engine, scripted: ScriptedModel):
    game_id = await _seated(engine)
    scripted.enqueue("", "", "", "")
    with pytest.raises(ModelFailed):
        await played(engine, game_id, "maya", "I open the lamp room door.", run=Run("live"))


@pytest.mark.llm
@pytest.mark.slow
def test_bench_turns_plays_the_three_runs_with_the_real_model_and_ends_with_figures(tmp_path: Path):
    # One game: each game costs every run its cold read and its background work; two games at once are played
    # by the live run's test below.
    result = run_bot(
        "bench", "turns", "--games", "1", "--turns", "2", cwd=tmp_path, GM_N_CTX="2048", GM_REPLY_TOKENS="24",
        GM_SEED="3", timeout=1800,  # three runs of the real model: a guard against a hang, not a speed bound
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "background on:" in out and "background held to the end:" in out and "words alone:" in out
    assert "recall by meaning with all-MiniLM-L6-v2" in out
    assert "prompt tokens read at" in out, "the machine's speed is measured first"
    rows = [line.split() for line in out.splitlines() if line[:4].strip().isdigit()]
    assert len(rows) == 2 * 3, "every GM turn of the game, in the three runs"
    numbers = figures(out)
    for key in ("first_text_p50", "first_text_p95", "first_text_p95_no_jobs", "jobs_delay_ratio",
                "floor_ratio_p50", "live_reuse", "engine_share", "calls_per_turn"):  # fmt: skip
        assert key in numbers, key
    assert 0 < numbers["first_text_p50"] <= numbers["first_text_p95"]
    # The ratios are of the unrounded times; the printed times are rounded to the millisecond.
    assert numbers["jobs_delay_ratio"] == pytest.approx(
        numbers["first_text_p95"] / numbers["first_text_p95_no_jobs"], abs=0.002
    )
    assert 0 < numbers["live_reuse"] < 1, "a game's second turn reuses its first prompt"
    assert 0 <= numbers["engine_share"] < 1 and numbers["calls_per_turn"] > 0
    assert numbers["meaning_p50_ratio"] == pytest.approx(
        numbers["first_text_p50"] / numbers["first_text_p50_words"], abs=0.002
    )
    assert numbers["meaning_paired_ratio_p50"] > 0, "each turn beside the same turn by words alone"
    assert "facts not extracted, at an action" in out and numbers["facts_lag_max"] >= numbers["facts_lag_p50"] >= 0
    assert 0 <= numbers["summary_waiting_share"] <= 1 and numbers["catch_up_s"] >= 0
    assert numbers["query_ms_p50"] > 0, "each turn's query was embedded"


@pytest.mark.llm
@pytest.mark.slow
def test_bench_turns_without_comparison_plays_the_live_run_alone(tmp_path: Path):
    result = run_bot(
        "bench", "turns", "--games", "2", "--turns", "2", "--no-compare", cwd=tmp_path, GM_N_CTX="2048",
        GM_REPLY_TOKENS="24", GM_SEED="3", timeout=1200,  # a guard against a hang, not a speed bound
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "background on:" in out and "held to the end" not in out and "words alone" not in out
    rows = [line.split() for line in out.splitlines() if line[:4].strip().isdigit()]
    assert len(rows) == 2 * 2, "both games' two turns, played at once in the live run, and no other run"
    assert {row[0] for row in rows} == {"1", "2"}
    numbers = figures(out)
    assert 0 < numbers["first_text_p50"] <= numbers["first_text_p95"] and "jobs_delay_ratio" not in numbers
    assert numbers["catch_up_s"] >= 0 and numbers["facts_lag_max"] >= 0
    # A player's turn while another game's prompt is read ahead, and with the model idle, beside one read's step.
    assert "a player acting while another game's prompt is read ahead" in out
    assert numbers["read_ahead_wait"] >= 0 and numbers["idle_wait"] >= 0 and numbers["read_step"] > 0
    assert numbers["read_ahead_interrupted"] in (0, 1)
