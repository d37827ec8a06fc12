"""A beat's private clue, earned by an action: whether an aside of the turn already gave it."""

from __future__ import annotations

from bot.engine.secrets.clues import gave
from bot.memory.private import PrivateNote

CLUE = (
    "Whoever sniffs the brandy glass on the desk smells, under the brandy, something sharp and bitter, like "
    "medicine. The decanter on the side table smells only of good brandy."
)
ACTION = "I lean over the desk and sniff Silas's brandy glass."


def test_an_aside_to_the_earner_in_the_clues_own_words_gave_it():
    told = [PrivateNote("Maya", "Under the brandy you smell something sharp and bitter, like medicine.")]
    assert gave(told, "Maya", CLUE, ACTION)


def test_an_aside_to_another_player_did_not_give_it_to_the_earner():
    told = [PrivateNote("Ines", "Under the brandy you smell something sharp and bitter, like medicine.")]
    assert not gave(told, "Maya", CLUE, ACTION)


def test_an_aside_that_says_back_the_action_and_something_vague_did_not_give_it():
    told = [PrivateNote("Maya", "You smell something strange on the brandy glass on the desk.")]
    assert not gave(told, "Maya", CLUE, ACTION)
