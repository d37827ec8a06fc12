"""The leak guard's policy: which sentences give away a secret, and to whom."""

from __future__ import annotations

from bot.memory.leaks import (
    Guard,
    guarded_world_secrets,
    private_secrets,
    prompt_secret,
    strip,
    world_public_runs,
    world_public_sentences,
)
from bot.store.models import PlayerMemory
from bot.worlds import load_world
from tests.memory.test_hidden import MANOR, NOW, PROJECT, entry, guard


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


def test_a_secret_the_narrator_never_held_is_stopped_by_meaning_only_when_told_in_its_own_words():
    """With the secrets held by the engine, a sentence merely on a truth's topic is a guess, not a paraphrase: it
    counts only when close to the truth and using two of its own words the world's public text does not hold."""
    from bot.memory.leaks import MEANING_RULE, NEVER_HELD_RULE, rule_says_leak

    on_topic = dict(closeness=0.6, public=0.2, shared=3)  # what stopped a held reply about the brandy glass
    assert rule_says_leak(MEANING_RULE, **on_topic)
    assert not rule_says_leak(NEVER_HELD_RULE, **on_topic)
    assert not rule_says_leak(NEVER_HELD_RULE, closeness=0.8, public=0.3, shared=1), "close, but not its words"
    assert rule_says_leak(NEVER_HELD_RULE, closeness=0.7, public=0.3, shared=2), "close, and in its own words"
