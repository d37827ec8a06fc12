"""Who may do what: every slash command, tried by a non-member, a seated player, the game's starter and an admin.

Expectations come from :mod:`bot.access` (the one table), so this walks the
enforcement: a refused standing gets the table's sentence, privately, and
the game does not change; an allowed one gets through to the command.
"""

from __future__ import annotations

import pytest

from bot.access import COMMANDS, REFUSALS, STANDINGS, Access, access_table, allows
from bot.engine import Engine
from tests.conftest import FIXTURES, PROJECT

OPTIONS: dict[str, dict[str, object]] = {
    "game start": {"world": "lighthouse"},
    "join": {"name": "Quill"},
    "act": {"action": "I trim the wick."},
    "whisper": {"action": "I pocket the matches."},
    "roll": {"dice": "1d20"},
    "notes": {"add": "Ask about the oil."},
    "pin": {"fact": "The lamp must stay lit."},
    "unpin": {"pin": "1"},
    "lore add": {"keys": "Saltmere", "content": "The harbour town."},
    "lore edit": {"entry": "weather", "content": "Calm."},
    "lore remove": {"entry": "weather"},
    "world info": {"world": "lighthouse"},
    "world add": {"file": ("cove.yaml", (FIXTURES / "worlds" / "lighthouse.yaml").read_bytes())},
    "world remove": {"world": "lighthouse"},
    "world restore": {"world": "lighthouse"},
    "config set": {"setting": "pin_cap", "value": "5"},
    "config reset": {"setting": "pin_cap"},
}
CASES = [(command, standing) for command in COMMANDS for standing in STANDINGS]


async def _snapshot(engine: Engine, game_id: int) -> tuple:
    """What a refused command must leave as it was."""
    game = await engine.store.game(game_id)
    return (
        game.status,
        game.turn,
        [(e.id, e.content, e.deleted) for e in await engine.history(game_id, 200)],
        [p.text for p in await engine.pins(game_id)],
        [(p.name, p.user_key) for p in await engine.players(game_id)],
        sorted((i.entry.id, i.entry.content) for i in await engine.lore(game_id)),
        await engine.settings.overrides(game_id),
        (await engine.memory_status(game_id)).chapter_index,
    )


@pytest.mark.parametrize(("command", "standing"), CASES, ids=[f"{c}-{s}" for c, s in CASES])
async def test_every_command_for_every_standing(simcord_env, table, engine: Engine, scripted, command, standing):
    channel, starter, player, admin = table
    outsider = simcord_env.guild.add_member(simcord_env.create_user("nina"))
    await starter.slash(channel, "game start", world="lighthouse")  # the starter does not join
    await player.slash(channel, "join", name="Tom")
    scripted.enqueue("The lamp gutters.")
    await player.slash(channel, "act", action="I climb the stair.")
    game = await engine.current_game(f"discord:{channel.id}")
    await engine.pin(game.id, "The keeper is missing.", "Tom")
    await engine.memory.idle()
    who = {"non-member": outsider, "seated player": player, "the game's starter": starter, "admin": admin}[standing]
    rule = COMMANDS[command]
    options = OPTIONS.get(command, {})

    if command == "game start":  # a channel without a game: anyone may start one there
        elsewhere = simcord_env.guild.create_text_channel(f"hall-{standing.replace(' ', '-')}")
        result = await who.slash(elsewhere, command, **options)
        assert not result.ephemeral and await engine.store.active_game(f"discord:{elsewhere.id}") is not None
        return

    before = await _snapshot(engine, game.id)
    result = await who.slash(channel, command, **options)
    await engine.memory.idle()
    text = result.response.content if result.response else ""
    if allows(rule.access, STANDINGS[standing]):
        assert result.acknowledged
        assert text not in REFUSALS.values(), f"/{command} refused to {standing}: {text}"
    else:
        assert result.ephemeral and text == REFUSALS[rule.access], f"/{command} by {standing}: {text!r}"
        assert await _snapshot(engine, game.id) == before, f"a refused /{command} changed the game"


async def test_the_walk_covers_every_command_the_bot_registers(simcord_env, simcord_bot):
    registered = {
        command.qualified_name
        for command in simcord_bot.tree.walk_commands()
        if not hasattr(command, "walk_commands")  # groups are not commands
    }
    assert registered == set(COMMANDS), "every command has exactly one row in bot.access.COMMANDS"


def test_the_readme_shows_the_table_the_code_enforces():
    assert access_table() in (PROJECT / "docs" / "permissions.md").read_text()


async def test_non_members_cannot_end_pin_unpin_or_compact_someone_elses_game(simcord_env, table, engine: Engine):
    channel, maya, tom, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await maya.slash(channel, "pin", fact="The lamp must stay lit.")
    for command, options in [("game end", {}), ("pin", {"fact": "Nonsense."}), ("unpin", {"pin": "1"}),
                             ("compact", {})]:  # fmt: skip
        refused = await tom.slash(channel, command, **options)
        assert refused.ephemeral and refused.response.content in REFUSALS.values()
    game = await engine.current_game(f"discord:{channel.id}")
    assert [p.text for p in await engine.pins(game.id)] == ["The lamp must stay lit."]
    ended = await maya.slash(channel, "game end")
    assert ended.response.content.startswith("The game ends after 0 turns.")


async def test_a_seated_player_who_did_not_start_the_game_cannot_end_it(simcord_env, table, engine: Engine):
    channel, maya, tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await tom.slash(channel, "join", name="Tom")
    refused = await tom.slash(channel, "game end")
    assert refused.ephemeral and refused.response.content == REFUSALS[Access.STARTER_OR_ADMIN]
    assert (await engine.current_game(f"discord:{channel.id}")).status == "active"
    assert not (await admin.slash(channel, "game end")).ephemeral


async def test_game_commands_are_not_offered_in_a_dm(simcord_env, table, engine: Engine, simcord_bot):
    """Commands with nothing for a DM are registered guild-only: a DM does not list them only to refuse them."""
    _, maya, _, _ = table
    offered = set(maya.user.available_commands())
    assert {"world list", "world info", "memory-status"} <= offered
    assert not {"game start", "act", "pin", "config show", "join"} & offered
    guild_only = {c.name for c in simcord_bot.tree.get_commands() if c.guild_only}
    assert {"act", "join", "game", "config", "lore", "pin"} <= guild_only and not {
        "world",
        "memory-status",
    } & guild_only
    assert await engine.store.games() == []
    listed = await maya.user.slash("world list")
    assert "`lighthouse`" in listed.response.content


async def test_a_banned_player_loses_their_seat_gets_no_more_secrets_and_cannot_act_by_dm(
    simcord_env, table, engine, scripted
):
    channel, maya, tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    game = await engine.current_game(f"discord:{channel.id}")
    simcord_env.backend.apply_ban(simcord_env.guild.id, tom.id, "spoilers")
    await simcord_env.settle()
    assert [p.name for p in await engine.players(game.id)] == ["Maya"]
    assert "**Tom**'s seat is free: their player was banned from the server." in channel.last_message.content
    scripted.enqueue(
        "Fog rolls in off the sea and beads on the rail; somewhere below, a loose shutter bangs twice. "
        "[[to Tom: The keeper's key is under the mat.]]"
    )
    await maya.slash(channel, "act", action="I listen.")
    assert not any("keeper's key" in m.content for m in tom.user.dm_channel.history()), "no secret reaches Tom"
    await tom.user.send_dm("I sneak into the lamp room.")
    assert "in no game" in tom.user.dm_channel.history()[-1].content
    assert "I sneak" not in scripted.last().prompt_text


async def test_a_player_who_left_cannot_act_by_dm_and_their_seat_is_freed(simcord_env, table, engine, scripted):
    channel, maya, tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await tom.slash(channel, "join", name="Tom")
    game = await engine.current_game(f"discord:{channel.id}")
    simcord_env.guild.remove_member(tom)  # without the members intent the bot hears nothing of it
    await simcord_env.settle()
    calls = len(scripted.calls)
    await tom.user.send_dm("I sneak into the lamp room.")
    assert "no longer in that game's server" in tom.user.dm_channel.history()[-1].content
    assert len(scripted.calls) == calls and await engine.players(game.id) == []
    assert "**Tom**'s seat is free: their player left the server." in channel.last_message.content


async def test_an_aside_for_a_player_who_left_is_not_sent_and_frees_their_seat(simcord_env, table, engine, scripted):
    """Without the members intent the bot hears nothing when Tom leaves: it finds out before it DMs him."""
    channel, maya, tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    game = await engine.current_game(f"discord:{channel.id}")
    simcord_env.guild.remove_member(tom)
    await simcord_env.settle()
    assert [p.name for p in await engine.players(game.id)] == ["Maya", "Tom"], "nothing heard of it yet"
    scripted.enqueue(
        "Fog rolls in off the sea and beads on the rail; somewhere below, a loose shutter bangs twice. "
        "[[to Tom: The keeper's key is under the mat.]]"
    )
    await maya.slash(channel, "act", action="I listen.")
    dms = tom.user.dm_channel.history() if tom.user.dm_channel else []
    assert not any("keeper's key" in m.content for m in dms), "no secret reaches Tom after he left"
    assert [p.name for p in await engine.players(game.id)] == ["Maya"]
    assert any("**Tom**'s seat is free: their player left the server." in m.content for m in channel.history())


async def test_a_round_does_not_wait_for_a_player_who_left(simcord_env, table, engine, scripted):
    channel, maya, tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    await admin.slash(channel, "config set", setting="turn_policy", value="round")
    await admin.slash(channel, "config set", setting="round_seconds", value="600")
    simcord_env.guild.remove_member(tom)
    await simcord_env.settle()
    alone = "The lamp flickers for Maya alone, throwing her shadow long across the wet stones of the gallery."
    scripted.enqueue(alone)
    acted = await maya.slash(channel, "act", action="I climb.")
    assert not any("answers when" in m.content for m in acted.followups), "the round waits for nobody"
    assert channel.last_message.content == alone
    game = await engine.current_game(f"discord:{channel.id}")
    assert game.turn == 1 and [p.name for p in await engine.players(game.id)] == ["Maya"]


class TestWithTheMembersIntent:
    @pytest.fixture
    def simcord_bot(self, engine: Engine):
        from bot.discord_client import GameMasterBot
        from bot.settings import ProcessSettings

        return GameMasterBot(engine, ProcessSettings(discord_token="simulated", members_intent=True))

    async def test_a_player_who_leaves_loses_their_seat_at_once(self, simcord_env, simcord_bot, table, engine):
        assert simcord_bot.intents.members
        channel, maya, tom, _admin = table
        await maya.slash(channel, "game start", world="lighthouse")
        await tom.slash(channel, "join", name="Tom")
        game = await engine.current_game(f"discord:{channel.id}")
        simcord_env.guild.remove_member(tom)
        await simcord_env.settle()
        assert await engine.players(game.id) == []
        assert "**Tom**'s seat is free: their player left the server." in channel.last_message.content


async def test_the_members_intent_is_off_unless_asked_for(simcord_env, simcord_bot):
    assert not simcord_bot.intents.members, "a privileged intent: the developer portal must allow it first"
