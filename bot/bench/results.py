"""The benches' figures in one place: each run recorded with its date, commit and machine, and the page made of them.

``python -m bot bench NAME ... --record`` appends the bench's final figures (and, where it has them, its series:
a value per turn) to ``docs/results.jsonl``; ``python -m bot measurements`` writes ``docs/measurements.md`` from
that file: each bench's latest run, with the date, commit and machine it was measured on, and plots made with
matplotlib where a reader would rather look than read. The user pages link there instead of carrying figures.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.settings import PROJECT_ROOT

RESULTS = PROJECT_ROOT / "docs" / "results.jsonl"
PAGE = PROJECT_ROOT / "docs" / "measurements.md"
PLOTS = PROJECT_ROOT / "docs" / "measurements"

# What each bench measures, for the page, in the order the page shows them.
ABOUT = {
    "secrets": "The world's secrets kept three ways side by side: every secret in the GM's prompt (the guard alone "
    "keeps them), held by the engine until the players uncover them, and no secret at all (the floor).",
    "quality": "How often replies break a rule a reader can check (speaking for a player, echoing the action, a "
    "copied example, cut off), with the reply rules off and on; and the private clue's delivery.",
    "change": "Values that change (a thing moved, a code, a side, an end): whether the latest value reaches the "
    "GM's prompt, and whether an older one reaches it unmarked; chains tuned on and chains held out.",
    "scenes": "Chunk summaries ended at a fixed length or where a scene ends, each written by the model: whether "
    "the summary that covers a change carries it, or tells an older value as current.",
    "context": "What a long scripted game costs in prompt tokens, and how much of each prompt the model's cache "
    "can reuse, against the full history and a sliding window.",
    "reveals": "The threshold of the worlds' conditions by meaning, set on one world's actions, held out on the "
    "other's.",
    "locomo": "Evidence recall on LoCoMo's conversations at several token budgets, against plain BM25.",
    "turns": "Time to the GM's first words per turn, against what reading and writing alone would take.",
    "tables": "Several tables at once, in process and through llama.cpp's server.",
}


def machine() -> dict[str, object]:
    """What the figures were measured on: cores, processor, memory, GPU."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = round(pages / 2**30)
    except (ValueError, OSError, AttributeError):
        pass
    gpu = None
    if shutil.which("nvidia-smi"):
        try:
            found = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                   text=True, timeout=10)  # fmt: skip
            gpu = found.stdout.strip().splitlines()[0] if found.returncode == 0 and found.stdout.strip() else None
        except (OSError, subprocess.TimeoutExpired):
            gpu = None
    return {"cores": os.cpu_count(), "cpu": cpu, "memory_gib": memory, "gpu": gpu}


def commit() -> str | None:
    """The commit the code is at, with ``+changes`` when the work tree differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                              text=True, timeout=10)  # fmt: skip
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=PROJECT_ROOT,
                               capture_output=True, text=True, timeout=10)  # fmt: skip
        return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return None


def record(
    bench: str, command: str, figures: Mapping[str, object], series: Mapping[str, Sequence[float]] | None = None,
    path: Path = RESULTS, *, at: str | None = None,
) -> dict[str, object]:  # fmt: skip
    """Append one run of a bench to the results file; what was written. ``at``: the commit the run started at (by
    default, the one the code is at now)."""
    entry: dict[str, object] = {
        "bench": bench,
        "command": command,
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "commit": at or commit(),
        "machine": machine(),
        "figures": {k: v for k, v in figures.items() if isinstance(v, int | float | str)},
        "series": {k: list(v) for k, v in (series or {}).items()},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(entry) + "\n")
    return entry


def load(path: Path = RESULTS) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def anchor(bench: str) -> str:
    """The page's anchor for a bench's section: ``docs/measurements.md#bench-secrets``."""
    return f"bench-{bench}"


def _machine_text(m: Mapping[str, object]) -> str:
    gpu = f", {m['gpu']}" if m.get("gpu") else ", no GPU"
    memory = f", {m['memory_gib']} GiB" if m.get("memory_gib") else ""
    return f"{m.get('cores')} cores ({m.get('cpu')}){memory}{gpu}"


def render(results: Sequence[dict], page: Path = PAGE, plots: Path = PLOTS) -> str:
    """The measurements page: each bench's latest run (and the runs before it, in a line each), with plots."""
    latest: dict[str, dict] = {}
    earlier: dict[str, list[dict]] = {}
    for entry in results:
        if entry["bench"] in latest:
            earlier.setdefault(entry["bench"], []).append(latest[entry["bench"]])
        latest[entry["bench"]] = entry
    lines = [
        "# Measurements",
        "",
        "Made by `python -m bot measurements` from `docs/results.jsonl`, which the benches add to with `--record`"
        " (`python -m bot bench NAME ... --record`): do not edit this page by hand. Each section is one bench's"
        " latest run, with the date, the commit and the machine it was measured on; what each figure means is in"
        " the bench's own help (`python -m bot bench NAME --help`) and in the page it belongs to.",
        "",
    ]
    order = [b for b in ABOUT if b in latest] + sorted(b for b in latest if b not in ABOUT)
    drawn = _plots(latest, plots)
    for bench in order:
        entry = latest[bench]
        lines += [
            f'<a id="{anchor(bench)}"></a>',
            f"## bench {bench}",
            "",
            ABOUT.get(bench, ""),
            "",
            f"Measured {entry['date']} at commit {entry.get('commit') or '?'} on {_machine_text(entry['machine'])}:"
            f" `{entry['command']}`",
            "",
            "| figure | value |",
            "|---|---|",
        ]
        lines += [f"| `{k}` | {_value(v)} |" for k, v in entry["figures"].items()]
        lines.append("")
        for title, file in drawn.get(bench, []):
            lines += [f"![{title}](measurements/{file})", ""]
        for old in reversed(earlier.get(bench, [])[-5:]):
            lines.append(
                f"- earlier: {old['date']}, {old.get('commit') or '?'}, {_machine_text(old['machine'])}: "
                + ", ".join(f"{k}={_value(v)}" for k, v in list(old["figures"].items())[:6])
            )
        if earlier.get(bench):
            lines.append("")
    text = "\n".join(lines).rstrip() + "\n"
    page.write_text(text, encoding="utf-8")
    return text


def _value(value: object) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _plots(latest: Mapping[str, dict], folder: Path) -> dict[str, list[tuple[str, str]]]:
    """The plots of the benches' series, as PNG files in ``folder``: (title, file name) by bench."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    folder.mkdir(parents=True, exist_ok=True)
    drawn: dict[str, list[tuple[str, str]]] = {}
    for bench, entry in latest.items():
        series = entry.get("series") or {}
        charts = _charts(bench, series)
        for name, title, ylabel, lines in charts:
            figure, axes = pyplot.subplots(figsize=(7, 3.2), dpi=100)
            for label, xs, ys in lines:
                axes.plot(xs, ys, label=label, linewidth=1.2)
            axes.set_title(title, fontsize=10)
            axes.set_xlabel("turn")
            axes.set_ylabel(ylabel)
            axes.grid(alpha=0.3)
            if len(lines) > 1:
                axes.legend(fontsize=8)
            figure.tight_layout()
            file = f"{bench}-{name}.png"
            figure.savefig(folder / file, metadata={"Software": None})
            pyplot.close(figure)
            drawn.setdefault(bench, []).append((title, file))
    return drawn


def _charts(bench: str, series: Mapping[str, list]) -> list[tuple[str, str, str, list]]:
    """What to draw of a bench's series: (file name, title, y label, [(label, x, y)])."""
    turn = list(range(1, 1 + max((len(v) for v in series.values()), default=0)))

    def lines(*named: tuple[str, str]) -> list:
        return [(label, turn[: len(series[key])], series[key]) for label, key in named if series.get(key)]

    charts = []
    if bench == "context" and series.get("reuse"):
        charts.append(("reuse", "Share of each prompt the model's cache reuses, by turn", "reuse",
                       lines(("this memory", "reuse"), ("sliding window", "window_reuse"))))  # fmt: skip
    if bench == "context" and series.get("tokens"):
        charts.append(("tokens", "Prompt tokens by turn", "tokens",
                       lines(("this memory", "tokens"), ("sliding window", "window_tokens"))))  # fmt: skip
    timed = {m.group(2): v for k, v in series.items() if (m := re.fullmatch(r"(first_text|reply)_(.+)", k))}
    if timed:
        charts.append(("time", "Seconds to the GM's reply, by turn", "seconds",
                       [(label.replace("_", " "), list(range(1, len(v) + 1)), v)
                        for label, v in sorted(timed.items())]))  # fmt: skip
    return charts
