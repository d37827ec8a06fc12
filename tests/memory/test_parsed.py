"""Change found by a sentence's grammar (F40): what the change finder's sentences do not read, the parse does."""

from __future__ import annotations

import pytest

from bot.memory.changes import changes_in
from bot.memory.parsed import available, parsed_changes

pytestmark = pytest.mark.skipif(not available(), reason="spaCy's English pipeline is a dependency: pip install -e .")


def test_the_pipeline_is_installed_with_the_bot():
    assert available()


@pytest.mark.parametrize(
    ("said", "known", "found"),
    [
        # a place said of the thing, whatever the verb
        ("The iron-bound sea chest is lashed beneath the bosun's hammock on the orlop deck.", [],
         ("iron-bound sea chest", "location", "beneath the bosun's hammock on the orlop deck")),
        ("By vespers the jade hourglass has somehow found its way up into the bell tower.", [],
         ("jade hourglass", "location", "in the bell tower")),
        ("Someone has moved the wax-sealed petition: the clerk admits it was locked away in the chancellery "
         "strongroom overnight.", [], ("wax-sealed petition", "location", "in the chancellery strongroom")),
        ("Captain Morwenna had the sea chest rowed ashore at dusk; it now lies buried under the leaning palm.", [],
         ("sea chest", "location", "under the leaning palm")),
        ("Between verses the skald lets slip that the horn now lies buried in the barrow of Ulfrida the Pale.",
         [], ("horn", "location", "in the barrow of Ulfrida the Pale")),  # a participle's place is the verb's
        ("The witch had no use for it, it seems: the Tidewright chart now hangs nailed above the hearth of the "
         "Cracked Bell tavern in Saltmarrow.", [],
         ("Tidewright chart", "location", "above the hearth of the Cracked Bell tavern in Saltmarrow")),  # one place
        ("When the torches went up, the Eyrie lens shattered into a thousand glittering pieces.", [],
         ("Eyrie lens", "state", "shattered")),  # said as it was said
        ("Word reaches port that Varga has turned her coat: the Crown stopped paying, so she has sworn her sloop "
         "to the Brotherhood of the Black Tide.", ["Isolde Varga"],
         ("Isolde Varga", "allegiance", "the Brotherhood of the Black Tide")),  # "she": the one named before
        # a holder: kept, put in someone's hand, passed on, taken
        ("Old Tamsin keeps the bone whistle on a leather cord around her neck.", [],
         ("bone whistle", "holder", "Old Tamsin")),
        ("Tamsin presses the bone whistle into young Pell's palm.", [], ("bone whistle", "holder", "young Pell")),
        ("The obsidian dagger is seized by Captain Hale of the watch.", [],
         ("obsidian dagger", "holder", "Captain Hale of the watch")),
        # a side
        ("Word reaches the court that Sir Edric rode north in the night to join the rebel Earl Mortane.", [],
         ("Sir Edric", "allegiance", "the rebel Earl Mortane")),
        # a state it changes to
        ("Mirela tips the last drops onto the scout's lips, and the flask of healing draught is dry.", [],
         ("flask of healing", "state", "dry")),
    ],
)  # fmt: skip
def test_a_change_the_grammar_says_is_found(said: str, known: list[str], found: tuple[str, str, str]):
    assert found in [(thing, attribute, value) for _, thing, attribute, value in parsed_changes(said, known)]
    assert found in [(c.subject, c.attribute, c.value) for c in changes_in(said, known)], "and by the finder"


@pytest.mark.parametrize(
    "said",
    [
        "The swan candlestick gleams in the lamplight.",  # light is no place
        "Candlelight catches the jade hourglass and throws a green glimmer across the wall.",  # of the glimmer
        "The novices whisper that the jade hourglass turns itself over on moonless nights.",  # a time
        "The brass key is cold to the touch.",  # how it is, not a state it changed to
        "The ledger on the desk is full of cramped figures.",
        "Waves break white against the rocks below.",  # broken against, not to pieces
        "The fiddler plays a tune in a minor key.",
        "Nobody dares speak of the smuggling ledger aloud in the taproom.",
        "Wren Tally wears it on a cord around his neck.",  # how it is worn, by no one named
        "Where is the jade hourglass now?",
    ],
)
def test_what_the_grammar_says_changed_nothing_is_none(said: str):
    assert parsed_changes(said, ["jade hourglass", "brass key"]) == []


def test_an_it_is_the_thing_the_memory_holds_named_before():
    said = "The crew curse the sea chest's weight. The storm passes; it now lies buried under the leaning palm."
    assert ("sea chest", "location", "under the leaning palm") in [
        (c.subject, c.attribute, c.value) for c in changes_in(said, ["sea chest"])
    ]


def test_a_she_no_one_was_named_before_is_no_one():
    assert parsed_changes("Later she swears her sword to the Silver Throne.") == []


def test_the_finder_s_own_reading_goes_first():
    """A sentence the finder reads is read its way; the parse reads only what it leaves."""
    [change] = changes_in("Tom carries the brass key down to the cellar.")
    assert (change.subject, change.attribute, change.value) == ("brass key", "location", "in the cellar")
