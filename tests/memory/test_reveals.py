"""What an action uncovers: the conditions the engine judges actions by, and what they open."""

from __future__ import annotations

from bot.memory.reveals import GAME, PLAYER, Scene, due, meanings, met, roll_total, uncoverables
from bot.worlds import Condition
from tests.memory.test_worldcheck import MANOR


def test_each_part_of_a_condition_must_hold():
    scene = Scene(
        "Mrs. Crane, is there a secret passage from the study?", 1, "Maya", rolls=(14,),
        addressed=frozenset({"hester-crane"}), where="The study is cold.", done=frozenset({"break-in"}),
    )  # fmt: skip
    assert met(Condition(words=["passage|stair"], to="hester-crane", roll=12), scene) == (
        "words: passage; to hester-crane; rolled 14 (needs 12)"
    )
    assert met(Condition(words=["passage"], to="meg-wren"), scene) is None, "asked the wrong person"
    assert met(Condition(words=["passage"], roll=15), scene) is None, "rolled too low"
    assert met(Condition(words=["passage"], place=["linen room"]), scene) is None, "the wrong place"
    assert met(Condition(words=["passage"], place=["study"]), scene) == "words: passage; in study"
    assert met(Condition(after=["break-in", "notebook"]), scene) is None, "not everything before it is done"
    assert met(Condition(words=["secrets"]), scene) == "words: secrets", "matched by stems: secret, secrets"
    close = Scene("I look for another way out.", 1, "Maya", closeness={"looks for a way out": 0.7})
    assert met(Condition(meaning="looks for a way out"), close) == "meaning 0.70: looks for a way out"
    assert met(Condition(meaning="looks for a way out"), Scene("I look.", 1, "Maya")) is None, "no embedding model"


def test_an_action_that_finishes_a_beat_opens_at_once_the_truth_that_waits_on_it():
    scene = Scene("I tilt the atlas on the shelf.", 1, "Maya")
    opened = due(MANOR, 1, scene, frozenset(), frozenset())
    assert [(r.ref, r.why, r.lasts, r.player_id) for r in opened] == [
        ("beat:hidden-stair", "words: atlas + tilt", GAME, 1),
        ("truth:hidden-stair", "after hidden-stair", GAME, 1),
    ]
    assert due(MANOR, 0, scene, frozenset(), frozenset()) == [], "the beat belongs to another chapter"
    assert due(MANOR, 1, scene, frozenset({"beat:hidden-stair"}), frozenset()) == [], "not opened twice"


def test_a_clue_is_given_to_the_player_who_earned_it_once():
    scene = Scene("I sniff the brandy glass.", 2, "Tom")
    opened = due(MANOR, 0, scene, frozenset(), frozenset())
    assert [(r.ref, r.why, r.lasts, r.player_id) for r in opened] == [
        ("clue:locked-room", "words: sniff + glass", PLAYER, 2)
    ]
    assert due(MANOR, 0, scene, frozenset(), frozenset({"clue:locked-room"})) == []


def test_every_secret_of_the_world_waits_to_be_uncovered_in_the_worlds_order():
    items = uncoverables(MANOR)
    refs = [item.ref for item in items]
    assert refs[: len(MANOR.truths)] == [f"truth:{t.id}" for t in MANOR.truths]
    assert sum(len(npc.secrets) for npc in MANOR.npcs) == len([r for r in refs if r.startswith("npc:")])
    meg = next(item for item in items if item.ref == "npc:meg-wren:hides:0")
    assert meg.npc == "meg-wren" and meg.lasts == GAME and meg.chapter is None
    clue = next(item for item in items if item.ref == "clue:blotter")
    assert clue.lasts == PLAYER and clue.chapter == 1
    assert meanings(items) == list(dict.fromkeys(meanings(items))), "each meaning once"
    assert "comforts Meg and offers to keep her safe" in meanings(items)


def test_a_logged_rolls_total_is_its_last_number_in_code():
    assert roll_total("1d20 (14) + 5 = `19`") == 19
    assert roll_total("`-3`") == -3
    assert roll_total("no roll here") is None
