"""The ``bench`` command: each bench's options, its checks of them, and its run; ``--record`` keeps the final
figures in docs/results.jsonl with the commit the run started at (see :mod:`bot.bench.results`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from bot.bench import results
from bot.errors import UserError
from bot.settings import ProcessSettings

Series = dict[str, list[float]]


def add_bench_parsers(commands: argparse._SubParsersAction) -> None:
    """``bench`` and its benches, each with ``--record``."""
    bench_parser = commands.add_parser("bench", help="measure the memory; prints figures")
    benches = bench_parser.add_subparsers(dest="bench", required=True)
    _memory_benches(benches)
    _play_benches(benches)
    for each in benches.choices.values():
        each.add_argument(
            "--record", action="store_true",
            help="add the final figures, with the date, commit and machine, to docs/results.jsonl",
        )  # fmt: skip


def _memory_benches(benches: argparse._SubParsersAction) -> None:
    """The benches of the memory and the secrets."""
    context_parser = benches.add_parser("context", help="prompt tokens and cache reuse over a long scripted game")
    context_parser.add_argument("--turns", type=int, default=500, help="turns to play (default 500)")
    context_parser.add_argument("--seed", type=int, default=7)
    context_parser.add_argument("--world", default="hollow-manor", help="world to play (default hollow-manor)")
    locomo_parser = benches.add_parser("locomo", help="evidence recall on LoCoMo against plain BM25")
    locomo_parser.add_argument("path", type=Path, help="a LoCoMo JSON file (shared/bench/locomo-dev.json)")
    locomo_parser.add_argument("--budgets", default="500,1000,2000,4000", help="token budgets, comma-separated")
    leaks_parser = benches.add_parser("leaks", help="players try to extract secrets: leaks before and after the guard")
    leaks_parser.add_argument(
        "--model", choices=("bundled", "leaky"), default="bundled",
        help="the configured model (default), or a scripted GM that leaks every secret it is given",
    )  # fmt: skip
    secrets_parser = benches.add_parser(
        "secrets", help="the world's secrets kept three ways: in the prompt, held by the engine, none (the floor)"
    )
    secrets_parser.add_argument("--arms", default="prompt,held,floor", help="which ways (default all three)")
    secrets_parser.add_argument("--turns", type=int, default=None, help="turns a world (default the whole script)")
    secrets_parser.add_argument("--world", default=None, help="one world (an id or a file) instead of both shipped")
    change_parser = benches.add_parser("change", help="values that change: is the latest told, and the older marked")
    change_parser.add_argument("--turns", default="300,1000", help="game lengths, comma-separated (default 300,1000)")
    change_parser.add_argument(
        "--replies", nargs="?", const="all", choices=("all", "held-out"), default=None,
        help="the configured model answers at the end of the shortest game (held-out: those questions alone)",
    )  # fmt: skip
    change_parser.add_argument(
        "--facts", default="none,all",
        help="the facts job's arms: finding nothing (none), every change (all), or both (default none,all)",
    )  # fmt: skip
    scenes_parser = benches.add_parser(
        "scenes", help="chunk summaries ended at a length or at a scene's end: which carry the changes"
    )
    scenes_parser.add_argument("--turns", type=int, default=120, help="turns of the change game (default 120)")
    scenes_parser.add_argument(
        "--arms", default="length,scene", help="where chunks end: length, scene, length:N (N messages); default both"
    )
    benches.add_parser("reveals", help="the meaning threshold of the worlds' conditions, set on one world, held out")
    chance_parser = benches.add_parser(
        "chance", help="the embedding model's mean cosine of unrelated texts, which its thresholds are scaled by"
    )
    chance_parser.add_argument("path", type=Path, help="a LoCoMo JSON file (shared/bench/locomo-dev.json)")
    recall_parser = benches.add_parser(
        "recall", help="recall by meaning in a long game, lore by meaning, and search time at 10k and 100k fragments"
    )
    recall_parser.add_argument("--turns", type=int, default=300, help="turns of the long game (default 300)")


def _play_benches(benches: argparse._SubParsersAction) -> None:
    """The benches of turns, tables and replies."""
    turns_parser = benches.add_parser("turns", help="time to first text per turn against the floor, jobs on and off")
    turns_parser.add_argument("--games", type=int, default=2, help="games played at once (default 2)")
    turns_parser.add_argument("--turns", type=int, default=12, help="GM turns per game (default 12)")
    turns_parser.add_argument(
        "--pause", type=float, default=3.0, help="seconds the players take after a reply before acting (default 3)"
    )
    turns_parser.add_argument(
        "--no-compare", dest="compare", action="store_false",
        help="the live run only: not again with the background work held back, nor by words alone",
    )  # fmt: skip
    tables_parser = benches.add_parser(
        "tables", help="1, 2, 4 and 8 tables at once: the in-process model against llama.cpp's server"
    )
    tables_parser.add_argument("--turns", type=int, default=4, help="GM turns per table (default 4)")
    tables_parser.add_argument(
        "--tables", default="1,2,4,8", help="tables at once, each count a run (default 1,2,4,8; with 8: 8 on 4 slots)"
    )
    tables_parser.add_argument(
        "--pause", type=float, default=1.0, help="seconds the players take after a reply before acting (default 1)"
    )
    start_parser = benches.add_parser(
        "start", help="a game's first turn cold, read ahead and after a restart, beside a later turn"
    )
    start_parser.add_argument("--turns", type=int, default=4, help="turns of each game (default 4)")
    start_parser.add_argument("--games", type=int, default=3, help="games of each case (default 3)")
    length_parser = benches.add_parser(
        "length", help="whether a game's short GM turns shorten the model's replies: short and long ones side by side"
    )
    length_parser.add_argument("--turns", type=int, default=60, help="scripted turns of each game (default 60)")
    quality_parser = benches.add_parser("quality", help="replies scored by checkable rules, reply rules off and on")
    quality_parser.add_argument("--turns", type=int, default=12, help="GM turns in each of the two worlds (default 12)")


def run_bench(settings: ProcessSettings, args: argparse.Namespace) -> int:
    """``python -m bot bench NAME``: run one bench, print its figures, and with ``--record`` keep its final ones."""
    series: dict[str, list[float]] = {}
    measured_at = results.commit() if args.record else None  # the code that runs: it may change during a long run
    figures = RUNS[args.bench](settings, args, series)
    if args.record:
        command = " ".join(["python -m bot", *sys.argv[1:]])
        entry = results.record(args.bench, command, _plain_figures(figures), series, at=measured_at)
        print(f"Recorded in {results.RESULTS.relative_to(results.PROJECT_ROOT)} ({entry['date']}, {entry['commit']}); "
              "python -m bot measurements writes docs/measurements.md")  # fmt: skip
    return 0


def _plain_figures(figures: object) -> dict:
    """A bench's final figures as a mapping, whatever it returned."""
    if isinstance(figures, dict):
        return figures
    line = getattr(figures, "line", None)
    if callable(line):
        return dict(pair.split("=", 1) for pair in line().split() if "=" in pair)
    return {}


def _locomo(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import locomo_run

    try:
        budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    except ValueError:
        raise UserError("--budgets takes whole numbers separated by commas, like 500,1000,2000,4000.") from None
    return locomo_run.run(settings, args.path, budgets, sys.stdout)


def _leaks(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import leaks

    return leaks.run(settings, args.model, sys.stdout)


def _secrets(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import secrets

    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if not arms or any(a not in secrets.ARMS for a in arms) or "held" not in arms:
        raise UserError(f"--arms takes {', '.join(secrets.ARMS)} separated by commas, held among them.")
    if args.turns is not None and args.turns < 1:
        raise UserError("--turns must be at least 1.")
    return secrets.run(settings, arms, args.turns, sys.stdout, args.world, series=series)


def _change(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import change

    try:
        lengths = sorted({int(n) for n in args.turns.split(",") if n.strip()})
    except ValueError:
        raise UserError("--turns takes whole numbers separated by commas, like 300,1000.") from None
    if not lengths or lengths[0] < 50:
        raise UserError("--turns takes game lengths of 50 turns or more, like 300,1000.")
    arms = [arm.strip() for arm in args.facts.split(",") if arm.strip()]
    if not arms or any(arm not in ("none", "all") for arm in arms):
        raise UserError("--facts takes none, all, or both as none,all.")
    return change.run(settings, lengths, args.replies, sys.stdout, facts_arms=tuple(dict.fromkeys(arms)))


def _scenes(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import scenes

    if args.turns < 50:
        raise UserError("--turns takes a game length of 50 turns or more, like 120.")
    arms = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    for arm in arms:
        try:
            scenes.memory_config(arm)
        except ValueError:
            raise UserError(f"--arms takes length, scene or length:N (N from 2 to 2000), not {arm!r}.") from None
    return scenes.run(settings, args.turns, sys.stdout, arms)


def _reveals(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import reveal_fit

    return reveal_fit.run(settings, sys.stdout)


def _chance(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import chance

    return chance.run(settings, args.path, sys.stdout)


def _recall(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import recall

    if args.turns < 40:
        raise UserError("--turns must be at least 40: the clues are told in the first 40.")
    return recall.run(settings, args.turns, sys.stdout)


def _quality(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import quality

    if args.turns < 1:
        raise UserError("--turns must be at least 1.")
    return quality.run(settings, args.turns, sys.stdout)


def _length(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import length

    if args.turns < 20:
        raise UserError("--turns must be at least 20: the prompt's recent turns are what is measured.")
    return length.run(settings, args.turns, sys.stdout)


def _start(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import start

    if args.turns < 3 or args.games < 1:
        raise UserError("--turns must be at least 3 (a first turn, and later ones beside it), --games at least 1.")
    return start.run(settings, args.turns, args.games, sys.stdout)


def _turns(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import turns

    if args.games < 1 or args.turns < 1:
        raise UserError("--games and --turns must be at least 1.")
    if args.pause < 0:
        raise UserError("--pause is a number of seconds, 0 or more.")
    return turns.run(settings, args.games, args.turns, args.pause, sys.stdout, compare=args.compare, series=series)


def _tables(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import tables

    if args.turns < 2 or args.pause < 0:
        raise UserError("--turns must be at least 2 (a first turn and later ones), --pause 0 seconds or more.")
    try:
        counts = tuple(sorted({int(n) for n in args.tables.split(",") if n.strip()}))
    except ValueError:
        raise UserError("--tables takes whole numbers separated by commas, like 1,2,4,8.") from None
    if not counts or counts[0] < 1 or counts[-1] > 16:
        raise UserError("--tables takes numbers of tables from 1 to 16, like 1,2,4,8.")
    return tables.run(settings, args.turns, args.pause, sys.stdout, counts)


def _context(settings: ProcessSettings, args: argparse.Namespace, series: Series) -> object:
    from bot.bench import context

    if args.turns < 1:
        raise UserError("--turns must be at least 1.")
    return context.run(settings, args.turns, args.seed, args.world, sys.stdout, series=series)


RUNS: dict[str, Callable[[ProcessSettings, argparse.Namespace, Series], object]] = {
    "locomo": _locomo,
    "leaks": _leaks,
    "secrets": _secrets,
    "change": _change,
    "scenes": _scenes,
    "reveals": _reveals,
    "chance": _chance,
    "recall": _recall,
    "quality": _quality,
    "length": _length,
    "start": _start,
    "turns": _turns,
    "tables": _tables,
    "context": _context,
}
