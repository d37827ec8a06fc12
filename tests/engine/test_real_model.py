"""The ledger's structured calls with the real bundled model: valid against their schemas, with sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.engine import Engine, EngineConfig
from bot.model import ModelWorker
from bot.model.llama import Sampling
from bot.store import Store
from bot.worlds import WorldLibrary
from tests.conftest import bundled_model, loads_a_model


@pytest.fixture
@loads_a_model
async def real_engine(store: Store, worlds_dir: Path):
    model = bundled_model(n_ctx=2048, sampling=Sampling(seed=3))
    async with ModelWorker(model) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=40))
        yield engine
        await engine.close()


@pytest.mark.slow
async def test_the_real_model_extracts_facts_that_cite_their_messages(real_engine: Engine):
    game = (await real_engine.start_game("chan", "lighthouse")).game
    await real_engine.join(game.id, "maya", "Maya")
    result = await real_engine.act(game.id, "maya", "I hide the brass key under the doormat of the cottage.")
    await real_engine.memory.idle(game.id)

    status = await real_engine.memory_status(game.id)
    assert status.last_error is None or "extract_facts" not in status.last_error, status.last_error
    facts = await real_engine.facts(game.id)
    assert facts, "the extractor recorded something"
    logged = {e.id for e in await real_engine.store.log(game.id)}
    for fact in facts:
        assert fact.sources and set(fact.sources) <= logged
        assert len(fact.subject) <= 40 and len(fact.value) <= 120, "the schema's bounds held"
    assert any(result.action.id in fact.sources for fact in facts)
