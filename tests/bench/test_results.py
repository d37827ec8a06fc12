"""The benches' figures in one place: recorded with date, commit and machine, rendered with plots."""

from __future__ import annotations

import json
from pathlib import Path

from bot.bench import results


def test_a_recorded_run_carries_its_date_commit_and_machine_and_the_page_shows_the_latest(tmp_path: Path):
    path = tmp_path / "results.jsonl"
    command = "python -m bot bench context --turns 3 --record"
    first = {"reuse": [0.5, 0.8, 0.9], "window_reuse": [0.5, 0.4, 0.5], "tokens": [100, 120, 130]}
    results.record("context", command, {"prefix_reuse": 0.88}, first, path)
    second = {"reuse": [0.5, 0.9, 0.95], "tokens": [100, 110, 115]}
    results.record("context", command, {"prefix_reuse": 0.9012}, second, path)
    results.record("secrets", "python -m bot bench secrets --record", {"stopped_ratio": 0.18},
                   {"reply_prompt": [30.1, 25.0], "reply_held": [12.0, 9.5]}, path)  # fmt: skip
    entries = results.load(path)
    assert len(entries) == 3 and entries[0]["machine"]["cores"] and entries[0]["date"]
    assert json.loads(path.read_text().splitlines()[0])["figures"] == {"prefix_reuse": 0.88}
    page = results.render(entries, tmp_path / "measurements.md", tmp_path / "plots")
    assert '<a id="bench-context"></a>' in page and "| `prefix_reuse` | 0.901 |" in page, "the latest run"
    assert "- earlier: " in page and "prefix_reuse=0.88" in page, "the run before, in a line"
    assert "cores (" in page and "at commit" in page
    assert page.index("## bench secrets") < page.index("## bench context"), "in the order of the page"
    plots = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert plots == ["context-reuse.png", "context-tokens.png", "secrets-time.png"]
    assert "![Seconds to the GM's reply, by turn](measurements/secrets-time.png)" in page


def test_the_measurements_page_is_the_one_the_results_make(tmp_path: Path):
    """docs/measurements.md is generated: rendered again from docs/results.jsonl, it says the same."""
    entries = results.load()
    assert entries, "docs/results.jsonl holds the runs the docs' figures come from"
    page = results.render(entries, tmp_path / "measurements.md", tmp_path / "plots")
    assert page == results.PAGE.read_text(), "run python -m bot measurements"
    assert len({e["bench"] for e in entries if e.get("series")}) >= 2 and len(list((tmp_path / "plots").iterdir())) >= 3
