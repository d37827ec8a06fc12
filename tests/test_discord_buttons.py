"""Buttons where people expect them: Join under a game's opening (Retry is in test_discord_retry)."""

from __future__ import annotations

from bot.engine import Engine


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
