"""Plain messages as actions (message-content intent on), and their edits and deletes."""

from __future__ import annotations

import pytest

from bot.engine import Engine
from bot.model import ScriptedModel
from bot.store import EntryKind


@pytest.fixture
def simcord_bot(engine: Engine):
    from bot.discord_client import GameMasterBot
    from bot.settings import ProcessSettings

    return GameMasterBot(engine, ProcessSettings(discord_token="simulated", message_content=True))


SCATTER = "The gulls scatter with harsh cries, wheeling out over the grey water before settling on the far rocks."
FLARES = "The lamp flares bright and steady; the door gives with a shriek of rusted hinges onto the wet gallery."


async def test_plain_messages_are_actions_and_ooc_lines_are_not(simcord_env, table, engine, scripted: ScriptedModel):
    channel, maya, tom, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue(SCATTER)
    await maya.send(channel, "I wave my lantern at the gulls.")
    assert channel.last_message.content == SCATTER
    await maya.send(channel, "(( brb, making tea")
    await tom.send(channel, "I am not playing.")
    game = await engine.current_game(f"discord:{channel.id}")
    actions = [e for e in await engine.history(game.id, 20) if e.kind is EntryKind.ACTION]
    assert [(a.author, a.content) for a in actions] == [("Maya", "I wave my lantern at the gulls.")]
    assert actions[0].message_id is not None
    assert len([c for c in scripted.calls if c.kind == "stream"]) == 1


async def test_plain_messages_under_the_round_policy_are_gathered_and_answered_once(
    simcord_env, table, engine, scripted: ScriptedModel
):
    channel, maya, tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    await admin.slash(channel, "config set", setting="turn_policy", value="round")
    scripted.enqueue(FLARES)
    first = await maya.send(channel, "I trim the lamp's wick.")
    assert not [c for c in scripted.calls if c.kind == "stream"], "the GM waits for Tom"
    assert channel.last_message.id == first.id
    await tom.send(channel, "I push the door.")
    streams = [c for c in scripted.calls if c.kind == "stream"]
    assert len(streams) == 1 and "I trim the lamp's wick." in streams[0].prompt_text
    assert "I push the door." in streams[0].prompt_text
    assert channel.last_message.content == FLARES


async def test_edits_and_deletes_of_messages_reach_the_turn_log(simcord_env, table, engine, scripted):
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    sent = await maya.send(channel, "I hide the key under the mat.")
    await maya.edit(sent, "I hide the key in my boot.")
    game = await engine.current_game(f"discord:{channel.id}")
    entry = await engine.entry_by_message(str(sent.id))
    assert entry.content == "I hide the key in my boot." and entry.edited_at is not None
    await maya.delete(sent)
    assert (await engine.entry_by_message(str(sent.id))).deleted
    assert all(e.id != entry.id for e in await engine.history(game.id, 20))


async def test_a_refused_reply_to_a_plain_message_is_told_in_the_channel_and_kept(
    simcord_env, table, engine, scripted: ScriptedModel
):
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue("The gulls scatter over the rocks and the lamp room goes quiet again.")
    simcord_env.inject_error("POST", "/channels/*/messages", times=2)  # the streamed preview, then the reply itself
    await maya.send(channel, "I wave my lantern at the gulls.")
    assert "use /retry" in channel.last_message.content
    game = await engine.current_game(f"discord:{channel.id}")
    log = await engine.history(game.id, 20)
    assert [(e.kind, e.content) for e in log[-2:]] == [
        (EntryKind.ACTION, "I wave my lantern at the gulls."),
        (EntryKind.GM, "The gulls scatter over the rocks and the lamp room goes quiet again."),
    ]


async def test_a_refused_reply_to_a_round_is_told_in_the_channel_and_kept(
    simcord_env, table, engine, scripted: ScriptedModel
):
    channel, maya, tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    await admin.slash(channel, "config set", setting="turn_policy", value="round")
    scripted.enqueue(FLARES)
    await maya.send(channel, "I trim the lamp's wick.")
    simcord_env.inject_error("POST", "/channels/*/messages", times=1)  # the round's reply
    await tom.send(channel, "I push the door.")
    assert "use /retry" in channel.last_message.content
    game = await engine.current_game(f"discord:{channel.id}")
    assert (await engine.history(game.id, 1))[-1].content == FLARES
