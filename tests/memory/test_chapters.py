"""Chapters: which beats the judge may name, and what it, the recap writer and the story's rewrite are told."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.memory.chapters import BeatsAnswer, beats_messages, beats_schema, integrate_messages, recap_messages
from bot.memory.compaction import PRESERVE
from bot.store.models import EntryKind, LogEntry, Visibility
from bot.worlds import Beat, Chapter
from tests.memory.test_hidden import NOW

ARRIVAL = Chapter(
    id="arrival",
    title="The Arrival",
    goal="Reach the lighthouse and find the keeper.",
    beats=[
        Beat(id="land", description="The party lands on the rock."),
        Beat(id="door", description="Someone opens the cottage door."),
        Beat(id="keeper", description="The party finds the keeper's logbook."),
    ],
)


def logged(i: int, kind: EntryKind, author: str, content: str) -> LogEntry:
    return LogEntry(
        id=i, game_id=1, turn=i, kind=kind, author=author, content=content, visibility=Visibility.PUBLIC,
        visible_to=(1,), created_at=NOW,
    )  # fmt: skip


def test_the_judge_may_name_only_open_beats_and_no_more_of_them_than_are_open():
    schema = beats_schema(["door", "keeper"])
    assert issubclass(schema, BeatsAnswer)
    assert schema.model_validate({"done": ["keeper", "door"]}).done == ["keeper", "door"]
    assert schema.model_validate({"done": []}).done == []
    with pytest.raises(ValidationError):
        schema.model_validate({"done": ["land"]})  # done already: not among the choices
    with pytest.raises(ValidationError):
        schema.model_validate({"done": ["door", "keeper", "door"]})  # a small model repeating itself
    done = schema.model_json_schema()["properties"]["done"]
    assert done["items"]["enum"] == ["door", "keeper"] and done["maxItems"] == 2


def test_with_no_open_beats_the_answer_is_the_plain_shape_and_says_none_by_default():
    assert beats_schema([]) is BeatsAnswer
    assert BeatsAnswer().done == []


def test_the_judge_sees_the_chapter_its_open_beats_and_the_latest_events():
    recent = [
        logged(1, EntryKind.ACTION, "Maya", "I push the cottage door."),
        logged(2, EntryKind.GM, "GM", "It swings open onto a cold room."),
        logged(3, EntryKind.ROLL, "Tom", "1d20 = 12"),
    ]
    system, user = beats_messages(ARRIVAL, ["door", "keeper"], recent)
    assert (system.role, user.role) == ("system", "user")
    assert "JSON" in system.content and "List none if unsure" in system.content
    assert user.content == (
        "Chapter: The Arrival. Goal: Reach the lighthouse and find the keeper.\n"
        "Open beats:\n"
        "- door: Someone opens the cottage door.\n"
        "- keeper: The party finds the keeper's logbook.\n\n"
        "Latest events:\n"
        "Maya: I push the cottage door.\n"
        "GM: It swings open onto a cold room.\n"
        "[Tom rolls 1d20 = 12]"
    )
    assert "land" not in user.content, "a beat already done is not offered again"


def test_the_recap_writer_is_told_the_game_the_length_and_what_happened():
    system, user = recap_messages("The Lighthouse", ARRIVAL, ["They landed.", "Maya opened the door."], 70)
    assert '"The Lighthouse"' in system.content and "at most 70 words" in system.content
    assert "past tense" in system.content and "Write only the recap." in system.content
    assert user.content == (
        "Chapter: The Arrival. Goal: Reach the lighthouse and find the keeper.\n\n"
        "What happened:\nThey landed.\nMaya opened the door."
    )


def test_the_story_is_rewritten_with_the_finished_chapter_left_to_its_recap():
    system, user = integrate_messages("The Lighthouse", "Maya and Tom rowed out.", ARRIVAL, "They landed.", 400)
    assert '"The Arrival" has ended' in system.content and "At most 400 words" in system.content
    assert PRESERVE in system.content, "what a summary must keep is kept here too"
    assert user.content == "Story summary:\nMaya and Tom rowed out.\n\nRecap of the finished chapter:\nThey landed."
