from __future__ import annotations

import asyncio

import pytest

from bot.model import ChatMessage, ModelWorker, Priority, ScriptedModel

HELLO = [ChatMessage(role="user", content="hello")]


async def test_player_jobs_run_before_waiting_maintenance():
    model = ScriptedModel(default=lambda messages: messages[-1].content)
    async with ModelWorker(model) as worker:
        model.block.clear()
        first = asyncio.create_task(worker.generate([ChatMessage(role="user", content="busy")], max_tokens=8))
        await asyncio.sleep(0.05)  # the first job is now running (blocked) in the thread
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
        assert await worker.generate(HELLO, max_tokens=8) == "The GM nods."


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
        assert await job == "The GM nods."


async def test_jobs_waiting_at_close_are_cancelled():
    model = ScriptedModel()
    worker = ModelWorker(model)
    worker.start()
    model.block.clear()
    running = asyncio.create_task(worker.generate(HELLO, max_tokens=8))
    waiting = asyncio.create_task(worker.generate(HELLO, max_tokens=8))
    await asyncio.sleep(0.05)
    model.block.set()
    await worker.close()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    running.cancel()
