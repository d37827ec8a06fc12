"""The benchmarks run from a fresh checkout and print their figures."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli import run_bot


def figures(stdout: str) -> dict[str, float]:
    last = stdout.strip().splitlines()[-1]
    return {key: float(value) for key, value in (pair.split("=") for pair in last.split())}


def test_bench_context_prints_side_by_side_figures_and_a_name_value_line(tmp_path: Path):
    result = run_bot("bench", "context", "--turns", "120", cwd=tmp_path)
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


def test_bench_refuses_nonsense_turns(tmp_path: Path):
    result = run_bot("bench", "context", "--turns", "0", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip() == "--turns must be at least 1."
