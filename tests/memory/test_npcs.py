"""Who of the world's characters is in the scene: names, aliases, who an action speaks to."""

from __future__ import annotations

from bot.memory.npcs import cast_of, turn_ranges
from tests.memory.test_hidden import MANOR


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


def test_an_action_speaks_to_the_npc_it_calls_or_asks_else_to_every_npc_it_names():
    cast = cast_of(MANOR)
    assert cast.addressed("I ask Mrs. Crane about the brandy, while Dr. Pike watches.") == ["hester-crane"]
    assert cast.addressed("Pike, where were you at eleven?") == ["dr-pike"]
    assert cast.addressed("I look at Meg and Tobias.") == ["meg-wren", "tobias-crane"]
    assert cast.addressed("I look around the empty hall.") == []


def test_the_npc_named_last_is_the_one_a_speaker_turned_to_last():
    cast = cast_of(MANOR)
    assert cast.last_named("I ask Mrs. Crane about the brandy, while Dr. Pike watches.") == "dr-pike"
    assert cast.last_named("The doctor glances at the housekeeper.") == "hester-crane"
    assert cast.last_named("Nobody answers.") is None


def test_the_cast_keeps_each_npcs_display_name_and_drops_ambiguous_short_names():
    cast = cast_of(MANOR)
    assert cast.display["dr-pike"] == "Dr. Anselm Pike"
    assert "Dr. Pike" in cast.names["dr-pike"] and "Pike" in cast.names["dr-pike"]
    assert "Crane" not in cast.names["hester-crane"] + cast.names["tobias-crane"]
    assert "Wren" not in cast.names["meg-wren"]
    pike = cast.names["dr-pike"]
    assert [len(a) for a in pike] == sorted((len(a) for a in pike), reverse=True), "longest first"
