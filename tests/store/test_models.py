"""What the store returns: plain, frozen records, and what they say of themselves (a transcript line, who saw an
entry, a fact's key)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from bot.store.models import (
    EntryKind,
    Fact,
    FactKind,
    FrontSnapshot,
    GameStatus,
    LogEntry,
    MemoryState,
    NewEntry,
    NewFact,
    Summary,
    SummaryKind,
    Visibility,
)

NOW = datetime.now(UTC)


def logged(kind: EntryKind, author: str, content: str, *, private: bool = False) -> LogEntry:
    return LogEntry(
        id=1, game_id=1, turn=1, kind=kind, author=author, content=content, created_at=NOW,
        visibility=Visibility.PRIVATE if private else Visibility.PUBLIC,
    )  # fmt: skip


def test_each_kind_of_entry_reads_as_one_transcript_line():
    assert logged(EntryKind.ACTION, "Maya", "I row.").line == "Maya: I row."
    assert logged(EntryKind.GM, "GM", "Fog.").line == "GM: Fog."
    assert logged(EntryKind.GM, "GM to Maya", "A key.", private=True).line == "GM to Maya, privately: A key."
    assert logged(EntryKind.ROLL, "Tom", "1d20 = 7").line == "[Tom rolls 1d20 = 7]"
    assert logged(EntryKind.SYSTEM, "system", "Tom joined the game").line == "[Tom joined the game]"


def test_an_entry_is_seen_by_its_witnesses_only():
    entry = NewEntry(turn=1, kind=EntryKind.GM, author="GM", content="Fog.", visible_to=(2, 5))
    assert entry.seen_by(2) and entry.seen_by(5)
    assert not entry.seen_by(3)
    assert not NewEntry(turn=1, kind=EntryKind.GM, author="GM", content="Fog.").seen_by(1), "none recorded: no one"


def test_a_new_entry_is_public_with_no_witnesses_or_npcs_by_default():
    entry = NewEntry(turn=3, kind="action", author="Maya", content="I wait.")
    assert entry.kind is EntryKind.ACTION and entry.visibility is Visibility.PUBLIC
    assert (entry.visible_to, entry.npcs, entry.player_id, entry.message_id) == ((), (), None, None)


def test_records_are_frozen_and_refuse_unknown_kinds():
    entry = logged(EntryKind.GM, "GM", "Fog.")
    with pytest.raises(ValidationError):
        entry.content = "changed"  # type: ignore[misc]
    assert entry.model_copy(update={"content": "changed"}).content == "changed", "a copy is the way to change one"
    with pytest.raises(ValidationError):
        NewEntry(turn=1, kind="shout", author="Maya", content="Hey")
    with pytest.raises(ValidationError):
        NewEntry(turn=1, kind=EntryKind.GM, author="GM", content="Fog.", visibility="secret")


def test_the_kinds_are_the_strings_stored():
    assert GameStatus("active") is GameStatus.ACTIVE and GameStatus.ENDED == "ended"
    assert [k.value for k in EntryKind] == ["action", "gm", "roll", "system"]
    assert [v.value for v in Visibility] == ["public", "private"]
    assert [k.value for k in SummaryKind] == ["chunk", "story", "recap"]
    assert FactKind.PINNED == "pinned"


def test_a_summary_counts_its_words():
    summary = Summary(id=1, game_id=1, kind=SummaryKind.CHUNK, content="  Maya rowed\nto the rock.  ", created_at=NOW)
    assert summary.words == 5
    assert summary.model_copy(update={"content": ""}).words == 0
    assert (summary.replaced_by, summary.stale) == (None, False)


def test_facts_about_the_same_thing_share_a_key_whatever_their_case_and_spacing():
    one = NewFact(kind=FactKind.CHARACTER, subject="Old  Tom", attribute="Mood", value="grim", turn=1)
    other = NewFact(kind=FactKind.CHARACTER, subject="old tom", attribute=" mood ", value="cheerful", turn=4)
    assert one.key == other.key == ("old tom", "mood")
    assert one.text == "Old  Tom, Mood: grim"
    pinned = NewFact(kind=FactKind.PINNED, subject="pin", attribute="3", value="The keeper is Tom's uncle.", turn=2)
    assert pinned.text == "The keeper is Tom's uncle.", "a pin that became a fact reads as it was pinned"


def test_a_fact_is_active_until_superseded_or_retracted():
    fact = Fact(id=1, game_id=1, kind=FactKind.ITEM, subject="key", attribute="where", value="rug", turn=1,
                created_at=NOW)  # fmt: skip
    assert fact.active
    assert not fact.model_copy(update={"superseded_by": 2, "superseded_turn": 5}).active
    assert not fact.model_copy(update={"retracted_at": NOW}).active


def test_a_new_games_memory_starts_at_the_beginning_with_a_front_that_shows_the_latest():
    state = MemoryState(game_id=7)
    assert (state.folded_through, state.chapter_index, state.chapter_started_after, state.version) == (0, 0, 0, 0)
    assert state.beats_done == () and state.short_id is None and state.story_id is None
    assert state.front == FrontSnapshot()
    assert state.front.story_through is None and state.front.memories == {}
    front = FrontSnapshot.model_validate({"memories": {"3": 12}, "glossary_through": 4, "story_through": 0})
    assert front.memories == {3: 12} and front.story_through == 0, "a snapshot read back from JSON keeps its ids"
    assert FrontSnapshot.model_validate_json(front.model_dump_json()) == front
