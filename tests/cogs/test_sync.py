"""Slash commands are sent to Discord when they changed, or on request; not on every start."""

from __future__ import annotations

from discord import app_commands

from bot.discord_client import GameMasterBot
from bot.engine import Engine
from bot.settings import ProcessSettings


def _syncs(simcord_env) -> int:
    return sum(1 for r in simcord_env.http_requests if r.method == "PUT" and r.path.endswith("/commands"))


async def test_a_restart_with_the_same_commands_does_not_sync_and_a_change_or_a_request_does(
    simcord_env, table, engine: Engine
):
    assert _syncs(simcord_env) == 1, "the first start sends the commands"
    await simcord_env.restart_bot(GameMasterBot(engine, ProcessSettings(discord_token="simulated")))
    assert _syncs(simcord_env) == 1, "the same commands are not sent again"
    channel, maya, *_ = table
    assert "game start" in maya.available_commands(channel), "and they are still there"

    changed = GameMasterBot(engine, ProcessSettings(discord_token="simulated"))

    @changed.tree.command(name="extra", description="A command added by a new version")
    async def extra(interaction) -> None: ...

    await simcord_env.restart_bot(changed)
    assert _syncs(simcord_env) == 2, "a changed command tree is sent"

    await simcord_env.restart_bot(GameMasterBot(engine, ProcessSettings(discord_token="simulated"), force_sync=True))
    assert _syncs(simcord_env) == 3, "python -m bot sync sends them whatever changed"
    assert isinstance(extra, app_commands.Command)
