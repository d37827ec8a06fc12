"""bench reveals' choice of the meaning threshold: on one world's labelled actions, then reported on the other's."""

from __future__ import annotations

import numpy as np

from bot.bench.reveal_fit import ACTIONS, Measured, best_threshold
from bot.worlds import load_world
from tests.conftest import PROJECT


def test_the_threshold_judges_the_most_actions_right_and_the_highest_among_equals():
    measured = Measured("w", np.array([0.8, 0.7, 0.6, 0.5, 0.3]), np.array([True, True, False, True, False]))
    threshold = best_threshold(measured)
    assert threshold == 0.7, "0.61 to 0.70 judge 4 of 5 right; the highest wins"
    assert measured.rates(threshold) == (2 / 3, 0.0)


def test_every_labelled_condition_is_one_its_world_has():
    for world_id, labelled in ACTIONS.items():
        world = load_world(PROJECT / "worlds" / f"{world_id}.yaml")
        groups = [
            *(t.uncovered_by for t in world.truths),
            *(h.uncovered_by for n in world.npcs for h in n.secrets),
            *(b.done_when for ch in world.chapters for b in ch.beats),
            *(b.clue.earned_by for ch in world.chapters for b in ch.beats if b.clue),
        ]
        conditions = [c.meaning for group in groups for c in group]
        for item in labelled:
            assert item.condition in conditions, (world_id, item.condition)
            assert len(item.meets) >= 4 and len(item.misses) >= 4
