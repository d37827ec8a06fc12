"""Tests of bot.memory.pointing: a thing or a place named as prose names one, not words strung together."""

from __future__ import annotations

import pytest

from bot.memory.pointing import last_said, names_a_thing, says_a_place


@pytest.mark.parametrize(
    ("thing", "sentence"),
    [
        ("brass key", "Tom carries the brass key to the cellar."),
        ("lantern", "A lantern hangs by the door."),
        ("Zebedee's map of the caves", "Lowenna feeds Zebedee's map of the caves to the fire."),
        ("flask", "Maya's flask lies empty on the table."),
        ("Kittiwake", "Tom rows the Kittiwake to Lisbon."),
        ("Hob Tilling", "Hob Tilling hauls coal for the Company."),  # a name of two words starts the sentence
        ("cellar door code", "The code of the cellar door is now 882."),  # the pattern's words, not the sentence's
    ],
)
def test_a_thing_picked_out_or_named(thing: str, sentence: str):
    assert names_a_thing(thing, sentence)


@pytest.mark.parametrize(
    ("thing", "sentence"),
    [
        ("Knife", "Knife beneath map storm cellar."),  # a capital that only starts the sentence is no name
        ("Old stair", "Old stair above storm window quiet."),
        ("proudly", "The widow owns the snuffbox, set proudly on her mantelpiece."),
    ],
)
def test_words_strung_together_name_no_thing(thing: str, sentence: str):
    assert not names_a_thing(thing, sentence)


def test_a_place_picked_out_named_or_of_one_word():
    for place in ("in the cellar", "under Maya's bed", "in Lisbon", "at home", "on deck", "behind glass in the hall"):
        assert says_a_place(place), place
    for place in (
        "beneath glass marsh old candle",
        "above key marsh lantern",
        "behind tide brass",
        "in the east",
        "to the left",
        "to one side",
    ):
        assert not says_a_place(place), place


def test_a_word_is_said_whole_or_with_a_short_ending():
    assert last_said("By nightfall it sits in the pit", "night") == -1
    assert last_said("the keys, then the key", "key") == 19
    assert last_said("two nights later", "night") == 4
