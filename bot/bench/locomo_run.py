"""``bench locomo``: this memory against plain BM25 on LoCoMo, at the same budgets, in one run.

Each conversation is fed into a game of its own through the store, the
way a game's log grows: every utterance a player's message, every session
opened by a line with its date. Compaction runs as in play, so older turns
leave the hot window; its summaries here are placeholders (no model writes
them), so the figure counts only turns that reach the GM word for word:
the hot window and recalled fragments. Each question is then asked as the
new action, and the context the builder returns is checked for the
question's evidence turns.

The budget is the memory's share of the prompt: everything but the frozen
world and the question itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from bot.bench.locomo import (
    CATEGORIES,
    Conversation,
    Question,
    Retrieved,
    Retriever,
    bm25_retriever,
    cross_validate,
    evaluate,
    load_locomo,
    print_results,
)
from bot.engine import Engine, EngineConfig
from bot.engine.table.config import MEANING_WEIGHT
from bot.errors import UserError
from bot.memory.config import MemoryConfig
from bot.memory.context import Budget, MemoryView, build_context
from bot.model.base import ChatMessage
from bot.model.embedding import Embedder
from bot.model.scripted import ScriptedModel, found_nothing
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import load_embedder, settle_for_model, tokenizer_model
from bot.store import EntryKind, LogEntry, NewEntry, Store
from bot.worlds import Beat, Chapter, World, WorldLibrary

ASKER = "Question"


def conversation_world(conv: Conversation) -> World:
    return World(
        id="locomo",
        title=f"Conversation {conv.id}",
        pitch=f"{conv.speaker_a} and {conv.speaker_b} talk over many sessions.",
        style="Plain.",
        rules=["Answer from what was said."],
        setting=f"A long conversation between {conv.speaker_a} and {conv.speaker_b}.",
        chapters=[Chapter(id="all", title="All sessions", goal="Remember.", beats=[Beat(id="end", description="-")])],
        opening=f"{conv.speaker_a} and {conv.speaker_b} begin to talk.",
    )


# The settings chosen by cross-validation (leave one conversation out): how many times recall by meaning's
# ranking counts in the fusion, beside the three by words, and how many words of a recalled fragment are kept
# around its sentence nearest the question (each varied around the defaults). HELD_OUT_BUDGET: the budget they
# are chosen at.
MEANING_WEIGHTS = (1, 2, 3)
EXCERPT_WORDS = (45, 20)
HELD_OUT_BUDGET = 1000


def candidate_settings() -> list[tuple[int, int]]:
    """(meaning weight, excerpt words) pairs: each weight at the default excerpt, each excerpt at the default weight."""
    default = MemoryConfig().excerpt_words
    return [(w, default) for w in MEANING_WEIGHTS] + [(MEANING_WEIGHT, n) for n in EXCERPT_WORDS if n != default]


class PlaceholderSummaries(ScriptedModel):
    """Writes every summary as a stub and judges nothing: no language model in this bench."""

    def __init__(self, count_tokens):
        super().__init__(default=self._reply)
        self._count = count_tokens

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    @staticmethod
    def _reply(messages: list[ChatMessage]) -> str:
        return found_nothing(messages) or "(summary)"


class MemoryRetriever:
    """Feeds conversations into games and answers the harness from the context builder.

    With an ``embedder`` the memory recalls by meaning beside the words; :meth:`words_alone` answers from the
    same games without it, and :meth:`meaning_alone` from the vectors alone.
    """

    def __init__(
        self, settings: ProcessSettings, count_tokens, store: Store, loop: asyncio.AbstractEventLoop,
        embedder: Embedder | None = None,
    ):  # fmt: skip
        self.count = count_tokens
        self.store = store
        self.loop = loop
        self.embedder = embedder
        self.worker = ModelWorker(PlaceholderSummaries(count_tokens))
        if settings.reply_tokens is None:
            raise ValueError("reply_tokens is None: settle the settings for the model first (settle_for_model)")
        self.config = EngineConfig(n_ctx=settings.n_ctx, reply_tokens=settings.reply_tokens, memory=settings.memory)
        self.games: dict[str, tuple[Engine, int, dict[int, str]]] = {}
        self.plain: dict[str, Engine] = {}  # the same games, recalled by words alone
        self.variants: list[Engine] = []  # the same games, with other settings (weighted)
        self.libraries: dict[str, WorldLibrary] = {}  # each conversation's world
        # Where each evidence turn the memory did not show sat, by budget and question category: ranked among the
        # recall candidates past what the budget held (by rank), or not among them at all (see placement_table).
        self.placed: dict[int, dict[int, Counter[str]]] = {}

    async def ingest(self, conv: Conversation, worlds_dir: Path) -> None:
        world = conversation_world(conv)
        library = WorldLibrary(worlds_dir)
        library.worlds[world.id] = world
        self.libraries[conv.id] = library
        engine = Engine(self.store, self.worker, library, self.config, embedder=self.embedder)
        self.plain[conv.id] = Engine(self.store, self.worker, library, self.config)
        game = (await self.store.create_game(f"locomo:{conv.id}", world.id)).id
        players = {
            name: await self.store.add_player(game, name.casefold(), name) for name in (conv.speaker_a, conv.speaker_b)
        }
        dia_of: dict[int, str] = {}
        for session in conv.sessions:
            await self.store.append(
                game, NewEntry(turn=session.index, kind=EntryKind.SYSTEM, author="system",
                               content=f"Session {session.index}: {session.date}"),
            )  # fmt: skip
            for turn in session.turns:
                player = players.get(turn.speaker)
                (entry,) = await self.store.append(
                    game, NewEntry(turn=session.index, kind=EntryKind.ACTION, author=turn.speaker, content=turn.text,
                                   player_id=player.id if player else None),
                    turn_done=session.index,
                )  # fmt: skip
                dia_of[entry.id] = turn.dia_id
        await engine.measures.fold_closed(game)  # closed chunks only, every turn embedded, as upkeep would do
        self.games[conv.id] = (engine, game, dia_of)

    def __call__(self, conv: Conversation, question: Question, budget: int) -> Retrieved:
        return self.loop.run_until_complete(self._retrieve(conv, question, budget))

    def weighted(self, weight: int, excerpt_words: int) -> Retriever:
        """The memory with recall by meaning counted ``weight`` times in the fusion and recalled fragments cut to
        ``excerpt_words`` (a candidate setting)."""
        engines: dict[str, Engine] = {}
        memory = self.config.memory.model_copy(update={"excerpt_words": excerpt_words})
        config = dataclasses.replace(self.config, memory=memory, meaning_weight=weight)

        def retrieve(conv: Conversation, question: Question, budget: int) -> Retrieved:
            if conv.id not in engines:
                variant = Engine(self.store, self.worker, self.libraries[conv.id], config, embedder=self.embedder)
                engines[conv.id] = variant
                self.variants.append(variant)
            return self.loop.run_until_complete(self._retrieve(conv, question, budget, engines[conv.id]))

        return retrieve

    def words_alone(self, conv: Conversation, question: Question, budget: int) -> Retrieved:
        return self.loop.run_until_complete(self._retrieve(conv, question, budget, self.plain[conv.id]))

    def meaning_alone(self, conv: Conversation, question: Question, budget: int) -> Retrieved:
        """Turns by closeness in meaning to the question, each added if its tokens still fit in the budget."""
        engine, game, dia_of = self.games[conv.id]

        async def nearest():
            return await engine.measures.nearest(game, question.text, 400)

        chosen, used = [], 0
        for hit in self.loop.run_until_complete(nearest()):
            if used >= budget or not hit.ref.startswith("entry:"):
                continue
            dia = dia_of.get(int(hit.ref.split(":")[1]))
            cost = self.count(hit.text)
            if dia and used + cost <= budget:
                chosen.append(dia)
                used += cost
        return Retrieved(dia_ids=frozenset(chosen), tokens=used)

    async def _retrieve(
        self, conv: Conversation, question: Question, budget: int, engine: Engine | None = None
    ) -> Retrieved:
        meaning, game, dia_of = self.games[conv.id]
        engine = engine or meaning
        world = self.libraries[conv.id].get("locomo")
        action = LogEntry(id=0, game_id=game, turn=0, kind=EntryKind.ACTION, author=ASKER,
                          content=question.text, created_at=datetime(2026, 1, 1, tzinfo=UTC))  # fmt: skip
        base = build_context(world, MemoryView(), action, Budget(n_ctx=10**6, reply_tokens=0), self.count).tokens
        # The memory gets the whole budget: the room every prompt keeps for a retry's notes comes on top of it (with
        # it inside, the memory's context filled 865 of 1,000 tokens on two conversations, against BM25's 997).
        limits = Budget(n_ctx=base + budget + engine.measures.retry_room() + self.config.reply_tokens,
                        reply_tokens=self.config.reply_tokens, recall=budget)  # fmt: skip
        context = await engine.preview(game, ASKER, question.text, budget=limits)
        trace = context.trace
        # A turn the brief tells beside the question is shown there, not in the recall layer (F39).
        refs = trace.layer("hot").items + trace.layer("recall").items + trace.layer("brief").items
        found = {dia_of.get(int(ref.split(":")[1])) for ref in refs if ref.startswith("entry:")}
        if engine is meaning:
            recall = trace.layer("recall")
            ranked = [dia_of.get(int(ref.split(":")[1])) for ref in recall.items + recall.left_out
                      if ref.startswith("entry:")]  # fmt: skip
            tally = self.placed.setdefault(budget, {}).setdefault(question.category, Counter())
            for evidence in question.evidence:
                tally[_placement(evidence, found, ranked)] += 1
        return Retrieved(dia_ids=frozenset(d for d in found if d), tokens=max(0, trace.total_tokens - base))


# "not ranked": not among the recall candidates (a turn of the recent window the budget cut is one).
PLACEMENTS = ("shown", "ranked 1-50, past the budget", "ranked past 50", "not ranked")


def _placement(evidence: str, shown: set[str | None], ranked: list[str | None]) -> str:
    if evidence in shown:
        return PLACEMENTS[0]
    if evidence not in ranked:
        return PLACEMENTS[3]
    return PLACEMENTS[1] if ranked.index(evidence) < 50 else PLACEMENTS[2]


def placement_table(placed: dict[int, Counter[str]], budget: int) -> str:
    """Where the evidence turns sat at ``budget``, by category: shown, ranked among the recall candidates but past
    what the budget held (a budget's miss), or ranked too low or not found (a ranking's miss)."""
    lines = [f"\nwhere the evidence turns sat, the memory at {budget} tokens (evidence turns, not questions):",
             f"{'category':<12}" + "".join(f"{p:>32}" for p in PLACEMENTS)]  # fmt: skip
    total: Counter[str] = Counter()
    for category in sorted(placed):
        total.update(placed[category])
        lines.append(f"{CATEGORIES.get(category, category):<12}" + "".join(f"{placed[category][p]:>32}"
                                                                           for p in PLACEMENTS))  # fmt: skip
    lines.append(f"{'all':<12}" + "".join(f"{total[p]:>32}" for p in PLACEMENTS))
    return "\n".join(lines) + "\n"


def run(settings: ProcessSettings, path: Path, budgets: list[int], out: TextIO) -> dict[str, float | str]:
    if not path.is_file():
        raise UserError(f"No LoCoMo file at {path}.")
    if not budgets or any(b < 50 for b in budgets):
        raise UserError("--budgets takes token budgets of at least 50, like 500,1000,2000,4000.")
    conversations = load_locomo(path)
    tokenizer = tokenizer_model(settings)  # never fetched for this: it only counts
    settle_for_model(settings, tokenizer)
    count = functools.lru_cache(maxsize=500_000)(tokenizer.count_tokens)
    embedder, unavailable = load_embedder(settings)
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as tmp:
        store = loop.run_until_complete(Store.open(Path(tmp) / "locomo.sqlite3"))
        memory = MemoryRetriever(settings, count, store, loop, embedder)
        try:
            loop.run_until_complete(_start(memory.worker))
            for conv in conversations:
                loop.run_until_complete(memory.ingest(conv, Path(tmp)))
            retrievers: dict[str, Retriever] = {"memory": memory}
            if embedder is not None:
                retrievers["memory_words"] = memory.words_alone
            retrievers["bm25"] = bm25_retriever(count)
            if embedder is not None:
                retrievers["meaning"] = memory.meaning_alone
            results = evaluate(conversations, retrievers, budgets)
            held = None
            if embedder is not None:
                candidates = {f"meaning x{w}, {n} words": memory.weighted(w, n) for w, n in candidate_settings()}
                held = cross_validate(conversations, candidates, HELD_OUT_BUDGET)
        finally:
            for engine in [*(e for e, _, _ in memory.games.values()), *memory.variants]:
                loop.run_until_complete(engine.close())
            loop.run_until_complete(memory.worker.close())
            loop.run_until_complete(store.close())
            loop.close()
    meaning = f"recall by meaning with {embedder.name}" if embedder else f"words alone ({unavailable or 'none set'})"
    out.write(
        f"bench locomo: {path.name}, {len(conversations)} conversations; tokens counted with {tokenizer.name}; "
        f"{meaning}. 'memory' is this memory's context (hot window and recalled turns), 'memory_words' the same "
        "without the embedding index, 'bm25' plain BM25 over single turns, 'meaning' single turns by meaning alone.\n"
    )
    extra = {}
    if held is not None:
        out.write(
            f"\nheld out, {held.budget} tokens: the weight of recall by meaning in the fusion and the words kept of "
            f"a recalled fragment ({'; '.join(candidates)}) chosen on the other conversations, for each in turn: "
            f"{held.recall:.3f} "
            f"(chosen: {', '.join(f'{c} {n}' for c, n in held.chosen.items())}); in sample, {held.best} on all: "
            f"{held.in_sample:.3f}\n"
        )
        extra = {f"insample_recall_{held.budget}": held.in_sample, f"heldout_recall_{held.budget}": held.recall}
    for budget in sorted(memory.placed):
        out.write(placement_table(memory.placed[budget], budget))
    print_results(results, out, budgets, extra)
    # Which tokenizer counted the budget, kept with a record: a thousand tokens of the default GM's (a vocabulary of
    # 151k) hold more words than of the bundled model's (49k), and recall more with them.
    return results.figures(budgets) | extra | {"tokens_counted_with": tokenizer.name}


async def _start(worker: ModelWorker) -> None:
    worker.start()
