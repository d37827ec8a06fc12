"""Dice rolls in d20 notation: bounded, and every bad expression one clear line."""

from __future__ import annotations

import pytest

from bot import dice
from bot.errors import UserError


def test_a_roll_stays_in_its_range_and_says_how_it_was_made():
    for _ in range(50):
        rolled = dice.roll(" 1d20 +  5 ")
        assert 6 <= rolled.total <= 25
        assert rolled.expression == "1d20 + 5" and rolled.text.startswith("1d20 + 5: ")
        assert str(rolled.total) in rolled.detail


def test_advantage_and_disadvantage_are_named_in_the_expression():
    rolled = dice.roll("1d20 adv")
    assert rolled.expression == "1d20 (advantage)" and 1 <= rolled.total <= 20
    assert dice.roll("1d20 DISADVANTAGE").expression == "1d20 (disadvantage)"


def test_a_long_result_is_told_as_its_total_alone():
    rolled = dice.roll("200d6")
    assert len(rolled.detail) <= dice.MAX_RESULT_CHARS and rolled.detail == f"200d6 = `{rolled.total}`"


@pytest.mark.parametrize(
    ("expression", "said"),
    [
        ("", "Give a dice expression"),
        ("1d20+" * 30, "too long"),
        ("5000d6", "Too many dice"),
        ("roll a die", "is not dice notation"),
        ("1d20 # for luck", "is not dice notation"),
    ],
)
def test_a_bad_expression_is_one_clear_error(expression: str, said: str):
    with pytest.raises(UserError, match=said):
        dice.roll(expression)
