"""The GM tells one player something by DM; it reaches nobody else."""

from __future__ import annotations

from bot.engine import Engine
from bot.model import ScriptedModel
from bot.store import EntryKind, Visibility

# How a private aside reads in a DM: which game it is about, then the text.
DM = "🤫 Only you see this (The Lighthouse at Gull Rock, game #1, Test Guild): "


async def test_an_aside_goes_to_mayas_dms_only(simcord_env, table, engine: Engine, scripted: ScriptedModel):
    channel, maya, tom, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    scripted.enqueue(
        "The log book is soaked through, its ink run to blue clouds. [[to Maya: A page names the ship Grey Heron.]] "
        "Rain beats on the window and the stove ticks as it cools."
    )
    await maya.slash(channel, "act", action="I read the log book.")

    assert channel.last_message.content == (
        "The log book is soaked through, its ink run to blue clouds. Rain beats on the window and the stove ticks as "
        "it cools."
    )
    assert not any("Grey Heron" in m.content for m in channel.history())
    dms = [m.content for m in maya.user.dm_channel.history()]
    assert dms == [f"{DM}A page names the ship Grey Heron."]
    assert not any("Grey Heron" in m.content for m in tom.user.dm_channel.history())

    game = await engine.current_game(f"discord:{channel.id}")
    maya_id = (await engine.player(game.id, f"discord:{maya.id}")).id
    aside = (await engine.history(game.id, 1))[0]
    assert (aside.kind, aside.visibility, aside.visible_to) == (EntryKind.GM, Visibility.PRIVATE, (maya_id,))
    status = await tom.slash(channel, "memory-status")
    assert "Grey Heron" not in str(status.response.embeds[0].to_dict())


async def test_a_whisper_is_secret_both_ways(simcord_env, table, engine: Engine, scripted: ScriptedModel):
    channel, maya, tom, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    before = len(channel.history())
    scripted.enqueue("Nobody sees you pocket the brass key.")
    result = await maya.slash(channel, "whisper", action="I pocket the brass key while Tom looks away.")
    assert result.ephemeral and result.response.content.startswith("🤫 Whispered")
    assert len(channel.history()) == before, "nothing reaches the channel"
    assert [m.content for m in maya.user.dm_channel.history()] == [f"{DM}Nobody sees you pocket the brass key."]
    assert tom.user.dm_channel.history() == []
    prompt = scripted.last()
    assert "(private) Maya: I pocket the brass key" in prompt.prompt_text and "privately" in prompt.prompt_text

    game = await engine.current_game(f"discord:{channel.id}")
    maya_id = (await engine.player(game.id, f"discord:{maya.id}")).id
    action, answer = await engine.history(game.id, 2)
    assert action.visibility is Visibility.PRIVATE and action.visible_to == (maya_id,)
    assert answer.visibility is Visibility.PRIVATE and answer.visible_to == (maya_id,)
    assert game.turn == 1


async def test_a_secret_roll_goes_to_the_roller_by_dm_and_to_the_gms_record(simcord_env, table, engine, scripted):
    channel, maya, tom, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    before = len(channel.history())
    result = await maya.slash(channel, "roll", dice="1d20+2", secret=True)
    assert result.ephemeral and "by DM" in result.response.content
    assert len(channel.history()) == before
    [dm] = [m.content for m in maya.user.dm_channel.history()]
    assert dm.startswith("🎲 Your secret roll (The Lighthouse at Gull Rock, game #1, Test Guild): 1d20+2: 1d20 (")
    game = await engine.current_game(f"discord:{channel.id}")
    entry = (await engine.history(game.id, 1))[0]
    assert entry.kind is EntryKind.ROLL and entry.visibility is Visibility.PRIVATE
    await maya.slash(channel, "act", action="I check the lock.")
    assert "(private) Maya rolls 1d20+2: 1d20 (" in scripted.last().prompt_text, "the GM's private record"


async def test_notes_are_private_to_each_player(simcord_env, table, engine, scripted):
    channel, maya, tom, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    added = await maya.slash(channel, "notes", add="Wren lied about the storm.")
    assert added.ephemeral and added.response.content == "1. Wren lied about the storm."
    await maya.slash(channel, "notes", add="Check the cellar lock.")
    assert (await tom.slash(channel, "notes")).response.content.startswith("No notes yet")
    removed = await maya.slash(channel, "notes", remove=1)
    assert removed.response.content == "1. Check the cellar lock."
    bad = await maya.slash(channel, "notes", remove=7)
    assert bad.ephemeral and bad.response.content == "You have no note 7; /notes lists them."
    await maya.slash(channel, "act", action="I look around.")
    assert "cellar lock" not in scripted.last().prompt_text, "the GM is not given a player's notes"


async def test_a_dm_to_the_bot_is_a_secret_action_in_the_players_game(simcord_env, table, engine, scripted):
    channel, maya, tom, _ = table
    await maya.send_dm("I hide the key.")
    assert maya.user.dm_channel.history()[-1].content == "You are in no game here; /join one in its channel first."
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    before = len(channel.history())
    scripted.enqueue("The key slides under the loose board.")
    await maya.send_dm("I hide the key under a loose board.")
    assert maya.user.dm_channel.history()[-1].content == f"{DM}The key slides under the loose board."
    assert len(channel.history()) == before
    game = await engine.current_game(f"discord:{channel.id}")
    action = (await engine.history(game.id, 2))[0]
    assert action.content == "I hide the key under a loose board." and action.visibility is Visibility.PRIVATE

    other = simcord_env.guild.create_text_channel("cellar")
    await maya.slash(other, "game start", world="lighthouse")
    await maya.slash(other, "join", name="Maya")
    await maya.send_dm("I listen.")
    assert "You are in several games (#1 The Lighthouse at Gull Rock, #2" in maya.user.dm_channel.history()[-1].content
    scripted.enqueue("Silence below.")
    await maya.send_dm(f"#{game.id} I listen at the board.")
    assert maya.user.dm_channel.history()[-1].content == f"{DM}Silence below."
