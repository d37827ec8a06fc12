"""Hidden information, pure parts: words and sentences as the guard reads them (what a player's memory may read
is tests/memory/test_players.py, what leaks tests/memory/test_leaks.py, who is in a scene tests/memory/test_npcs.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bot.memory.leaks import (
    Guard,
    guarded_world_secrets,
    private_secrets,
    strip,
    world_public_runs,
    world_public_sentences,
)
from bot.store.models import EntryKind, LogEntry, Player, Visibility
from bot.words import complete_sentences, sentences
from bot.worlds import load_world

PROJECT = Path(__file__).parent.parent.parent
MANOR = load_world(PROJECT / "worlds" / "hollow-manor.yaml")
NOW = datetime.now(UTC)


def entry(i: int, content: str, *, seen: tuple[int, ...], private: bool = False, kind=EntryKind.GM) -> LogEntry:
    return LogEntry(
        id=i, game_id=1, turn=i, kind=kind, author="GM to Maya" if private else "GM", content=content,
        visibility=Visibility.PRIVATE if private else Visibility.PUBLIC, visible_to=seen, created_at=NOW,
    )  # fmt: skip


def player(pid: int, name: str) -> Player:
    return Player(id=pid, game_id=1, user_key=name.lower(), name=name, joined_at=NOW)


# Who is in the scene


# The leak guard


def guard(*secrets, chapter=0, done=(), unlocked="", uncovered=frozenset(), world=MANOR):
    return Guard(
        guarded_world_secrets(world, chapter, done, unlocked, uncovered) + list(secrets), world_public_runs(world),
        world_public_sentences(world),
    )  # fmt: skip


def test_five_letter_words_lose_ed_and_keep_their_own_e():
    from bot.words import stems

    assert stems("waxed asked armed boxed bowed tried") == stems("wax ask arm box bow try")
    assert stems("hated hoped cared") == stems("hate hope care") == frozenset({"hate", "hope", "care"})
    assert stems("bleed speed shred shreds") == frozenset({"bleed", "speed", "shred"})


def test_stopwords_are_known_before_their_endings_are_cut():
    from bot.words import content_words

    assert [surface for _, surface in content_words("This does his thing, Silas's")] == ["thing", "Silas's"]


def test_titles_do_not_end_a_sentence():
    aside = entry(3, "Mrs. Crane lied.", seen=(1,), private=True)
    g = guard(*private_secrets([aside], []))
    text = "Mrs. Crane sighs. Mrs. Crane lied. Ask Dr. Pike. What now?"
    assert sentences(text) == ["Mrs. Crane sighs.", "Mrs. Crane lied.", "Ask Dr. Pike.", "What now?"]
    assert strip(text, g.candidates(text)) == "Mrs. Crane sighs. Ask Dr. Pike. What now?"
    assert complete_sentences("Ask Dr. Pike. Then Mr. ") == ("Ask Dr. Pike. ", "Then Mr. ")


def test_a_stream_is_released_a_whole_sentence_at_a_time():
    assert complete_sentences("The door opens. A cold dra") == ("The door opens. ", "A cold dra")
    assert complete_sentences("No end yet") == ("", "No end yet")
    assert complete_sentences('He says "Go." Then') == ('He says "Go." ', "Then")
