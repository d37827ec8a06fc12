"""Buttons where people expect them: Join under a game's opening (Retry is in test_retry)."""

from __future__ import annotations

from bot.engine import Engine
from bot.model import ScriptedModel


async def test_the_join_button_asks_for_a_name_and_seats_the_player(simcord_env, table, engine: Engine):
    channel, maya, tom, _admin = table
    started = await maya.slash(channel, "game start", world="lighthouse")
    opening = started.response.message
    shown = await tom.click(opening, label="Join")
    assert shown.modal is not None, "a form asks for the character's name"
    joined = await tom.submit_modal(shown, {"character": "Tom", "about": "A fisherman."})
    assert joined.response.content == f"{tom.mention} joins as **Tom**."
    game = await engine.current_game(f"discord:{channel.id}")
    player = await engine.player(game.id, f"discord:{tom.id}")
    assert (player.name, player.description) == ("Tom", "A fisherman.")

    again = await tom.click(opening, label="Join")
    refused = await tom.submit_modal(again, {"character": "Tom"})
    assert refused.ephemeral and "already" in refused.response.content.lower(), refused.response.content


async def test_the_join_button_of_an_ended_game_says_so(simcord_env, table, engine: Engine):
    channel, maya, tom, _admin = table
    started = await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "game end")
    pressed = await tom.click(started.response.message, label="Join")
    assert pressed.modal is None
    assert pressed.ephemeral and pressed.response.content == "There is no game here; start one first."


async def test_an_old_openings_join_button_does_not_join_the_channels_new_game(simcord_env, table, engine: Engine):
    channel, maya, tom, _admin = table
    first = await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "game end")
    await maya.slash(channel, "game start", world="lighthouse")
    pressed = await tom.click(first.response.message, label="Join")
    assert pressed.modal is None and pressed.ephemeral
    assert "belongs to an earlier game; nothing was changed" in pressed.response.content
    game = await engine.current_game(f"discord:{channel.id}")
    assert await engine.player(game.id, f"discord:{tom.id}") is None


async def test_a_retry_button_whose_turn_was_answered_changes_nothing(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue(RuntimeError("the model fell over"))
    failed = await maya.slash(channel, "act", action="I climb the stair.")
    notice = failed.followups[-1].message
    await engine.memory.idle()
    fog = "The stair winds up into fog; each iron step rings under your boots, and far above a gull cries once."
    scripted.enqueue(fog)
    await maya.slash(channel, "retry")  # the turn is answered another way; the button stays on the notice
    lifts = "The fog lifts from the gallery rail, and for a moment the whole grey sweep of the bay lies open below you."
    scripted.enqueue(lifts)
    await maya.slash(channel, "act", action="I wait at the top.")
    await engine.memory.idle()
    calls = len(scripted.calls)
    pressed = await maya.click(notice, label="Retry")
    assert pressed.ephemeral and "belongs to an earlier turn; nothing was changed" in pressed.response.content
    assert channel.last_message.content == lifts, "the latest reply is not rewritten"
    assert len(scripted.calls) == calls
    game = await engine.current_game(f"discord:{channel.id}")
    replies = [e.content for e in await engine.history(game.id, 20) if e.author == "GM" and e.turn]
    assert replies == [fog, lifts]


async def test_buttons_posted_before_ids_named_their_game_say_to_use_the_command(
    simcord_env, simcord_bot, table, engine
):
    import discord

    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    old = discord.ui.View(timeout=None)
    old.add_item(discord.ui.Button(label="Retry", custom_id="gm:retry"))
    await simcord_bot.get_channel(channel.id).send("⚠️ A notice from an older version.", view=old)
    await simcord_env.settle()
    from bot.discord_client import GameMasterBot
    from bot.settings import ProcessSettings

    await simcord_env.restart_bot(GameMasterBot(engine, ProcessSettings(discord_token="simulated")))  # the new version
    pressed = await maya.click(channel.last_message, label="Retry")
    assert pressed.ephemeral and "Use /retry" in pressed.response.content
