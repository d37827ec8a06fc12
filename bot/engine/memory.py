"""The memory's upkeep: compaction, chapters and rebuilds, as low-priority model jobs.

Policy (what to fold, what a prompt holds) lives in :mod:`bot.memory`; this
module reads the store, asks the model through the queue at maintenance
priority, and writes the result back in one transaction. A job that fails
changes nothing: the old summaries stay, the marker stays, and the work is
tried again after the next turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from pydantic import BaseModel

from bot.engine.ledger import Ledger, LedgerFailed, Scene
from bot.engine.meaning import MeaningIndex
from bot.engine.players import PlayerMemories, PrivateMemoryFailed
from bot.engine.session import Sessions
from bot.engine.settings import GameSettings
from bot.errors import UserError
from bot.memory.chapters import BeatsAnswer, beats_messages, beats_schema, integrate_messages, recap_messages
from bot.memory.compaction import (
    Chunk,
    apply_ceiling,
    chunk_messages,
    fold_messages,
    next_trigger,
    plan_compaction,
    render_entry,
)
from bot.memory.config import Buckets, MemoryConfig
from bot.memory.context import NEWER, ContextTrace, MemoryItem, MemoryView
from bot.memory.npcs import Cast, NpcScene, cast_of
from bot.model.base import Messages, ModelUnavailable
from bot.model.worker import ModelWorker, Priority
from bot.store import (
    Game,
    JobFailure,
    LogEntry,
    MemoryState,
    NewSummary,
    Store,
    Summary,
    SummaryKind,
    TurnNote,
    Visibility,
)  # fmt: skip
from bot.worlds import World

log = logging.getLogger(__name__)

RECAP_MATERIAL_ENTRIES = 40
PARK_AFTER = 3  # failures on the same input before a background job is parked
RETRY_PARKED_AFTER = 10  # turns before a parked job is tried again
FOLD_ANYWAY = 0.9  # how full the recent turns' room may get before an unclosed chunk is folded too


class UpkeepFailed(Exception):
    """A maintenance job could not finish; nothing was written."""


class _Conflict(UpkeepFailed):
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


class ChapterReport(BaseModel):
    finished: str
    recap: str
    next: str | None
    story_words_before: int
    story_words_after: int


class MemoryKeeper:
    def __init__(
        self,
        store: Store,
        worker: ModelWorker,
        world_of: Callable[[Game], World],
        config: MemoryConfig,
        settings: GameSettings | None = None,
        sessions: Sessions | None = None,
        meaning: MeaningIndex | None = None,
    ):
        self.store = store
        self.worker = worker
        self.world_of = world_of
        self.settings = settings or GameSettings(store, config, reply_tokens=300)
        self.sessions = sessions if sessions is not None else Sessions()
        self.meaning = meaning
        self.ledger = Ledger(store, worker, world_of, self.settings, meaning=meaning)
        self.players = PlayerMemories(store, worker, world_of)
        self._casts: dict[str, tuple[World, Cast]] = {}
        self.held: set[int] | None = None  # games whose upkeep waits for release()

    def hold(self) -> None:
        """Keep upkeep back until :meth:`release` (``bench turns`` measures turns without it)."""
        self.held = set() if self.held is None else self.held

    def release(self) -> None:
        """Run the upkeep held back since :meth:`hold`."""
        held, self.held = self.held or set(), None
        for game_id in sorted(held):
            self.schedule(game_id)

    # What a prompt is built from

    async def view(
        self,
        game: Game,
        state: MemoryState,
        hot: Sequence[LogEntry],
        players: Sequence,
        action: LogEntry,
        config: MemoryConfig,
    ) -> MemoryView:
        """The memory as of ``state``, which must be the one ``hot`` was read after, under the game's ``config``."""
        recaps = await self.store.summaries(game.id, SummaryKind.RECAP)
        story = await self.store.summary(state.story_id)
        short = await self.store.summary(state.short_id)
        secret = action.visibility is Visibility.PRIVATE  # its answer goes to its player alone
        scene = Scene(
            action=action.content,
            recent=[e.line for e in hot[-config.lore_scan_depth :]],
            audience=action.player_id if secret else None,
        )
        in_prompt = {f"entry:{e.id}" for e in hot} | {f"entry:{action.id}", f"summary:{state.short_id}"}
        pins, glossary, lore, recall = await self.ledger.layers(
            game, scene, in_prompt, config, glossary_through=state.front.glossary_through
        )
        buckets = await self.ledger.buckets(game.id)
        notes = _switched_on(await self.store.turn_notes(game.id, state.folded_through), buckets)
        if buckets.facts:
            recall = await self._newer_facts_first(game.id, notes, recall)
        public = [e.content for e in hot if e.visibility is Visibility.PUBLIC][-config.scene_depth :]
        present = self.cast(game).present([*public, action.content])
        npcs = []
        for npc_id in present:
            turns, seen = await self.store.npc_witnessed(game.id, npc_id)
            npcs.append(NpcScene(npc_id, self.cast(game).display[npc_id], tuple(turns), tuple(seen)))
        return MemoryView(
            players=players,
            chapter_index=state.chapter_index,
            chapters=[_item(r) for r in recaps],
            story=_item(story) if story else None,
            pins=pins,
            glossary=glossary,
            short=_item(short) if short else None,
            hot=hot,
            lore=lore,
            recall=recall,
            scene=npcs,
            threads=await self.players.threads(game.id, list(players), state.front.memories),
            notes=notes,
        )

    async def _newer_facts_first(
        self, game_id: int, notes: dict[int, list[TurnNote]], recall: list[MemoryItem]
    ) -> list[MemoryItem]:
        """A fact that earlier turns' notes show and that a newer one has superseded ("the key: on the desk",
        then "the key: in the cellar") brings its current value first, so the newer value is always in the
        prompt after the older."""
        held = {note.ref for entry_notes in notes.values() for note in entry_notes}
        shown = [int(ref.split(":")[1]) for ref in held if ref.startswith("fact:")]
        newer = [
            MemoryItem(f"fact:{fact.id}", f"[fact, now] {fact.text}", found_by=NEWER)
            for fact in await self.ledger.current_values(game_id, shown)
            if f"fact:{fact.id}" not in held
        ]
        taken = {item.ref for item in newer}
        return newer + [item for item in recall if item.ref not in taken]

    def cast(self, game: Game) -> Cast:
        """The world's NPCs and the names that bring them into a scene (rebuilt when the world reloads)."""
        world = self.world_of(game)
        cached = self._casts.get(world.id)
        if cached is None or cached[0] is not world:
            cached = (world, cast_of(world))
            self._casts[world.id] = cached
        return cached[1]

    async def present_npcs(self, game: Game, *texts: str) -> tuple[str, ...]:
        """The NPCs in the scene of the latest public messages and ``texts``: the witnesses of a new entry."""
        config = await self.settings.memory(game.id)
        recent = await self.store.recent_log(game.id, config.scene_depth * 3)
        public = [e.content for e in recent if e.visibility is Visibility.PUBLIC][-config.scene_depth :]
        return tuple(self.cast(game).present([*public, *texts]))

    # Scheduling: one upkeep task per game at a time, never in a player's way

    def schedule(self, game_id: int) -> None:
        if self.meaning is not None:
            self.meaning.notify()  # what the turn stored is embedded once the model is free
        session = self.sessions[game_id]
        if self.held is not None:
            self.held.add(game_id)
            return
        if session.upkeep_running:
            session.upkeep_again = True  # the running upkeep goes round once more and takes this in too
            return
        session.upkeep = asyncio.create_task(self._upkeep_loop(game_id), name=f"upkeep-{game_id}")

    async def idle(self, game_id: int | None = None) -> None:
        """Wait until upkeep is done (for tests, shutdown and the bench)."""
        while True:
            tasks = [s.upkeep for s in self.sessions if (game_id is None or s.game_id == game_id) and s.upkeep_running]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    def pending(self, game_id: int) -> bool:
        return self.sessions[game_id].upkeep_running

    async def close(self) -> None:
        tasks = [s.upkeep for s in self.sessions if s.upkeep is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _upkeep_loop(self, game_id: int) -> None:
        session = self.sessions[game_id]
        while True:
            session.upkeep_again = False
            await self.upkeep(game_id)
            if not session.upkeep_again:
                return

    async def upkeep(self, game_id: int) -> None:
        """After a turn: players' private memories, the chapter's beats, facts, glossary, stale rebuilds, compaction.

        A job that fails on the same input ``PARK_AFTER`` times is parked: it is tried again only once the game
        has gone ``RETRY_PARKED_AFTER`` turns further, or its input changed, or someone asks for /compact;
        /memory-status shows why.
        """
        jobs = (
            self.players.update_private_memories,
            self.judge_beats,
            self.ledger.extract_facts,
            self.ledger.define_terms,
            self.rebuild_stale,
            self.compact,
        )
        turn = (await self.store.game(game_id)).turn
        failures = await self.store.job_failures(game_id)
        for job in jobs:
            name = job.__name__
            record = failures.get(name)
            key = await self._input_of(name, game_id)
            if record and record.parked_at_turn is not None and record.input == key:
                if turn < record.parked_at_turn + RETRY_PARKED_AFTER:
                    continue
            try:
                await job(game_id)
            except Exception as exc:
                if not isinstance(exc, UpkeepFailed | LedgerFailed | PrivateMemoryFailed):
                    log.exception("Game %d: %s failed", game_id, name)
                count = record.failures + 1 if record and record.input == key else 1
                reason = f"{name}: {exc}"
                await self.store.save_job_failure(
                    JobFailure(game_id=game_id, job=name, input=key, failures=count, reason=str(exc)[:500],
                               parked_at_turn=turn if count >= PARK_AFTER else None)
                )  # fmt: skip
                if count >= PARK_AFTER:
                    log.warning("Game %d: %s parked after %d failures on the same input", game_id, name, count)
                await self._record_error(game_id, reason)
            else:
                if record is not None:
                    await self.store.clear_job_failures(game_id, name)

    async def _input_of(self, job: str, game_id: int) -> str:
        """What ``job`` would read next, so the same failure twice is known as such."""
        state = await self.store.memory_state(game_id)
        if job == "update_private_memories":
            memories = {m.player_id: m.through_entry_id for m in await self.store.player_memories(game_id)}
            return repr((sorted(memories.items()), sorted(await self.store.player_memory_redo(game_id))))
        if job == "judge_beats":
            return repr((state.chapter_index, await self.store.checked_through("beats_checked", game_id)))
        if job == "extract_facts":
            return repr(
                (await self.store.checked_through("facts_checked", game_id), await self.store.facts_to_redo(game_id))
            )
        if job == "define_terms":
            return repr(await self.store.checked_through("glossary_checked", game_id))
        if job == "rebuild_stale":
            return repr(sorted(s.id for s in await self.store.summaries(game_id) if s.stale))
        return repr((state.folded_through, state.version))

    async def _record_error(self, game_id: int, error: str) -> None:
        log.warning("Game %d upkeep: %s (will retry after the next turn)", game_id, error)
        async with self.store.transaction() as db:
            state = await self.store.memory_state(game_id)
            await self.store.save_memory_state(db, state.model_copy(update={"last_error": error}))

    # Compaction (F8, F9, F18)

    async def compact(self, game_id: int, *, force: bool = False) -> CompactionReport:
        """Fold every closed chunk of the hot window (``force``: everything but the protected tail).

        Asked for by someone (``force``), it also gives parked background jobs another try.
        """
        if force:
            await self.store.clear_job_failures(game_id)
            self.schedule(game_id)
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
            fill = await self.fill(game_id)
            if not force and fill < config.fold_at_percent / 100 and len(unsummarized) < config.history_limit:
                chunks = []  # closed chunks wait until the recent turns need their room: the front stays put
            elif not chunks and fill >= FOLD_ANYWAY:
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
            chunk_messages(world.title, chunk.entries, bridge, config.short_words), config.short_words
        )
        previous_short = await self.store.summary(state.short_id)
        story = await self.store.summary(state.story_id)
        story_text = None
        if previous_short is not None:
            story_text = await self._write(
                fold_messages(world.title, story.content if story else None, previous_short.content,
                              config.story_words),
                config.story_words,
            )  # fmt: skip
        async with self.store.transaction() as db:
            current = await self.store.memory_state(game_id)
            if (current.version, current.folded_through, current.short_id) != (
                state.version, state.folded_through, state.short_id,
            ):  # fmt: skip
                raise _Conflict("the log changed while summarizing")
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
                    "front": await self.store.front_now(game_id),
                }
            )
            await self.store.save_memory_state(db, updated)
        return updated

    async def _write(self, messages: Messages, words: int) -> str:
        try:
            text = await self.worker.generate(messages, max_tokens=int(words * 2), priority=Priority.MAINTENANCE)
        except Exception as exc:
            raise UpkeepFailed(f"the model failed: {exc}") from exc
        text = apply_ceiling(text, words)
        if not text:
            raise UpkeepFailed("the model wrote an empty summary")
        return text

    # Chapters (F10)

    async def judge_beats(self, game_id: int) -> None:
        """Ask the model which open beats the latest events completed; finish the chapter when all are."""
        game = await self.store.game(game_id)
        world = self.world_of(game)
        state = await self.store.memory_state(game_id)
        if state.chapter_index >= len(world.chapters):
            return
        chapter = world.chapters[state.chapter_index]
        open_beats = [b.id for b in chapter.beats if b.id not in state.beats_done]
        if open_beats:
            # Beats are judged on what happened in public: a whispered discovery must not open a truth.
            recent = [e for e in await self.store.recent_log(game_id, 24) if e.visibility is Visibility.PUBLIC][-6:]
            checked = await self.store.checked_through("beats_checked", game_id)
            if not recent or recent[-1].id <= checked:
                return  # nothing new happened in public since the last judgement
            result = await self.worker.generate_object(
                beats_messages(chapter, open_beats, recent),
                beats_schema(open_beats),
                fallback=BeatsAnswer(done=[]),
                max_tokens=24 + 12 * len(open_beats),
                priority=Priority.MAINTENANCE,
            )
            if not result.ok:
                raise UpkeepFailed(f"no usable beat judgement: {'; '.join(result.errors)}")
            newly = [b for b in open_beats if b in result.value.done]
            async with self.store.transaction() as db:
                if newly:
                    current = await self.store.memory_state(game_id)
                    done = tuple(dict.fromkeys([*current.beats_done, *newly]))
                    await self.store.save_memory_state(db, current.model_copy(update={"beats_done": done}))
                await self.store.set_checked_through(db, "beats_checked", game_id, recent[-1].id)
            if newly:
                log.info("Game %d: beats done in %s: %s", game_id, chapter.id, ", ".join(newly))
                open_beats = [b for b in open_beats if b not in newly]
        if not open_beats:
            await self.finish_chapter(game_id)

    async def finish_chapter(self, game_id: int) -> ChapterReport:
        """Write the chapter's recap, fold the chapter into the story, and move to the next chapter."""
        async with self.sessions[game_id].memory_lock:
            game = await self.store.game(game_id)
            world = self.world_of(game)
            state = await self.store.memory_state(game_id)
            if state.chapter_index >= len(world.chapters):
                raise UserError("Every chapter of this world is already done.")
            config = await self.settings.memory(game_id)
            chapter = world.chapters[state.chapter_index]
            chunks = [
                s
                for s in await self.store.summaries(game_id, SummaryKind.CHUNK)
                if s.chapter_index == state.chapter_index
            ]
            fresh = await self.store.log_between(game_id, max(state.folded_through, state.chapter_started_after))
            fresh = [e for e in fresh if e.visibility is Visibility.PUBLIC]  # a recap is public
            material = [s.content for s in chunks] + [render_entry(e) for e in fresh[-RECAP_MATERIAL_ENTRIES:]]
            words = config.recap_words
            recap = await self._write(recap_messages(world.title, chapter, material or ["(nothing)"], words), words)
            story = await self.store.summary(state.story_id)
            story_text = None
            if story is not None:
                story_text = await self._write(
                    integrate_messages(world.title, story.content, chapter, recap, config.story_words),
                    config.story_words,
                )
            last = await self.store.recent_log(game_id, 1)
            last_id = last[-1].id if last else state.chapter_started_after
            async with self.store.transaction() as db:
                current = await self.store.memory_state(game_id)
                if current.chapter_index != state.chapter_index or current.story_id != state.story_id:
                    raise _Conflict("the memory changed while writing the recap")
                first_turn = fresh[0].turn if fresh else None
                recap_id = await self.store.add_summary(
                    db,
                    game_id,
                    NewSummary(
                        kind=SummaryKind.RECAP, content=recap, first_entry_id=state.chapter_started_after + 1,
                        last_entry_id=last_id, first_turn=chunks[0].first_turn if chunks else first_turn,
                        last_turn=game.turn, chapter_index=state.chapter_index,
                    ),
                )  # fmt: skip
                story_id = current.story_id
                if story_text is not None and story is not None:
                    story_id = await self.store.add_summary(
                        db,
                        game_id,
                        NewSummary(
                            kind=SummaryKind.STORY, content=story_text, first_entry_id=story.first_entry_id,
                            last_entry_id=story.last_entry_id, first_turn=story.first_turn,
                            last_turn=story.last_turn, source_id=recap_id, previous_id=story.id,
                        ),
                    )  # fmt: skip
                await self.store.save_memory_state(
                    db,
                    current.model_copy(
                        update={
                            "chapter_index": current.chapter_index + 1,
                            "chapter_started_after": last_id,
                            "beats_done": (),
                            "story_id": story_id,
                            "front": await self.store.front_now(game_id),
                        }
                    ),
                )
        following = (
            world.chapters[state.chapter_index + 1].title if state.chapter_index + 1 < len(world.chapters) else None
        )
        log.info("Game %d: chapter %s finished", game_id, chapter.id)
        return ChapterReport(
            finished=chapter.title,
            recap=recap,
            next=following,
            story_words_before=story.words if story else 0,
            story_words_after=len(story_text.split()) if story_text else 0,
        )

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
                    raise _Conflict("the log changed while rebuilding")
                new_ids: dict[int, int] = {}
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
            return await self._write(recap_messages(world.title, chapter, material, words), words)
        if not entries:
            return "(These messages were deleted.)"
        bridge = await self.store.entry_before(game_id, entries[0].id)
        words = config.short_words
        return await self._write(chunk_messages(world.title, entries, bridge, words), words)

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
            source_text = rebuilt.get(source.id, source.content)
            if source.kind is SummaryKind.RECAP:
                chapter = world.chapters[source.chapter_index or 0]
                messages = integrate_messages(world.title, text or "", chapter, source_text, config.story_words)
            else:
                messages = fold_messages(world.title, text, source_text, config.story_words)
            text = await self._write(messages, config.story_words)
            replayed.append(text)
        return chain, replayed

    async def fill(self, game_id: int) -> float:
        """How full the last prompt's room for recent turns was; full when no turn was played yet."""
        traces = await self.store.traces(game_id, limit=1)
        if not traces:
            return 1.0
        return ContextTrace.model_validate_json(traces[0]).fill

    # What /memory-status shows (F17)

    async def trigger(self, game_id: int):
        state = await self.store.memory_state(game_id)
        unsummarized = await self.store.log_between(game_id, state.folded_through)
        texts = [render_entry(e) for e in unsummarized]
        try:
            tokens = await self.worker.count_many(texts)
        except ModelUnavailable as exc:  # a model server's tokenizer down: the figures are estimates meanwhile
            log.warning("Game %d: counting tokens failed (%s); estimating", game_id, exc)
            tokens = [(len(text) + 3) // 4 for text in texts]
        return next_trigger(unsummarized, tokens, await self.settings.memory(game_id))


def _switched_on(notes: dict[int, list[TurnNote]], buckets: Buckets) -> dict[int, list[TurnNote]]:
    """Earlier turns' notes without the buckets switched off since: a switch takes effect in the next prompt."""

    def on(note: TurnNote) -> bool:
        if note.layer == "lore":
            return buckets.lore
        if note.layer == "recall":
            return buckets.facts if note.ref.startswith("fact:") else buckets.recall
        return True

    return {entry_id: [n for n in entry_notes if on(n)] for entry_id, entry_notes in notes.items()}


def _item(summary: Summary) -> MemoryItem:
    return MemoryItem(f"summary:{summary.id}", summary.content)


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
