from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.errors import UserError
from bot.worlds import WorldFileError, WorldLibrary, load_world, world_files
from tests.conftest import FIXTURES, PROJECT, bot_environment

SHIPPED = world_files(PROJECT / "worlds")
LIGHTHOUSE = FIXTURES / "worlds" / "lighthouse.yaml"


def lighthouse() -> dict:
    return yaml.safe_load(LIGHTHOUSE.read_text())


def test_at_least_two_worlds_ship():
    assert len(SHIPPED) >= 2


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_world_loads_and_is_complete(path: Path):
    world = load_world(path)
    assert world.id == path.stem
    assert world.opening and world.rules and world.setting
    assert all(chapter.beats for chapter in world.chapters)
    assert world.lore, "a shipped world has a world book"


def test_a_shipped_world_is_a_mystery_built_on_hidden_information():
    worlds = [load_world(p) for p in SHIPPED]
    mysteries = [
        w
        for w in worlds
        if w.truths
        and any(npc.hides for npc in w.npcs)
        and any(beat.private_clue for chapter in w.chapters for beat in chapter.beats)
    ]
    assert mysteries, "one world needs truths, NPC secrets and private clues"
    assert all(truth.key_phrases for truth in mysteries[0].truths)


# The shipped lore entries that bear a clue the players should find in play: /lore list shows them to admins only.
SECRET_LORE = {
    "hollow-manor": {"silas-pockets", "desk-blotter", "bookcase", "heron-cufflinks", "blue-room"},
    "ember-road": {"red-cask"},
}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_lore_that_bears_a_clue_is_marked_secret_and_the_rest_is_not(path: Path):
    world = load_world(path)
    assert {entry.id for entry in world.lore if entry.secret} == SECRET_LORE.get(world.id, set())
    assert any(not entry.secret for entry in world.lore), "the world's common knowledge stays listed for everyone"


def _mutate(data: dict, change) -> dict:
    change(data)
    return data


# Eight ways to break a world file, each with the field path the author must be shown.
MALFORMED = [
    ("missing-title", lambda d: d.pop("title"), "title: Field required"),
    ("typo-key", lambda d: d.__setitem__("openning", "x"), "openning: Extra inputs are not permitted"),
    ("no-beats", lambda d: d["chapters"][1].__setitem__("beats", []), "chapters.1.beats: List should have at least 1"),
    ("bad-beat-id", lambda d: d["chapters"][0]["beats"][1].__setitem__("id", "Log Book!"), "chapters.0.beats.1.id:"),
    ("npc-extra", lambda d: d["npcs"][0].__setitem__("secret", "x"), "npcs.0.secret: Extra inputs are not permitted"),
    ("lore-no-keys", lambda d: d["lore"][1].__setitem__("keys", []), "lore.1: a lore entry needs keys, or always_on"),
    (
        "lore-secondary-alone",
        lambda d: d["lore"][2].__setitem__("secondary_keys", ["storm"]),
        "lore.2: secondary_keys only narrow keys",
    ),
    ("priority-range", lambda d: d["lore"][0].__setitem__("priority", 500), "lore.0.priority: Input should be less"),
    ("duplicate-npc", lambda d: d["npcs"].append(dict(d["npcs"][0])), "npcs: id 'wren' is used twice"),
    ("rules-not-list", lambda d: d.__setitem__("rules", "be nice"), "rules: Input should be a valid list"),
    ("empty-opening", lambda d: d.__setitem__("opening", "   "), "opening: String should have at least 1 character"),
]


@pytest.mark.parametrize(("name", "change", "expected"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_world_names_file_and_field(tmp_path: Path, name, change, expected):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(_mutate(lighthouse(), change)))
    with pytest.raises(WorldFileError) as raised:
        load_world(path)
    lines = str(raised.value).splitlines()
    assert any(line.startswith(f"{path}: {expected}") for line in lines), lines


def test_yaml_syntax_error_names_the_line(tmp_path: Path):
    path = tmp_path / "broken.yaml"
    path.write_text("title: x\nrules: [unclosed\npitch: y\n")
    with pytest.raises(WorldFileError) as raised:
        load_world(path)
    assert str(raised.value).startswith(f"{path}: line ")
    assert "not valid YAML" in str(raised.value)


def test_a_list_at_top_level_is_refused(tmp_path: Path):
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(WorldFileError, match=r"\(top level\): a world file must be a mapping"):
        load_world(path)


def test_a_key_with_a_line_break_is_named_on_one_line(tmp_path: Path):
    """Found by the bad-input properties: an unknown key holding a line break split its problem over two lines."""
    data = yaml.safe_load(LIGHTHOUSE.read_text())
    data["npcs"][0]["mood\n"] = "grim"
    path = tmp_path / "odd-key.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(WorldFileError) as caught:
        load_world(path)
    assert str(caught.value).splitlines() == [f"{path}: npcs.0.mood\\n: Extra inputs are not permitted"]


def test_a_key_given_twice_is_refused_with_its_path_and_lines(tmp_path: Path):
    path = tmp_path / "twice.yaml"
    text = LIGHTHOUSE.read_text()
    path.write_text(text + "title: a second title\n")
    with pytest.raises(WorldFileError, match=r"title: the key is given twice \(lines \d+ and \d+\); keep one"):
        load_world(path)


def test_a_number_too_long_to_read_is_one_clear_line_and_the_other_worlds_still_load(tmp_path: Path):
    """Python refuses to convert an integer of more than 4,300 digits: one such file must not stop the rest."""
    (tmp_path / "lighthouse.yaml").write_text(LIGHTHOUSE.read_text())
    (tmp_path / "huge.yaml").write_text(LIGHTHOUSE.read_text().replace("title:", "seed: " + "9" * 5000 + "\ntitle:", 1))
    with pytest.raises(WorldFileError, match="a value cannot be read"):
        load_world(tmp_path / "huge.yaml")
    library = WorldLibrary(tmp_path)
    assert library.names() == ["lighthouse"]
    assert [e.path.name for e in library.errors] == ["huge.yaml"]


def test_library_leaves_out_bad_files_and_keeps_good_ones(tmp_path: Path):
    (tmp_path / "lighthouse.yaml").write_text(LIGHTHOUSE.read_text())
    (tmp_path / "bad.yaml").write_text("title: only a title\n")
    library = WorldLibrary(tmp_path)
    assert library.names() == ["lighthouse"]
    assert [e.path.name for e in library.errors] == ["bad.yaml"]
    with pytest.raises(WorldFileError, match="bad.yaml: chapters: Field required"):
        library.get("bad")
    with pytest.raises(UserError, match="Unknown world 'atlantis'. Worlds here: lighthouse."):
        library.get("atlantis")


def test_the_command_line_loads_a_world_by_path_and_names_from_players_never_open_files(tmp_path: Path):
    library = WorldLibrary(tmp_path / "empty")
    with pytest.raises(UserError, match="Unknown world"):
        library.get(str(LIGHTHOUSE))
    assert library.names() == [], "a path given as a world name is not loaded"
    assert library.from_command_line(str(LIGHTHOUSE)).title == "The Lighthouse at Gull Rock"
    assert library.names() == ["lighthouse"]
    assert library.get("lighthouse").title == "The Lighthouse at Gull Rock"


def _check(*paths: Path, **settings: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot", "check", *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env={**bot_environment(), **settings},
        timeout=120,
    )


def test_check_command_passes_shipped_worlds():
    result = _check()
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": ok (") == len(SHIPPED)


@pytest.mark.llm
def test_check_says_whether_each_world_fits_the_configured_models_context(tmp_path: Path):
    """Counted with the configured model's tokenizer (the bundled model here), as start-up counts: a world that
    cannot be played at this GM_N_CTX is one line, and check fails, before anyone starts the bot."""
    fits = _check(LIGHTHOUSE, GM_N_CTX="2048", GM_REPLY_TOKENS="100")
    assert fits.returncode == 0, fits.stdout + fits.stderr
    assert "tokens a prompt may hold at GM_N_CTX 2048" in fits.stdout
    big = _check(PROJECT / "worlds" / "hollow-manor.yaml", LIGHTHOUSE, GM_N_CTX="1024", GM_REPLY_TOKENS="100")
    assert big.returncode == 1
    [line] = [line for line in big.stdout.splitlines() if "hollow-manor" in line]
    assert "does not fit the context" in line and "more than the 924 a prompt may hold" in line, line
    assert f"{LIGHTHOUSE}: ok" in big.stdout, "the other world is still checked"
    assert "Traceback" not in big.stdout + big.stderr


def test_check_command_prints_file_field_problem_and_fails(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_mutate(lighthouse(), lambda d: d["chapters"][0].pop("goal"))))
    result = _check(LIGHTHOUSE, bad)
    assert result.returncode == 1
    assert f"{LIGHTHOUSE}: ok" in result.stdout
    assert f"{bad}: chapters.0.goal: Field required" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
