"""The game's summaries: the log folded into them as it grows (compaction), and the ones an edit made stale
written again (F8, F9, F18, F19).

Each job reads the store, asks the model through the queue at maintenance
priority, and writes its result in one transaction; a job that finds the
log changed meanwhile writes nothing and runs again later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel

from bot.engine.table.session import Sessions
from bot.engine.table.settings import GameSettings
from bot.memory.chapters import integrate_messages, recap_messages
from bot.memory.compaction import (
    Chunk,
    apply_ceiling,
    chunk_messages,
    fold_messages,
    next_trigger,
    plan_compaction,
    render_entry,
)
from bot.memory.config import MemoryConfig
from bot.memory.context import ContextTrace
from bot.memory.facts import history_text
from bot.memory.history import ValueHistory, names_subject
from bot.model.base import ChatMessage, Messages, ModelUnavailable
from bot.model.worker import ModelWorker, Priority
from bot.store import FrontSnapshot, Game, MemoryState, NewSummary, Store, Summary, SummaryKind, Visibility
from bot.worlds import World

log = logging.getLogger(__name__)

RECAP_MATERIAL_ENTRIES = 40
FOLD_ANYWAY = 0.9  # how full the recent turns' room may get before an unclosed chunk is folded too
# ...or sooner, once the next turn would likely not fit: it would push the oldest recent turns out of the prompt
# unsummarized, and the fold would come a turn later, costing the prompt cache twice (bench context at 4k: a
# block dropped, then the front changed, every four turns). A turn is taken to grow as much as the last one did.


class UpkeepFailed(Exception):
    """A maintenance job could not finish; nothing was written."""


class LogChanged(UpkeepFailed):
    """The log changed under a running job; it will run again."""


class SummaryInfo(BaseModel):
    id: int
    kind: str
    text: str
    first_turn: int | None
    last_turn: int | None
    words: int
    created_at: datetime

    @classmethod
    def of(cls, summary: Summary) -> SummaryInfo:
        return cls(
            id=summary.id,
            kind=summary.kind.value,
            text=summary.content,
            first_turn=summary.first_turn,
            last_turn=summary.last_turn,
            words=summary.words,
            created_at=summary.created_at,
        )


class CompactionReport(BaseModel):
    """What one compaction changed."""

    chunks: int = 0
    messages_folded: int = 0
    turns: tuple[int, int] | None = None
    short_words_before: int = 0
    short_words_after: int = 0
    story_words_before: int = 0
    story_words_after: int = 0
    error: str | None = None


MAX_CURRENT_VALUES = 8  # changed values a summary's prompt is told, at most: those its material names


async def write_summary(worker: ModelWorker, messages: Messages, words: int) -> str:
    """A summary of at most about ``words`` words, asked of the model at maintenance priority."""
    try:
        text = await worker.generate(messages, max_tokens=int(words * 2), priority=Priority.MAINTENANCE)
    except Exception as exc:
        raise UpkeepFailed(f"the model failed: {exc}") from exc
    text = apply_ceiling(text, words)
    if not text:
        raise UpkeepFailed("the model wrote an empty summary")
    return text


@dataclass(eq=False)
class UpkeepJobs:
    """What a background job of the memory's upkeep works with: the store, the model, a game's world, its
    settings and its lock."""

    store: Store
    worker: ModelWorker
    world_of: Callable[[Game], World]
    settings: GameSettings
    sessions: Sessions

    async def _write(self, messages: Messages, words: int, game_id: int) -> str:
        return await write_summary(self.worker, await self._as_now(game_id, messages), words)

    async def _as_now(self, game_id: int, messages: Messages) -> Messages:
        """A summary's prompt told which values its material names have changed since, and what they are now:
        a summary or a recap never carries a superseded value as current (F40)."""
        history = ValueHistory(await self.store.facts(game_id, active_only=False))
        material = messages[-1].content.casefold()
        changed = [
            f for f in history.facts.values()
            if f.active and history.earlier(f) and names_subject(material, f.subject)
        ][-MAX_CURRENT_VALUES:]  # fmt: skip
        if not changed:
            return messages
        lines = "\n".join(f"- {history_text(f, history.earlier(f))}, since turn {f.turn}" for f in changed)
        note = (
            f"\n\nValues that have changed, as they are now (where the events above tell an older one, write it "
            f"as it was then, not as it is now):\n{lines}"
        )
        *front, last = messages
        return [*front, ChatMessage(role=last.role, content=last.content + note)]


class Summaries(UpkeepJobs):
    # Compaction (F8, F9, F18)

    async def compact(self, game_id: int, *, force: bool = False) -> CompactionReport:
        """Fold every closed chunk of the hot window (``force``: everything but the protected tail)."""
        async with self.sessions[game_id].memory_lock:
            game = await self.store.game(game_id)
            world = self.world_of(game)
            state = await self.store.memory_state(game_id)
            short_before = await self.store.summary(state.short_id)
            story_before = await self.store.summary(state.story_id)
            unsummarized = await self.store.log_between(game_id, state.folded_through)
            tokens = await self.worker.count_many([render_entry(e) for e in unsummarized])
            config = await self.settings.memory(game_id)
            chunks = plan_compaction(unsummarized, tokens, config, force=force)
            fill, growth = await self.room(game_id)
            if not force and fill < config.fold_at_percent / 100 and len(unsummarized) < config.history_limit:
                chunks = []  # closed chunks wait until the recent turns need their room: the front stays put
            elif not chunks and (fill >= FOLD_ANYWAY or fill + growth >= 1.0):
                # The room is about to run out before a chunk closed (a small context): fold what may be
                # folded now, rather than cut the oldest turns off the prompt unsummarized.
                chunks = plan_compaction(unsummarized, tokens, config, force=True)
            report = CompactionReport(
                short_words_before=short_before.words if short_before else 0,
                story_words_before=story_before.words if story_before else 0,
            )
            for chunk in chunks:
                state = await self._fold(game_id, world, state, chunk, config)
                report.chunks += 1
                report.messages_folded += len(chunk.entries)
            if chunks:
                report.turns = (chunks[0].turns[0], chunks[-1].turns[1])
                log.info("Game %d: folded %d messages in %d chunks", game_id, report.messages_folded, len(chunks))
            short_after = await self.store.summary(state.short_id)
            story_after = await self.store.summary(state.story_id)
            report.short_words_after = short_after.words if short_after else 0
            report.story_words_after = story_after.words if story_after else 0
            return report

    async def _fold(
        self, game_id: int, world: World, state: MemoryState, chunk: Chunk, config: MemoryConfig
    ) -> MemoryState:
        """Summarize one chunk; fold the short-term summary it replaces into the story."""
        bridge = await self.store.entry_before(game_id, chunk.first_id) if state.folded_through else None
        short_text = await self._write(
            chunk_messages(world.title, chunk.entries, bridge, config.short_words), config.short_words, game_id
        )
        previous_short = await self.store.summary(state.short_id)
        story = await self.store.summary(state.story_id)
        story_text = None
        if previous_short is not None:
            story_text = await self._write(
                fold_messages(world.title, story.content if story else None, previous_short.content,
                              config.story_words),
                config.story_words, game_id,
            )  # fmt: skip
        story_through = await self._story_kept(state, short_text, config)
        async with self.store.transaction() as db:
            current = await self.store.memory_state(game_id)
            if (current.version, current.folded_through, current.short_id) != (
                state.version, state.folded_through, state.short_id,
            ):  # fmt: skip
                raise LogChanged("the log changed while summarizing")
            if (current.story_id, current.front.story_through) != (state.story_id, state.front.story_through):
                story_through = None  # a chapter ended meanwhile: the front shows the story as it is now
            short_id = await self.store.add_summary(
                db,
                game_id,
                NewSummary(
                    kind=SummaryKind.CHUNK, content=short_text, first_entry_id=chunk.first_id,
                    last_entry_id=chunk.last_id, first_turn=chunk.turns[0], last_turn=chunk.turns[1],
                    chapter_index=current.chapter_index,
                ),
            )  # fmt: skip
            story_id = current.story_id
            if story_text is not None and previous_short is not None:
                story_id = await self.store.add_summary(
                    db, game_id, _story_version(story_text, story, previous_short, current.story_id)
                )
            updated = current.model_copy(
                update={
                    "folded_through": chunk.last_id,
                    "short_id": short_id,
                    "story_id": story_id,
                    "last_compaction_at": datetime.now().astimezone(),
                    "last_error": None,
                    "front": _front_after(state.front, await self.store.front_now(game_id), story_through, chunk),
                }
            )
            await self.store.save_memory_state(db, updated)
        return updated

    async def _story_kept(self, state: MemoryState, short_text: str, config: MemoryConfig) -> int | None:
        """Where the story the front shows after this fold ends: the one it shows now, while the chunk
        summaries after it, this one included, fit the short-term budget; None (the story as rewritten now)
        once they would not."""
        story, chunks = await front_summaries(self.store, state)
        if not chunks:
            return None
        tokens = await self.worker.count_many([*(c.content for c in chunks), short_text])
        if sum(tokens) > config.budgets.short:
            return None
        return (story.last_entry_id or 0) if story else 0

    # Edits and deletes (F19): rebuild every summary that covers a changed message

    async def rebuild_stale(self, game_id: int) -> int:
        """Rewrite stale chunk summaries and recaps from the current log, then replay the story; return how many."""
        async with self.sessions[game_id].memory_lock:
            stale = [s for s in await self.store.summaries(game_id) if s.stale]
            if not stale:
                return 0
            game = await self.store.game(game_id)
            world = self.world_of(game)
            state = await self.store.memory_state(game_id)
            config = await self.settings.memory(game_id)
            rebuilt: dict[int, str] = {}
            for summary in stale:
                rebuilt[summary.id] = await self._rewrite(game_id, world, summary, config)
            chain, replayed = await self._replay_story(game_id, world, state, rebuilt, config)
            async with self.store.transaction() as db:
                current = await self.store.memory_state(game_id)
                if current.version != state.version or current.story_id != state.story_id:
                    raise LogChanged("the log changed while rebuilding")
                # A rebuilt summary's id -> its new one; looked up with ids that may be None (no source, no short).
                new_ids: dict[int | None, int] = {}
                for summary in stale:
                    new_ids[summary.id] = await self.store.add_summary(
                        db, game_id, _copy(summary, content=rebuilt[summary.id])
                    )
                    await self.store.replace_summary(db, summary.id, new_ids[summary.id])
                previous_id = chain[len(chain) - len(replayed) - 1].id if len(replayed) < len(chain) else None
                for old, text in zip(chain[len(chain) - len(replayed) :], replayed, strict=True):
                    source = new_ids.get(old.source_id, old.source_id)
                    new_id = await self.store.add_summary(
                        db, game_id, _copy(old, content=text, source_id=source, previous_id=previous_id)
                    )
                    await self.store.replace_summary(db, old.id, new_id)
                    previous_id = new_id
                update = {
                    "short_id": new_ids.get(current.short_id, current.short_id),
                    "front": await self.store.front_now(game_id),
                }
                if replayed:
                    update["story_id"] = previous_id
                await self.store.save_memory_state(db, current.model_copy(update=update))
            log.info("Game %d: rebuilt %d summaries and %d story versions", game_id, len(stale), len(replayed))
            return len(stale) + len(replayed)

    async def _rewrite(self, game_id: int, world: World, summary: Summary, config: MemoryConfig) -> str:
        first = (summary.first_entry_id or 1) - 1
        entries = await self.store.log_between(game_id, first, summary.last_entry_id)
        if summary.kind is SummaryKind.RECAP:
            chapter = world.chapters[summary.chapter_index or 0]
            words = config.recap_words
            public = [e for e in entries if e.visibility is Visibility.PUBLIC]
            material = [render_entry(e) for e in public[-RECAP_MATERIAL_ENTRIES:]] or ["(nothing)"]
            return await self._write(recap_messages(world.title, chapter, material, words), words, game_id)
        if not entries:
            return "(These messages were deleted.)"
        bridge = await self.store.entry_before(game_id, entries[0].id)
        words = config.short_words
        return await self._write(chunk_messages(world.title, entries, bridge, words), words, game_id)

    async def _replay_story(
        self, game_id: int, world: World, state: MemoryState, rebuilt: dict[int, str], config: MemoryConfig
    ) -> tuple[list[Summary], list[str]]:
        """The story chain, oldest first, and new texts for its versions from the first built on a rebuilt source."""
        chain: list[Summary] = []
        version = await self.store.summary(state.story_id)
        while version is not None:
            chain.append(version)
            version = await self.store.summary(version.previous_id)
        chain.reverse()
        start = next((i for i, v in enumerate(chain) if v.source_id in rebuilt), None)
        if start is None:
            return chain, []
        text = chain[start - 1].content if start else None
        replayed = []
        for version in chain[start:]:
            source = await self.store.summary(version.source_id)
            if source is None:  # every story version folds a summary in, and summaries are never deleted
                raise UpkeepFailed(f"story version {version.id} has no source summary")
            source_text = rebuilt.get(source.id, source.content)
            if source.kind is SummaryKind.RECAP:
                chapter = world.chapters[source.chapter_index or 0]
                messages = integrate_messages(world.title, text or "", chapter, source_text, config.story_words)
            else:
                messages = fold_messages(world.title, text, source_text, config.story_words)
            text = await self._write(messages, config.story_words, game_id)
            replayed.append(text)
        return chain, replayed

    async def room(self, game_id: int) -> tuple[float, float]:
        """How full the last prompt's room for recent turns was (full when no turn was played yet), and how much
        it grew from the prompt before (nothing when it shrank: a fold came between)."""
        traces = [ContextTrace.model_validate_json(t).fill for t in await self.store.traces(game_id, limit=2)]
        if not traces:
            return 1.0, 0.0
        return traces[0], max(0.0, traces[0] - traces[1]) if len(traces) == 2 else 0.0

    async def trigger(self, game_id: int):
        """What the next compaction waits for (for /memory-status)."""
        state = await self.store.memory_state(game_id)
        unsummarized = await self.store.log_between(game_id, state.folded_through)
        texts = [render_entry(e) for e in unsummarized]
        try:
            tokens = await self.worker.count_many(texts)
        except ModelUnavailable as exc:  # a model server's tokenizer down: the figures are estimates meanwhile
            log.warning("Game %d: counting tokens failed (%s); estimating", game_id, exc)
            tokens = [(len(text) + 3) // 4 for text in texts]
        return next_trigger(unsummarized, tokens, await self.settings.memory(game_id))


def _front_after(before: FrontSnapshot, now: FrontSnapshot, story_through: int | None, chunk: Chunk) -> FrontSnapshot:
    """The front a fold leaves. One that keeps the story shown changes the front from the end of its summaries
    on: the glossary and the players' private memories stay as shown, unless the folded turns held something
    private (a whisper, a secret action), which only the private memories tell, or the players changed."""
    if story_through is None:
        return now
    private = any(e.visibility is Visibility.PRIVATE for e in chunk.entries)
    memories = now.memories if private or set(now.memories) != set(before.memories) else before.memories
    return now.model_copy(
        update={"story_through": story_through, "glossary_through": before.glossary_through, "memories": memories}
    )


async def front_summaries(store: Store, state: MemoryState) -> tuple[Summary | None, list[Summary]]:
    """The story version and the chunk summaries after it that the prompt's front shows.

    A fold rewrites the story, but the front goes on showing the version it
    showed, followed by each chunk summary folded since, until they would
    pass the short-term budget: the front then changes from the end of its
    summaries, not from the story's start, and the prompt cache keeps the
    story. The summaries shown cover the folded log either way.
    """
    story = await store.summary(state.story_id)
    short = await store.summary(state.short_id)
    through = state.front.story_through
    if through is None or short is None:
        return story, [short] if short else []
    while story is not None and (story.last_entry_id or 0) > through:
        story = await store.summary(story.previous_id)
    chunks = await store.chunks_after(state.game_id, through, state.folded_through)
    covered = (story.last_entry_id if story else 0) == through
    if not covered or not chunks or chunks[-1].id != short.id:  # not as the fold left it: the latest instead
        return await store.summary(state.story_id), [short]
    return story, chunks


def _story_version(text: str, story: Summary | None, folded: Summary, previous_id: int | None) -> NewSummary:
    return NewSummary(
        kind=SummaryKind.STORY,
        content=text,
        first_entry_id=story.first_entry_id if story else folded.first_entry_id,
        last_entry_id=folded.last_entry_id,
        first_turn=story.first_turn if story else folded.first_turn,
        last_turn=folded.last_turn,
        source_id=folded.id,
        previous_id=previous_id,
    )


def _copy(summary: Summary, **changes) -> NewSummary:
    data = summary.model_dump(include=set(NewSummary.model_fields))
    data.update(changes)
    return NewSummary.model_validate(data)
