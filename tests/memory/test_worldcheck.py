"""What ``check`` and a start say a world lacks for the engine to direct its secrets (F39), one line each (the
conditions the engine judges actions by are tests/memory/test_reveals.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.memory.reveals import Scene, due, uncoverables
from bot.memory.worldcheck import world_problems
from bot.worlds import World, load_world, world_from_text

PROJECT = Path(__file__).parent.parent.parent
MANOR = load_world(PROJECT / "worlds" / "hollow-manor.yaml")


def test_the_shipped_worlds_lack_nothing():
    for path in sorted((PROJECT / "worlds").glob("*.yaml")):
        assert world_problems(load_world(path)) == [], path


def _world(change) -> World:
    data = yaml.safe_load((PROJECT / "worlds" / "hollow-manor.yaml").read_text())
    change(data)
    return world_from_text(yaml.safe_dump(data), Path("manor.yaml"))


def test_a_condition_naming_what_the_world_has_not_is_said_and_left_out_and_the_rest_still_holds():
    def change(data):
        stair = next(t for t in data["truths"] if t["id"] == "hidden-stair")
        stair["uncovered_by"] = [
            {"to": "the-butler", "words": ["stair"]},
            {"words": ["atlas"], "after": ["no-such-beat"]},
            {"words": ["atlas", "pull"]},
        ]

    world = _world(change)
    problems = world_problems(world)
    assert (
        "truths.2 (hidden-stair).uncovered_by.0.to: no NPC 'the-butler' in this world; this condition is left out"
        in problems
    )
    assert (
        "truths.2 (hidden-stair).uncovered_by.1.after: no beat or truth 'no-such-beat' in this world; "
        "this condition is left out"
    ) in problems
    stair = next(i for i in uncoverables(world) if i.ref == "truth:hidden-stair")
    assert len(stair.conditions) == 2, "the valid condition, and revealed_by's beat"
    opened = due(world, 1, Scene("I pull the green atlas.", 1, "Maya"), frozenset(), frozenset())
    assert "truth:hidden-stair" in {r.ref for r in opened}, "a game goes on with what was valid"


def test_a_truth_without_a_hint_or_a_way_to_uncover_it_and_a_hint_that_tells_it_are_said():
    def change(data):
        poison = data["truths"][0]
        del poison["hint"]
        poison["revealed_by"] = []
        stair = next(t for t in data["truths"] if t["id"] == "hidden-stair")
        stair["hint"] = "There is a hidden stair behind the bookcase."

    problems = world_problems(_world(change))
    assert (
        "truths.0 (ashby-poisoned-silas): no action can uncover it (give it uncovered_by, unlocked_by or revealed_by)"
        in problems
    )
    assert any(p.startswith("truths.0 (ashby-poisoned-silas): no hint;") for p in problems)
    assert any(
        p.startswith("truths.2 (hidden-stair).hint: gives away truth:hidden-stair in its own words") for p in problems
    )


def test_a_clue_no_action_can_earn_and_a_word_no_action_is_told_by_are_said():
    def change(data):
        beat = data["chapters"][0]["beats"][1]
        beat["private_clue"]["earned_by"] = [{"to": "nobody-here", "words": ["sniff"]}]
        data["chapters"][0]["beats"][0]["done_when"] = [{"words": ["the|it", "door"]}, {"words": ["will|door"]}]

    problems = world_problems(_world(change))
    assert (
        "chapters.0.beats.1 (locked-room).private_clue: no action can earn it (its conditions are all left out)"
        in problems
    )
    assert (
        "chapters.0.beats.0 (break-in).done_when.0.words: 'the|it' holds common words only, which no action is told "
        "by; this condition is left out"
    ) in problems
    assert (
        "chapters.0.beats.0 (break-in).done_when.1.words: 'will' in 'will|door' is a common word, never matched"
        in problems
    )


def test_a_beat_whose_description_tells_a_truth_needs_a_steer():
    def change(data):
        del data["chapters"][1]["beats"][2]["steer"]

    problems = world_problems(_world(change))
    assert any(
        p.startswith("chapters.1.beats.2 (hidden-stair).description: gives away truth:hidden-stair") for p in problems
    )
