"""Where a game can be played: a channel the bot cannot post in is named as such, and threads work (F1, F29)."""

from __future__ import annotations

import discord
from simcord.builders import ChannelHandle

from bot.engine import Engine
from bot.model import ScriptedModel
from bot.store import EntryKind


def _mute(simcord_env, channel, **denied: bool) -> None:
    """Take permissions from the bot in one channel, as an admin does in its settings."""
    guild = simcord_env.guild
    overwrite = discord.PermissionOverwrite(**{name: False for name in denied})
    simcord_env.backend.get_channel(channel.id).overwrites.append(
        _overwrite(guild.me.id, overwrite),
    )


def _overwrite(member_id: int, overwrite: discord.PermissionOverwrite):
    from simcord.backend.models.channel import Overwrite
    from simcord.enums import OverwriteType

    allow, deny = overwrite.pair()
    return Overwrite(target_id=member_id, type=OverwriteType.MEMBER, allow=allow.value, deny=deny.value)


async def test_a_game_is_not_started_where_the_bot_cannot_post(simcord_env, table, engine: Engine):
    _channel, maya, _tom, _admin = table
    guild = simcord_env.guild
    mute = discord.PermissionOverwrite(send_messages=False, embed_links=False)
    quiet = guild.create_text_channel("quiet", overwrites={guild.me: mute})
    result = await maya.slash(quiet, "game start", world="lighthouse")
    assert result.ephemeral
    text = result.response.content
    assert "Send Messages and Embed Links" in text and "nothing was saved" in text, text
    assert await engine.store.active_game(f"discord:{quiet.id}") is None


async def test_a_turn_is_not_stored_when_the_channel_stops_taking_the_bots_messages(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    game = await engine.current_game(f"discord:{channel.id}")
    before = await engine.history(game.id, 50)
    _mute(simcord_env, channel, send_messages=True)
    result = await maya.slash(channel, "act", action="I light the lamp.")
    assert result.ephemeral and "Send Messages" in result.response.content
    assert "Something went wrong" not in result.response.content
    assert await engine.history(game.id, 50) == before, "nothing is stored for a turn that cannot be shown"
    assert not [c for c in scripted.calls if c.kind == "stream"]


async def test_a_game_plays_in_a_thread_as_in_a_channel(simcord_env, table, engine: Engine, scripted: ScriptedModel):
    channel, maya, tom, _admin = table
    made = simcord_env.backend.create_thread(channel.id, "the tower", maya.id)
    thread = ChannelHandle(simcord_env, simcord_env.guild, made)
    await maya.slash(thread, "game start", world="lighthouse")
    await maya.slash(thread, "join", name="Maya")
    catches = (
        "The lamp catches with a soft whump; yellow light climbs the spiral stair and the gulls outside fall silent."
    )
    scripted.enqueue(catches)
    await maya.slash(thread, "act", action="I light the lamp.")
    assert thread.last_message.content == catches
    assert not [m for m in channel.history() if "lamp" in m.content], "nothing spills into the parent channel"
    game = await engine.current_game(f"discord:{thread.id}")
    assert [e.kind for e in await engine.history(game.id, 2)] == [EntryKind.ACTION, EntryKind.GM]
    refused = await tom.slash(thread, "game end")
    assert refused.ephemeral and "started this game" in refused.response.content


async def test_a_thread_without_send_messages_in_threads_is_named(simcord_env, table, engine: Engine):
    channel, maya, _tom, _admin = table
    made = simcord_env.backend.create_thread(channel.id, "the cellar", maya.id)
    thread = ChannelHandle(simcord_env, simcord_env.guild, made)
    _mute(simcord_env, channel, send_messages_in_threads=True)
    result = await maya.slash(thread, "game start", world="lighthouse")
    assert result.ephemeral and "Send Messages in Threads" in result.response.content, result.response.content
