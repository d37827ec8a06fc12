"""The world book: which lore reaches the GM, for which words, in which order."""

from __future__ import annotations

import pytest

from bot.memory.lore import LoreMatch, match_lore, scan_texts
from bot.worlds import LoreEntry, load_world
from tests.conftest import FIXTURES


def entry(id: str, *keys: str, secondary: tuple[str, ...] = (), always_on: bool = False, priority: int = 50):
    return LoreEntry(
        id=id,
        keys=list(keys),
        secondary_keys=list(secondary),
        always_on=always_on,
        priority=priority,
        content=f"About {id}.",
    )


def fired(entries, *texts: str) -> list[str]:
    return [match.entry.id for match in match_lore(entries, texts)]


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("oil", "I sniff the oil."),
        ("oil", "Oil!"),
        ("oil", "OIL, quick"),
        ("oil", "the oil store"),
        ("oil", "an oil-soaked rag"),
        ("Gull Rock", "we row out to gull rock"),
        ("Gull Rock", "the gull\n   Rock looms"),
        ("Dr. Pike", "I knock on Dr. Pike's door"),
        ("Dr. Pike", "(dr. pike)"),
        ("J.A.", "the letter is signed J.A. in blue ink"),
        ("J.A.", "signed: J.A."),
        ("Silas", "I search Silas's coat"),
        ("Silas", "I search Silas\u2019s coat"),
        ("Silas", "the Silas' boat"),
        ("Silas's lamp", "I light silas\u2019s lamp"),
        ("sea cave", '"Sea cave?" she asks.'),
    ],
)
def test_a_key_fires_as_a_whole_word_or_phrase_in_any_case(key: str, text: str):
    assert fired([entry("it", key)], text) == ["it"]


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("oil", "the kettle is boiling"),
        ("oil", "toil and trouble"),
        ("oil", "oily hands"),
        ("Gull Rock", "a gull, a rock"),
        ("Gull Rock", "gullrock"),
        ("Dr. Pike", "Dr Pike"),
        ("J.A.", "J.A.B. wrote it"),
        ("don", "I don't know"),
        ("room 1", "room 12"),
    ],
)
def test_a_key_does_not_fire_inside_another_word(key: str, text: str):
    assert fired([entry("it", key)], text) == []


def test_the_match_names_the_key_that_fired():
    matches = match_lore([entry("rock", "Gull Rock", "the rock")], ["We land on the rock."])
    assert matches == [LoreMatch(entry("rock", "Gull Rock", "the rock"), "the rock")]


def test_a_key_is_not_joined_across_two_texts():
    assert fired([entry("rock", "Gull Rock")], "A lone gull", "Rock and sea") == []


def test_an_entry_with_secondary_keys_needs_one_of_each():
    store = entry("oil-store", "oil", secondary=("store", "cellar"))
    assert fired([store], "I look for the oil.") == []
    assert fired([store], "I go down to the cellar.") == [], "a secondary key alone does nothing"
    assert fired([store], "Is the oil kept in the cellar?") == ["oil-store"]
    assert fired([store], "Where is the oil?", "Wren points at the store.") == ["oil-store"]


def test_an_always_on_entry_fires_with_no_key_said():
    weather = entry("weather", always_on=True)
    assert match_lore([weather], ["I wave."]) == [LoreMatch(weather, None)]
    assert fired([weather]) == ["weather"]


def test_entries_come_highest_priority_first_then_in_their_own_order():
    entries = [
        entry("low", "rock", priority=10),
        entry("first-mid", "rock"),
        entry("high", "rock", priority=90),
        entry("second-mid", "rock"),
        entry("unsaid", "lamp", priority=100),
    ]
    assert fired(entries, "the rock") == ["high", "first-mid", "second-mid", "low"]


def test_an_entry_fires_once_however_many_of_its_keys_are_said():
    keeper = entry("keeper", "keeper", "Amos", "the old man")
    assert fired([keeper], "The keeper, Amos, the old man.", "Amos again, keeper.") == ["keeper"]


def test_an_id_given_twice_fires_once():
    assert fired([entry("rock", "rock"), entry("rock", "granite")], "rock and granite") == ["rock"]


def test_scan_texts_is_the_last_turns_then_the_new_action():
    recent = ["turn 1", "turn 2", "turn 3"]
    assert scan_texts("I climb.", recent, 2) == ["turn 2", "turn 3", "I climb."]
    assert scan_texts("I climb.", recent, 10) == ["turn 1", "turn 2", "turn 3", "I climb."]
    assert scan_texts("I climb.", recent, 0) == ["I climb."]


def test_lore_arrives_on_the_turn_its_key_is_first_typed():
    world = load_world(FIXTURES / "worlds" / "lighthouse.yaml")
    recent = ["GM: The boat bumps the landing stage.", "Ann: I step off the boat."]
    before = match_lore(world.lore, scan_texts("I look around.", recent, 4))
    now = match_lore(world.lore, scan_texts("I ask Wren where the oil store is.", recent, 4))
    assert [match.entry.id for match in before] == ["weather"]
    assert [match.entry.id for match in now] == ["oil-store", "weather"]


def test_lore_from_a_recent_turn_keeps_firing_within_the_depth():
    world = load_world(FIXTURES / "worlds" / "lighthouse.yaml")
    recent = ["GM: Gull Rock rises out of the fog.", "Ann: I tie up the boat.", "GM: The rope holds."]
    assert "gull-rock" in fired(world.lore, *scan_texts("I wait.", recent, 3))
    assert "gull-rock" not in fired(world.lore, *scan_texts("I wait.", recent, 2))
