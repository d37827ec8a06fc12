"""``bench context``: what a long game costs in prompt tokens, for this memory and two baselines.

A scripted game is played through the real engine, store and memory, with
the bundled model's tokenizer counting every token; only the words are
scripted (the GM's replies and the summaries have realistic lengths). The
same log is then fed, turn by turn, to two baselines: the full history, and
a sliding window of the same budget. For each it reports the prompt's
tokens at a few turns and the share of each prompt that repeats the
previous prompt's beginning, which is what llama.cpp can reuse from its
cache instead of reading again.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from bot.engine import Engine, EngineConfig
from bot.engine.upkeep.status import MemoryStatus
from bot.memory.context import Budget, MemoryView, build_context, shared_prefix_share
from bot.memory.layers import ContextTrace
from bot.model.base import ChatMessage
from bot.model.embedding import Embedder
from bot.model.scripted import ScriptedModel, found_nothing
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import engine_config, load_embedder, settle_for_model, tokenizer_model
from bot.store import EntryKind, LogEntry, Store
from bot.worlds import World, WorldLibrary

CHECKPOINTS = (10, 100, 500)

_WORDS = (
    "the lantern rain door stair keeper tide letter study clock candle knife marsh cellar key boat "
    "whisper shadow glass map ledger storm window cold quiet old iron salt smoke ash brass hall "
    "slowly suddenly carefully behind above beneath toward against between across"
).split()


def _sentence(rng: random.Random, words: int) -> str:
    body = " ".join(rng.choice(_WORDS) for _ in range(words))
    return body[0].upper() + body[1:] + "."


def _prose(rng: random.Random, words: int) -> str:
    sentences = []
    while words > 0:
        n = min(words, rng.randint(8, 16))
        sentences.append(_sentence(rng, n))
        words -= n
    return " ".join(sentences)


class BenchModel(ScriptedModel):
    """Scripted words, real token counts: GM replies of 60 to 140 words, summaries near their ceilings."""

    name = "bench"

    def __init__(self, count_tokens: Callable[[str], int], seed: int):
        self._rng = random.Random(seed)
        self._count = count_tokens
        self._max_tokens = 10**6
        super().__init__(default=self._reply)

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    def stream(
        self, messages, *, max_tokens: int, slot: str | None = None, stop=(), fresh: bool = False, min_tokens: int = 0
    ):
        """The scripted words, cut at ``max_tokens`` as a real model stops there."""
        self._max_tokens = max_tokens
        return super().stream(messages, max_tokens=max_tokens, slot=slot, stop=stop, fresh=fresh, min_tokens=min_tokens)

    def _reply(self, messages: list[ChatMessage]) -> str:
        system = messages[0].content
        if (quiet := found_nothing(messages)) is not None:
            return quiet
        if system.startswith("You keep the private memory"):
            facts = [_sentence(self._rng, self._rng.randint(5, 9)) for _ in range(self._rng.randint(4, 8))]
            return json.dumps({"summary": _prose(self._rng, self._rng.randint(50, 70)), "facts": facts})
        if system.startswith("You keep the memory"):
            asked = re.search(r"[Aa]t most (\d+) words", system)
            if asked is None:
                raise ValueError("the summary prompt no longer says how many words the summary may take")
            ceiling = int(asked.group(1))
            return _prose(self._rng, int(ceiling * self._rng.uniform(0.7, 1.0)))
        return _cut(_prose(self._rng, self._rng.randint(60, 140)), self._max_tokens, self._count)


def _cut(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """``text`` cut to its longest beginning of whole words within ``max_tokens``."""
    words = text.split()
    while words and count(" ".join(words)) > max_tokens:
        words = words[: max(1, int(len(words) * 0.9))] if len(words) > 1 else []
    return " ".join(words)


def _action(rng: random.Random, turn: int) -> str:
    return f"(turn {turn}) " + _prose(rng, rng.randint(8, 30))


async def _play_memory(
    world_dir: Path, config: EngineConfig, model: BenchModel, turns: int, seed: int, world_id: str,
    embedder: Embedder | None = None,
):  # fmt: skip
    rng = random.Random(seed + 1)
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "bench.sqlite3")
        try:
            async with ModelWorker(model) as worker:
                engine = Engine(store, worker, WorldLibrary(world_dir), config, embedder=embedder)
                started = await engine.start_game("bench", world_id)
                game_id = started.game.id
                names = ["Maya", "Tom", "Ines"]
                for name in names:
                    await engine.join(game_id, name.lower(), name)
                tokens, reuse, trace = {}, [], None
                for turn in range(1, turns + 1):
                    who = names[turn % len(names)].lower()
                    if turn % 7 == 0:
                        await engine.roll(game_id, who, "1d20+2")
                    result = await engine.act(game_id, who, _action(rng, turn))
                    await engine.settled(game_id)  # what the turn stored is searchable by meaning at the next
                    tokens[turn] = result.context.tokens
                    trace = result.context.trace
                    if result.context.trace.prefix_reuse is not None:
                        reuse.append(result.context.trace.prefix_reuse)
                status = await engine.memory_status(game_id)
                log = await store.log(game_id)
                await engine.close()
        finally:
            await store.close()
    return tokens, reuse, status, log, trace


def _baseline(
    world: World, log: Sequence[LogEntry], budget: Budget, count: Callable[[str], int], turns: int
) -> tuple[dict[int, int], list[float]]:
    """Prompt tokens per turn and prefix reuse, for a builder that sees only the raw log within ``budget``.

    The window slides one message at a time: it keeps the newest messages that fit, as a plain sliding
    window does, and reuse is measured against the last prompt and the reply the GM wrote to it.
    """
    tokens, reuse = {}, []
    previous = None
    actions = [e for e in log if e.kind is EntryKind.ACTION]
    index = {e.id: i for i, e in enumerate(log)}
    start = 0
    for action in actions[:turns]:
        end = index[action.id]
        while True:
            context = build_context(world, MemoryView(hot=log[start:end]), action, budget, count)
            if not context.trace.layer("hot").left_out or start >= end:
                break
            start += 1
        tokens[action.turn] = context.tokens
        if previous is not None:
            reuse.append(shared_prefix_share(previous, context.messages, count))
        replies = [e for e in log[end:] if e.turn == action.turn and e.kind is EntryKind.GM][:1]
        previous = [*context.messages, *(ChatMessage(role="assistant", content=e.content) for e in replies)]
    return tokens, reuse


def run(
    settings: ProcessSettings, turns: int, seed: int, world_name: str, out: TextIO,
    series: dict[str, list[float]] | None = None,
) -> dict[str, float]:  # fmt: skip
    """``series``: filled with each turn's prompt tokens and reuse, this memory's and the sliding window's."""
    started = time.perf_counter()
    tokenizer = tokenizer_model(settings)  # never fetched for this: it only counts
    settle_for_model(settings, tokenizer)
    count = functools.lru_cache(maxsize=200_000)(tokenizer.count_tokens)
    library = WorldLibrary(settings.worlds_dir)
    world = library.from_command_line(world_name)
    world_dir = library.paths[world.id].parent
    config = engine_config(settings)
    model = BenchModel(count, seed)
    embedder, _ = load_embedder(settings)  # recall by meaning, as the bot runs (GM_EMBED_MODEL=none: words alone)
    tokens, reuse, status, log, trace = asyncio.run(
        _play_memory(world_dir, config, model, turns, seed, world.id, embedder)
    )
    played = time.perf_counter() - started

    full_tokens, full_reuse = _baseline(world, log, Budget(n_ctx=10**9, reply_tokens=config.reply_tokens), count, turns)
    window_tokens, window_reuse = _baseline(world, log, config.budget, count, turns)

    checkpoints = [t for t in CHECKPOINTS if t <= turns] or [turns]
    out.write(
        f"bench context: {turns} turns of {world.title} with {model.name} words and the "
        f"{tokenizer.name} tokenizer; n_ctx {settings.n_ctx}, reply {settings.reply_tokens}, "
        f"prompt limit {config.budget.limit} tokens; recall "
        f"{f'by words and by meaning ({embedder.name})' if embedder else 'by words alone'}\n\n"
    )
    out.write(f"{'prompt tokens at turn':<24}" + "".join(f"{t:>10}" for t in checkpoints) + f"{'reuse':>10}\n")
    for label, by_turn, shares in (
        ("this memory", tokens, reuse),
        ("full history", full_tokens, full_reuse),
        ("sliding window", window_tokens, window_reuse),
    ):
        row = "".join(f"{by_turn[t]:>10}" for t in checkpoints)
        out.write(f"{label:<24}{row}{statistics.fmean(shares) if shares else 0:>10.1%}\n")
    _explain(out, turns, status, trace, played)
    last = checkpoints[-1]
    figures = {
        **{f"tokens_t{t}": tokens[t] for t in checkpoints},
        f"full_tokens_t{last}": full_tokens[last],
        f"window_tokens_t{last}": window_tokens[last],
        "prefix_reuse": round(statistics.fmean(reuse), 4) if reuse else 0.0,
        "window_prefix_reuse": round(statistics.fmean(window_reuse), 4) if window_reuse else 0.0,
        "full_prefix_reuse": round(statistics.fmean(full_reuse), 4) if full_reuse else 0.0,
        "limit": config.budget.limit,
    }
    out.write(" ".join(f"{k}={v}" for k, v in figures.items()) + "\n")
    if series is not None:
        series.update(
            tokens=[float(tokens[t]) for t in sorted(tokens)],
            window_tokens=[float(window_tokens[t]) for t in sorted(window_tokens)],
            reuse=[round(r, 4) for r in reuse], window_reuse=[round(r, 4) for r in window_reuse],
        )  # fmt: skip
    return figures


def _explain(out: TextIO, turns: int, status: MemoryStatus, trace: ContextTrace, played: float) -> None:
    """What the last prompt held, and how to read the figures."""
    story_words = status.story_summary.words if status.story_summary else 0
    layers = ", ".join(f"{layer.name} {layer.tokens}" for layer in trace.layers)
    out.write(
        f"\nThis memory's last prompt by layer: {layers}\n"
        f"This memory at turn {turns}: {status.messages} messages, {status.messages_summarized} summarized into "
        f"{status.summaries_written} summaries; story summary {story_words} words; "
        f"hot window {status.messages - status.messages_summarized} messages.\n"
        "Reuse: mean share of each prompt's tokens equal to the beginning of the previous prompt and its reply, "
        "which is what the model's cache holds. "
        "The full history exceeds any real context long before the end; the window keeps the budget by "
        "forgetting, and its front shifts every turn.\n"
        f"Played and measured in {played:.1f}s (not a benchmark of the model: its words are scripted).\n"
    )
