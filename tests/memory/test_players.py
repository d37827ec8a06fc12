"""Each player's private memory (F5), pure parts: what an update may read, how the player's own secrets are marked,
and how the model's answer is cut to its bounds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from bot.memory.players import (
    MAX_FACTS,
    PrivateMemoryAnswer,
    entry_line,
    material,
    tidy,
    update_messages,
    witnessed,
)
from bot.store.models import EntryKind, PlayerMemory
from tests.memory.test_hidden import NOW, entry, player

# Private memory: built from what the player witnessed, and nothing else


events = st.lists(
    st.tuples(
        st.booleans(),  # private?
        st.sets(st.integers(1, 4), max_size=4),  # witnesses (the seated players, or the addressee)
    ),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(events, st.integers(1, 4), st.integers(0, 80))
def test_an_update_reads_only_what_the_player_witnessed(stream, pid, after):
    entries = [
        entry(i, f"EVENT{i}X", seen=tuple(sorted(w)), private=private)
        for i, (private, w) in enumerate(stream, 1)
    ]  # fmt: skip
    batches = material(entries, player(pid, "P"), after, lambda text: len(text.split()), limit=60)
    prompts = ["\n".join(m.content for m in update_messages("T", player(pid, "P"), None, b)) for b in batches]
    witnessed = [e for e in entries if pid in e.visible_to and e.id > after]
    for e in entries:
        if pid not in e.visible_to or e.id <= after:
            assert not any(f"EVENT{e.id}X" in p for p in prompts), "an entry the player did not witness was read"
    assert [e.id for b in batches for e in b] == [e.id for e in witnessed], "every witnessed entry, once, in order"
    sizes = [sum(len(entry_line(e, player(pid, "P")).split()) for e in b) for b in batches]
    assert all(size <= 60 or len(b) == 1 for size, b in zip(sizes, batches, strict=True)), "each call is bounded"
    for batch, prompt in zip(batches, prompts, strict=True):
        assert all(f"EVENT{e.id}X" in prompt for e in batch)


def test_private_lines_are_marked_as_the_players_own():
    read = [entry(1, "The hall is cold.", seen=(1, 2)), entry(2, "A bitter smell.", seen=(1,), private=True)]
    previous = PlayerMemory(
        id=1, game_id=1, player_id=1, summary="Maya arrived.", facts=("Tom is kind",), through_entry_id=0,
        created_at=NOW,
    )  # fmt: skip
    user = update_messages("Hollow Manor", player(1, "Maya"), previous, read)[1].content
    assert "GM: The hall is cold." in user
    assert "(only you) GM, privately: A bitter smell." in user
    assert "Maya arrived." in user and "- Tom is kind" in user


def test_an_answer_is_cut_to_five_sentences_and_distinct_facts():
    answer = PrivateMemoryAnswer(
        summary="One. Two. Three. Four. Five. Six. Seven.", facts=[f"fact {i}" for i in range(9)] + ["FACT 1"]
    )
    summary, facts = tidy(answer)
    assert summary == "One. Two. Three. Four. Five."
    assert facts == tuple(f"fact {i}" for i in range(9))
    assert PrivateMemoryAnswer.model_json_schema()["properties"]["facts"]["maxItems"] == 10


def test_a_deleted_message_and_one_told_to_another_player_are_not_witnessed():
    """Maya's memory never learns what the GM whispered to Tom, nor a message someone deleted."""
    public = entry(1, "The door creaks.", seen=(1, 2))
    deleted = entry(2, "A typo.", seen=(1, 2)).model_copy(update={"deleted": True})
    to_tom = entry(3, "A key under the rug.", seen=(2,), private=True)
    to_maya = entry(4, "A draught from the wall.", seen=(1,), private=True)
    before_she_sat = entry(5, "Tom waits alone.", seen=(2,))
    stream = [public, deleted, to_tom, to_maya, before_she_sat]
    assert [e.id for e in witnessed(stream, 1)] == [1, 4]
    assert [e.id for e in witnessed(stream, 2)] == [1, 3, 5]
    assert witnessed(stream, 3) == []


def test_what_was_the_players_alone_is_marked_by_kind_and_public_lines_are_as_everyone_saw_them():
    maya = player(1, "Maya")
    roll = entry(1, "1d20 = 17", seen=(1,), private=True, kind=EntryKind.ROLL).model_copy(update={"author": "Maya"})
    action = entry(2, "I pocket the letter.", seen=(1,), private=True, kind=EntryKind.ACTION)
    action = action.model_copy(update={"author": "Maya"})
    public_roll = entry(3, "1d6 = 4", seen=(1, 2), kind=EntryKind.ROLL).model_copy(update={"author": "Tom"})
    assert entry_line(roll, maya) == "(only you) [Maya rolls 1d20 = 17]"
    assert entry_line(action, maya) == "(only you, secretly) Maya: I pocket the letter."
    assert entry_line(public_roll, maya) == "[Tom rolls 1d6 = 4]" == public_roll.line


def test_a_first_update_says_there_is_no_memory_yet_and_names_the_character():
    messages = update_messages("The Lighthouse", player(2, "Tom"), None, [entry(1, "Fog rolls in.", seen=(2,))])
    assert [m.role for m in messages] == ["system", "user"]
    assert "private memory of Tom" in messages[0].content and '"The Lighthouse"' in messages[0].content
    assert f"up to {MAX_FACTS} short key facts" in messages[0].content
    assert messages[1].content == "Memory so far: (nothing yet)\n\nWhat Tom witnessed since:\nGM: Fog rolls in."


def test_a_previous_memory_without_facts_says_none():
    previous = PlayerMemory(id=3, game_id=1, player_id=1, summary="Maya rowed out.", through_entry_id=4, created_at=NOW)
    user = update_messages("T", player(1, "Maya"), previous, [])[1].content
    assert user.startswith("Memory so far:\nMaya rowed out.\nKey facts:\n(none)")


def test_a_backlog_is_read_in_calls_that_each_fit_the_limit():
    entries = [entry(i, "word " * 10, seen=(1,)) for i in range(1, 7)]
    batches = material(entries, player(1, "Maya"), 0, lambda text: len(text.split()), limit=25)
    assert [[e.id for e in batch] for batch in batches] == [[1, 2], [3, 4], [5, 6]]
    assert material(entries, player(1, "Maya"), 6, lambda text: 1) == [], "nothing new after the last entry read"


def test_tidying_folds_spaces_and_keeps_the_first_spelling_of_a_fact():
    answer = PrivateMemoryAnswer(
        summary="  Maya   found the key.\nShe hid it!  Who took the lamp?  ",
        facts=["The  key is   hidden", "the key is hidden", "  Tom lies  "],
    )
    summary, facts = tidy(answer)
    assert summary == "Maya found the key. She hid it! Who took the lamp?"
    assert facts == ("The key is hidden", "Tom lies")


def test_a_blank_fact_is_left_out_and_the_rest_of_the_answer_kept():
    # The grammar lets a string of spaces through; the bundled model wrote one, and both tries fell back on it.
    answer = PrivateMemoryAnswer.model_validate_json(
        '{"summary": "Maya has the key.", "facts": ["   ", "Tom lies", ""]}'
    )
    assert answer.facts == ["Tom lies"] and tidy(answer) == ("Maya has the key.", ("Tom lies",))


def test_an_answer_past_its_bounds_is_refused():
    with pytest.raises(ValidationError):
        PrivateMemoryAnswer(summary="")
    with pytest.raises(ValidationError):
        PrivateMemoryAnswer(summary="ok", facts=[f"fact {i}" for i in range(MAX_FACTS + 1)])
    with pytest.raises(ValidationError):
        PrivateMemoryAnswer(summary="ok", facts=["x" * 141])
    assert PrivateMemoryAnswer(summary="ok", facts=["  padded  "]).facts == ["padded"]
    assert PrivateMemoryAnswer(summary="ok").facts == []
