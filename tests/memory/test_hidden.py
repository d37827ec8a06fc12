"""Hidden information, pure parts: what a player's memory may read and how it is marked, words and sentences as the
guard reads them (what leaks is tests/memory/test_leaks.py, who is in a scene tests/memory/test_npcs.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.memory.leaks import (
    Guard,
    guarded_world_secrets,
    private_secrets,
    strip,
    world_public_runs,
    world_public_sentences,
)
from bot.memory.players import PrivateMemoryAnswer, entry_line, material, tidy, update_messages
from bot.store.models import EntryKind, LogEntry, Player, PlayerMemory, Visibility
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
