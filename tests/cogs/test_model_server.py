"""A model server that is down, met by a command outside a turn: members read that the model is unavailable, never
the server's address (a stub server on 127.0.0.1, taken down mid-game)."""

from __future__ import annotations

import pytest

from bot.engine import Engine
from bot.model import ModelWorker
from bot.model.server import ServerModel
from tests.model.stub_server import StubServer


@pytest.fixture
def stub():
    with StubServer() as stub:
        yield stub


@pytest.fixture
async def worker(stub: StubServer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("bot.model.client.BACKOFF", (0.0,))  # a server that is down is found so at once
    async with ModelWorker(ServerModel(stub.url, stub.name, timeout=5)) as worker:
        yield worker


async def _a_game_whose_model_server_failed(channel, maya, engine: Engine, stub: StubServer, fault: str) -> None:
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    for action in ("I open the door.", "I climb the stair.", "I trim the wick."):
        await maya.slash(channel, "act", action=action)
    await engine.memory.idle()
    if fault == "tokenizer":  # its tokenizer fails: a new action is a turn to retry, and is counted by none
        stub.tokenize_status = 500
        failed = await maya.slash(channel, "act", action="I light the lamp with a new wick.")
        assert "could not answer" in failed.followups[-1].content
    else:  # the server is down: nothing answers on its port
        stub.server.shutdown()
        stub.server.server_close()


def _shown(result) -> str:
    return "\n".join(m.content for m in (result.response, *result.followups) if m is not None and m.content)


@pytest.mark.parametrize(
    ("who", "command", "fault"),
    [("maya", "compact", "down"), ("maya", "compact", "tokenizer"), ("admin", "chapter next", "down")],
)
async def test_a_command_that_needs_the_model_says_it_is_unavailable_without_the_servers_address(
    simcord_env, table, engine: Engine, stub: StubServer, who, command, fault
):
    channel, maya, _tom, admin = table
    await _a_game_whose_model_server_failed(channel, maya, engine, stub, fault)
    result = await {"maya": maya, "admin": admin}[who].slash(channel, command)
    shown = _shown(result)
    assert result.ephemeral or all(m.ephemeral for m in result.followups)
    assert shown == "The model is unavailable just now; nothing is lost. Try again in a minute.", shown
    assert stub.root not in shown and "127.0.0.1" not in shown
