"""``bench context``: prompt tokens and cache reuse over a long scripted game, beside the full history and a
sliding window, ending with a line of name=value figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.test_cli import figures
from tests.test_cli import run_bot


@pytest.mark.llm
def test_bench_context_prints_side_by_side_figures_and_a_name_value_line(tmp_path: Path):
    # Recall by words alone: what this checks is the budget and the reuse beside the baselines, and embedding the
    # scripted words took two thirds of its time (144 s against 42 s for 120 turns); recall by meaning in a long
    # game is tests/bench/test_long_game.py's. The timeout guards against a hang, it is not a speed bound.
    result = run_bot("bench", "context", "--turns", "120", cwd=tmp_path, timeout=900, GM_EMBED_MODEL="none")
    assert "recall by words alone" in result.stdout.splitlines()[0]
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for label in ("this memory", "full history", "sliding window"):
        assert label in out
    numbers = figures(out)
    for key in ("tokens_t10", "tokens_t100", "full_tokens_t100", "prefix_reuse", "window_prefix_reuse", "limit"):
        assert key in numbers, key
    # What the memory is for: the prompt stays within the budget while the full history outgrows it,
    # and more of each prompt is reusable from the cache than with a sliding window.
    assert numbers["tokens_t100"] <= numbers["limit"] < numbers["full_tokens_t100"]
    assert numbers["prefix_reuse"] > numbers["window_prefix_reuse"]
