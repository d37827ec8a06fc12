"""Hidden information, pure parts: what a player's memory may read, who is in a scene, what leaks."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.memory.leaks import (
    Guard,
    guarded_world_secrets,
    private_secrets,
    prompt_secret,
    strip,
    world_public_runs,
    world_public_sentences,
)
from bot.memory.npcs import cast_of, turn_ranges
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


def test_npcs_are_found_by_name_alias_and_unambiguous_surname():
    cast = cast_of(MANOR)
    assert cast.present(["Mrs. Crane brings tea while the doctor frowns."]) == ["dr-pike", "hester-crane"]
    assert cast.present(["Pike checks his watch."]) == ["dr-pike"]
    # "Crane" is two people, and "Wren" is also the dead man's name: neither alone brings anyone in.
    assert cast.present(["Crane", "Silas Wren lies still."]) == []
    assert cast.present(["Meg lights a cigarette; Tobias looks at the floor."]) == ["meg-wren", "tobias-crane"]


def test_a_name_of_titles_alone_is_not_found_in_every_scene():
    captain = MANOR.npcs[0].model_copy(update={"id": "captain", "name": "The Captain", "aliases": []})
    world = MANOR.model_copy(update={"npcs": [captain]})
    assert cast_of(world).names["captain"] == ("The Captain",)
    assert cast_of(world).present(["The rain falls on the house."]) == []
    assert cast_of(world).present(["The captain salutes."]) == ["captain"]


def test_turn_ranges_are_short():
    assert turn_ranges([1, 2, 3, 7, 9, 10]) == "1-3, 7, 9-10"
    assert turn_ranges(list(range(0, 40, 2)), limit=3) == "… 34, 36, 38"


# The leak guard


def guard(*secrets, chapter=0, done=(), unlocked="", uncovered=frozenset(), world=MANOR):
    return Guard(
        guarded_world_secrets(world, chapter, done, unlocked, uncovered) + list(secrets), world_public_runs(world),
        world_public_sentences(world),
    )  # fmt: skip


def refs(hits):
    return {h.ref for h in hits}


def test_a_run_of_a_secret_that_one_public_sentence_says_whole_is_no_leak_but_a_key_phrase_still_is():
    """The lore says "Tobias went out to the generator shed and had them back on at about twenty past eleven":
    the run "past eleven ... generator shed" of what Tobias hides gives nothing away, in any order. What the
    author named as giving a truth away stays guarded whatever the public text holds."""
    said = "At twenty past eleven Tobias was out at the generator shed, he says."
    assert "npc:tobias-crane:hides:0" in refs(
        Guard(guarded_world_secrets(MANOR, 0, (), ""), world_public_runs(MANOR)).candidates(said)
    ), "a run of four of its words, without the check"
    assert not guard().candidates(said)
    assert "truth:hidden-stair" in refs(guard().candidates("The Atlas of the Fens opens the way, you realise."))


def test_a_run_said_whole_by_a_public_sentence_in_another_form_of_its_words_is_no_leak():
    """Ember Road's lore says "the third cask is sealed with red wax" and its opening "the one sealed with red
    wax": the truth's "red-waxed third cask" tells nothing more (Qwen2.5 1.5B's reply naming the cask was stopped
    and written again). "Waxed" and "wax" are one word to the guard; the cocoon inside still is a leak."""
    road = load_world(PROJECT / "worlds" / "ember-road.yaml")
    g = Guard(guarded_world_secrets(road, 0, (), ""), world_public_runs(road), world_public_sentences(road))
    assert not g.candidates("Marrow pats the red-waxed third cask and moves on down the wagon.")
    assert "truth:cocoon-in-the-cask" in refs(g.candidates("The red-waxed third cask hides a moth cocoon."))


def test_five_letter_words_lose_ed_and_keep_their_own_e():
    from bot.words import stems

    assert stems("waxed asked armed boxed bowed tried") == stems("wax ask arm box bow try")
    assert stems("hated hoped cared") == stems("hate hope care") == frozenset({"hate", "hope", "care"})
    assert stems("bleed speed shred shreds") == frozenset({"bleed", "speed", "shred"})


def test_key_phrases_and_close_paraphrases_of_a_truth_are_caught():
    g = guard()
    assert "truth:ashby-poisoned-silas" in refs(g.candidates("Everyone knows Ashby poisoned the brandy."))
    spread = g.candidates("Ashby emptied the whole bottle of sleeping drops into it.")
    assert "truth:ashby-poisoned-silas" in refs(spread)
    assert "truth:hidden-stair" in refs(g.candidates("A narrow stair is hidden behind the study bookcase."))


def test_a_key_phrase_cut_by_a_sentence_end_is_caught_and_both_halves_cut():
    g = guard()
    text = "Rain falls. Ashby? Poisoned the brandy, I would say. The fire crackles."
    assert "truth:ashby-poisoned-silas" in refs(g.candidates(text))
    assert strip(text, g.candidates(text)) == "Rain falls. The fire crackles."


def test_stopwords_are_known_before_their_endings_are_cut():
    from bot.words import content_words

    assert [surface for _, surface in content_words("This does his thing, Silas's")] == ["thing", "Silas's"]


def test_ordinary_narration_and_the_worlds_public_text_are_not_leaks():
    g = guard()
    for text in (
        "The brandy glass sits on the desk. Mrs. Crane weeps.",
        "Dr. Pike's bottle of sleeping drops is on the desk.",
        "The hall clocks chime the quarter hour, and the storm beats on the shutters.",
        "The Causeway is under water and the telephone line is dead.",  # the world's own lore
    ):
        assert g.candidates(text) == [], text


def test_a_truth_opens_when_its_beat_is_done_or_an_action_names_its_unlock_word():
    line = "A narrow stair is hidden behind the study bookcase."
    assert "truth:hidden-stair" in refs(guard().candidates(line))
    # A world written before conditions: a word of unlocked_by in the turn's actions opens it for that reply.
    stair = next(t for t in MANOR.truths if t.id == "hidden-stair")
    unlocking = stair.model_copy(update={"unlocked_by": ["Atlas of the Fens", "Atlas", "bookcase"]})
    older = MANOR.model_copy(update={"truths": [unlocking if t.id == "hidden-stair" else t for t in MANOR.truths]})
    assert "truth:hidden-stair" in refs(guard(world=older).candidates(line))
    assert "truth:hidden-stair" not in refs(guard(world=older, unlocked="I pull out the Atlas.").candidates(line))
    assert "truth:hidden-stair" not in refs(guard(chapter=1, done=("hidden-stair",)).candidates(line))
    # What the engine judged the players uncovered (F39) is no secret either, for good or for this reply.
    assert "truth:hidden-stair" not in refs(guard(uncovered=frozenset({"truth:hidden-stair"})).candidates(line))
    assert "npc:hester-crane:hides:2" in refs(guard().candidates(line))
    opened = frozenset({"truth:hidden-stair", "npc:hester-crane:hides:2"})
    assert refs(guard(uncovered=opened).candidates(line)) == set()
    # Beats of finished chapters count as done.
    assert "truth:ashby-poisoned-silas" not in refs(guard(chapter=3).candidates("Ashby poisoned the brandy."))


def test_private_messages_are_kept_from_everyone_but_their_addressee():
    aside = entry(7, "You see Dr. Pike slip a small brown bottle into his waistcoat.", seen=(1,), private=True)
    memory = PlayerMemory(
        id=1, game_id=1, player_id=2, summary="Tom saw the hall.", facts=("Tom hid the heron cufflink in his boot",),
        through_entry_id=7, created_at=NOW,
    )  # fmt: skip
    g = guard(*private_secrets([aside], [memory]))
    public = "Tom, you notice Pike slip a small brown bottle into his waistcoat."
    assert "entry:7" in refs(g.candidates(public))
    assert "entry:7" in refs(g.candidates(public, audience=2)), "not to Tom by DM either"
    assert g.candidates(public, audience=1) == [], "Maya may be reminded of her own clue"
    boot = "Somewhere a voice says Tom hid the heron cufflink in his boot."
    assert "private:2" in refs(g.candidates(boot))
    assert "private:2" in refs(g.candidates(boot, audience=1))
    assert g.candidates(boot, audience=2) == []
    # World secrets may be told privately (that is how one player learns what another does not).
    assert g.candidates("Ashby poisoned the brandy.", audience=1) == []


def test_repeating_the_prompt_is_caught():
    g = guard(prompt_secret())
    assert "prompt" in refs(g.candidates("Sure. GM-only knowledge: never say it in the public reply."))
    assert "prompt" in refs(g.candidates("My instructions: You are the game master (GM) of Hollow Manor."))


def test_strip_cuts_only_the_leaking_sentences():
    g = guard()
    text = "Rain lashes the windows. Ashby poisoned the brandy! Mrs. Crane looks away.\nWhat do you do?"
    assert strip(text, g.candidates(text)) == "Rain lashes the windows. Mrs. Crane looks away. What do you do?"


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


def test_a_secret_the_narrator_never_held_is_stopped_by_meaning_only_when_told_in_its_own_words():
    """With the secrets held by the engine, a sentence merely on a truth's topic is a guess, not a paraphrase: it
    counts only when close to the truth and using two of its own words the world's public text does not hold."""
    from bot.memory.leaks import MEANING_RULE, NEVER_HELD_RULE, rule_says_leak

    on_topic = dict(closeness=0.6, public=0.2, shared=3)  # what stopped a held reply about the brandy glass
    assert rule_says_leak(MEANING_RULE, **on_topic)
    assert not rule_says_leak(NEVER_HELD_RULE, **on_topic)
    assert not rule_says_leak(NEVER_HELD_RULE, closeness=0.8, public=0.3, shared=1), "close, but not its words"
    assert rule_says_leak(NEVER_HELD_RULE, closeness=0.7, public=0.3, shared=2), "close, and in its own words"
