"""Words as the game compares them: stems that make an action's words and a reply's meet."""

import pytest

from bot.words import stem, stems


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("asked", "ask"),
        ("waxed", "wax"),
        ("hated", "hate"),
        ("tried", "try"),
        ("searching", "search"),
        ("shelves", "shelf"),  # "I search the library shelves": "an old map on the shelf" answers it
        ("knives", "knife"),
        ("wolves", "wolf"),
        ("slipping", "slip"),  # a consonant doubled before the ending is one
        ("stopped", "stop"),
        ("falling", "fall"),  # but a word's own double l, s, f or z stays
        ("sniffed", "sniff"),
    ],
)
def test_a_word_and_its_ending_share_a_stem(one: str, other: str):
    assert stem(one) == stem(other)


@pytest.mark.parametrize(("one", "other"), [("leaves", "leaf"), ("lives", "life"), ("bleed", "bled"), ("hated", "hat")])
def test_words_that_only_look_alike_keep_their_own_stems(one: str, other: str):
    """ "She leaves" is not a leaf, nor "he lives" a life: as verbs they are far more often met in play."""
    assert stem(one) != stem(other)


def test_stems_leave_out_stopwords_and_possessives():
    assert stems("Silas's brandy and the glass on his desk") == {"sila", "brandy", "glass", "desk"}
