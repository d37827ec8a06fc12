"""Restarts, Discord errors and several channels at once, through SimCord."""

from __future__ import annotations

import pytest

from bot.discord_client import GameMasterBot
from bot.engine import Engine, EngineConfig
from bot.model import ModelWorker, ScriptedModel
from bot.settings import ProcessSettings
from bot.store import EntryKind, Store
from bot.worlds import WorldLibrary
from cogs.game import OPENING_REFUSED, REFUSED
from tests.conftest import bundled_model

FLARES = "The lamp flares with a hiss, and its beam sweeps out across the grey water toward the rocks."
BRIGHTER = "The lamp flares, brighter now; the beam reaches the far reef and picks out a mast among the breakers."


def _echo(messages) -> str:
    """The GM's reply shows the action it answered (the prompt's last line), in one sentence long enough to stand."""
    line = messages[-1].content.splitlines()[-1].rstrip(".")
    return f"Echo: {line}, and the wind drops, the sea hushes, and the tower's old lamp flickers in answer."


async def test_a_game_survives_a_restart_of_the_bot(simcord_env, table, engine: Engine, worlds_dir):
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await maya.slash(channel, "act", action="I climb the stair.")

    # A new process: a new connection to the same database, a new model worker, a new engine.
    store = await Store.open(engine.store.path)
    model = ScriptedModel("The stair ends at a locked hatch.")
    async with ModelWorker(model) as worker:
        fresh = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=128))
        await simcord_env.restart_bot(GameMasterBot(fresh, ProcessSettings(discord_token="simulated")))
        result = await maya.slash(channel, "act", action="I try the hatch.")
        assert not result.ephemeral
        assert channel.last_message.content == "The stair ends at a locked hatch."
        game = await fresh.current_game(f"discord:{channel.id}")
        assert game.turn == 2
        actions = [e.content for e in await fresh.history(game.id, 20) if e.kind is EntryKind.ACTION]
        assert actions == ["I climb the stair.", "I try the hatch."]
        assert "I climb the stair." in model.last().prompt_text, "the GM still sees the turn before the restart"
        await fresh.close()
    await store.close()


async def test_a_refused_reply_is_told_kept_and_retried(simcord_env, table, engine: Engine, scripted: ScriptedModel):
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue(FLARES)
    simcord_env.inject_error("POST", "/channels/*/messages", times=None)
    result = await maya.slash(channel, "act", action="I light the lamp.")
    assert result.followups and result.followups[0].ephemeral
    assert "use /retry" in result.followups[0].content
    game = await engine.current_game(f"discord:{channel.id}")
    log = await engine.history(game.id, 20)
    assert [(e.kind, e.content) for e in log[-2:]] == [
        (EntryKind.ACTION, "I light the lamp."),
        (EntryKind.GM, FLARES),
    ]

    simcord_env.backend.faults.clear()
    await engine.memory.idle()
    scripted.enqueue(BRIGHTER)
    await maya.slash(channel, "retry")
    assert channel.last_message.content == BRIGHTER


async def test_a_refused_reply_after_the_interaction_expired_is_told_in_the_channel(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    """A turn that waited past the interaction's 15 minutes: its followup is refused too, so the notice that the
    turn is kept goes to the channel."""
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue(FLARES)
    simcord_env.inject_error("POST", "/webhooks/*", status=401, code=50027, message="Invalid Webhook Token",
                             times=None)  # fmt: skip
    simcord_env.inject_error("POST", "/channels/*/messages", status=403, code=50013, message="Missing Access", times=2)
    result = await maya.slash(channel, "act", action="I light the lamp.")
    assert channel.last_message.content == REFUSED
    assert not result.followups and not any("went wrong" in m.content for m in channel.history())
    game = await engine.current_game(f"discord:{channel.id}")
    assert [e.content for e in await engine.history(game.id, 2)] == ["I light the lamp.", FLARES]


async def test_an_opening_discord_refuses_is_told_and_the_game_is_kept(simcord_env, table, engine: Engine):
    channel, maya, _, _ = table
    simcord_env.inject_error("POST", "/channels/*/messages", status=403, code=50013, message="Missing Access")
    started = await maya.slash(channel, "game start", world="lighthouse")
    notices = [m for m in started.followups if m.ephemeral]
    assert [m.content for m in notices] == [OPENING_REFUSED]
    assert not any("went wrong" in m.content for m in started.followups)
    game = await engine.current_game(f"discord:{channel.id}")
    assert (await engine.history(game.id, 1))[0].content.startswith("The supply boat bumps"), "the opening is kept"


async def test_two_channels_play_at_once_without_mixing(simcord_env, table, engine: Engine, scripted: ScriptedModel):
    channel, maya, tom, _ = table
    other = simcord_env.guild.create_text_channel("cellar")
    scripted.default = _echo
    await maya.slash(channel, "game start", world="lighthouse")
    await tom.slash(other, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(other, "join", name="Tom")
    # SimCord runs one user operation at a time; the engine's own test plays two games concurrently.
    for n in range(3):
        await maya.slash(channel, "act", action=f"I climb up {n}.")
        await tom.slash(other, "act", action=f"I dig down {n}.")
    calm = "the wind drops, the sea hushes, and the tower's old lamp flickers in answer."
    assert channel.last_message.content == f"Echo: Maya: I climb up 2, and {calm}"
    assert other.last_message.content == f"Echo: Tom: I dig down 2, and {calm}"
    up = await engine.current_game(f"discord:{channel.id}")
    down = await engine.current_game(f"discord:{other.id}")
    assert up.id != down.id
    up_text = " ".join(e.content for e in await engine.history(up.id, 50))
    down_text = " ".join(e.content for e in await engine.history(down.id, 50))
    assert "dig down" not in up_text and "climb up" not in down_text


@pytest.mark.llm
@pytest.mark.slow
# About 9 s alone on two cores; the settle timeout only stops a hang (with another model process on the same
# cores, llama.cpp's threads contend, and it took past 180 s).
@pytest.mark.simcord(settle_timeout=600)
async def test_end_to_end_with_the_real_bundled_model(simcord_env, table, store: Store, worlds_dir):
    from bot.model.llama import Sampling

    channel, maya, tom, _ = table
    model = bundled_model(n_ctx=2048, sampling=Sampling(seed=5))
    async with ModelWorker(model) as worker:
        real = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=32))
        await simcord_env.restart_bot(GameMasterBot(real, ProcessSettings(discord_token="simulated")))
        await maya.slash(channel, "game start", world="lighthouse")
        await maya.slash(channel, "join", name="Maya")
        before = len(channel.history())
        await maya.slash(channel, "act", action="I knock on the keeper's door.")
        posted = channel.history()[before:]
        assert posted[0].content == "**Maya**: I knock on the keeper's door."
        game = await real.current_game(f"discord:{channel.id}")
        reply = (await real.history(game.id, 1))[0]
        assert reply.kind is EntryKind.GM and reply.content.strip()
        assert posted[-1].content.replace(" …", "") == reply.content[:2000]
        await real.memory.idle()
        left = await tom.slash(channel, "leave")
        assert left.ephemeral and left.response.content == "Join the game first with /join."
        ended = await maya.slash(channel, "game end")
        assert ended.response.content == "The game ends after 1 turns. It is kept."
        after = await maya.slash(channel, "act", action="Hello?")
        assert after.ephemeral and after.response.content == "There is no game here; start one first."
        await real.close()


async def test_round_policy_gathers_everyones_actions_then_narrates_once(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    await admin.slash(channel, "config set", setting="turn_policy", value="round")

    def narrate(messages):
        lines = messages[-1].content.splitlines()
        return "Round: " + " / ".join(line for line in lines if line.startswith(("Maya:", "Tom:")))

    scripted.default = narrate
    first = await maya.slash(channel, "act", action="I climb.")
    assert first.followups and "when Tom has acted" in first.followups[0].content
    assert not [c for c in scripted.calls if c.kind == "stream"], "the GM waits for Tom"
    await tom.slash(channel, "act", action="I follow.")
    assert channel.last_message.content == "Round: Maya: I climb. / Tom: I follow."
    game = await engine.current_game(f"discord:{channel.id}")
    log = await engine.history(game.id, 3)
    assert [(e.kind, e.turn) for e in log] == [(EntryKind.ACTION, 1), (EntryKind.ACTION, 1), (EntryKind.GM, 1)]

    # Alone this time: the window closes the round.
    await maya.slash(channel, "act", action="I wait.")
    await simcord_env.advance_time(61)
    assert channel.last_message.content.startswith("Round: ") and "Maya: I wait." in channel.last_message.content
    assert (await engine.current_game(f"discord:{channel.id}")).turn == 2
