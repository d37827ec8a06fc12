from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from bot.model import ChatMessage, ModelWorker, Priority, ScriptedModel
from bot.model.scripted import DEFAULT_REPLY

HELLO = [ChatMessage(role="user", content="hello")]


async def test_player_jobs_run_before_waiting_maintenance():
    model = ScriptedModel(default=lambda messages: messages[-1].content)
    async with ModelWorker(model) as worker:
        model.block.clear()
        first = asyncio.create_task(worker.generate([ChatMessage(role="user", content="busy")], max_tokens=8))
        await _until(lambda: len(model.started) == 1)  # the first job is running (blocked) in the thread
        jobs = [
            asyncio.create_task(worker.generate([ChatMessage(role="user", content=name)], max_tokens=8, priority=p))
            for name, p in [
                ("summary", Priority.MAINTENANCE),
                ("whisper", Priority.PRIVATE),
                ("turn-a", Priority.PLAYER),
                ("turn-b", Priority.PLAYER),
            ]
        ]
        for _ in range(500):  # until the first job is in the thread and the other four wait
            if worker.pending == 4:
                break
            await asyncio.sleep(0.01)
        assert worker.pending == 4
        model.block.set()
        await asyncio.gather(first, *jobs)
    order = [call.messages[-1].content for call in model.calls]
    assert order == ["busy", "turn-a", "turn-b", "whisper", "summary"]


async def test_stream_yields_pieces_in_order():
    model = ScriptedModel(chunk_chars=3)
    model.enqueue("The door creaks open.")
    async with ModelWorker(model) as worker:
        pieces = [piece async for piece in worker.stream(HELLO, max_tokens=32)]
    assert len(pieces) > 3
    assert "".join(pieces) == "The door creaks open."


async def test_stream_raises_what_the_model_raised():
    model = ScriptedModel()
    model.enqueue(RuntimeError("out of memory"))
    async with ModelWorker(model) as worker:
        with pytest.raises(RuntimeError, match="out of memory"):
            async for _ in worker.stream(HELLO, max_tokens=32):
                pass
        # The worker survives a failed job.
        assert await worker.generate(HELLO, max_tokens=8) == DEFAULT_REPLY


async def test_a_models_calls_never_wait_for_the_loops_shared_threads():
    """Four tables started together on two cores: all six of the loop's shared threads waited for the embedding
    model (the worlds' texts embedded), where a model call would have waited for one of them. The worker's calls
    run in threads of its own."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(1))
    held = threading.Event()
    busy = asyncio.ensure_future(asyncio.to_thread(held.wait, 30))  # the loop's one shared thread, taken
    model = ScriptedModel(default=lambda messages: "The door opens.")
    try:
        async with ModelWorker(model) as worker:
            assert await asyncio.wait_for(worker.generate(HELLO, max_tokens=8), 10) == "The door opens."
            pieces = [piece async for piece in worker.stream(HELLO, max_tokens=8)]
            assert "".join(pieces) == "The door opens."
    finally:
        held.set()
        await busy


async def test_the_event_loop_keeps_running_while_the_model_works():
    model = ScriptedModel()
    async with ModelWorker(model) as worker:
        model.block.clear()
        job = asyncio.create_task(worker.generate(HELLO, max_tokens=8))
        ticks = 0
        for _ in range(5):
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 5 and not job.done()
        model.block.set()
        assert await job == DEFAULT_REPLY


async def test_jobs_waiting_at_close_are_cancelled():
    model = ScriptedModel()
    worker = ModelWorker(model)
    worker.start()
    model.block.clear()
    running = asyncio.create_task(worker.generate(HELLO, max_tokens=8))
    waiting = asyncio.create_task(worker.generate(HELLO, max_tokens=8))
    await _until(lambda: len(model.started) == 1 and worker.pending == 1)  # one job runs (blocked), one waits
    model.block.set()
    await worker.close()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    running.cancel()


async def _until(condition, seconds: float = 10.0) -> None:
    """Wait for ``condition`` to hold, looking every few milliseconds; fail after ``seconds`` (a loaded machine
    is slow, a broken worker never gets there)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition never came true")
        await asyncio.sleep(0.005)


class CountedEvent(threading.Event):
    """``ScriptedModel.block`` that counts its waits: a held call waits on it in short steps and looks at its
    stop signal after each, so two more waits mean the model has looked at least once since."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        return super().wait(timeout)


async def test_a_player_job_interrupts_running_maintenance_which_runs_again_afterwards():
    model = ScriptedModel(default=lambda messages: messages[-1].content)
    async with ModelWorker(model) as worker:
        model.block.clear()
        summary = asyncio.create_task(
            worker.generate([ChatMessage(role="user", content="summary")], max_tokens=8, priority=Priority.MAINTENANCE)
        )
        await _until(lambda: len(model.started) == 1)  # the summary holds the model
        turn = asyncio.create_task(worker.generate([ChatMessage(role="user", content="turn")], max_tokens=8))
        # The summary gives way while it is still held: the player's call starts before the summary ends.
        await _until(lambda: [c.messages[-1].content for c in model.started] == ["summary", "turn"])
        assert model.interrupted == 1 and not summary.done()
        model.block.set()
        assert await turn == "turn"
        assert await summary == "summary", "the interrupted job is run again and its caller gets its answer"
    assert [c.messages[-1].content for c in model.calls] == ["turn", "summary"]
    [summary_record] = [r for r in worker.records if r.label == "generate" and r.priority is Priority.MAINTENANCE]
    assert summary_record.interruptions == 1 and summary_record.ok


async def test_player_turns_keep_arrival_order_and_interrupted_jobs_keep_theirs():
    model = ScriptedModel(default=lambda messages: messages[-1].content)
    async with ModelWorker(model) as worker:
        model.block.clear()
        background = [
            asyncio.create_task(
                worker.generate([ChatMessage(role="user", content=name)], max_tokens=8, priority=Priority.MAINTENANCE)
            )
            for name in ("facts-1", "facts-2")
        ]
        await _until(lambda: len(model.started) == 1)
        turns = []
        for name in ("game-a", "game-b", "game-a-again"):
            turns.append(asyncio.create_task(worker.generate([ChatMessage(role="user", content=name)], max_tokens=8)))
            await asyncio.sleep(0.01)
        await _until(lambda: model.interrupted == 1)
        model.block.set()
        await asyncio.gather(*turns, *background)
    order = [c.messages[-1].content for c in model.calls]
    assert order == ["game-a", "game-b", "game-a-again", "facts-1", "facts-2"]


async def test_a_stream_is_never_interrupted_even_at_maintenance_priority():
    model = ScriptedModel(chunk_chars=2)
    model.block = CountedEvent()  # held from the start
    model.enqueue("A long slow answer.")
    async with ModelWorker(model) as worker:
        pieces: list[str] = []

        async def read() -> None:
            async for piece in worker.stream(HELLO, max_tokens=32, priority=Priority.MAINTENANCE):
                pieces.append(piece)

        reading = asyncio.create_task(read())
        await _until(lambda: len(model.started) == 1)
        turn = asyncio.create_task(worker.generate(HELLO, max_tokens=8))
        await _until(lambda: worker.pending == 1)  # the turn waits: a stream to interrupt would be told so now
        looked = model.block.waits
        await _until(lambda: model.block.waits >= looked + 2)  # the held stream has looked for a stop since
        assert model.interrupted == 0
        model.block.set()
        await asyncio.gather(reading, turn)
    assert "".join(pieces) == "A long slow answer."


def _echo_holding(prefix: str, release: threading.Event):
    """A scripted answer that says the prompt back, holding the calls whose prompt starts with ``prefix`` until
    ``release`` is set."""

    def answer(messages: list[ChatMessage]) -> str:
        text = messages[-1].content
        if text.startswith(prefix):
            release.wait(10)
        return text

    return answer


async def test_a_model_serving_several_calls_keeps_a_place_free_of_background_work_for_players():
    """Through a model server with several places, background calls of any game take at most the model's
    background places: a player's turn that comes while more background work waits starts at once."""
    release = threading.Event()
    model = ScriptedModel(default=_echo_holding("summary", release))
    model.parallel, model.background_parallel = 3, 1
    async with ModelWorker(model) as worker:
        background = [
            asyncio.create_task(
                worker.generate(
                    [ChatMessage(role="user", content=f"summary {n}")], max_tokens=8, priority=Priority.MAINTENANCE
                )  # fmt: skip
            )
            for n in range(3)
        ]
        await _until(lambda: len(model.started) == 1)
        await asyncio.sleep(0.2)
        assert [c.messages[-1].content for c in model.started] == ["summary 0"]  # one background place
        turn = await asyncio.wait_for(worker.generate(HELLO, max_tokens=8, priority=Priority.PLAYER), 5)
        assert turn == "hello"
        release.set()
        assert await asyncio.gather(*background) == ["summary 0", "summary 1", "summary 2"]


async def test_on_a_model_whose_calls_share_the_cores_background_work_starts_only_while_no_player_call_runs():
    """llama.cpp's server on two cores, four tables (bench tables): a summary or an embedding run beside a player's
    turn took its share of the cores, and the turn's first words came later. With such a model (a server the bot
    started without a GPU) background calls wait while a player's call runs, and start once none does."""
    release = threading.Event()
    answer = _echo_holding("turn", release)
    model = ScriptedModel(default=answer)
    model.parallel, model.background_parallel, model.background_yields = 3, 1, True
    async with ModelWorker(model) as worker:
        turn = asyncio.create_task(
            worker.generate([ChatMessage(role="user", content="turn 1")], max_tokens=8, priority=Priority.PLAYER)
        )
        await _until(lambda: len(model.started) == 1)
        summary = asyncio.create_task(
            worker.generate([ChatMessage(role="user", content="summary")], max_tokens=8, priority=Priority.MAINTENANCE)
        )
        await asyncio.sleep(0.3)
        assert [c.messages[-1].content for c in model.started] == ["turn 1"], "the summary waits"
        release.set()
        assert await asyncio.wait_for(turn, 5) == "turn 1"
        assert await asyncio.wait_for(summary, 5) == "summary", "and runs once no player's call does"

    # Without it (a GPU, or a server of its own) the spare place takes background work beside a turn, as before.
    release.clear()
    model = ScriptedModel(default=answer)
    model.parallel, model.background_parallel = 3, 1
    async with ModelWorker(model) as worker:
        turn = asyncio.create_task(
            worker.generate([ChatMessage(role="user", content="turn 1")], max_tokens=8, priority=Priority.PLAYER)
        )
        await _until(lambda: len(model.started) == 1)
        summary = await asyncio.wait_for(
            worker.generate([ChatMessage(role="user", content="summary")], max_tokens=8, priority=Priority.MAINTENANCE),
            5,
        )
        assert summary == "summary" and not turn.done()
        release.set()
        await turn


async def test_on_a_model_whose_calls_share_the_cores_no_background_call_starts_between_a_turns_calls():
    """One table through llama.cpp's server on two cores: a turn whose reply was written again made two calls,
    and the facts' extraction waiting behind the first began in the moment between them and ran beside the
    second. Background work waits for the whole turn, and starts once it ends."""
    release = threading.Event()
    model = ScriptedModel(default=_echo_holding("turn", release))
    model.parallel, model.background_parallel, model.background_yields = 3, 1, True

    def call(text: str, priority: Priority):
        return worker.generate([ChatMessage(role="user", content=text)], max_tokens=8, priority=priority)

    async with ModelWorker(model) as worker:
        async with worker.turn():
            first = asyncio.create_task(call("turn, first try", Priority.PLAYER))
            await _until(lambda: len(model.started) == 1)
            extraction = asyncio.create_task(call("extraction", Priority.MAINTENANCE))
            await asyncio.sleep(0.2)
            release.set()
            assert await asyncio.wait_for(first, 5) == "turn, first try"
            await asyncio.sleep(0.3)  # the moment between the turn's two calls
            assert [c.messages[-1].content for c in model.started] == ["turn, first try"], "the extraction waits"
            assert await asyncio.wait_for(call("turn, written again", Priority.PLAYER), 5) == "turn, written again"
            assert not extraction.done()
        assert await asyncio.wait_for(extraction, 5) == "extraction", "and runs once the turn is over"
        assert [c.messages[-1].content for c in model.started][-1] == "extraction"

    # Where background work does not yield (a GPU), a turn holds nothing back.
    model = ScriptedModel(default=lambda messages: messages[-1].content)
    model.parallel, model.background_parallel = 3, 1
    async with ModelWorker(model) as worker:
        async with worker.turn():
            assert await asyncio.wait_for(call("extraction", Priority.MAINTENANCE), 5) == "extraction"


async def test_on_a_model_whose_calls_share_the_cores_a_running_background_call_gives_way_to_a_players():
    """One table through llama.cpp's server on two cores: a summary begun in the player's pause ran to its end
    beside the player's next turn, which came twice as late. On such a model a player's call stops a running
    background call, as in process; the background call runs again once no player's does. Each call has its
    own stop signal: the player's, running beside it in another thread, is never stopped."""
    model = ScriptedModel(default=lambda messages: messages[-1].content)
    model.parallel, model.background_parallel, model.background_yields = 3, 1, True

    def call(text: str, priority: Priority):
        return asyncio.create_task(
            worker.generate([ChatMessage(role="user", content=text)], max_tokens=8, priority=priority)
        )

    async with ModelWorker(model) as worker:
        try:
            model.block.clear()
            summary = call("summary", Priority.MAINTENANCE)
            await _until(lambda: len(model.started) == 1)
            turn = call("turn", Priority.PLAYER)
            await _until(lambda: model.interrupted == 1)
            await asyncio.sleep(0.3)
            assert [c.messages[-1].content for c in model.started] == ["summary", "turn"], "it waits for the turn"
            model.block.set()
            assert await asyncio.wait_for(turn, 5) == "turn"
            assert await asyncio.wait_for(summary, 5) == "summary", "and runs again once the turn's call is over"
            assert [c.messages[-1].content for c in model.calls] == ["turn", "summary"]
            [record] = [r for r in worker.records if r.priority is Priority.MAINTENANCE]
            assert record.interruptions == 1 and record.ok

            # A turn under way stops it too, before the turn's first call (the turn's own work wants the cores).
            model.block.clear()
            summary = call("summary 2", Priority.MAINTENANCE)
            await _until(lambda: model.started[-1].messages[-1].content == "summary 2")
            async with worker.turn():
                await _until(lambda: model.interrupted == 2)
                model.block.set()
            assert await asyncio.wait_for(summary, 5) == "summary 2"
        finally:
            model.block.set()  # a held call never outlives the test

    # Where background work has its own place (a GPU), it runs on beside the player's call.
    model = ScriptedModel(default=lambda messages: messages[-1].content)
    model.parallel, model.background_parallel = 3, 1
    async with ModelWorker(model) as worker:
        model.block.clear()
        summary = call("summary", Priority.MAINTENANCE)
        await _until(lambda: len(model.started) == 1)
        turn = call("turn", Priority.PLAYER)
        await _until(lambda: len(model.started) == 2)
        await asyncio.sleep(0.2)
        model.block.set()
        assert await asyncio.wait_for(asyncio.gather(turn, summary), 5) == ["turn", "summary"]
        assert model.interrupted == 0


def _read_ahead(worker: ModelWorker, games: int) -> list[asyncio.Task]:
    """Each game's prompt read ahead of its turn, at once ("read 0", "read 1", ...)."""
    return [
        asyncio.create_task(
            worker.generate([ChatMessage(role="user", content=f"read {n}")], max_tokens=1, priority=Priority.PREFILL)
        )
        for n in range(games)
    ]


async def test_on_a_model_whose_calls_share_the_cores_prompts_read_ahead_wait_as_background_work_does():
    """Four tables started together on a llama.cpp server on two cores: each game's prompt was read ahead at once,
    in four of the server's places, and the players' first turns waited for places until those readings ended.
    There a reading ahead takes a background place and starts only while no player's call runs, as in process."""
    release = threading.Event()
    model = ScriptedModel(default=_echo_holding("read", release))
    model.parallel, model.background_parallel, model.background_yields = 3, 1, True
    async with ModelWorker(model) as worker:
        readings = _read_ahead(worker, 3)
        await _until(lambda: len(model.started) == 1)
        await asyncio.sleep(0.2)
        assert [c.messages[-1].content for c in model.started] == ["read 0"], "one reading at a time"
        turn = await asyncio.wait_for(worker.generate(HELLO, max_tokens=8, priority=Priority.PLAYER), 5)
        assert turn == "hello", "a player's turn finds a place at once"
        release.set()
        assert await asyncio.gather(*readings) == ["read 0", "read 1", "read 2"]

    # On a server whose calls do not share the cores (a GPU), readings ahead take the places players' turns do.
    release.clear()
    model = ScriptedModel(default=_echo_holding("read", release))
    model.parallel, model.background_parallel = 3, 1
    async with ModelWorker(model) as worker:
        readings = _read_ahead(worker, 2)
        await _until(lambda: len(model.started) == 2)
        release.set()
        await asyncio.gather(*readings)


def test_each_model_call_gives_back_its_own_text_and_figures_even_when_calls_overlap():
    """A call's text, usage and timing come back as one value, not as figures left on the model for the caller
    to read afterwards, where a call made meanwhile (another thread's, a server's parallel one) would overwrite
    them."""
    model = ScriptedModel(chunk_chars=4)
    long, short = "The long reply of the first game goes on.", "Short."
    model.enqueue(long, short)
    written = model.stream(HELLO, max_tokens=64, slot="game:1")
    opening = next(written)  # the first game's reply is being written...
    other = model.generate([ChatMessage(role="user", content="a summary")], max_tokens=8)  # ...when another ends
    assert opening + "".join(written) == long
    assert other.text == short and other.stats.generated_tokens == model.count_tokens(short)
    assert written.stats.generated_tokens == model.count_tokens(long), "the stream kept its own figures"
    assert not hasattr(model, "last_call"), "no figures are kept on the model between calls"


async def test_the_workers_records_take_each_jobs_figures_from_what_it_gave_back():
    from pydantic import BaseModel

    class Name(BaseModel):
        name: str

    model = ScriptedModel()
    model.enqueue("The door opens.", "A gull cries.", "not JSON", '{"name": "Tom"}')
    async with ModelWorker(model) as worker:
        await worker.generate(HELLO, max_tokens=8)
        assert [piece async for piece in worker.stream(HELLO, max_tokens=8, slot="game:1")]
        named = await worker.generate_object(HELLO, Name, fallback=Name(name="?"))
    assert named.value.name == "Tom" and named.attempts == 2
    generated, streamed, structured = (r.stats for r in worker.records)
    assert generated.generated_tokens == model.count_tokens("The door opens.")
    assert streamed.generated_tokens == model.count_tokens("A gull cries.")
    both = model.count_tokens("not JSON") + model.count_tokens('{"name": "Tom"}')
    assert structured.generated_tokens == both, "a structured job's figures are its two tries together"


async def test_closing_stops_a_background_call_under_way_at_once():
    """/quit after a turn: the summary the model was writing held the exit for a minute and more on busy cores. It
    gives way at close, as to a player's turn, and is redone at the next start from what is stored."""
    import time

    model = ScriptedModel(default=lambda messages: messages[-1].content)
    worker = ModelWorker(model)
    worker.start()
    model.block.clear()
    summary = asyncio.create_task(
        worker.generate([ChatMessage(role="user", content="summary")], max_tokens=8, priority=Priority.MAINTENANCE)
    )
    await _until(lambda: len(model.started) == 1)
    started = time.monotonic()
    await worker.close()
    await _until(lambda: model.interrupted == 1)
    assert time.monotonic() - started < 5 and model.calls == [], "the call gave way, unanswered"
    summary.cancel()
    model.block.set()


async def test_a_call_whose_thread_starts_once_the_worker_closes_makes_no_request():
    """A call that waited for its thread while the bot went down would start after the model's abort and hang on a
    hung server, the process waiting for it at exit: once closing begins, a call starting makes no request."""
    from bot.model.base import ModelUnavailable

    worker = ModelWorker(ScriptedModel())
    worker.start()
    called: list[bool] = []
    await worker.close()
    with pytest.raises(ModelUnavailable, match="closing"):
        worker._call(lambda: called.append(True), None)
    assert called == []
    worker.start()  # started again, it serves
    assert worker._call(lambda: called.append(True) or "ok", None) == "ok"
    await worker.close()
