from __future__ import annotations

import numpy as np

from bot.bench.guard_fit import WorldSentences, fit, report
from bot.memory.leaks import MEANING_RULE, MeaningRule, leaks_by_meaning, rule_says_leak


def _world(name: str, closeness: list[float], public: list[float], leak: list[bool]) -> WorldSentences:
    """One secret; each line one sentence, sharing none of the secret's own words."""
    n = len(closeness)
    return WorldSentences(
        name, [f"line {i}" for i in range(n)], np.array(leak), np.zeros(n, dtype=bool), np.arange(n),
        np.array(closeness).reshape(n, 1), np.array(public), np.zeros((n, 1), dtype=int),
    )  # fmt: skip


def test_the_rule_on_arrays_says_what_it_says_for_one_sentence():
    rng = np.random.default_rng(3)
    closeness, public = rng.uniform(0.2, 0.9, 400), rng.uniform(0.2, 0.9, 400)
    shared = rng.integers(0, 4, 400)
    rule = MeaningRule(margin=0.2)
    arrays = rule_says_leak(rule, closeness, public, shared)
    one = [
        bool(rule_says_leak(rule, float(c), float(p), int(s)))
        for c, p, s in zip(closeness, public, shared, strict=True)
    ]
    assert arrays.tolist() == one and 0 < sum(one) < 400
    # leaks_by_meaning counts the secret's words the world does not make public
    assert leaks_by_meaning("the valise holds the ledger", "a ledger in the valise", 0.5, frozenset(), 0.4)
    assert not leaks_by_meaning(
        "the valise holds the ledger", "a ledger in the valise", 0.5, frozenset({"ledger", "valis"}), 0.4
    )


def test_the_rule_set_on_one_world_stops_its_leaks_and_none_of_its_clean_sentences():
    # Leaks are much closer to the secret than to the public text; clean sentences are close to both.
    tuned = _world(
        "hollow-manor", [0.8, 0.7, 0.6, 0.7, 0.6], [0.3, 0.3, 0.2, 0.7, 0.6], [True, True, True, False, False]
    )
    rule = fit(tuned)
    assert tuned.score(rule) == (3, 0)
    assert tuned.score(MeaningRule(margin=0.1, public_weight=0.5)) == (3, 2), "a looser rule stops clean ones too"
    held = _world("ember-road", [0.75, 0.4, 0.65], [0.25, 0.35, 0.6], [True, True, False])
    lines, figures = report(tuned, held)
    assert figures["heldout_caught_ember"] == f"{held.score(rule)[0] / 2:.3f}"
    assert any("on ember-road (held out)" in line for line in lines)
    assert any(line.startswith(" the shipped rule:") for line in lines)


def test_among_equal_rules_the_shipped_one_is_kept():
    world = _world("hollow-manor", [0.9, 0.2], [0.1, 0.2], [True, False])
    assert fit(world) == MEANING_RULE
