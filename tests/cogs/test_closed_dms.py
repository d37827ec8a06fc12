"""A player whose DMs are closed still gets what is theirs, and nobody else sees it (F4, F29)."""

from __future__ import annotations

from bot.engine import Engine
from bot.model import ScriptedModel


def _close_dms(simcord_env, member) -> None:
    simcord_env.inject_error(
        "POST", f"/channels/{member.user.dm_channel.id}/messages", status=403, code=50007,
        message="Cannot send messages to this user", times=None,
    )  # fmt: skip


async def _seated(channel, maya, tom):
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")


async def test_a_whisper_to_closed_dms_is_answered_in_an_ephemeral_followup(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, tom, _admin = table
    await _seated(channel, maya, tom)
    _close_dms(simcord_env, maya)
    before = len(channel.history())
    scripted.enqueue("The keeper's log names the ship Grey Heron.")
    result = await maya.slash(channel, "whisper", action="I read the keeper's log.")
    private = [m for m in result.followups if "Grey Heron" in m.content]
    assert private and all(m.ephemeral for m in private), "the answer reaches Maya, for her eyes only"
    public = channel.history()[before:]
    assert not [m for m in public if "Grey Heron" in m.content or "keeper's log" in m.content]
    assert not maya.user.dm_channel.history()


async def test_an_aside_to_another_player_with_closed_dms_is_a_mention_without_the_secret(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, tom, _admin = table
    await _seated(channel, maya, tom)
    _close_dms(simcord_env, tom)
    scripted.enqueue(
        "The lamp flares with a hiss, and its beam sweeps out across the grey water toward the rocks. "
        "[[to Tom: You glimpse a second boat in the fog.]]"
    )
    await maya.slash(channel, "act", action="I light the lamp.")
    contents = [m.content for m in channel.history()]
    assert not [c for c in contents if "second boat" in c], "nothing private is posted"
    notice = next(m for m in channel.history() if "cannot DM you" in m.content)
    assert notice.content.startswith(f"<@{tom.id}>")
    assert "Tom" not in notice.content.replace(f"<@{tom.id}>", ""), "the person is named, not the character"
    assert [u.id for u in notice.mentions] == [tom.id], "it pings Tom and nobody else"
    game = await engine.current_game(f"discord:{channel.id}")
    asides = [e.content for e in await engine.history(game.id, 10) if e.author == "GM to Tom"]
    assert asides == ["You glimpse a second boat in the fog."], "the aside is kept"
