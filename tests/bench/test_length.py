"""``bench length``: whether a game's short GM turns shorten the model's replies, short and long side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.test_cli import figures
from tests.test_cli import run_bot


@pytest.mark.llm
@pytest.mark.slow
def test_bench_length_plays_short_and_long_turns_and_ends_with_figures(tmp_path: Path):
    result = run_bot("bench", "length", "--turns", "20", cwd=tmp_path, GM_N_CTX="2048", GM_REPLY_TOKENS="24")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "GM turns short" in out and "GM turns long" in out
    numbers = figures(out)
    for key in ("reply_words_after_short", "reply_words_after_long"):
        assert 0 < numbers[key] <= 24, key  # a word is a token at least
    ratio = numbers["reply_words_after_short"] / numbers["reply_words_after_long"]
    assert numbers["length_ratio"] == pytest.approx(ratio, rel=0.01)
