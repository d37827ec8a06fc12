"""The GM on a real instruct model (Qwen2.5-Coder-1.5B-Instruct), opt-in: the model is 1.1 GB and not part of the
product. ``../shared/models/fetch-instruct-1.5b`` assembles it; ``GM_TEST_INSTRUCT_MODEL`` names it to run these."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.bench.quality import CLUE_ACTION, CLUE_BEAT, CLUE_WORDS
from bot.engine import Engine, EngineConfig
from bot.model import ModelWorker
from bot.model.llama import LlamaConfig, LlamaModel, Sampling
from bot.settings import ProcessSettings
from bot.startup import settle_for_model
from bot.store import Store
from bot.words import stems
from bot.worlds import WorldLibrary
from tests.conftest import GPU_LAYERS, PROJECT, loads_a_model


def instruct_model_path() -> Path | None:
    """``GM_TEST_INSTRUCT_MODEL``: these tests run when it names the model (they take minutes on a CPU)."""
    named = os.environ.get("GM_TEST_INSTRUCT_MODEL")
    return Path(named) if named and Path(named).is_file() else None


pytestmark = [
    pytest.mark.llm,
    pytest.mark.slow,
    pytest.mark.skipif(
        instruct_model_path() is None,
        reason="opt-in: GM_TEST_INSTRUCT_MODEL=$(../shared/models/fetch-instruct-1.5b) runs them (1.1 GB model)",
    ),
]


@pytest.fixture(scope="module")
@loads_a_model
def instruct() -> LlamaModel:
    path = instruct_model_path()
    assert path is not None
    seed = int(os.environ.get("GM_TEST_INSTRUCT_SEED", "7"))  # another sampling seed: another run of the same tests
    config = LlamaConfig(model_path=path, n_ctx=4096, n_gpu_layers=int(GPU_LAYERS), sampling=Sampling(seed=seed))
    model = LlamaModel(config)
    settle_for_model(ProcessSettings(_env_file=None), model)  # sampled as the bot samples a model of its size
    return model


@pytest.fixture
async def manor(store: Store, instruct: LlamaModel):
    async with ModelWorker(instruct) as worker:
        engine = Engine(store, worker, WorldLibrary(PROJECT / "worlds"), EngineConfig(n_ctx=4096, reply_tokens=200))
        yield engine
        await engine.close()


async def test_a_private_clue_reaches_the_one_player_who_earned_it_and_never_the_channel(manor: Engine):
    game = (await manor.start_game("chan", "hollow-manor")).game
    await manor.join(game.id, "maya", "Maya")
    await manor.join(game.id, "tom", "Tom")
    beat = next(b for c in manor.world_of(game).chapters for b in c.beats if b.id == CLUE_BEAT)
    clue = stems(beat.clue_text or "") - stems(CLUE_ACTION)

    result = await manor.act(game.id, "maya", CLUE_ACTION)

    def carries(text: str) -> bool:
        return len(stems(text) & clue) >= CLUE_WORDS

    assert not carries(result.text), result.text
    to = [m.player.name for m in result.private if carries(m.entry.content)]
    assert to == ["Maya"], (result.raw, [m.entry.content for m in result.private])


async def test_the_facts_extraction_validates_against_its_schema(manor: Engine):
    game = (await manor.start_game("chan", "hollow-manor")).game
    await manor.join(game.id, "maya", "Maya")
    result = await manor.act(game.id, "maya", "I hide the silver key inside the grandfather clock in the hall.")
    await manor.memory.idle(game.id)
    outcomes = manor.worker.structured["Extraction"]
    assert outcomes["fallback"] == 0 and outcomes["first"] + outcomes["retry"] >= 1, dict(outcomes)
    facts = await manor.facts(game.id)
    assert facts and any(result.action.id in fact.sources for fact in facts), facts


async def test_the_gm_answers_from_memory_what_a_long_games_first_turns_told(
    tmp_path: Path, instruct: LlamaModel, real_embedder
):
    """A 300-turn game whose every turn talks about the clues' people, places and things (short GM turns, as a
    quick table's are), the clues told in its first 40 turns, a pin at turn 10, a key moved at turn 150; then
    the real model, as GM, is asked about each as players ask: in the same words, in part, in other words,
    where the key is now, and an action the pin answers. Its replies must say the answers. Prints how many, and
    for each miss whether the answer was beside the question or in the front (the model's miss), or not in the
    prompt, or only far up it in an older turn's notes (the memory's)."""
    from bot.bench.long_game import LONG_GAME_WORLD, LongGameModel, answers_table, ask, play_long_game

    store = await Store.open(tmp_path / "gm.sqlite3")
    library = WorldLibrary(tmp_path / "no-worlds")
    library.worlds[LONG_GAME_WORLD.id] = LONG_GAME_WORLD
    scripted = LongGameModel(topical=True)
    try:
        async with ModelWorker(scripted) as worker:
            played = Engine(store, worker, library, EngineConfig(n_ctx=4096), embedder=real_embedder)
            game_id = await play_long_game(played, scripted, 300, pin=True)
            await played.close()
        async with ModelWorker(instruct) as worker:
            engine = Engine(store, worker, library, EngineConfig(n_ctx=4096), embedder=real_embedder)
            engine.hold_upkeep()  # the questions only: the memory's upkeep between them is bench turns' business
            answers = await ask(engine, game_id)
            await engine.close()
    finally:
        await store.close()
    table = answers_table(answers)
    print("\n" + table)
    assert sum(a.answered for a in answers) >= 9, table
