"""What the GM is told of the world: the frozen layer, its GM-only secrets, and the notes of NPCs entering."""

from __future__ import annotations

from bot.memory.brief import (
    EXAMPLE_REPLIES,
    frozen_tokens,
    npc_notes,
    npc_secrets,
    scene_notes,
    world_brief,
    world_hints,
    world_secrets,
)
from bot.memory.npcs import NpcScene
from tests.memory.test_hidden import MANOR, player


def words(text: str) -> int:
    return len(text.split())


def test_the_full_brief_carries_an_example_reply_and_the_players_and_the_short_one_none():
    full = world_brief(MANOR, 0, [player(1, "Maya")], 80, example=1)
    assert full.startswith('You are the game master (GM) of "Hollow Manor"')
    assert EXAMPLE_REPLIES[1] in full and EXAMPLE_REPLIES[0] not in full
    assert "Keep each reply under 80 words." in full
    assert full.endswith("Players: Maya.")
    assert f"Current chapter: {MANOR.chapters[0].title}." in full
    short = world_brief(MANOR, 0, [], 80, full=False)
    assert not any(example in short for example in EXAMPLE_REPLIES)
    assert "Players:" not in short and len(short) < len(full)
    assert "Every chapter is done" in world_brief(MANOR, len(MANOR.chapters), [], 80)


def test_with_the_secrets_held_a_beat_is_shown_by_its_steer_not_its_answer():
    beat = next(b for b in MANOR.chapters[1].beats if b.id == "hidden-stair")
    assert beat.steer and beat.description
    assert f"- {beat.description}" in world_brief(MANOR, 1, [], 80)
    held = world_brief(MANOR, 1, [], 80, held=True)
    assert f"- {beat.steer}" in held and beat.description not in held


def test_the_frozen_layer_is_measured_at_its_largest():
    largest = frozen_tokens(MANOR, words, 80)
    every = [
        words(world_brief(MANOR, i, (), 80, held=held, example=e))
        for i in range(len(MANOR.chapters))
        for held in (False, True)
        for e in range(len(EXAMPLE_REPLIES))
    ]
    assert largest == max(every)
    assert frozen_tokens(MANOR, words, 80, full=False) < largest


def test_the_secrets_layer_holds_the_truths_first_then_this_chapters_clues():
    items = world_secrets(MANOR, 0)
    truths = [f"truth:{t.id}" for t in MANOR.truths]
    assert [item.ref for item in items[: len(truths)]] == truths
    clues = [item for item in items[len(truths) :]]
    assert clues and all(item.ref.startswith("clue:") for item in clues)
    assert all(item.text.startswith("Private clue, only for the one player") for item in clues)
    assert all(item.text.startswith("When ") for item in world_secrets(MANOR, 0, full=False)[len(truths) :])
    assert [item.ref for item in world_secrets(MANOR, len(MANOR.chapters))] == truths, "no chapter, no clue"


def test_with_the_secrets_held_the_gm_gets_what_was_uncovered_and_the_hints_of_the_rest():
    items = world_hints(MANOR, frozenset({"truth:hidden-stair"}))
    assert items[0].ref == "truth:hidden-stair" and items[0].text.startswith("Uncovered: ")
    refs = [item.ref for item in items[1:]]
    assert refs == [f"hint:{t.id}" for t in MANOR.truths if t.id != "hidden-stair" and t.hint]
    assert not any(item.ref.startswith("clue:") for item in items)


def test_an_npcs_notes_say_what_it_admitted_never_what_it_still_hides():
    notes = npc_notes(MANOR, "dr-pike", frozenset({"npc:dr-pike:hides:0"}))
    refs = [item.ref for item in notes]
    assert refs[0] == "npc:dr-pike:behaviour"
    assert "npc:dr-pike:hides:0" in refs and "npc:dr-pike:hides:1" not in refs
    assert next(item for item in notes if item.ref == "npc:dr-pike:hides:0").text.startswith(
        "Dr. Anselm Pike has admitted: "
    )
    hides = npc_secrets(MANOR, "dr-pike")
    pike = next(npc for npc in MANOR.npcs if npc.id == "dr-pike")
    assert [item.ref for item in hides] == [f"npc:dr-pike:hides:{i}" for i in range(len(pike.secrets))] + [
        f"npc:dr-pike:knows:{i}" for i in range(len(pike.knows))
    ]
    assert npc_notes(MANOR, "nobody", frozenset()) == [] and npc_secrets(MANOR, "nobody") == []


def test_npcs_entering_who_saw_the_same_turns_share_one_note_and_bring_their_secrets():
    scene = [
        NpcScene("dr-pike", "Dr. Anselm Pike", (1, 2, 3), ("GM: rain",)),
        NpcScene("meg-wren", "Meg Wren", (1, 2, 3), ("GM: rain",)),
    ]
    notes, secrets = scene_notes(MANOR, scene, 4, set())
    assert [(n.ref, n.text) for n in notes] == [
        (
            "scene:dr-pike,meg-wren:4",
            "Dr. Anselm Pike and Meg Wren are here. Each witnessed turns 1-3, and knows nothing else that happened;"
            " saw: GM: rain.",
        )
    ]
    assert [s.ref for s in secrets] == [s.ref for s in npc_secrets(MANOR, "dr-pike") + npc_secrets(MANOR, "meg-wren")]
    apart, _ = scene_notes(MANOR, scene, 4, set(), grouped=False)
    assert [n.ref for n in apart] == ["scene:dr-pike:4", "scene:meg-wren:4"]
    # Present for every turn since their note: nothing new to say.
    assert scene_notes(MANOR, scene, 4, {"scene:dr-pike,meg-wren:1"}) == ([], [])
    # A secret already in the prompt is not given again.
    _, fewer = scene_notes(MANOR, scene[:1], 4, {"npc:dr-pike:hides:0"})
    assert "npc:dr-pike:hides:0" not in [s.ref for s in fewer] and len(fewer) == len(npc_secrets(MANOR, "dr-pike")) - 1
