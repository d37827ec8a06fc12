"""The Discord start-up code against SimCord's in-memory Discord."""

from __future__ import annotations

import pytest

from bot.discord_client import GameMasterBot, cog_modules
from bot.engine import Engine
from bot.settings import Settings


@pytest.fixture
def simcord_bot(engine: Engine) -> GameMasterBot:
    return GameMasterBot(engine, Settings(discord_token="simulated", dev_guild_id=None))


async def test_the_bot_connects_loads_every_cog_and_syncs(simcord_env, simcord_bot: GameMasterBot):
    assert simcord_bot.is_ready()
    assert sorted(simcord_bot.extensions) == cog_modules()
    assert simcord_bot.engine is not None
    assert not simcord_bot.intents.message_content, "the privileged intent is off unless asked for"
