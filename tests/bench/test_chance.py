"""``bench chance``: the embedding model's mean cosine of unrelated texts, which its thresholds are scaled by."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.bench import chance
from bot.errors import UserError
from bot.settings import ProcessSettings


def test_bench_chance_measures_the_mean_cosine_of_unrelated_turns(tmp_path: Path, real_embedder, monkeypatch):
    talks = [
        {"conversation": {"session_1": [{"text": f"Conversation {c} says thing number {n} about its own day."}
                                        for n in range(5)]}}
        for c in range(3)
    ]  # fmt: skip
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(talks))
    monkeypatch.setattr(chance, "load_embedder", lambda settings: (real_embedder, None))
    out = io.StringIO()
    figures = chance.run(ProcessSettings(_env_file=None), path, out)
    assert 0 < figures["chance_passage"] < 1 and figures["pairs"] == chance.PAIRS
    assert out.getvalue().splitlines()[-1].startswith("chance_query=")
    path.write_text("{}")
    with pytest.raises(UserError, match="not a LoCoMo file|two conversations"):
        chance.run(ProcessSettings(_env_file=None), path, io.StringIO())
