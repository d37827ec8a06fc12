"""What /memory-status shows of a game's memory, through the engine."""

from __future__ import annotations

from bot.engine import Engine
from bot.model import ScriptedModel
from tests.engine.upkeep.test_memory import play, start


async def test_memory_status_and_recall_data(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    await play(engine, game.id, 12)
    status = await engine.memory_status(game.id)
    assert status.short_summary and status.short_summary.first_turn == 0
    assert status.folded_through and status.summaries_written >= 1
    assert [layer.name for layer in status.layers][:3] == ["frozen", "secrets", "chapters"]
    assert status.next_compaction.protected_tail == 4
    assert status.lore_entries == 3 and status.pin_cap == 20
    assert 0 < status.cache_reuse <= 1
    trace = await engine.last_trace(game.id)
    assert trace.layer("action").items == [f"entry:{(await engine.last_action_of(game.id, 'maya')).id}"]
    assert trace.layer("short").items == [f"summary:{status.short_summary.id}"]
