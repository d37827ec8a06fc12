"""bench locomo's run through the memory: what its figures keep beside the recall."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.bench import locomo_run
from bot.settings import ProcessSettings
from tests.bench.test_locomo import TINY


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
