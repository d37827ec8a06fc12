"""What a bench reads of a running engine (bot.engine.measures), measured on games the tests play."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.engine import Engine, EngineConfig
from bot.model import ModelWorker, ScriptedModel
from bot.store import EntryKind, Store
from bot.worlds import WorldLibrary

CLUE = "A silver heron is engraved inside the lid of the captain's pocket watch."


@pytest.fixture
async def meaning_engine(store: Store, worker: ModelWorker, worlds_dir: Path, real_embedder):
    engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=128),
                    embedder=real_embedder)  # fmt: skip
    yield engine
    await engine.close()


async def _game(engine: Engine) -> int:
    game_id = (await engine.start_game("chan", "lighthouse")).game.id
    await engine.join(game_id, "maya", "Maya")
    return game_id


async def test_closeness_is_the_guards_measure_and_needs_recall_by_meaning(meaning_engine: Engine, engine: Engine):
    measures = meaning_engine.measures
    assert measures.by_meaning and not engine.measures.by_meaning
    closeness = await measures.closeness(
        ["An engraved heron is hidden under the watch's lid.", "The gulls wheel over the rocks."], [CLUE]
    )
    assert closeness.shape == (2, 1) and closeness[0, 0] > closeness[1, 0]
    with pytest.raises(RuntimeError, match="words alone"):
        await engine.measures.closeness(["a"], ["b"])


async def test_recall_is_ranked_index_by_index_for_a_question(meaning_engine: Engine, scripted: ScriptedModel):
    game_id = await _game(meaning_engine)
    scripted.enqueue(f"You open the watch. {CLUE}")
    await meaning_engine.act(game_id, "maya", "I open the captain's watch.")
    for n in range(3):
        scripted.enqueue("The wind rattles the shutters.")
        await meaning_engine.act(game_id, "maya", f"I wait by the window, {n}.")
    await meaning_engine.measures.embedded()

    ranked = await meaning_engine.measures.ranked(game_id, "What bird is etched in the old sailor's timepiece?")

    assert {"bm25-action", "bm25", "meaning"} <= set(ranked.by_index)
    clue = next(e for e in await meaning_engine.measures.log(game_id) if CLUE in e.content and e.kind is EntryKind.GM)
    assert ranked.by_index["meaning"][0].ref == f"entry:{clue.id}", "nearest in meaning though no word is shared"
    assert f"entry:{clue.id}" in [hit.ref for hit in ranked.fused]
    nearest = await meaning_engine.measures.nearest(game_id, "a bird engraved in a watch")
    assert nearest and nearest[0].ref == f"entry:{clue.id}"


async def test_replies_asked_slot_and_lag_follow_the_turns(
    engine: Engine, worker: ModelWorker, memory_model: ScriptedModel
):
    engine.hold_upkeep()
    game_id = await _game(engine)
    assert engine.measures.replies_asked(game_id) == 0
    memory_model.enqueue("The door groans open onto a stair of wet stone. Water drips somewhere below.")
    await engine.act(game_id, "maya", "I open the door.")

    assert engine.measures.replies_asked(game_id) == 1
    slot = engine.measures.slot(game_id)
    assert any(r.label == slot for r in worker.records), "the worker's records of the turn carry the game's slot"
    lag = await engine.measures.lag(game_id)
    assert lag.facts_behind == 1, "upkeep held: the turn's facts wait"
    engine.release_upkeep()
    await engine.settled(game_id)
    assert (await engine.measures.lag(game_id)).facts_behind == 0


async def test_the_meaning_weight_is_the_engines_setting_and_is_checked_when_made(
    store: Store, worker: ModelWorker, worlds_dir: Path, real_embedder
):
    engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(meaning_weight=3), embedder=real_embedder)
    try:
        assert [index.name for index in engine.ledger.indexes].count("meaning") == 3
    finally:
        await engine.close()
    with pytest.raises(ValueError, match="meaning_weight is 0"):
        EngineConfig(meaning_weight=0)


async def test_the_room_kept_for_a_retry_is_what_a_prompt_leaves_free(engine: Engine):
    """A bench that gives the memory a budget of the prompt adds this room: bench locomo's memory, whose prompt kept
    it inside the budget, filled 865 of 1,000 tokens against BM25's 997."""
    from bot.memory.layers import Budget

    game_id = await _game(engine)
    room = engine.measures.retry_room()
    assert room > 0
    context = await engine.preview(game_id, "Maya", "I look around.", budget=Budget(n_ctx=1500, reply_tokens=100))
    assert context.trace.limit == 1500 - 100 - room
