"""Players first (F25): background work gives the model up to a waiting player and is redone, never lost."""

from __future__ import annotations

import asyncio

from bot.engine import Engine, EngineConfig
from bot.model import ModelWorker, ScriptedModel
from bot.store import Store
from bot.worlds import WorldLibrary
from tests.engine.upkeep.test_memory import scripted_memory, start


async def until(condition, tries: int = 2000) -> None:
    for _ in range(tries):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition never came true")


def private_memory_calls(model: ScriptedModel) -> list:
    return [c for c in model.calls if c.messages[0].content.startswith("You keep the private memory")]


async def test_a_turn_arriving_during_background_work_starts_before_it_ends_and_the_work_is_redone(
    engine: Engine, memory_model: ScriptedModel
):
    game = await start(engine, "Maya")
    memory_model.block.clear()  # every call waits: the first turn's background work will hold the model
    memory_model.enqueue(
        "FIRSTREPLY The fog rolls in off the sea and beads on the lamp-room glass as the wick takes the flame."
    )
    first = asyncio.create_task(engine.act(game.id, "maya", "FIRSTACTION I light the lamp."))
    await until(lambda: any(c.kind == "stream" for c in memory_model.started))
    memory_model.block.set()
    await first
    memory_model.block.clear()
    await until(lambda: any(c.kind == "json" for c in memory_model.started))  # upkeep holds the model now
    held = len(memory_model.started)

    second_reply = (
        "SECONDREPLY The lamp catches at last, and its beam sweeps out across the grey water toward the mainland."
    )
    memory_model.enqueue(second_reply)
    second = asyncio.create_task(engine.act(game.id, "maya", "SECONDACTION I wait."))
    # The turn's call starts while the background call is still held: it gave way.
    await until(lambda: any(c.kind == "stream" for c in memory_model.started[held:]))
    assert memory_model.interrupted >= 1 and not second.done()
    memory_model.block.set()
    result = await second
    assert result.reply.content == second_reply
    await engine.memory.idle(game.id)

    # The interrupted update ran again: Maya's memory took in every entry of both turns, nothing was lost.
    player = await engine.player(game.id, "maya")
    read = {i for version in await engine.store.player_memory_history(game.id, player.id) for i in version.sources}
    both_turns = [e.id for e in await engine.store.log(game.id) if e.turn in (1, 2) and e.author != "system"]
    assert set(both_turns) <= read
    assert (await engine.memory_status(game.id)).last_error is None
    interrupted = [r for r in engine.worker.records if r.interruptions]
    assert interrupted and all(r.ok for r in interrupted)


async def test_two_games_turns_are_served_in_arrival_order_behind_held_background_work(
    engine: Engine, memory_model: ScriptedModel
):
    one = await start(engine, "Maya")
    two = (await engine.start_game("chan-2", "lighthouse")).game
    await engine.join(two.id, "tom", "Tom")
    await engine.act(one.id, "maya", "I climb.")  # leaves upkeep behind it
    memory_model.block.clear()
    await until(lambda: any(c.kind == "json" for c in memory_model.started[-1:]))
    turns = []
    for game_id, who, text in ((one.id, "maya", "GAMEONE-A"), (two.id, "tom", "GAMETWO-A")):
        turns.append(asyncio.create_task(engine.act(game_id, who, text)))
        await until(lambda: engine.worker.pending >= len(turns) or memory_model.interrupted)
    memory_model.block.set()
    await asyncio.gather(*turns)
    streams = [c.messages[-1].content for c in memory_model.calls if c.kind == "stream"][-2:]
    assert streams[0].endswith("GAMEONE-A") and streams[1].endswith("GAMETWO-A")
    await engine.memory.idle()


async def test_a_backlog_of_turns_is_taken_in_by_few_calls_that_cover_every_turn(
    engine: Engine, memory_model: ScriptedModel
):
    game = await start(engine, "Maya")
    engine.memory.hold()
    for n in range(1, 7):
        await engine.act(game.id, "maya", f"BACKLOG{n} I search the rock.")
    before = len(memory_model.calls)
    engine.memory.release()
    await engine.memory.idle(game.id)
    background = memory_model.calls[before:]
    memories = [c for c in background if c.messages[0].content.startswith("You keep the private memory")]
    assert len(memories) == 1, "six turns of private memory in one call"
    assert all(f"BACKLOG{n}" in memories[0].prompt_text for n in range(1, 7))
    assert len(background) <= 5, [c.messages[0].content[:40] for c in background]


async def test_background_work_cut_off_by_shutdown_changes_nothing_and_is_done_after_a_restart(tmp_path, worlds_dir):
    store = await Store.open(tmp_path / "gm.sqlite3")
    model = ScriptedModel(default=scripted_memory)
    async with ModelWorker(model) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=128))
        game = await start(engine, "Maya")
        await engine.act(game.id, "maya", "BEFORESHUTDOWN I bar the door.")
        model.block.clear()
        await until(lambda: any(c.kind == "json" for c in model.started))
        await engine.close()  # the upkeep is cancelled while its model call is held
    model.block.set()
    assert await store.player_memory(game.id, (await store.players(game.id))[0].id) is None
    assert (await store.memory_state(game.id)).last_error is None

    async with ModelWorker(model) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=128))
        await engine.act(game.id, "maya", "AFTERRESTART I listen.")
        await engine.memory.idle(game.id)
        _, memory = await engine.private_memory(game.id, "maya")
        assert "BEFORESHUTDOWN" in memory.summary and "AFTERRESTART" in memory.summary, "one update took in both"
        await engine.close()
    await store.close()


async def test_the_next_start_catches_up_on_background_work_a_stop_left_before_anyone_acts(tmp_path, worlds_dir):
    """Stopped (a /quit, a SIGTERM) with a turn's upkeep still waiting: the next process does it at start."""
    store = await Store.open(tmp_path / "gm.sqlite3")
    model = ScriptedModel(default=scripted_memory)
    async with ModelWorker(model) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=128))
        game = await start(engine, "Maya")
        engine.memory.hold()  # the turn's upkeep waits, as behind a busy table's turns
        await engine.act(game.id, "maya", "BEFORESTOP I bar the door.")
        await engine.close()
    player = (await store.players(game.id))[0]
    assert await store.player_memory(game.id, player.id) is None, "the stop left the upkeep undone"

    async with ModelWorker(model) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=128))
        await engine.start()
        await engine.memory.idle(game.id)
        _, memory = await engine.private_memory(game.id, "maya")
        assert memory is not None and "BEFORESTOP" in memory.summary, "caught up with nobody acting"
        action = next(e for e in await store.log(game.id) if e.content.startswith("BEFORESTOP"))
        assert await store.checked_through("facts_checked", game.id) >= action.id, "its facts were looked for"
        await engine.close()
    await store.close()


async def test_a_job_failing_on_the_same_input_is_parked_shown_and_retried_later(engine: Engine, memory_model):
    game = await start(engine, "Maya")

    def broken_facts(messages):
        if messages[0].content.startswith("You record the facts"):
            raise RuntimeError("the extractor is out of order")
        return scripted_memory(messages)

    memory_model.default = broken_facts
    for n in range(1, 4):  # three failures: the third parks the job
        await engine.act(game.id, "maya", f"Turn {n}: I watch the sea.")
        await engine.memory.idle(game.id)
    status = await engine.memory_status(game.id)
    assert [line.split(":")[0] for line in status.parked] == ["facts"]
    assert "failed 3 times on the same input" in status.parked[0] and "out of order" in status.parked[0]

    tried = sum(1 for c in memory_model.calls if c.messages[0].content.startswith("You record the facts"))
    await engine.act(game.id, "maya", "Turn 4: I watch the sea.")
    await engine.memory.idle(game.id)
    again = sum(1 for c in memory_model.calls if c.messages[0].content.startswith("You record the facts"))
    assert again == tried, "a parked job is not tried after every turn"

    memory_model.default = scripted_memory  # mended; /compact gives it another try
    await engine.compact(game.id)
    await engine.memory.idle(game.id)
    assert (await engine.memory_status(game.id)).parked == []
    assert sum(1 for c in memory_model.calls if c.messages[0].content.startswith("You record the facts")) > again


class EndlessModel(ScriptedModel):
    """A GM that loops on one sentence and would go on writing until told to stop, a token every few ms."""

    def __init__(self) -> None:
        super().__init__()
        self.closed_at: float | None = None

    def stream(self, messages, *, max_tokens, slot=None, stop=(), fresh=False, min_tokens=0):
        from bot.model.base import Written

        return Written.of(self._pieces)

    def _pieces(self, out):
        import time

        from bot.model.base import CallStats

        started, written = time.perf_counter(), 0
        try:
            for piece in ["The fog ", "rolls in. ", "A gull cries. "] + ["The fog ", "rolls in. "] * 1000:
                time.sleep(0.005)
                written += 1
                yield piece
        finally:
            self.closed_at = time.perf_counter()
            out.stats = CallStats(
                prompt_tokens=100, reused_tokens=90, evaluated_tokens=10, generated_tokens=written,
                first_token_seconds=0.005, seconds=self.closed_at - started,
            )  # fmt: skip


async def test_a_reply_the_rules_end_early_stops_the_model_and_keeps_its_figures_with_the_turn(
    store: Store, worlds_dir
):
    import time

    model = EndlessModel()
    async with ModelWorker(model) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=2000))
        game = await start(engine, "Maya")
        result = await engine.act(game.id, "maya", "I wait on the landing stage.")
        returned = time.perf_counter()
        assert result.text == "The fog rolls in. A gull cries."
        assert model.closed_at is not None and model.closed_at <= returned, "the model stopped before the turn ended"
        assert result.model is not None and 0 < result.model.generated_tokens < 50, "the call's figures are the turn's"
        turn_jobs = [r for r in worker.records if r.label == engine.sessions[game.id].slot]
        assert turn_jobs and all(r.ended_at <= returned for r in turn_jobs)
        await engine.close()
