"""Who a reply's sentences of narration are about: what a seated player's character is made to do, say or think."""

from __future__ import annotations

from bot.engine.turn.subjects import PlayerSubjects


def _decides(sentences: list[str], action: str, actor: str = "Maya") -> list[bool]:
    subjects = PlayerSubjects(["Maya", "Tom"], [action], [actor])
    return [subjects.decides(sentence) for sentence in sentences]


def test_what_happens_to_a_character_is_told_and_what_it_does_unasked_is_decided():
    told = ["Maya notices a faint smell of medicine.", "Tom is soaked to the skin.", "Maya forces the lock."]
    assert _decides(told, "I force the lock.") == [False, False, False]
    assert _decides(["Tom lifts his eyebrows."], "I sniff the brandy glass.") == [True], "another player's deed"
    assert _decides(["Maya lifts the glass and breathes in."], "I sniff the brandy glass.") == [False], "told back"


def test_an_acting_players_deed_on_another_thing_is_decided_whatever_word_says_which():
    """Seed 23 of the memory test, at b4e970e: "What bird is etched in the old sailor's timepiece?" answered "Tom
    looks up at the old chart.", let through as Tom's question told back because both said "old"."""
    asked = "What bird is etched in the old sailor's timepiece?"
    assert _decides(["Tom looks up at the old chart."], asked, "Tom") == [True], "'old' says which, not what"
    assert _decides(["Tom turns the timepiece over."], asked, "Tom") == [False], "the thing asked of: told back"
    assert _decides(["Tom greets the sailor."], asked, "Tom") == [True], "whose it is is not the thing"
    assert _decides(["Maya raises the brandy bottle."], "I sniff the brandy glass.") == [True]
    assert _decides(["Maya turns the glass in the lamplight."], "I sniff the brandy glass by the hand.") == [False]


def test_a_questions_verb_is_not_what_the_asking_player_does():
    """Seed 42 of the memory test, at 33546bf: "Which servant carries the key to the wine vault?" answered "Tom carries
    the brass key to the wine vault.", let through as Tom's own deed because the question said "carries"."""
    asked = "Which servant carries the key to the wine vault?"
    assert _decides(["Tom carries the brass key to the wine vault."], asked, "Tom") == [True]
    assert _decides(["Tom carries the lamp to the door."], "I carry the lamp to the door. Is it locked?", "Tom") == [
        False
    ], "what the player said they do, beside a question"
    assert _decides(["Tom looks at the map."], "Can I look at the map?", "Tom") == [False], "what I may do"


def test_what_a_character_thinks_or_sets_out_to_do_is_its_players_whatever_it_names():
    asked = "Where was the ledger bought?"
    thought = ["Maya realizes that this ledger is related to her father's business.", "She starts to question it."]
    assert _decides(thought, asked) == [True, True], "a thought, then 'she' after a sentence about her"
    assert _decides(["Maya wonders whether the ledger lies."], "I wonder if the ledger lies.") == [False]
    assert _decides(["You realize the ledger is old."], asked) == [False], "told to 'you': what happens to them"


def test_what_a_character_feels_is_its_players_whatever_it_names():
    """Seed 7 of the memory test, at 86caa20: "What bird is etched in the old sailor's timepiece?" answered with the
    heron, then "Tom feels a thrill of excitement and admiration as he realizes that this is the mark of an important
    timepiece.", let through as Tom's question told back because it named the timepiece."""
    asked = "What bird is etched in the old sailor's timepiece?"
    felt = "Tom feels a thrill of excitement as he realizes that this is the mark of an important timepiece."
    assert _decides([felt], asked, "Tom") == [True]
    assert _decides(["Maya felt the cold of the timepiece."], "I hold the timepiece.") == [True]
    assert _decides(["Maya feels for the latch in the dark."], "I feel for the latch.") == [False], "her action said it"
    assert _decides(["You feel a draught."], asked) == [False], "told to 'you': what happens to them"
