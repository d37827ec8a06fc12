"""A turn the GM did not answer is answered by /retry or its Retry button, also after a restart (F19, F29)."""

from __future__ import annotations

from contextlib import AsyncExitStack

from bot.discord_client import GameMasterBot
from bot.engine import Engine, EngineConfig
from bot.model import ModelWorker, ScriptedModel
from bot.settings import ProcessSettings
from bot.store import EntryKind, NewEntry, Store
from bot.worlds import WorldLibrary

OPENS = "The door swings open onto a narrow stair that spirals up into the dark, smelling of salt and old paraffin."
CREAKS = "The door creaks open on rusted hinges, and a cold draught sighs down from the lamp room far above."
FOG = "The stair winds up into fog; each iron step rings under your boots, and far above a gull cries once."
LEDGER = "Tom finds a ledger in the keeper's desk, its pages swollen with damp and the last entry smudged."
CALM = "the wind drops, the sea hushes, and the tower's old lamp flickers in answer."


async def _a_failed_turn(channel, maya, engine: Engine, scripted: ScriptedModel):
    """Turn 1 answered, then the model fails on turn 2's action."""
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue(OPENS)
    await maya.slash(channel, "act", action="I open the door.")
    await engine.memory.idle()
    scripted.enqueue(RuntimeError("the model fell over"))
    return await maya.slash(channel, "act", action="I climb the stair.")


def _turns(log) -> list[tuple[EntryKind, int, str]]:
    return [(e.kind, e.turn, e.content) for e in log if e.kind in (EntryKind.ACTION, EntryKind.GM) and e.turn]


ANSWERED = [
    (EntryKind.ACTION, 1, "I open the door."),
    (EntryKind.GM, 1, OPENS),
    (EntryKind.ACTION, 2, "I climb the stair."),
    (EntryKind.GM, 2, FOG),
]


async def test_retry_after_a_failed_turn_answers_the_unanswered_action(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, _tom, _admin = table
    failed = await _a_failed_turn(channel, maya, engine, scripted)
    notice = failed.followups[-1]
    assert not notice.ephemeral and "could not answer **Maya**'s action" in notice.content
    assert any(c["custom_id"] == "gm:retry:1:2" for row in notice.components for c in row["components"])
    await engine.memory.idle()
    scripted.enqueue(FOG)
    await maya.slash(channel, "retry")
    assert channel.last_message.content == FOG
    game = await engine.current_game(f"discord:{channel.id}")
    assert game.turn == 2
    assert _turns(await engine.history(game.id, 20)) == ANSWERED, "turn 1's reply stays; turn 2 is answered"
    assert "I climb the stair." in scripted.last().prompt_text.split(OPENS)[-1]


async def test_a_failed_turn_after_the_interaction_expired_still_gets_its_notice_and_retry_button(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    """Discord refuses a followup once its interaction is 15 minutes old (401, code 50027): a long queue."""
    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    simcord_env.inject_error("POST", "/webhooks/*", status=401, code=50027, message="Invalid Webhook Token",
                             times=None)  # fmt: skip
    scripted.enqueue(RuntimeError("the model fell over"))
    await maya.slash(channel, "act", action="I climb the stair.")
    notice = channel.last_message
    assert "could not answer **Maya**'s action" in notice.content, "posted in the channel instead"
    assert any(c.custom_id.startswith("gm:retry") for row in notice.components for c in row.children)


async def test_the_retry_button_answers_it_and_goes_away(simcord_env, table, engine: Engine, scripted: ScriptedModel):
    channel, maya, tom, _admin = table
    failed = await _a_failed_turn(channel, maya, engine, scripted)
    await engine.memory.idle()
    refused = await tom.click(failed.followups[-1].message, label="Retry")
    assert refused.ephemeral and "seated" in refused.response.content, "a non-player may not press it"
    scripted.enqueue(FOG)
    pressed = await maya.click(failed.followups[-1].message, label="Retry")
    assert pressed.acknowledged
    assert channel.last_message.content == FOG
    game = await engine.current_game(f"discord:{channel.id}")
    assert _turns(await engine.history(game.id, 20)) == ANSWERED
    notice = next(m for m in channel.history() if m.id == failed.followups[-1].id)
    assert not notice.components, "the button is gone once the turn is answered"


async def test_retry_with_nothing_unanswered_still_writes_the_last_reply_again(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue(OPENS)
    await maya.slash(channel, "act", action="I open the door.")
    await engine.memory.idle()
    scripted.enqueue(CREAKS)
    await maya.slash(channel, "retry")
    game = await engine.current_game(f"discord:{channel.id}")
    assert _turns(await engine.history(game.id, 20)) == [
        (EntryKind.ACTION, 1, "I open the door."),
        (EntryKind.GM, 1, CREAKS),
    ]


async def test_the_reply_a_retry_replaced_says_so_in_the_channel(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue(OPENS)
    await maya.slash(channel, "act", action="I open the door.")
    first = channel.last_message
    await engine.memory.idle()
    scripted.enqueue(CREAKS)
    await maya.slash(channel, "retry")
    old = next(m for m in channel.history() if m.id == first.id)
    assert OPENS not in old.content, "the replaced answer no longer reads as the story"
    assert "written again" in old.content
    assert channel.last_message.content == CREAKS


async def _restart(simcord_env, engine: Engine, worlds_dir, model: ScriptedModel, stack):
    """A new process on the same database: store, worker, engine and bot."""
    store = await stack.enter_async_context(await Store.open(engine.store.path))
    worker = await stack.enter_async_context(ModelWorker(model))
    fresh = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=128))
    stack.push_async_callback(fresh.close)
    await simcord_env.restart_bot(GameMasterBot(fresh, ProcessSettings(discord_token="simulated")))
    return fresh


async def test_after_a_restart_an_unanswered_action_is_offered_again(
    simcord_env, table, engine: Engine, scripted: ScriptedModel, worlds_dir
):
    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue(OPENS)
    await maya.slash(channel, "act", action="I open the door.")
    await engine.memory.idle()
    game = await engine.current_game(f"discord:{channel.id}")
    # The process stops between storing the action and the reply, as a crash or `docker kill` leaves it.
    player = await engine.player(game.id, f"discord:{maya.id}")
    await engine.store.append(
        game.id,
        NewEntry(turn=2, kind=EntryKind.ACTION, author="Maya", player_id=player.id, content="I climb the stair."),
    )
    async with AsyncExitStack() as stack:
        model = ScriptedModel(FOG)
        fresh = await _restart(simcord_env, engine, worlds_dir, model, stack)
        notice = channel.last_message
        assert "could not answer **Maya**'s action" in notice.content
        await maya.click(notice, label="Retry")
        assert channel.last_message.content == FOG
        assert _turns(await fresh.history(game.id, 20)) == ANSWERED


def _round_closed(messages) -> str:
    """The GM's reply shows the round it answered (the prompt's last line), in one sentence long enough to stand."""
    return f"Round closed: {messages[-1].content.splitlines()[-1].rstrip('.')}, and {CALM}"


async def test_after_a_restart_an_open_round_keeps_its_window(
    simcord_env, table, engine: Engine, scripted: ScriptedModel, worlds_dir
):
    channel, maya, tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    await admin.slash(channel, "config set", setting="turn_policy", value="round")
    await admin.slash(channel, "config set", setting="round_seconds", value="60")
    await maya.slash(channel, "act", action="I climb.")
    async with AsyncExitStack() as stack:
        model = ScriptedModel(_round_closed)
        fresh = await _restart(simcord_env, engine, worlds_dir, model, stack)
        game = await fresh.current_game(f"discord:{channel.id}")
        assert fresh.sessions[game.id].round_open, "the window runs again after the restart"
        assert not [c for c in model.calls if c.kind == "stream"], "and the GM still waits for Tom"
        await simcord_env.advance_time(61)
        assert channel.last_message.content == f"Round closed: Maya: I climb, and {CALM}"
        assert (await fresh.current_game(f"discord:{channel.id}")).turn == 1


async def test_a_failed_turn_that_waited_behind_another_gets_the_button_of_its_own_turn(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    """Tom acts while Maya's turn holds the game: his action is stored at the turn after hers, and when the model
    fails on it, his Retry button is bound to that turn (not to the one the game was at when he typed)."""
    import asyncio

    channel, maya, tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    game = await engine.current_game(f"discord:{channel.id}")

    def answer(messages):
        if messages[-1].content.rstrip().endswith("I search the keeper's desk."):
            raise RuntimeError("the model fell over")
        return "The GM nods; rain drums on the slate roof, and the lamps gutter low in the draught."

    scripted.default = answer
    scripted.block.clear()
    held = asyncio.create_task(engine.act(game.id, f"discord:{maya.id}", "I open the door."))
    while not (engine.turn_running(game.id) and scripted.started):
        await asyncio.sleep(0.01)
    acting = asyncio.create_task(tom.slash(channel, "act", action="I search the keeper's desk."))
    while not any(m.content.endswith("I search the keeper's desk.") for m in channel.history()):
        await asyncio.sleep(0.01)  # Tom's action is echoed; his turn waits for Maya's
    scripted.block.set()
    await held
    failed = await acting
    notice = failed.followups[-1]
    assert "could not answer **Tom**'s action" in notice.content
    ids = [c["custom_id"] for row in notice.components for c in row["components"]]
    assert ids == [f"gm:retry:{game.id}:2"], "bound to turn 2, where Tom's action is stored"
    await engine.memory.idle()
    scripted.default = LEDGER
    pressed = await tom.click(notice.message, label="Retry")
    assert pressed.acknowledged and not (pressed.ephemeral and "earlier turn" in pressed.response.content)
    assert channel.last_message.content == LEDGER
    assert (await engine.current_game(f"discord:{channel.id}")).turn == 2
