"""The Discord client against SimCord's in-memory Discord: it loads every cog, sends the slash commands when they
changed or on request (not on every start), serves every shard, invites with the permissions it checks for, says
which privileged intent Discord refused, and closes on SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import urllib.parse

import discord
from discord import app_commands

from bot.access import CHANNEL_PERMISSIONS, INVITE_PERMISSIONS, THREAD_PERMISSIONS
from bot.discord_client import GameMasterBot, cog_modules, invite_link, privileged_intents_refused, serve
from bot.engine import Engine
from bot.settings import ProcessSettings


def _syncs(simcord_env) -> int:
    return sum(1 for r in simcord_env.http_requests if r.method == "PUT" and r.path.endswith("/commands"))


async def test_the_bot_connects_loads_every_cog_and_syncs(simcord_env, simcord_bot: GameMasterBot):
    assert simcord_bot.is_ready()
    assert sorted(simcord_bot.extensions) == sorted(cog_modules())
    assert not simcord_bot.intents.message_content, "the privileged intent is off unless asked for"
    channel = simcord_env.create_guild().create_text_channel("general")
    member = simcord_env.guild.add_member(simcord_env.create_user("ann"))
    available = set(member.available_commands(channel))
    assert {"game start", "game end", "game status", "join", "leave", "act", "roll"} <= available
    assert {"pin", "unpin", "pins", "memory-status", "recall", "compact", "retry", "chapter next"} <= available


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


async def test_the_bot_runs_sharded_and_serves_guilds_on_every_shard(simcord_env, engine):
    bot = GameMasterBot(engine, ProcessSettings(discord_token="simulated", shard_count=2))
    await simcord_env.restart_bot(bot)
    assert isinstance(bot, discord.AutoShardedClient) and bot.shard_count == 2
    for shard, name in ((0, "first"), (1, "second"), (1, "third")):
        guild = simcord_env.create_guild(name, shard_id=shard)
        channel = guild.create_text_channel("table")
        member = guild.add_member(simcord_env.create_user(f"{name}-player"))
        answer = await member.slash(channel, "world list")
        assert "lighthouse" in answer.response.content
    assert {g.shard_id for g in bot.guilds} == {0, 1}, "guilds on both shards were served"


def test_the_invite_link_asks_for_what_the_bot_checks_for():
    from bot.__main__ import checked_token

    token = base64.urlsafe_b64encode(b"123456789012345678").decode().rstrip("=") + ".GhIjKl.abcdefghijklmnopqrstuvwxyz0"
    assert checked_token(token) == 123456789012345678, "the bot's id, read from its token"
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(invite_link(123456789012345678)).query)
    assert query["client_id"] == ["123456789012345678"] and query["scope"] == ["bot applications.commands"]
    granted = discord.Permissions(int(query["permissions"][0]))
    wanted = {**CHANNEL_PERMISSIONS, **THREAD_PERMISSIONS}
    assert set(wanted) <= set(INVITE_PERMISSIONS) and {"read_message_history", "add_reactions"} <= set(
        INVITE_PERMISSIONS
    )
    assert all(getattr(granted, name) for name in INVITE_PERMISSIONS)
    assert not granted.administrator and not granted.mention_everyone


def test_a_refused_privileged_intent_names_the_setting_to_turn_off():
    text = privileged_intents_refused(ProcessSettings(discord_token="x", members_intent=True))
    assert "GM_MEMBERS_INTENT=false" in text and "GM_MESSAGE_CONTENT" not in text
    both = privileged_intents_refused(ProcessSettings(discord_token="x", members_intent=True, message_content=True))
    assert "GM_MEMBERS_INTENT=false" in both and "GM_MESSAGE_CONTENT=false" in both


async def test_sigterm_closes_the_discord_connection_and_returns(engine: Engine, monkeypatch):
    async def connected(self, token: str) -> None:  # stands in for the gateway: runs until close()
        while not self.is_closed():
            await asyncio.sleep(0.01)

    monkeypatch.setattr(GameMasterBot, "start", connected)
    for signum in (signal.SIGTERM, signal.SIGINT):
        engine.stopping = False
        loop = asyncio.get_running_loop()
        loop.call_later(0.2, os.kill, os.getpid(), signum)
        await asyncio.wait_for(serve(engine, ProcessSettings(discord_token="x", stop_seconds=1)), timeout=60)
        assert engine.stopping, "no new turn is taken once the signal came"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "the handlers are given back"
