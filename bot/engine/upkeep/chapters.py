"""The story's chapters (F10): which beats the latest events completed, and a chapter's end with its recap."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pydantic import BaseModel

from bot.engine.upkeep.summaries import RECAP_MATERIAL_ENTRIES, LogChanged, UpkeepFailed, UpkeepJobs
from bot.errors import UserError
from bot.memory.chapters import BeatsAnswer, beats_messages, beats_schema, integrate_messages, recap_messages
from bot.memory.compaction import render_entry
from bot.memory.config import MemoryConfig
from bot.model.worker import Priority
from bot.store import Game, LogEntry, MemoryState, NewSummary, Summary, SummaryKind, Visibility
from bot.worlds import Chapter, World

log = logging.getLogger(__name__)


class ChapterReport(BaseModel):
    finished: str
    recap: str
    next: str | None
    story_words_before: int
    story_words_after: int


@dataclass(frozen=True)
class _Written:
    """A finished chapter's texts, before they are saved: its recap, and the story with the recap folded in."""

    recap: str
    story: Summary | None  # the story before
    story_text: str | None  # the story after
    first_turn: int | None  # the chapter's first turn
    last_id: int  # the chapter's last entry


class Chapters(UpkeepJobs):
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
            newly = await self._judge(game_id, chapter, open_beats, recent)
            if newly:
                log.info("Game %d: beats done in %s: %s", game_id, chapter.id, ", ".join(newly))
                open_beats = [b for b in open_beats if b not in newly]
        if not open_beats:
            await self.finish_chapter(game_id)

    async def _judge(self, game_id: int, chapter: Chapter, open_beats: list[str], recent: list[LogEntry]) -> list[str]:
        """The open beats the model judges ``recent`` completed, saved as done."""
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
        return newly

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
            written = await self._write_chapter(game_id, world, chapter, state, chunks, config)
            await self._save_chapter(game, state, chunks, written)
        following = (
            world.chapters[state.chapter_index + 1].title if state.chapter_index + 1 < len(world.chapters) else None
        )
        log.info("Game %d: chapter %s finished", game_id, chapter.id)
        return ChapterReport(
            finished=chapter.title,
            recap=written.recap,
            next=following,
            story_words_before=written.story.words if written.story else 0,
            story_words_after=len(written.story_text.split()) if written.story_text else 0,
        )

    async def _write_chapter(
        self, game_id: int, world: World, chapter: Chapter, state: MemoryState, chunks: list[Summary],
        config: MemoryConfig,
    ) -> _Written:  # fmt: skip
        """The recap of the chapter (from its summarized chunks and its public messages since), and the story
        with it folded in."""
        fresh = await self.store.log_between(game_id, max(state.folded_through, state.chapter_started_after))
        fresh = [e for e in fresh if e.visibility is Visibility.PUBLIC]  # a recap is public
        material = [s.content for s in chunks] + [render_entry(e) for e in fresh[-RECAP_MATERIAL_ENTRIES:]]
        words = config.recap_words
        recap = await self._write(
            recap_messages(world.title, chapter, material or ["(nothing)"], words), words, game_id
        )
        story = await self.store.summary(state.story_id)
        story_text = None
        if story is not None:
            story_text = await self._write(
                integrate_messages(world.title, story.content, chapter, recap, config.story_words),
                config.story_words, game_id,
            )  # fmt: skip
        last = await self.store.recent_log(game_id, 1)
        last_id = last[-1].id if last else state.chapter_started_after
        return _Written(recap, story, story_text, fresh[0].turn if fresh else None, last_id)

    async def _save_chapter(self, game: Game, state: MemoryState, chunks: list[Summary], written: _Written) -> None:
        """The recap and the new story saved, and the memory moved to the next chapter, in one transaction."""
        game_id, story = game.id, written.story
        async with self.store.transaction() as db:
            current = await self.store.memory_state(game_id)
            if current.chapter_index != state.chapter_index or current.story_id != state.story_id:
                raise LogChanged("the memory changed while writing the recap")
            recap_id = await self.store.add_summary(
                db,
                game_id,
                NewSummary(
                    kind=SummaryKind.RECAP, content=written.recap, first_entry_id=state.chapter_started_after + 1,
                    last_entry_id=written.last_id, first_turn=chunks[0].first_turn if chunks else written.first_turn,
                    last_turn=game.turn, chapter_index=state.chapter_index,
                ),
            )  # fmt: skip
            story_id = current.story_id
            if written.story_text is not None and story is not None:
                story_id = await self.store.add_summary(
                    db,
                    game_id,
                    NewSummary(
                        kind=SummaryKind.STORY, content=written.story_text, first_entry_id=story.first_entry_id,
                        last_entry_id=story.last_entry_id, first_turn=story.first_turn,
                        last_turn=story.last_turn, source_id=recap_id, previous_id=story.id,
                    ),
                )  # fmt: skip
            update = {
                "chapter_index": current.chapter_index + 1,
                "chapter_started_after": written.last_id,
                "beats_done": (),
                "story_id": story_id,
                "front": await self.store.front_now(game_id),
            }
            await self.store.save_memory_state(db, current.model_copy(update=update))
