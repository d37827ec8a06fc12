"""What /memory-status shows: the memory of one game as a pydantic model (F17)."""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

from bot.engine.upkeep.meaning import MeaningStatus
from bot.engine.upkeep.summaries import SummaryInfo
from bot.store import Game, Store, SummaryKind

if TYPE_CHECKING:
    from bot.engine.table.settings import GameSettings
    from bot.engine.upkeep.meaning import MeaningIndex
    from bot.engine.upkeep.memory import MemoryKeeper
    from bot.memory.context import ContextTrace
    from bot.model.worker import ModelWorker
    from bot.worlds import World


class Sources(Protocol):
    """What the status is read from: the engine, which holds these parts."""

    store: Store
    worker: ModelWorker
    settings: GameSettings
    meaning: MeaningIndex
    memory: MemoryKeeper

    def world_of(self, game: Game) -> World: ...

    async def last_trace(self, game_id: int) -> ContextTrace | None: ...


class LayerUse(BaseModel):
    name: str
    tokens: int
    budget: int | None


class NextCompaction(BaseModel):
    unsummarized_messages: int
    unsummarized_tokens: int
    messages_to_go: int
    tokens_to_go: int
    protected_tail: int


JOB_NAMES = {
    "update_private_memories": "players' private memories",
    "judge_beats": "the chapter's beats",
    "extract_facts": "facts",
    "define_terms": "glossary",
    "rebuild_stale": "rebuilding edited summaries",
    "compact": "compaction",
}


class LastTurn(BaseModel):
    """What the last turn cost: how long the players waited, and how much of the prompt the model read."""

    first_text_seconds: float
    reply_seconds: float
    prompt_tokens: int
    reused_tokens: int
    evaluated_tokens: int
    generated_tokens: int

    @property
    def reuse(self) -> float:
        return self.reused_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


class MemoryStatus(BaseModel):
    game_id: int
    model: str = ""  # the model and where it runs: "SmolLM2-135M-Instruct, on the CPU (2 threads)"
    turn: int
    chapter_index: int
    chapter_title: str | None
    beats_done: list[str]
    beats_total: int
    chapter_recaps: list[SummaryInfo]
    story_summary: SummaryInfo | None
    short_summary: SummaryInfo | None
    messages: int
    messages_summarized: int
    summaries_written: int
    facts: int = 0
    pins: int = 0
    pin_cap: int = 20
    lore_entries: int
    glossary: int = 0
    folded_through: int
    layers: list[LayerUse]
    next_compaction: NextCompaction
    last_compaction_at: datetime | None
    last_error: str | None
    upkeep_running: bool
    cache_reuse: float | None
    room_filled: float | None = None  # how full the recent turns' room was: closed chunks fold at fold_at_percent
    fold_at_percent: int = 75
    last_turn: LastTurn | None = None
    parked: list[str] = []  # background jobs that failed on the same input until parked, and why
    meaning: MeaningStatus | None = None  # recall by meaning: the model, where it runs, what is embedded


_ADDRESS = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s)]+", re.IGNORECASE)


def without_addresses(text: str | None) -> str | None:
    """``text`` with URLs taken out: /memory-status is for members, the model server's address for the log."""
    return _ADDRESS.sub("(the model server)", text) if text else text


def _member_safe(meaning: MeaningStatus) -> MeaningStatus:
    """The meaning index's status with no server address in its problem (the log keeps the whole line)."""
    return dataclasses.replace(meaning, problem=without_addresses(meaning.problem))


async def memory_status(engine: Sources, game: Game) -> MemoryStatus:
    store = engine.store
    world = engine.world_of(game)
    state = await store.memory_state(game.id)
    chapter = world.chapters[state.chapter_index] if state.chapter_index < len(world.chapters) else None
    story = await store.summary(state.story_id)
    short = await store.summary(state.short_id)
    trace = await engine.last_trace(game.id)
    trigger = await engine.memory.trigger(game.id)
    config = await engine.settings.memory(game.id)
    model = engine.worker.model
    return MemoryStatus(
        game_id=game.id,
        model=", ".join(filter(None, (model.name, model.placement))),
        turn=game.turn,
        chapter_index=state.chapter_index,
        chapter_title=chapter.title if chapter else None,
        beats_done=list(state.beats_done),
        beats_total=len(chapter.beats) if chapter else 0,
        chapter_recaps=[SummaryInfo.of(s) for s in await store.summaries(game.id, SummaryKind.RECAP)],
        story_summary=SummaryInfo.of(story) if story else None,
        short_summary=SummaryInfo.of(short) if short else None,
        messages=await store.count_entries(game.id),
        messages_summarized=await store.count_entries(game.id, state.folded_through),
        summaries_written=len(await store.summaries(game.id, current=False)),
        lore_entries=len(await engine.memory.ledger.lore(game.id)),
        facts=len(await store.facts(game.id)),
        pins=len(await store.pins(game.id)),
        pin_cap=config.pin_cap,
        glossary=len(await store.glossary(game.id)),
        folded_through=state.folded_through,
        layers=[LayerUse(name=layer.name, tokens=layer.tokens, budget=layer.budget) for layer in trace.layers]
        if trace
        else [],
        next_compaction=NextCompaction(
            unsummarized_messages=trigger.unsummarized_messages,
            unsummarized_tokens=trigger.unsummarized_tokens,
            messages_to_go=trigger.messages_to_go,
            tokens_to_go=trigger.tokens_to_go,
            protected_tail=config.protected_tail,
        ),
        last_compaction_at=state.last_compaction_at,
        last_error=without_addresses(state.last_error),
        upkeep_running=engine.memory.pending(game.id),
        cache_reuse=trace.prefix_reuse if trace else None,
        room_filled=trace.fill if trace else None,
        fold_at_percent=config.fold_at_percent,
        last_turn=_last_turn(trace),
        meaning=_member_safe(await engine.meaning.status(game.id)),
        parked=[
            f"{JOB_NAMES.get(f.job, f.job)}: failed {f.failures} times on the same input since turn {f.parked_at_turn} "
            f"({without_addresses(f.reason)}); tried again in a few turns, or now with /compact"
            for f in (await store.job_failures(game.id)).values()
            if f.parked_at_turn is not None
        ],
    )


def _last_turn(trace) -> LastTurn | None:
    if trace is None or trace.model_prompt_tokens is None:
        return None
    return LastTurn(
        first_text_seconds=trace.first_text_seconds or 0.0,
        reply_seconds=trace.reply_seconds or 0.0,
        prompt_tokens=trace.model_prompt_tokens,
        reused_tokens=trace.model_reused_tokens or 0,
        evaluated_tokens=trace.model_evaluated_tokens or 0,
        generated_tokens=trace.model_generated_tokens or 0,
    )
