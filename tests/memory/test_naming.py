"""How the memory names a thing: the subject it holds that a phrase names, the lock a code is of, an "it"."""

from __future__ import annotations

from bot.memory.naming import antecedent, head_of, lock_named, same_subject


def test_a_lock_is_the_one_the_sentence_names_most_fully_and_none_of_another_of_its_kind():
    said = "Someone has tampered with the Ravensworth lock again, and the crypt door yields to that sequence."
    assert lock_named(said, ["studio door", "Ravensworth crypt lock"]) == "Ravensworth crypt lock"
    assert lock_named(said, ["clockwork lock", "studio door"]) == "clockwork lock", "a lock by its own name"
    assert lock_named(said, ["studio door"]) == "", "a crypt door is no studio door"
    assert lock_named("Security resets the airlock; the new code is 5190.", ["cellar door code", "Dome C airlock"]) == (
        "Dome C airlock"
    )
    assert lock_named("The new password is gannet.", ["studio door password"]) == "", "a password names no lock"


def test_names_said_whole_in_a_longer_one_are_one_thing_a_single_word_is_not():
    assert same_subject("sealed orders", ["sealed orders envelope"]) == "sealed orders envelope"
    assert same_subject("key ring", ["brass key"]) == "key ring"
    assert same_subject("ring", ["key ring"]) == "key ring"
    assert same_subject("key", ["key ring"]) == "key", "one word said in a longer name is not that thing"
    assert head_of("password for the sail-loft meetings") == "password"


def test_an_it_is_the_thing_whose_name_was_said_as_a_word():
    assert antecedent("By nightfall ", ["night"]) == ""
    assert antecedent("Pip picks up the brass key and ", ["swan candlestick", "brass key"]) == "brass key"
