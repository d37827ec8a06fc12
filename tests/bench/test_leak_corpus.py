"""bench leaks' sentences for the guard by meaning: written for the bench, so none is in its world's file, and no
clean one holds a phrase the world's author named as giving a truth away (the guard by words would stop it, and
the sentence would measure nothing of the guard by meaning)."""

from __future__ import annotations

from bot.bench.leak_corpus import CLEAN, EMBER_CLEAN, EMBER_PARAPHRASED, PARAPHRASED
from bot.bench.leaks import leaks
from bot.worlds import WorldLibrary
from tests.conftest import PROJECT

CORPUS = {"hollow-manor": (PARAPHRASED, CLEAN), "ember-road": (EMBER_PARAPHRASED, EMBER_CLEAN)}


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


def test_no_sentence_is_in_its_world_and_no_clean_one_holds_a_phrase_that_gives_a_truth_away():
    library = WorldLibrary(PROJECT / "worlds")
    for world_id, (paraphrased, clean) in CORPUS.items():
        world = library.worlds[world_id]
        written = _flat((PROJECT / "worlds" / f"{world_id}.yaml").read_text())
        assert [s for s in (*paraphrased, *clean) if _flat(s) in written] == [], world_id
        phrases = [phrase for truth in world.truths for phrase in truth.key_phrases]
        assert phrases, f"{world_id} names the phrases that give its truths away"
        assert {s: leaks(s, phrases) for s in clean if leaks(s, phrases)} == {}, world_id
        assert not set(paraphrased) & set(clean), "a sentence is a leak or clean, not both"
