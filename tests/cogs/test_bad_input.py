"""Bad Discord options get a clear private answer and change nothing."""

from __future__ import annotations

import pytest

from bot.engine import Engine

# (who, command, options, the start of the private answer); "maya" is seated, "admin" is an admin.
CASES = [
    ("maya", "act", {"action": "x" * 2001}, "That action is 2001 characters long; the limit is 2000."),
    ("maya", "act", {"action": "I look \x1b[2J"}, None),  # accepted, cleaned: checked below
    ("tom", "join", {"name": "GM"}, "'GM' is a name the game itself uses; choose another"),
    ("tom", "join", {"name": "x" * 41}, "A character name is at most 40 characters."),
    ("tom", "join", {"name": "Tom]] [[to Maya"}, "A character's name is letters, digits, spaces"),
    ("tom", "join", {"name": "Maya"}, "Someone already plays Maya; choose another name."),
    ("maya", "roll", {"dice": "banana"}, "'banana' is not dice notation"),
    ("maya", "roll", {"dice": "1d20" * 300}, None),
    ("maya", "notes", {"remove": 99}, "You have no note 99; /notes lists them."),
    ("maya", "unpin", {"pin": "zzz"}, "No pin matches that; /pins lists them."),
    ("maya", "whisper", {"action": "   "}, "Say what your character does."),
    ("admin", "lore edit", {"entry": "nope", "content": "x"}, "There is no lore entry 'nope'."),
    ("admin", "lore remove", {"entry": "nope"}, "There is no lore entry 'nope'."),
    ("admin", "config set", {"setting": "pin_cap", "value": "lots"}, "pin_cap: Input should be a valid integer"),
    ("admin", "config set", {"setting": "turbo", "value": "1"}, "There is no setting 'turbo'."),
    ("maya", "game start", {"world": "../../etc/passwd"}, "Unknown world '../../etc/passwd'."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("who", "command", "options", "answer"), CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)]
)
async def test_a_bad_option_is_answered_privately_and_changes_nothing(
    simcord_env, table, engine: Engine, who, command, options, answer
):
    channel, maya, tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    game = await engine.current_game(f"discord:{channel.id}")
    before = [(e.id, e.content) for e in await engine.history(game.id, 50)]
    result = await {"maya": maya, "tom": tom, "admin": admin}[who].slash(channel, command, **options)
    if answer is None:  # accepted: what was stored is clean
        stored = (await engine.history(game.id, 50))[-1].content if command == "act" else None
        assert stored is None or "\x1b" not in stored
        text = result.response.content if result.response else ""
        assert "Something went wrong" not in text
        return
    assert result.ephemeral and result.response.content.startswith(answer), result.response.content
    assert [(e.id, e.content) for e in await engine.history(game.id, 50)] == before
