"""Errors a user can fix: the message is the sentence shown, and a name the user gave is echoed whole up to a
limit, else its start and an ellipsis, so a pasted page never floods a reply."""

from __future__ import annotations

import pytest

from bot.errors import UserError, shortened
from bot.worlds import WorldLibrary
from tests.conftest import FIXTURES


def test_a_name_is_echoed_whole_up_to_the_limit_and_cut_with_an_ellipsis_past_it():
    assert shortened("lighthouse") == "lighthouse"
    assert shortened("x" * 60) == "x" * 60
    cut = shortened("abcdefghij" * 7)
    assert len(cut) == 60 and cut == ("abcdefghij" * 6)[:59] + "…"
    assert shortened("the lighthouse at gull rock", limit=10) == "the light…"


def test_an_unknown_world_of_a_huge_name_is_one_short_sentence():
    library = WorldLibrary(FIXTURES / "worlds")
    with pytest.raises(UserError) as refused:
        library.get("atlantis " * 500)
    message = str(refused.value)
    assert message.startswith("Unknown world 'atlantis atlantis") and "…'. Worlds here: " in message
    assert len(message) < 200 and "lighthouse" in message
