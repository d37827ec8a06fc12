"""Importing a SillyTavern World Info export into a world book."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.worldinfo import import_into_world_file, parse_world_info
from bot.worlds import WorldFileError, load_world
from tests.conftest import FIXTURES

LIGHTHOUSE = FIXTURES / "worlds" / "lighthouse.yaml"


def st_entry(uid: int, comment: str, key, content: str = "", **fields) -> dict:
    """One entry as SillyTavern writes it, with a few of its many other fields."""
    return {
        "uid": uid,
        "key": key,
        "keysecondary": [],
        "comment": comment,
        "content": content or f"Lore about {comment or uid}.",
        "constant": False,
        "selective": True,
        "selectiveLogic": 0,
        "order": 100,
        "position": 0,
        "disable": False,
        "excludeRecursion": False,
        "probability": 100,
        "useProbability": True,
        "depth": 4,
        "group": "",
        **fields,
    }


def st_entries() -> list[dict]:
    return [
        st_entry(0, "The Storm", [], "A gale is always coming.", constant=True, order=900),
        st_entry(1, "Oil Store", ["oil"], keysecondary=["cellar", "store"], order=250),
        st_entry(2, "Wren", ["Wren", "boatman"], keysecondary=["smugglers"], selective=False, order=50),
        st_entry(3, "Old Keeper", ["keeper"], disable=True),
        st_entry(4, "Blank", ["blank"], content="   "),
        st_entry(5, "Sea Cave", ["sea cave, the cave , grotto"], order=250),
        st_entry(6, "Dr. Pike", ["/dr\\.? pike/i", "Dr. Pike"], order=1000),
        st_entry(7, "Wren", ["Wren Tally"], order=0),
        st_entry(8, "", ["ghost"], order=400),
        st_entry(9, "Only Regex", ["/lamp(s)?/i"]),
        st_entry(10, "Too Long", ["long"], content="x" * 5000),
    ]


def dict_export() -> dict:
    return {"entries": {str(entry["uid"]): entry for entry in st_entries()}}


def list_export() -> dict:
    return {"entries": st_entries()}


@pytest.fixture(params=[dict_export, list_export], ids=["dict-of-entries", "list"])
def export(request) -> dict:
    return request.param()


def by_id(result) -> dict:
    return {entry.id: entry for entry in result.entries}


def test_entries_map_onto_lore(export: dict):
    entries = by_id(parse_world_info(export, "export.json"))
    assert list(entries) == ["the-storm", "oil-store", "wren", "sea-cave", "dr-pike", "wren-2", "st-8"]
    assert entries["the-storm"].always_on and entries["the-storm"].content == "A gale is always coming."
    assert entries["oil-store"].keys == ["oil"] and entries["oil-store"].secondary_keys == ["cellar", "store"]
    assert entries["wren"].secondary_keys == [], "secondary keys of a non-selective entry are ignored"
    assert entries["sea-cave"].keys == ["sea cave", "the cave", "grotto"]
    assert entries["dr-pike"].keys == ["Dr. Pike"]
    assert entries["wren-2"].keys == ["Wren Tally"]


def test_orders_outside_0_to_100_are_ranked_onto_priorities(export: dict):
    entries = by_id(parse_world_info(export, "export.json"))
    # Distinct orders 0 < 50 < 250 < 400 < 900 < 1000 become 0, 20, 40, 60, 80, 100.
    priorities = {entry_id: entry.priority for entry_id, entry in entries.items()}
    assert priorities == {
        "wren-2": 0,
        "wren": 20,
        "oil-store": 40,
        "sea-cave": 40,
        "st-8": 60,
        "the-storm": 80,
        "dr-pike": 100,
    }


def test_orders_within_0_to_100_are_kept():
    export = {"entries": [st_entry(0, "A", ["a"], order=5), st_entry(1, "B", ["b"], order=95)]}
    assert [entry.priority for entry in parse_world_info(export, "export.json").entries] == [5, 95]


def test_what_is_left_out_is_reported_in_order(export: dict):
    skipped = parse_world_info(export, "export.json").skipped
    assert skipped[:4] == [
        "entries.2.keysecondary: ignored, the entry is not selective",
        "entries.3: disabled",
        "entries.4: empty content",
        'entries.6.key: "/dr\\.? pike/i" is a regular expression, which is not supported; left out',
    ]
    assert skipped[4:6] == [
        'entries.9.key: "/lamp(s)?/i" is a regular expression, which is not supported; left out',
        "entries.9: a lore entry needs keys, or always_on: true, or match: meaning",
    ]
    assert skipped[6].startswith("entries.10.content: String should have at most 4000 characters")
    assert len(skipped) == 7


def test_negated_secondary_logic_drops_the_secondary_keys():
    export = {"entries": [st_entry(0, "Cave", ["cave"], keysecondary=["day"], selectiveLogic=2)]}
    result = parse_world_info(export, "export.json")
    assert result.entries[0].secondary_keys == []
    assert result.skipped == ["entries.0.selectiveLogic: NOT ANY is not supported; secondary keys left out"]


def test_ids_are_unique_against_existing_lore():
    export = {"entries": [st_entry(0, "Gull Rock", ["rock"])]}
    result = parse_world_info(export, "export.json", existing_ids={"gull-rock", "gull-rock-2"})
    assert [entry.id for entry in result.entries] == ["gull-rock-3"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "my book"}, "export.json: entries: missing"),
        ([1, 2], "export.json: (top level): expected an object"),
        ({"entries": "none"}, "export.json: entries: expected an object or a list"),
    ],
)
def test_a_malformed_export_names_the_file_and_the_problem(data, message: str):
    with pytest.raises(UserError) as caught:
        parse_world_info(data, "export.json")
    assert str(caught.value).startswith(message)


@pytest.fixture
def world_path(tmp_path: Path) -> Path:
    return Path(shutil.copy(LIGHTHOUSE, tmp_path / "lighthouse.yaml"))


def write_export(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_import_adds_the_entries_to_the_world_file(tmp_path: Path, world_path: Path):
    original = [entry.id for entry in load_world(world_path).lore]
    data = dict_export()
    data["entries"]["11"] = st_entry(11, "Gull Rock", ["the gull rock light"], "Caf\u00e9 lights, \u00e0 la mode.")
    result = import_into_world_file(write_export(tmp_path, data), world_path)

    world = load_world(world_path)
    ids = [entry.id for entry in world.lore]
    assert ids[: len(original)] == original == ["gull-rock", "oil-store", "weather"]
    assert ids[len(original) :] == [entry.id for entry in result.entries]
    assert "gull-rock-2" in ids and "oil-store-2" in ids, "clashing ids get a suffix"
    assert len(set(ids)) == len(ids)
    assert world.lore == load_world(LIGHTHOUSE).lore + result.entries
    assert "Caf\u00e9 lights" in world_path.read_text(encoding="utf-8")
    assert world.chapters == load_world(LIGHTHOUSE).chapters


def test_multi_line_lore_is_written_as_a_readable_block(tmp_path: Path, world_path: Path):
    content = "The cave floods at high tide.\n\nA ledge stays dry."
    import_into_world_file(write_export(tmp_path, {"entries": [st_entry(0, "Cave", ["cave"], content)]}), world_path)
    # At the file's own indentation: its lore items sit two spaces in.
    block = "    content: |-\n      The cave floods at high tide.\n\n      A ledge stays dry.\n"
    assert block in world_path.read_text()
    assert load_world(world_path).lore[-1].content == content


def test_an_import_past_the_lore_limit_changes_nothing(tmp_path: Path, world_path: Path):
    before = world_path.read_bytes()
    data = {"entries": [st_entry(n, f"Entry {n}", [f"word{n}"]) for n in range(200)]}
    with pytest.raises(WorldFileError) as caught:
        import_into_world_file(write_export(tmp_path, data), world_path)
    assert "lore:" in str(caught.value) and "the file was not changed" in str(caught.value)
    assert world_path.read_bytes() == before


def test_an_export_that_is_not_json_names_the_file(tmp_path: Path, world_path: Path):
    export_path = tmp_path / "export.json"
    export_path.write_text("{ not json", encoding="utf-8")
    with pytest.raises(UserError) as caught:
        import_into_world_file(export_path, world_path)
    assert str(caught.value).startswith(f"{export_path}: line 1, column 3: not valid JSON")


def test_an_export_without_entries_names_the_file(tmp_path: Path, world_path: Path):
    before = world_path.read_bytes()
    export_path = write_export(tmp_path, {"name": "book"})
    with pytest.raises(UserError) as caught:
        import_into_world_file(export_path, world_path)
    assert str(caught.value).startswith(f"{export_path}: entries: missing")
    assert world_path.read_bytes() == before


def test_a_missing_export_names_the_file(tmp_path: Path, world_path: Path):
    with pytest.raises(UserError) as caught:
        import_into_world_file(tmp_path / "nowhere.json", world_path)
    assert str(caught.value) == f"{tmp_path / 'nowhere.json'}: no such file"


def test_a_broken_world_file_is_reported_as_such(tmp_path: Path):
    world_path = tmp_path / "broken.yaml"
    world_path.write_text("title: [unclosed\n", encoding="utf-8")
    with pytest.raises(WorldFileError) as caught:
        import_into_world_file(write_export(tmp_path, dict_export()), world_path)
    assert str(caught.value).startswith(f"{world_path}: line")


def test_an_import_changes_nothing_else_in_the_world_file(tmp_path: Path, world_path: Path):
    before = world_path.read_text()
    export = write_export(tmp_path, {"entries": [st_entry(0, "Cave", ["cave"], "{{char}} shows {{user}} the cave.")]})
    result = import_into_world_file(export, world_path)
    after = world_path.read_text()
    changes = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines()).get_opcodes()
    assert {tag for tag, *_ in changes} == {"equal", "insert"}, "lines are only added: comments, order, format stay"
    assert "# A small but complete world for tests" in after
    assert [e.content for e in result.entries] == ["the GM shows the player the cave."], "macros are translated"
    assert load_world(world_path).lore[-1].id == result.entries[0].id


def test_an_import_into_a_world_without_lore_adds_the_list_at_the_end(tmp_path: Path):
    world = tmp_path / "bare.yaml"
    text = (FIXTURES / "worlds" / "lighthouse.yaml").read_text()
    world.write_text(text.split("lore:")[0] + "opening: " + text.split("opening: ")[1])
    before = world.read_text()
    import_into_world_file(write_export(tmp_path, {"entries": [st_entry(0, "Cave", ["cave"], "A cave.")]}), world)
    assert world.read_text().startswith(before.rstrip("\n") + "\n\nlore:\n- id: cave")


def test_an_entry_sillytavern_vectorized_also_fires_by_meaning():
    export = {
        "entries": [
            st_entry(0, "Lamp", ["lamp"], "The lamp burns colza oil.", vectorized=True),
            st_entry(1, "Tide", [], "The tide turns at dusk.", vectorized=True),
            st_entry(2, "Boat", ["boat"], "The supply boat comes twice a month."),
        ]
    }
    result = parse_world_info(export, "export.json")
    assert [(e.id, e.match) for e in result.entries] == [("lamp", "both"), ("tide", "meaning"), ("boat", "keys")]
