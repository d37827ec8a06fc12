"""``bench recall``: recall by meaning where turns accumulate, and what searching it costs.

Four measurements in one run:

- The long game (:mod:`bot.bench.long_game`): 300 turns with ten clues planted in the first 40, lossy
  summaries and distractors; at turn 300 a player asks about each clue in other words. Played twice through
  the real engine and store, with the embedding index and with words alone, it counts the clues whose text is
  in the GM's prompt, and the prompt's mean reuse. Each turn is embedded before the next (as between players'
  turns), so the figures do not move with how far the background embedding lagged.
- The topical game: the same clues among filler on their own subjects, each asked about in other words: the
  clue's turn's rank by words, by meaning and fused, and whether it reached the prompt.
- Lore by meaning: an entry about the lighthouse lamp, and actions that are about it or not: how often it fires.
- Search: one game's vectors grown to 10,000 and 100,000 fragments (sentences of the long game's kind),
  searched with 200 queries each; p50 and p95 of one search, and of embedding one query.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TextIO

import numpy as np

from bot.bench.long_game import (
    CLUES,
    LOCATION_QUESTION,
    LONG_GAME_WORLD,
    LongGameModel,
    play_long_game,
    prompt_text,
)
from bot.engine import Engine, EngineConfig
from bot.engine.upkeep.meaning import MeaningIndex, Query
from bot.errors import UserError
from bot.model.embedding import Embedder
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import load_embedder
from bot.store import Store
from bot.store.vectors import VectorTodo
from bot.worlds import LoreEntry, WorldLibrary

SIZES = (10_000, 100_000)
QUERIES = 200
PARTS = (1, 4)  # vectors of a player's one-sentence action, then of a GM reply of three sentences


def run(settings: ProcessSettings, turns: int, out: TextIO) -> dict[str, float]:
    embedder, unavailable = load_embedder(settings)
    if embedder is None:
        raise UserError(f"bench recall needs an embedding model: {unavailable or 'GM_EMBED_MODEL is none'}.")
    figures = asyncio.run(_run(embedder, turns, out))
    out.write(" ".join(f"{k}={v:.4g}" for k, v in figures.items()) + "\n")
    return figures


async def _run(embedder: Embedder, turns: int, out: TextIO) -> dict[str, float]:
    figures: dict[str, float] = {}
    out.write(f"bench recall: the long game, {turns} turns, ten clues asked about in other words ({embedder.name})\n")
    for label, used in (("meaning", embedder), ("words", None)):
        found, newer, reuse = await _long_game(used, turns)
        figures[f"clues_{label}"] = found
        figures[f"reuse_{label}"] = reuse
        out.write(
            f"  {label:<8} clues in the prompt {found}/{len(CLUES)}; the key's newer place "
            f"{'in' if newer else 'NOT in'} the prompt; mean prefix reuse {reuse:.1%}\n"
        )
        out.flush()
    out.write(
        "the topical game: every turn talks of the clues' people, places and things; each clue asked about in "
        "other words, its turn's rank (0 is first) by words, by meaning and fused, and whether it reached the "
        "prompt\n"
    )
    ranks = await _topical(embedder, turns)
    for clue, (words, meaning, fused, reached) in zip(CLUES, ranks, strict=True):
        out.write(f"  {_rank(words):>6} {_rank(meaning):>8} {_rank(fused):>6}  {'yes' if reached else 'NO ':<4} "
                  f"{clue.question}\n")  # fmt: skip
    figures["topical_reached"] = sum(r[3] for r in ranks)
    figures["topical_fused_top3"] = sum(r[2] is not None and r[2] < 3 for r in ranks)
    out.write(
        f"  {'words':>6} {'meaning':>8} {'fused':>6}  reached {figures['topical_reached']:.0f}/{len(CLUES)}; "
        f"fused among the first three {figures['topical_fused_top3']:.0f}/{len(CLUES)}\n"
    )
    out.flush()
    right, about, wrong, other = await _lore_by_meaning(embedder)
    figures["lore_fired"], figures["lore_fired_wrongly"] = right / about, wrong / other
    out.write(
        f"lore by meaning (threshold {LoreEntry.model_validate(LAMP_LORE).threshold}): the lamp entry fired for "
        f"{right} of {about} actions "
        f"about the lamp, and for {wrong} of {other} that are not\n"
    )
    out.write(f"search: one game's fragments, {QUERIES} queries each\n")
    for size in SIZES:
        search, query, first_read, rows, held = await _search(embedder, size)
        figures[f"search_p95_ms_{size}"] = search[1] * 1000
        figures[f"first_read_ms_{size}"] = first_read * 1000
        figures[f"held_mib_{size}"] = held / 2**20
        figures["query_p50_ms"] = query[0] * 1000
        out.write(
            f"  {size:>7,} fragments ({rows:,} vectors): search p50 {search[0] * 1000:.1f} ms, "
            f"p95 {search[1] * 1000:.1f} ms; reading them the first time {first_read * 1000:.0f} ms; "
            f"held in memory {held / 2**20:.0f} MiB ({held / size:.0f} bytes a fragment); "
            f"embedding the query p50 {query[0] * 1000:.1f} ms\n"
        )
    return figures


async def _long_game(embedder: Embedder | None, turns: int) -> tuple[int, bool, float]:
    model = LongGameModel()
    async with _long_game_engine(model, embedder) as engine:
        reuse: list[float] = []
        act = engine.act

        async def measured(*args, **kwargs):
            result = await act(*args, **kwargs)
            if result.context.trace.prefix_reuse is not None:
                reuse.append(result.context.trace.prefix_reuse)
            return result

        engine.act = measured  # type: ignore[method-assign]  # each turn of the long game measured as it plays
        game_id = await play_long_game(engine, model, turns)
        found = 0
        for n, clue in enumerate(CLUES):
            model.turn = turns + 1 + n
            result = await engine.act(game_id, "maya", clue.question)
            await engine.settled(game_id)
            found += clue.text in prompt_text(result.context.messages)
        model.turn += 1
        result = await engine.act(game_id, "maya", LOCATION_QUESTION)
        newer = "in the cellar" in prompt_text(result.context.messages)
    return found, newer, statistics.fmean(reuse[40:turns]) if len(reuse) > 40 else 0.0


@contextlib.asynccontextmanager
async def _long_game_engine(model: LongGameModel, embedder: Embedder | None) -> AsyncIterator[Engine]:
    """An engine for the long game's world on a store of its own, closed with it."""
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "long.sqlite3")
        try:
            async with ModelWorker(model) as worker:
                library = WorldLibrary(Path(tmp) / "no-worlds")
                library.worlds[LONG_GAME_WORLD.id] = LONG_GAME_WORLD
                config = EngineConfig(n_ctx=4096, reply_tokens=200, shape_replies=False)
                engine = Engine(store, worker, library, config, embedder=embedder)
                try:
                    yield engine
                finally:
                    await engine.close()
        finally:
            await store.close()


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


async def _topical(embedder: Embedder, turns: int) -> list[tuple[int | None, int | None, int | None, bool]]:
    """The topical game (see :func:`bot.bench.long_game.topical_reply`), then each clue asked about in other
    words: the clue's turn's rank by words (the action's), by meaning and fused, and whether it reached the
    prompt."""
    found = []
    model = LongGameModel(topical=True)
    async with _long_game_engine(model, embedder) as engine:
        game_id = await play_long_game(engine, model, turns)
        engine.hold_upkeep()  # the questions only
        for n, clue in enumerate(CLUES):
            ranked = await engine.measures.ranked(game_id, clue.question)
            fused, named = ranked.fused, ranked.by_index

            def rank(hits, clue=clue) -> int | None:
                return next((i for i, hit in enumerate(hits) if clue.text in hit.text), None)

            model.turn = turns + 1 + n
            result = await engine.act(game_id, "maya", clue.question)
            reached = clue.text in prompt_text(result.context.messages)
            await engine.measures.embedded()
            found.append((rank(named.get("bm25-action", [])), rank(named.get("meaning", [])), rank(fused), reached))
    return found


# A lore entry that fires by meaning, and actions that are about what it says, or not.
LAMP_LORE = {
    "id": "the-lamp", "content": "The lighthouse lamp burns colza oil; a full reservoir keeps it lit for one night.",
    "match": "meaning",
}  # fmt: skip
ABOUT_THE_LAMP = (
    "I climb up to check whether the beacon still has fuel.", "How long will the light at the top keep burning?",
    "I trim the wick and refill the reservoir.", "Is there enough oil to keep the lamp going tonight?",
    "I ask Wren what the lighthouse burns in its lantern.", "I light the great lamp at dusk.",
    "What kind of fuel does the tower's light use?", "I check the lantern room for spare oil cans.",
    "Why did the light go out last night?", "I polish the lens and look at the burner.",
)  # fmt: skip
NOT_ABOUT_THE_LAMP = (
    "I walk down to the landing stage.", "I ask Wren about the supply boat.", "I search the cottage kitchen.",
    "I read the keeper's log book.", "I listen to the gulls and watch the sea.", "I look for footprints on the path.",
    "I knock on the cottage door.", "I check the boat's mooring rope.", "I ask Tom what he found upstairs.",
    "I sit by the fire and warm my hands.", "I climb down to the rocks at low tide.", "I open the old sea chest.",
    "I ask Wren why he is so nervous.", "I count the tins in the pantry.", "I wait for the storm to pass.",
    "I look at the map pinned to the wall.", "I ask whether anyone has seen the keeper.",
    "I shout for the keeper from the gallery.", "I examine the torn coat on the hook.", "I row out to the buoy.",
)  # fmt: skip


async def _lore_by_meaning(embedder: Embedder) -> tuple[int, int, int, int]:
    """How often the lamp entry fires for actions about the lamp, and for actions that are not."""
    index = MeaningIndex(None, None, embedder)  # type: ignore[arg-type]  # scoring needs no store nor worker
    entry = LoreEntry.model_validate(LAMP_LORE)
    fired = []
    for text in (*ABOUT_THE_LAMP, *NOT_ABOUT_THE_LAMP):
        score = (await index.lore_scores([entry.content], await index.query(text)))[0]
        fired.append(score >= entry.threshold)
    about = len(ABOUT_THE_LAMP)
    return sum(fired[:about]), about, sum(fired[about:]), len(NOT_ABOUT_THE_LAMP)


async def _search(embedder: Embedder, size: int) -> tuple[tuple[float, float], tuple[float, float], float, int, int]:
    """Search times over ``size`` fragments of one game, vectors made by ``embedder`` (a few, repeated with
    noise: the search costs the same whatever the vectors say), the time to read the game's vectors the first
    time, how many vector rows they are, and the bytes the game's vectors hold in memory. As in a game, half the
    fragments are a player's one-sentence action (one vector) and half a GM reply of three sentences (the whole and
    each sentence: four)."""
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "search.sqlite3")
        try:
            game = await store.create_game("bench", "lighthouse")
            index = MeaningIndex(store, None, embedder)  # type: ignore[arg-type]  # searching needs no worker
            rng = np.random.default_rng(7)
            base = embedder.embed([c.text for c in CLUES] + [c.question for c in CLUES])
            batch, rows = [], 0
            for n in range(size):
                parts: list[bytes] = []
                for _ in range(PARTS[n % len(PARTS)]):
                    vector = base[(n + len(parts)) % len(base)] + rng.normal(0, 0.05, embedder.dimension)
                    parts.append((vector / np.linalg.norm(vector)).astype(np.float32).tobytes())
                todo = VectorTodo(n + 1, game.id, f"entry:{n + 1}", n // 3, None, f"fragment {n}")
                batch.append((todo, parts))
                rows += len(parts)
            if index.model is None:
                raise RuntimeError("the meaning index took no embedding model")
            await _fill(store, index.model, embedder.dimension, batch)
            questions = [c.question for c in CLUES] * (QUERIES // len(CLUES))
            searches: list[float] = []
            queries: list[float] = []
            tracemalloc.start()
            started = time.perf_counter()
            await index.search(game.id, await index.query("warm-up"), 200)  # reads the game's vectors once
            first_read = time.perf_counter() - started
            held = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            for text in questions:
                started = time.perf_counter()
                vector = embedder.embed([f"{text} ({len(queries)})"], query=True)[0]
                queries.append(time.perf_counter() - started)
                started = time.perf_counter()
                await index.search(game.id, Query(text, vector, 0.0), 200)
                searches.append(time.perf_counter() - started)
        finally:
            await store.close()
    return _p50_p95(searches), _p50_p95(queries), first_read, rows, held


async def _fill(store: Store, model: str, dim: int, batch) -> None:
    async with store.transaction() as db:
        await db.executemany(
            "INSERT INTO vectors (game_id, ref, part, model, dim, turn, audience, text, vector)"
            " VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?)",
            [
                (todo.game_id, todo.ref, part, model, dim, todo.turn, todo.text if part == 0 else "", vector)
                for todo, parts in batch
                for part, vector in enumerate(parts)
            ],
        )


def _p50_p95(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]
