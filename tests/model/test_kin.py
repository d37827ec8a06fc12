"""The one policy over kept states (bot.model.kin): which state a game starts from, which goes first."""

from __future__ import annotations

import numpy as np

from bot.model.kin import least_recent, nearest_kin, shared_prefix


def test_a_shared_prefix_counts_tokens_of_two_arrays_and_characters_of_two_texts():
    a = np.array([1, 2, 3, 4], dtype=np.intc)
    assert shared_prefix(a, np.array([1, 2, 9], dtype=np.intc)) == 2
    assert shared_prefix(a, a[:2]) == 2 and shared_prefix(a, np.array([], dtype=np.intc)) == 0
    assert shared_prefix("The manor at night", "The manor by day") == len("The manor ")
    assert shared_prefix("", "anything") == 0


def test_the_nearest_kin_shares_the_longest_beginning_and_at_least_the_frozen_layer():
    world = "rules and the manor's characters " * 10
    kept = [("other-world", "The caravan road " * 20), ("manor-1", world + "Maya"), ("manor-2", world + "Tom and Ines")]
    assert nearest_kin(kept, world + "Tom and Maya", 100) == ("manor-2", len(world + "Tom and "))
    assert nearest_kin(kept, world + "Tom", 10_000) is None, "no kin shares the frozen layer"
    assert nearest_kin([], world, 1) is None


def test_a_kin_no_closer_than_the_state_a_call_has_is_no_better():
    kept = [("a", "abcdefgh"), ("b", "abcdxxxx")]
    assert nearest_kin(kept, "abcdefzz", 2, beats=6) is None
    assert nearest_kin(kept, "abcdefzz", 2, beats=5) == ("a", 6)


def test_between_kin_alike_the_most_recently_used_serves_else_the_first():
    kept = [(0, "same world here"), (1, "same world here"), (2, "same world here")]
    assert nearest_kin(kept, "same world here", 4, used={0: 5.0, 1: 9.0, 2: 1.0}) == (1, 15)
    assert nearest_kin(kept, "same world here", 4) == (0, 15)


def test_the_state_used_longest_ago_goes_first_one_never_used_before_any():
    assert least_recent([3, 1, 2], {1: 10.0, 2: 5.0, 3: 7.0}) == 2
    assert least_recent([3, 1, 2], {1: 10.0, 3: 7.0}) == 2
