"""Every command that needs a game says so without one; every admin command refuses other members."""

from __future__ import annotations

import pytest

NO_GAME = "There is no game here; start one first."
NOT_ADMIN = "That needs the Manage Server permission or the GM role."

GAME_COMMANDS = [
    ("game end", {}),
    ("game status", {}),
    ("join", {"name": "Maya"}),
    ("leave", {}),
    ("act", {"action": "I wait."}),
    ("roll", {"dice": "1d20"}),
    ("pin", {"fact": "The lamp needs oil."}),
    ("unpin", {"pin": "1"}),
    ("pins", {}),
    ("memory-status", {}),
    ("recall", {}),
    ("compact", {}),
    ("retry", {}),
    ("lore list", {}),
    ("notes", {}),
    ("whisper", {"action": "I hide."}),
]

ADMIN_COMMANDS = [
    ("chapter next", {}),
    ("lore add", {"keys": "Saltmere", "content": "A town."}),
    ("lore edit", {"entry": "weather", "content": "Calm."}),
    ("lore remove", {"entry": "weather"}),
    ("config show", {}),
    ("config set", {"setting": "pin_cap", "value": "5"}),
    ("config reset", {"setting": "pin_cap"}),
]


@pytest.mark.parametrize(("command", "options"), GAME_COMMANDS, ids=[c for c, _ in GAME_COMMANDS])
async def test_without_a_game_each_command_says_so_privately(simcord_env, table, command, options):
    channel, maya, _, _ = table
    result = await maya.slash(channel, command, **options)
    assert result.ephemeral and result.response.content == NO_GAME


@pytest.mark.parametrize(("command", "options"), ADMIN_COMMANDS, ids=[c for c, _ in ADMIN_COMMANDS])
async def test_admin_commands_refuse_other_members_and_change_nothing(simcord_env, table, engine, command, options):
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    result = await maya.slash(channel, command, **options)
    assert result.ephemeral and result.response.content == NOT_ADMIN
    game = await engine.current_game(f"discord:{channel.id}")
    assert await engine.settings.overrides(game.id) == {}
    assert {item.entry.id for item in await engine.lore(game.id)} == {"gull-rock", "oil-store", "weather"}
    assert (await engine.memory_status(game.id)).chapter_index == 0


async def test_a_member_with_the_gm_role_counts_as_an_admin(simcord_env, table):
    channel, maya, _, _ = table
    role = simcord_env.guild.create_role("Game Master")
    gm = simcord_env.guild.add_member(simcord_env.create_user("gwen"), roles=[role])
    await maya.slash(channel, "game start", world="lighthouse")
    shown = await gm.slash(channel, "config show")
    assert shown.ephemeral and "`pin_cap` = 20" in shown.response.content


async def test_join_and_leave(simcord_env, table, engine):
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    joined = await maya.slash(channel, "join", name="Maya", description="a diver")
    assert joined.response.content.endswith("joins as **Maya**.")
    again = await maya.slash(channel, "join", name="Maya")
    assert again.ephemeral and again.response.content == "You have already joined this game."
    left = await maya.slash(channel, "leave")
    assert not left.ephemeral and left.response.content == "**Maya** leaves the game."
    game = await engine.current_game(f"discord:{channel.id}")
    assert await engine.players(game.id) == []
