"""The ``bench`` command: each bench's options are checked before it runs, and its figures end its output as
one line of name=value pairs (:func:`figures` reads them, for the benches' own tests), which ``--record`` keeps."""

from __future__ import annotations

from pathlib import Path

from bot.bench.cli import _plain_figures
from tests.test_cli import run_bot


def figures(stdout: str) -> dict[str, float]:
    """The figures of a bench's last line, ``name=value`` pairs."""
    last = stdout.strip().splitlines()[-1]
    return {key: float(value) for key, value in (pair.split("=") for pair in last.split())}


def test_bench_refuses_nonsense_turns(tmp_path: Path):
    result = run_bot("bench", "context", "--turns", "0", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip() == "--turns must be at least 1."


def test_bench_locomo_with_a_missing_file_is_one_line(tmp_path: Path):
    result = run_bot("bench", "locomo", str(tmp_path / "none.json"), cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip() == f"No LoCoMo file at {tmp_path / 'none.json'}."
    bad = run_bot("bench", "locomo", str(tmp_path / "none.json"), "--budgets", "a,b", cwd=tmp_path)
    assert bad.stderr.strip().startswith("--budgets takes whole numbers")


def test_bench_turns_refuses_nonsense(tmp_path: Path):
    result = run_bot("bench", "turns", "--games", "0", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip() == "--games and --turns must be at least 1."


def test_bench_length_refuses_too_few_turns(tmp_path: Path):
    result = run_bot("bench", "length", "--turns", "5", cwd=tmp_path)
    assert result.returncode == 1 and "--turns must be at least 20" in result.stderr


def test_bench_change_refuses_an_arm_it_does_not_have(tmp_path: Path):
    result = run_bot("bench", "change", "--facts", "some", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip() == "--facts takes none, all, or both as none,all."
    result = run_bot("bench", "change", "--turns", "300,x", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip().startswith("--turns takes whole numbers")


def test_a_record_keeps_the_final_figures_whatever_the_bench_returned():
    """A bench returns its figures as a mapping, or as a report whose ``line()`` is the printed last line."""

    class Report:
        def line(self) -> str:
            return "attempts=22 leaks_after=0 note"

    assert _plain_figures({"prefix_reuse": 0.9}) == {"prefix_reuse": 0.9}
    assert _plain_figures(Report()) == {"attempts": "22", "leaks_after": "0"}, "a word that is no figure is left out"
    assert _plain_figures(None) == {}
