"""The game cog (cogs/game.py) against SimCord's in-memory Discord, with the scripted model: a game started, joined,
played and rolled in, the world offered as typed, and what it refuses."""

from __future__ import annotations

from bot.engine import Engine
from bot.model import ScriptedModel
from bot.store import EntryKind
from cogs.rendering import LIMIT


async def test_a_game_starts_players_join_act_and_the_reply_lands_in_the_log(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, tom, _ = table
    started = await maya.slash(channel, "game start", world="lighthouse")
    assert not started.ephemeral
    assert "The supply boat bumps" in channel.last_message.content

    await maya.slash(channel, "join", name="Maya", description="a diver")
    await tom.slash(channel, "join", name="Tom")
    groans = (
        "The door groans open onto a stair of wet stone, and a cold breath of salt air rolls down from the lamp room."
    )
    scripted.enqueue(groans)
    await maya.slash(channel, "act", action="I open the door.")
    assert channel.last_message.content == groans

    game = await engine.current_game(f"discord:{channel.id}")
    log = await engine.history(game.id, 20)
    assert [(e.kind, e.author) for e in log[-2:]] == [(EntryKind.ACTION, "Maya"), (EntryKind.GM, "GM")]
    status = await tom.slash(channel, "game status")
    assert status.ephemeral and "Maya, Tom" in status.response.content


async def test_commands_without_a_game_are_refused_privately(simcord_env, table):
    channel, maya, _, _ = table
    for name, options in [("join", {"name": "Maya"}), ("act", {"action": "I wait."}), ("roll", {"dice": "1d20"})]:
        result = await maya.slash(channel, name, **options)
        assert result.ephemeral and result.response.content == "There is no game here; start one first."


async def test_acting_before_joining_and_bad_input_are_refused_and_nothing_is_stored(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, tom, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    refused = await tom.slash(channel, "act", action="I steal the lamp.")
    assert refused.ephemeral and "Join the game first" in refused.response.content
    too_long = await maya.slash(channel, "act", action="x" * 2001)
    assert too_long.ephemeral and "the limit is 2000" in too_long.response.content
    nonsense = await maya.slash(channel, "roll", dice="banana")
    assert nonsense.ephemeral and "is not dice notation" in nonsense.response.content
    huge = await maya.slash(channel, "roll", dice="1000000d1000000")
    assert huge.ephemeral and "Too many dice" in huge.response.content
    again = await maya.slash(channel, "game start", world="lighthouse")
    assert again.ephemeral and "already running" in again.response.content
    game = await engine.current_game(f"discord:{channel.id}")
    assert [e.kind for e in await engine.history(game.id, 20)] == [EntryKind.GM, EntryKind.SYSTEM]
    assert not [c for c in scripted.calls if c.kind == "stream"]


async def test_an_unknown_world_is_refused(simcord_env, table):
    channel, maya, _, _ = table
    result = await maya.slash(channel, "game start", world="atlantis")
    assert result.ephemeral and result.response.content.startswith("Unknown world 'atlantis'.")


async def test_world_autocomplete_offers_the_loaded_worlds(simcord_env, table):
    channel, maya, _, _ = table
    choices = await maya.autocomplete(channel, "game start", "world", "light")
    assert [c["value"] for c in choices] == ["lighthouse"]
    assert choices[0]["name"] == "The Lighthouse at Gull Rock"


async def test_a_long_reply_is_split_in_order_without_breaking_words(simcord_env, table, scripted: ScriptedModel):
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    long_reply = " ".join(f"wave{i}" for i in range(900))  # about 6,000 characters
    scripted.enqueue(long_reply)
    before = len(channel.history())
    await maya.slash(channel, "act", action="I watch the sea.")
    posted = [m.content for m in channel.history()[before:]]
    gm = [text for text in posted if text.startswith("wave") or " wave" in text]
    assert len(gm) >= 3 and all(len(text) <= LIMIT for text in gm)
    assert " ".join(gm).split() == long_reply.split(), "every word once, in order"


async def test_a_roll_is_public_and_logged(simcord_env, table, engine: Engine):
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    result = await maya.slash(channel, "roll", dice="1d20+5")
    assert not result.ephemeral and result.response.content.startswith("**Maya** rolls 1d20+5: 1d20 (")
    game = await engine.current_game(f"discord:{channel.id}")
    assert (await engine.history(game.id, 1))[0].kind is EntryKind.ROLL
