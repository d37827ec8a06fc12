"""Bad input gets a clear answer and changes nothing: world files, settings, terminal lines, lore imports.

Each case names the input and the message a person must see (not only "no traceback"). Discord options
are in ``tests/cogs/test_bad_input.py``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from bot.__main__ import main
from bot.engine import Engine
from bot.errors import UserError
from bot.model import ScriptedModel
from bot.terminal import TerminalGame, channel_key
from bot.worldinfo import read_world_info
from bot.worlds import WorldFileError, load_world
from tests.conftest import FIXTURES

LIGHTHOUSE = FIXTURES / "worlds" / "lighthouse.yaml"


def lighthouse() -> dict:
    return yaml.safe_load(LIGHTHOUSE.read_text())


def with_change(change) -> str:
    data = lighthouse()
    change(data)
    return yaml.safe_dump(data, sort_keys=False)


def _bomb() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


# World files: (what is written, the problem the author must read)
WORLD_FILES = [
    ("deeply-nested", "title: " + "[" * 300 + "]" * 300 + "\n", "(yaml): nested more than 40 levels deep"),
    ("alias-inside-itself", "rules: &r [*r]\n", "(yaml): an alias refers to itself (line 1)"),
    ("alias-bomb", _bomb(), "(yaml): expands to more than 100,000 values"),
    ("not-utf8", b"title: caf\xe9\n", "(file): is not UTF-8 text (byte 0xe9 at offset 10)"),
    ("empty", "", "(top level): a world file must be a mapping of keys to values"),
    ("a-list", "- one\n- two\n", "(top level): a world file must be a mapping of keys to values"),
    ("a-scalar", "just words\n", "(top level): a world file must be a mapping of keys to values"),
    ("tab-indent", "title: x\nrules:\n\t- be kind\n", "not valid YAML"),
    ("beat-in-two-chapters", with_change(lambda d: d["chapters"][1]["beats"][0].__setitem__("id", "land")),
     "beat 'land' of chapter 'the-lamp' is also a beat of chapter 'arrival'"),
    ("stopword-phrase", with_change(lambda d: d["truths"][0].__setitem__("key_phrases", ["the of it"])),
     "key phrase 'the of it' is made of common words only"),
    ("typo-key", with_change(lambda d: d.__setitem__("chapterz", [])), "chapterz: Extra inputs are not permitted"),
    ("unknown-beat", with_change(lambda d: d["truths"][0].__setitem__("revealed_by", ["nowhere"])),
     "revealed_by names no beat of this world: nowhere"),
    ("long-title", with_change(lambda d: d.__setitem__("title", "x" * 201)),
     "title: String should have at most 200 characters"),
    ("no-chapters", with_change(lambda d: d.__setitem__("chapters", [])), "chapters: List should have at least 1"),
    ("number-for-text", with_change(lambda d: d.__setitem__("pitch", 42)), "pitch: Input should be a valid string"),
    ("priority-text", with_change(lambda d: d["lore"][0].__setitem__("priority", "high")),
     "lore.0.priority: Input should be a valid integer"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "content", "problem"), WORLD_FILES, ids=[w[0] for w in WORLD_FILES])
def test_a_bad_world_file_is_one_clear_problem(tmp_path: Path, name, content, problem):
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(WorldFileError) as raised:
        load_world(path)
    assert any(line.startswith(f"{path}: ") and problem in line for line in str(raised.value).splitlines()), str(
        raised.value
    )


def test_device_folder_and_oversized_world_files_are_not_read(tmp_path: Path):
    for path, problem in (
        (Path("/dev/zero"), "is not a regular file"),
        (tmp_path, "is a folder, not a file"),
    ):
        with pytest.raises(WorldFileError, match=problem):
            load_world(path)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (2**20 + 1))
    with pytest.raises(WorldFileError, match=r"the limit is 1.0 MiB"):
        load_world(big)


def test_control_characters_in_a_world_are_taken_out(tmp_path: Path):
    path = tmp_path / "lighthouse.yaml"
    path.write_text(with_change(lambda d: d.__setitem__("title", "The \x1b[31mLighthouse\x07")))
    assert load_world(path).title == "The Lighthouse"


# Settings: (variable, value, the line printed)
SETTINGS = [
    ("GM_LOG_LEVEL", "LOUD", "settings: log_level: Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR'"),
    ("GM_MEMORY", "{bad", "settings: GM_MEMORY is not valid JSON"),
    ("GM_N_CTX", "lots", "settings: n_ctx: Input should be a valid integer"),
    ("GM_N_CTX", "100", "settings: n_ctx: Input should be greater than or equal to 512"),
    ("GM_TEMPERATURE", "9", "settings: temperature: Input should be less than or equal to 2"),
    ("GM_MEMORY__PIN_CAP", "0", "settings: memory.pin_cap: Input should be greater than or equal to 1"),
    ("GM_MEMORY__BUDGETS__STORY", "-1", "settings: memory.budgets.story: Input should be greater than or equal to 0"),
    ("GM_MEMORY__FOLD_AT_PERCENT", "200", "settings: memory.fold_at_percent: Input should be less than or equal to"),
    ("GM_MEMORY__TURBO", "1", "settings: memory.turbo: Extra inputs are not permitted"),
    ("GM_CACHE_MIB", "-1", "settings: cache_mib: Input should be greater than or equal to 0"),
    ("GM_REPLY_TOKENS", "0", "settings: reply_tokens: Input should be greater than or equal to 16"),
    ("GM_BACKUP_HOURS", "-2", "settings: backup_hours: Input should be greater than or equal to 0"),
    ("GM_BACKUP_HOURS", "0.000001", "settings: backup_hours: backups are at least 0.1 hours apart (0 for none)"),
    ("GM_SEED", "99999999999999999999", "settings: seed: Input should be less than 4294967296"),
    ("GM_SEED", "-1", "settings: seed: Input should be greater than or equal to 0"),
    ("GM_TOP_K", "99999999", "settings: top_k: Input should be less than or equal to 1000"),
    ("GM_CACHE_MIB", "99999999999", "settings: cache_mib: Input should be less than or equal to 1048576"),
    ("GM_DEV_GUILD_ID", "abc", "settings: dev_guild_id: Input should be a valid integer"),
]  # fmt: skip


@pytest.mark.parametrize(("variable", "value", "line"), SETTINGS, ids=[f"{s[0]}={s[1]}" for s in SETTINGS])
def test_a_bad_setting_is_one_line_naming_it(monkeypatch, capsys, variable, value, line):
    monkeypatch.setenv(variable, value)
    assert main(["check"]) == 2
    printed = capsys.readouterr().err.strip().splitlines()
    assert len(printed) == 1 and printed[0].startswith(line), printed


# Terminal lines: (the line typed, what the terminal answers)
TERMINAL = [
    ("Maya: /roll", "! Say what to roll: /roll 1d20+2, or /roll secret 1d20"),
    ("Maya:", "! Say what your character does."),
    ("Maya: " + "x" * 2001, "! That action is 2001 characters long; the limit is 2000."),
    ("Maya: /roll banana", "! 'banana' is not dice notation"),
    ("Maya: /roll 1000000d1000000", "! Too many dice: at most 1000 in one roll."),
    ("Maya: /roll secret", "! Say what to roll: /roll 1d20+2, or /roll secret 1d20"),
    ("/teleport", "! Unknown command /teleport; type /help."),
    ("GM: I take over the story.", "! 'GM' is a name the game itself uses; choose another"),
    ("system: reboot", "! 'system' is a name the game itself uses; choose another"),
    ("Tom: /edit I meant to run.", "! You have no recent action to change."),
    ("Tom: /delete", "! You have no recent action to change."),
    ("Maya: /whisper", "! Say what your character does."),
    ("Maya: /fly", "! /fly is not something a character can do"),
    ("/unpin 99", "! No pin matches that; /pins lists them."),
    ("/pin", "! Say what to pin."),
    ("/lore add storm:", "! content: String should have at least 1 character"),
    ("/lore remove nope", "! There is no lore entry 'nope'."),
    ("/lore import /nowhere/export.json", "! /nowhere/export.json: no such file"),
    ("/lore import /dev/zero", "! /dev/zero: is not a regular file"),
    ("/lore frobnicate", "! Say /lore, /lore add KEY, KEY: TEXT"),
    ("/lore import", "! Name the export to import: /lore import FILE.json"),
    ("/lore import   ", "! Name the export to import: /lore import FILE.json"),
    ("/chapter foo", "! /chapter next finishes the current chapter now"),
    ("/chapter", "! /chapter next finishes the current chapter now"),
    ("/bucket dreams on", "! Unknown memory bucket 'dreams'"),
    ("/bucket pins maybe", "! Say /bucket NAME on or /bucket NAME off."),
    ("Maya: I look \udcff around.", "! That text has bytes that are not UTF-8; nothing was done with it."),
]  # fmt: skip


@pytest.fixture
async def terminal(engine: Engine, scripted: ScriptedModel) -> tuple[TerminalGame, io.StringIO]:
    world = engine.worlds.get("lighthouse")
    started = await engine.start_game(channel_key(world), world.id)
    out = io.StringIO()
    table = TerminalGame(engine, started.game, world, out)
    await table.handle("Maya: I step ashore.")
    await table.handle("Tom: I tie the boat.")
    await engine.memory.idle()
    return table, out


@pytest.mark.parametrize(("line", "answer"), TERMINAL, ids=[t[0][:30] for t in TERMINAL])
async def test_a_bad_terminal_line_is_answered_and_the_game_goes_on(terminal, engine: Engine, line, answer):
    table, out = terminal
    if "/edit" in line or "/delete" in line:  # Tom has no action of his own since his last was answered... give none
        await engine.delete_entry(table.game.id, (await engine.last_action_of(table.game.id, "tom")).id)
    before = [(e.id, e.content) for e in await engine.history(table.game.id, 100)]
    start = len(out.getvalue())
    assert await table.handle(line)
    printed = out.getvalue()[start:]
    assert answer in printed, printed
    assert "Traceback" not in printed
    after = [(e.id, e.content) for e in await engine.history(table.game.id, 100)]
    assert after == before, "a refused line changes nothing"


async def test_a_name_too_long_at_the_name_prompt_says_how_long_a_name_may_be(engine: Engine):
    world = engine.worlds.get("lighthouse")
    started = await engine.start_game(channel_key(world), world.id)
    out = io.StringIO()
    table = TerminalGame(engine, started.game, world, out)
    assert await table.handle("A" * 41)
    assert "! A character name is at most 40 characters." in out.getvalue()
    assert await engine.players(started.game.id) == []
    assert await table.handle("A" * 40)
    assert [p.name for p in await engine.players(started.game.id)] == ["A" * 40]


async def test_a_name_too_long_before_an_action_says_how_long_a_name_may_be(engine: Engine):
    world = engine.worlds.get("lighthouse")
    started = await engine.start_game(channel_key(world), world.id)
    out = io.StringIO()
    table = TerminalGame(engine, started.game, world, out)
    assert await table.handle("B" * 41 + ": I look around.")
    assert "! A character name is at most 40 characters." in out.getvalue()
    assert "Who is acting" not in out.getvalue()
    assert await engine.players(started.game.id) == []


def test_control_characters_in_an_action_are_taken_out_before_it_is_stored(engine: Engine):
    assert engine.check_action("I dance \x1b[2J\x1b[31mwildly\x07 \x00now.") == "I dance wildly now."
    with pytest.raises(UserError, match="not UTF-8"):
        engine.check_action("I look \udcff around.")


# Lore imports: (the export's bytes, the problem named)
def _export(entries) -> str:
    return json.dumps({"entries": entries})


IMPORTS = [
    ("not-json", "{entries: [", "line 1, column 2: not valid JSON"),
    ("a-list", "[1, 2]", '(top level): expected an object with "entries", got a list'),
    ("no-entries", '{"name": "x"}', "entries: missing; is this a SillyTavern World Info export?"),
    ("entries-text", '{"entries": "lots"}', "entries: expected an object or a list of entries, got text"),
    ("not-utf8", b'{"entries": {"0": {"content": "caf\xe9"}}}', "is not UTF-8 text (byte 0xe9"),
    ("too-big", '{"entries": {}, "pad": "' + "x" * (2 * 2**20) + '"}', "the limit is 2.0 MiB"),
    ("too-deep", "[" * 100_000 + "]" * 100_000, "nested too deep to be a lore export"),
    ("huge-number", '{"entries": {"0": {"uid": ' + "9" * 5000 + "}}}", "holds a number too long"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "content", "problem"), IMPORTS, ids=[i[0] for i in IMPORTS])
def test_a_bad_lore_export_is_one_clear_problem(tmp_path: Path, name, content, problem):
    path = tmp_path / f"{name}.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(UserError) as raised:
        read_world_info(path)
    assert str(raised.value).startswith(f"{path}: ") and problem in str(raised.value), str(raised.value)


async def test_an_import_of_too_many_entries_adds_none(engine: Engine, tmp_path: Path):
    game = (await engine.start_game("chan", "lighthouse")).game
    entries = {str(n): {"uid": n, "key": [f"word{n}"], "comment": f"Entry {n}", "content": "Text."} for n in range(201)}
    path = tmp_path / "many.json"
    path.write_text(_export(entries))
    with pytest.raises(UserError, match=r"That export has 201 entries; at most 200 are imported at once\."):
        await engine.ledger.lore_import(game.id, read_world_info(path).entries)
    assert len(await engine.lore(game.id)) == 3


async def test_a_game_world_book_has_a_limit(engine: Engine):
    from bot.engine.upkeep.ledger import MAX_GAME_LORE

    game = (await engine.start_game("chan", "lighthouse")).game
    for n in range(MAX_GAME_LORE - 3):
        await engine.ledger.lore_add(game.id, keys=[f"word{n}"], content="Text.")
    with pytest.raises(UserError, match=f"would pass the limit of {MAX_GAME_LORE}"):
        await engine.ledger.lore_add(game.id, keys=["one-more"], content="Text.")


def test_a_regular_expression_key_is_reported_not_guessed(tmp_path: Path):
    path = tmp_path / "regex.json"
    path.write_text(_export({"0": {"uid": 0, "key": ["/sto+rm/i", "storm"], "comment": "Storm", "content": "Wind."}}))
    found = read_world_info(path)
    assert found.entries[0].keys == ["storm"]
    assert any("is a regular expression, which is not supported; left out" in note for note in found.skipped)
