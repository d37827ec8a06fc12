"""bench locomo's run through the memory: what its figures keep beside the recall, and the whole run beside BM25."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.bench import locomo_run
from bot.settings import ProcessSettings
from tests.bench.test_cli import figures
from tests.bench.test_locomo import TINY
from tests.test_cli import run_bot


@pytest.mark.llm
def test_the_figures_name_the_tokenizer_that_counted_the_budget(tmp_path: Path):
    # A thousand tokens of one tokenizer hold more words than of another: a record says which counted them.
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(TINY))
    out = io.StringIO()
    figures = locomo_run.run(ProcessSettings(_env_file=None, model="tiny"), data, [400], out)
    assert figures["tokens_counted_with"].startswith("SmolLM2-135M-Instruct")
    assert f"tokens counted with {figures['tokens_counted_with']};" in out.getvalue()
    assert 0 <= figures["recall_400"] <= 1


@pytest.mark.llm
def test_bench_locomo_runs_the_memory_beside_bm25_and_ends_with_figures(tmp_path: Path):
    from bot.bench.locomo import load_locomo

    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(TINY))
    result = run_bot("bench", "locomo", str(data), "--budgets", "60,400", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    numbers = figures(result.stdout)
    assert set(numbers) >= {"recall_60", "recall_400", "bm25_recall_60", "bm25_recall_400", "questions"}
    assert list(numbers)[-1] == "heldout_recall_1000" and 0 <= numbers["heldout_recall_1000"] <= 1
    assert "chosen on the other conversations" in result.stdout
    assert numbers["questions"] == 6
    # With room for every turn of these tiny conversations, the memory's context holds all the evidence.
    assert numbers["recall_400"] == 1.0
    assert "multi-hop" in result.stdout and "single-hop" in result.stdout
    # Where the evidence turns sat: every one counted once a budget, all of them shown where all fit.
    for budget in (60, 400):
        table = result.stdout.split(f"the memory at {budget} tokens")[1]
        every = [int(n) for n in next(line for line in table.splitlines() if line.startswith("all")).split()[1:]]
        assert len(every) == 4, table
        assert sum(every) == sum(len(q.evidence) for c in load_locomo(data) for q in c.questions), table
    assert every[0] == sum(every), "at 400 tokens every evidence turn is shown"
