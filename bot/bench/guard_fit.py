"""The guard by meaning's thresholds, set on one world's sentences and measured on the other's.

``bench leaks`` says every sentence of its corpus (:mod:`bot.bench.leak_corpus`) through the engine and
counts what the guard stops. Here the same sentences are measured once (closeness to each of the world's
secrets, to its public text, and the secret's own words each uses), and the thresholds of
:class:`~bot.memory.leaks.MeaningRule` are searched over a grid on one world: the rule that stops the most
leaks told in other words while stopping no clean sentence (the nearest to the shipped rule among equals).
That rule is then applied to the other world's sentences, which played no part in choosing it. Both ways
round, so each world's figure is one that was not set on it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, fields

import numpy as np

from bot.memory.leaks import MEANING_RULE, MeaningRule, rule_says_leak, secret_own_stems
from bot.words import sentences, stems

GRID: dict[str, Collection[float]] = {
    "close": np.round(np.arange(0.30, 0.71, 0.05), 2),
    "very_close": np.round(np.arange(0.50, 0.86, 0.05), 2),
    "shared_words": (1, 2, 3),
    "ahead": (0.0, 0.02, 0.05, 0.10),
    "public_weight": (0.5, 0.75, 1.0),
    "margin": np.round(np.arange(0.10, 0.47, 0.03), 2),
}


@dataclass
class WorldSentences:
    """One world's corpus, measured: ``parts`` are the sentences the guard reads (a corpus line may hold
    two), ``item`` the line each came from."""

    world: str
    lines: list[str]
    leak: np.ndarray  # per line: a leak told in other words (else a clean sentence)
    by_words: np.ndarray  # per line: the guard by words stops it whatever the thresholds
    item: np.ndarray  # per part: its line
    closeness: np.ndarray  # (parts, secrets): cosine with the secret's closest part
    public: np.ndarray  # per part: cosine with the closest of the world's public texts
    shared: np.ndarray  # (parts, secrets): how many of the secret's own words the part uses

    def stopped(self, rule: MeaningRule) -> np.ndarray:
        """Per line: whether the guard, by words or by ``rule``, stops it."""
        pairs = rule_says_leak(rule, self.closeness, self.public[:, None], self.shared)
        parts = pairs.any(axis=1) if pairs.size else np.zeros(len(self.item), dtype=bool)
        by_meaning = np.zeros(len(self.lines), dtype=bool)
        np.logical_or.at(by_meaning, self.item, parts)
        return self.by_words | by_meaning

    def score(self, rule: MeaningRule) -> tuple[int, int]:
        """(leaks stopped, clean sentences stopped)."""
        stopped = self.stopped(rule)
        return int((stopped & self.leak).sum()), int((stopped & ~self.leak).sum())

    def counts(self, rule: MeaningRule) -> str:
        caught, flagged = self.score(rule)
        return f"{caught} of {int(self.leak.sum())} leaks, {flagged} of {int((~self.leak).sum())} clean"


async def measure(engine, game, lines: Sequence[str], leak: Sequence[bool]) -> WorldSentences:
    """``lines`` measured as the guard of a new game of ``game``'s world would at its first turn."""
    world = engine.world_of(game)
    turn_guard = await engine.measures.turn_guard(game)
    secrets = [s.text for s in turn_guard.guard.secrets if s.text]
    split = [[p.strip() for p in sentences(line) if p.strip()] for line in lines]
    parts = [p for each in split for p in each]
    item = np.array([n for n, each in enumerate(split) for _ in each], dtype=int)
    closeness = await engine.measures.closeness(parts, secrets)
    public = (await engine.measures.closeness(parts, list(turn_guard.public_texts))).max(axis=1)
    own = [secret_own_stems(text, turn_guard.public_stems) for text in secrets]
    shared = np.array([[len(o & stems(p)) for o in own] for p in parts]).reshape(len(parts), len(secrets))
    by_words = np.array([bool(turn_guard.guard.candidates(line)) for line in lines], dtype=bool)
    return WorldSentences(
        world.id, list(lines), np.array(leak, dtype=bool), by_words, item, closeness, np.asarray(public), shared
    )


def _distance(rule: MeaningRule) -> float:
    return sum(abs(getattr(rule, f.name) - getattr(MEANING_RULE, f.name)) for f in fields(MeaningRule))


def fit(measured: WorldSentences) -> MeaningRule:
    """The grid's rule that stops the most of ``measured``'s leaks and none of its clean sentences (if none
    does, the fewest clean ones); among equals, the nearest to the shipped rule."""
    best, key = MEANING_RULE, None
    for values in itertools.product(*GRID.values()):
        chosen = dict(zip(GRID, values, strict=True))
        thresholds = {name: float(v) for name, v in chosen.items() if name != "shared_words"}
        rule = MeaningRule(shared_words=int(chosen["shared_words"]), **thresholds)
        if rule.very_close < rule.close:
            continue
        caught, flagged = measured.score(rule)
        candidate = (-flagged, caught, -_distance(rule))
        if key is None or candidate > key:
            best, key = rule, candidate
    return best


def report(first: WorldSentences, second: WorldSentences) -> tuple[list[str], dict[str, str]]:
    """Lines to print, and the figures for the bench's last line: each world's sentences under the rule set
    on the other."""
    lines, figures = [], {}
    lines.append(f" the shipped rule: {first.world} {first.counts(MEANING_RULE)}; {second.world} "
                 f"{second.counts(MEANING_RULE)}")  # fmt: skip
    for tuned, held in ((first, second), (second, first)):
        start = time.perf_counter()
        rule = fit(tuned)
        shown = ", ".join(f"{f.name}={getattr(rule, f.name):g}" for f in fields(MeaningRule))
        lines.append(f" set on {tuned.world} ({time.perf_counter() - start:.0f} s): {shown}")
        lines.append(f"   on {tuned.world} (set there): {tuned.counts(rule)}")
        lines.append(f"   on {held.world} (held out):  {held.counts(rule)}")
        caught, flagged = held.score(rule)
        key = held.world.split("-")[0]
        figures[f"heldout_caught_{key}"] = f"{caught / max(1, int(held.leak.sum())):.3f}"
        figures[f"heldout_flagged_{key}"] = f"{flagged / max(1, int((~held.leak).sum())):.3f}"
    return lines, figures
