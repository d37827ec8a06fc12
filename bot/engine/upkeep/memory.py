"""The memory's upkeep: after each turn, the background jobs that keep a game's memory, as low-priority model jobs.

Policy (what to fold, what a prompt holds) lives in :mod:`bot.memory`; the
jobs read the store, ask the model through the queue at maintenance
priority, and write the result back in one transaction: the players'
private memories (:mod:`bot.engine.upkeep.players`), the chapter's beats
(:mod:`bot.engine.upkeep.chapters`), facts and glossary (:mod:`bot.engine.upkeep.ledger`),
summaries (:mod:`bot.engine.upkeep.summaries`). A job that fails changes nothing:
the old summaries stay, the marker stays, and the work is tried again after
the next turn. This module also gathers what a prompt is built from.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
from collections.abc import Callable, Sequence

from bot.engine.table.config import MEANING_WEIGHT
from bot.engine.table.session import Sessions
from bot.engine.table.settings import GameSettings
from bot.engine.upkeep.chapters import ChapterReport, Chapters
from bot.engine.upkeep.indexes import Scene
from bot.engine.upkeep.ledger import Ledger, LedgerFailed
from bot.engine.upkeep.meaning import MeaningIndex
from bot.engine.upkeep.players import PlayerMemories, PrivateMemoryFailed
from bot.engine.upkeep.summaries import CompactionReport, Summaries, SummaryInfo, UpkeepFailed, front_summaries
from bot.errors import UserError
from bot.memory.changes import ATTRIBUTE_NAMES, asks_for, attribute_name
from bot.memory.config import Buckets, MemoryConfig
from bot.memory.context import NEWER, MemoryItem, MemoryView
from bot.memory.facts import history_text
from bot.memory.history import ValueHistory
from bot.memory.npcs import Cast, NpcScene, cast_of
from bot.memory.recall import asks
from bot.model.sizing import REPLY_TOKENS
from bot.model.worker import ModelWorker
from bot.store import (
    Fact,
    Game,
    JobFailure,
    LogEntry,
    MemoryState,
    Store,
    Summary,
    SummaryKind,
    TurnNote,
    Visibility,
)
from bot.words import sentences
from bot.worlds import World

# The reports of the jobs, for the front ends' renderings.
__all__ = ["ChapterReport", "CompactionReport", "MemoryKeeper", "SummaryInfo", "UpkeepFailed"]

log = logging.getLogger(__name__)

# How close by meaning (on the bundled embedding model's scale) an asking action must come to a thing whose value
# the memory follows to be taken as asking about it. Set on bench change's tuned chains, asked in other words ("the
# silver candle holder" .40 of the swan candlestick, "the wine vault's lock" .52 of the cellar door code, "the
# boatman" .58, "the skipper's correspondence" .47, "the hurricane lamp" .48), against the long game's questions
# about other things (tests/engine/test_instruct_model.py), which came to .40 at most of those chains' things
# ("Which physician looked after the skipper when he was sick?" of the captain's letter); bench change reports the
# held-out chains. A question compares a thing by its name and by the sentences that told its values (see _told); a
# look or a search by its name alone: "I look around the cellar" asks nothing of the key carried down there. On bench
# change's 211 questions at the end of its 300-turn game (every change found), the thing taken was the one asked
# about for 149, another for 29 and none for 33, against 122, 23 and 66 by names alone; of the long game's ten
# questions, one more came near enough, "Is anything caught on them?" of the torn scrap of wool on the thorns.
SUBJECT_BY_MEANING = 0.45
TOLD_SENTENCES = 4  # of the turns that told a thing's values, compared with a question beside its name
TOLD_KEPT = 20_000  # facts whose telling sentences are kept, across games

PARK_AFTER = 3  # failures on the same input before a background job is parked
RETRY_PARKED_AFTER = 10  # turns before a parked job is tried again


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
        meaning_weight: int = MEANING_WEIGHT,
    ):
        self.store = store
        self.worker = worker
        self.world_of = world_of
        self.settings = settings or GameSettings(store, config, reply_tokens=REPLY_TOKENS)
        self.sessions = sessions if sessions is not None else Sessions()
        self.meaning = meaning
        self.ledger = Ledger(store, worker, world_of, self.settings, meaning=meaning, meaning_weight=meaning_weight)
        self.players = PlayerMemories(store, worker, world_of)
        self.summaries = Summaries(store, worker, world_of, self.settings, self.sessions)
        self.chapters = Chapters(store, worker, world_of, self.settings, self.sessions)
        self._casts: dict[str, tuple[World, Cast]] = {}
        self.held: set[int] | None = None  # games whose upkeep waits for release()
        self._told_of: dict[tuple[int, tuple[int, ...]], list[str]] = {}  # see _told

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
        story, shorts = await front_summaries(self.store, state)
        secret = action.visibility is Visibility.PRIVATE  # its answer goes to its player alone
        scene = Scene(
            action=action.content,
            recent=[e.line for e in hot[-config.lore_scan_depth :]],
            audience=action.player_id if secret else None,
        )
        recent = {f"entry:{e.id}" for e in hot}
        in_prompt = recent | {f"entry:{action.id}"} | {f"summary:{short.id}" for short in shorts}
        pins, glossary, lore, recall, recent_recall = await self.ledger.layers(
            game, scene, in_prompt, config, glossary_through=state.front.glossary_through, recent=recent
        )
        buckets = await self.settings.buckets(game.id)
        # A turn's notes stay beside its action until the front changes: the recent turns after it are read again
        # then anyway, and without the older turns' notes the room they free puts the next fold turns later.
        notes_after = max(state.folded_through, state.front.notes_through)
        notes = _switched_on(await self.store.turn_notes(game.id, notes_after), buckets)
        restated: dict[str, str] = {}
        if buckets.facts:
            recall = await self._newer_facts_first(game.id, notes, recall)
            if asks(action.content):
                recall = await self._asked_about(game.id, action.content, recall)
            restated = restated_notes(notes, await self.ledger.value_history(game.id))
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
            short=[_item(short) for short in shorts],
            hot=hot,
            lore=lore,
            recall=recall,
            recent_recall=recent_recall,
            scene=npcs,
            threads=await self.players.threads(game.id, list(players), state.front.memories),
            notes=notes,
            restated=restated,
        )

    async def _newer_facts_first(
        self, game_id: int, notes: dict[int, list[TurnNote]], recall: list[MemoryItem]
    ) -> list[MemoryItem]:
        """Recall that follows change (F40): a value that changed is shown as it holds now, with what it replaced
        marked older ("the well (before: on the chapel altar until turn 230)"), never an older value alone.

        A fact that earlier turns' notes show and that a newer one has superseded ("the key: on the desk", then
        "the key: in the cellar") brings its current value first. A recalled turn that told a value since
        superseded is marked so, and followed by the value that holds now: a small model answers from what sits
        beside the question, and answered the key's old place."""
        history = await self.ledger.value_history(game_id)
        held = {note.ref for entry_notes in notes.values() for note in entry_notes}
        shown = [int(ref.split(":")[1]) for ref in held if ref.startswith("fact:")]
        current = {fact.id: fact for fact_id in shown if (fact := history.holds_now(fact_id)) is not None}
        newer = [_newer(fact, history) for fact in current.values() if f"fact:{fact.id}" not in held]
        taken = {item.ref for item in newer}
        ordered = list(newer)
        for item in recall:
            kind, _, number = item.ref.partition(":")
            follows: list[MemoryItem] = []
            if kind == "entry":
                now = history.told_by(int(number), item.text, _turn_of(item.text))
                if now:
                    item = dataclasses.replace(item, text=_older(item.text))
                    follows = [_newer(fact, history) for fact in now]
            elif kind == "fact" and (fact := history.facts.get(int(number))) is not None and history.earlier(fact):
                item = dataclasses.replace(item, text=f"[fact, now] {history_text(fact, history.earlier(fact))}")
            for one in [item, *follows]:
                if one.ref not in taken:
                    ordered.append(one)
                    taken.add(one.ref)
        return ordered

    async def _asked_about(self, game_id: int, action: str, recall: list[MemoryItem]) -> list[MemoryItem]:
        """``recall`` with the current values of the thing an asking action asks about first, found by meaning
        among the things whose place, holder, code, side or state the memory follows, and marked as leads for the
        brief told beside the action (see bot.memory.recall.memory_brief).

        A question in other words names no word of its thing ("Where has the scarlet banner got to?" of the red
        signal flag, "What number opens the wine vault's lock now?" of the cellar door code), so the brief, which
        matched a fact's subject by its words, told none, and the default model answered with an older value or
        another thing's (bench change: replies saying the latest value .45 of the tuned chains' questions)."""
        if self.meaning is None or not self.meaning.on:
            return recall
        history = await self.ledger.value_history(game_id)
        followed = [f for f in history.facts.values() if f.active and attribute_name(f.attribute) in ATTRIBUTE_NAMES]
        # The nearest thing is taken only for what the question can ask of it: "Where would I find the carved bone
        # needle?" is not asking Tally's side, though no thing followed came nearer (bench change: the engine told
        # "Tally, allegiance: the smugglers." after the reply, as the notes' answer).
        fits = asks_for(action)
        subjects = list(dict.fromkeys(
            f.subject for f in followed if fits is None or attribute_name(f.attribute) in fits
        ))  # fmt: skip
        if not subjects:
            return recall
        query = await self.meaning.query(action)
        scores = await self.meaning.lore_scores(subjects, query)
        if "?" in action:  # a question, not a look: "I look around the cellar" is no question of the key put there
            told = await self._told(history)
            by_story = await self.meaning.lore_scores([_story(s, told) for s in subjects], query)
            scores = [max(name, story) for name, story in zip(scores, by_story, strict=True)]
        best = max(range(len(subjects)), key=scores.__getitem__)
        if scores[best] < SUBJECT_BY_MEANING:
            return recall
        facts = sorted(
            (f for f in followed
             if f.subject == subjects[best] and (fits is None or attribute_name(f.attribute) in fits)),
            key=lambda f: (f.turn, f.id), reverse=True,
        )  # fmt: skip
        asked = [dataclasses.replace(_newer(fact, history), lead=True) for fact in facts]
        refs = {item.ref for item in asked}
        return asked + [item for item in recall if item.ref not in refs]

    async def _told(self, history: ValueHistory) -> dict[str, str]:
        """For each thing whose values the memory follows, the sentences of the turns that told them (at most
        :data:`TOLD_SENTENCES`, its first): a question in other words is nearer the story of a thing than its name
        ("the jarl's carved tafl set" of the ivory game board that "Jarl Ragnvald still grumbles about")."""
        told: dict[str, list[str]] = {}
        for fact in sorted(history.facts.values(), key=lambda f: (f.turn, f.id)):
            if attribute_name(fact.attribute) not in ATTRIBUTE_NAMES or fact.retracted_at is not None:
                continue
            key = (fact.id, fact.sources)
            if key not in self._told_of:
                if len(self._told_of) >= TOLD_KEPT:
                    self._told_of.clear()
                texts = []
                for source in fact.sources:
                    with contextlib.suppress(UserError):  # a turn taken back since: its sentences tell nothing
                        texts.append((await self.store.entry(source)).content)
                self._told_of[key] = telling(fact, texts)
            said = told.setdefault(fact.subject, [])
            said += [sentence for sentence in self._told_of[key] if sentence not in said]
        return {subject: " ".join(sentences[:TOLD_SENTENCES]) for subject, sentences in told.items()}

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
        await self._ready_stories(game_id)

    async def _ready_stories(self, game_id: int) -> None:
        """The sentences that told each followed thing's values (see :meth:`_told`), embedded between turns: a
        question in other words is compared with them, and a turn that embedded a long game's all at once would
        pass its deadline and go without."""
        if self.meaning is None or not self.meaning.on:
            return
        try:
            told = await self._told(await self.ledger.value_history(game_id))
            await self.meaning.vectors_of([_story(subject, told) for subject in told])
        except Exception as exc:  # the turn embeds what it needs, as before
            log.warning("Game %d: embedding what the turns told of things failed (%s)", game_id, exc)

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

    # The summaries and the chapters: the jobs themselves are in bot.engine.upkeep.summaries and .chapters

    async def compact(self, game_id: int, *, force: bool = False) -> CompactionReport:
        """Fold every closed chunk of the hot window (``force``: everything but the protected tail).

        Asked for by someone (``force``), it also gives parked background jobs another try.
        """
        if force:
            await self.store.clear_job_failures(game_id)
            self.schedule(game_id)
        return await self.summaries.compact(game_id, force=force)

    async def rebuild_stale(self, game_id: int) -> int:
        """Rewrite the summaries an edit or a delete made stale; return how many (F19)."""
        return await self.summaries.rebuild_stale(game_id)

    async def judge_beats(self, game_id: int) -> None:
        """Ask the model which open beats the latest events completed; finish the chapter when all are."""
        await self.chapters.judge_beats(game_id)

    async def finish_chapter(self, game_id: int) -> ChapterReport:
        """Write the chapter's recap, fold the chapter into the story, and move to the next chapter."""
        return await self.chapters.finish_chapter(game_id)

    async def trigger(self, game_id: int):
        """What the next compaction waits for (for /memory-status)."""
        return await self.summaries.trigger(game_id)


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


def _story(subject: str, told: dict[str, str]) -> str:
    return f"{subject}. {told[subject]}" if told.get(subject) else subject


def telling(fact: Fact, texts: Sequence[str]) -> list[str]:
    """The sentences of ``texts`` (the turns a fact came from) that tell it: that say its value's last word or its
    thing's."""
    marks = {word.casefold() for word in (fact.value.split()[-1:] + fact.subject.split()[-1:])}
    return [
        sentence for text in texts for sentence in sentences(text)
        if marks & {word.casefold() for word in re.findall(r"[\w'-]+", sentence)}
    ]  # fmt: skip


def _newer(fact: Fact, history: ValueHistory) -> MemoryItem:
    return MemoryItem(f"fact:{fact.id}", f"[fact, now] {history_text(fact, history.earlier(fact))}", found_by=NEWER)


def _turn_of(text: str) -> int | None:
    """The turn a recalled fragment's label names ("[turn 70] ..."), or ``None``."""
    found = re.match(r"^\[turn (\d+)", text)
    return int(found.group(1)) if found else None


def restated_notes(notes: dict[int, list[TurnNote]], history: ValueHistory) -> dict[str, str]:
    """Earlier turns' notes that told a value since changed, marked older where they stand (F40): "[fact, until
    turn 230] ...", "[turn 70, since changed] ..."."""
    restated = {}
    for entry_notes in notes.values():
        for note in entry_notes:
            kind, _, number = note.ref.partition(":")
            if not number.isdigit():
                continue
            if kind == "fact" and (fact := history.facts.get(int(number))) is not None and not fact.active:
                if fact.superseded_turn is not None and note.text.startswith("[fact"):
                    body = note.text.split("] ", 1)[-1]
                    restated[note.ref] = f"[fact, until turn {fact.superseded_turn}] {body}"
            elif kind == "entry" and history.told_by(int(number), note.text, _turn_of(note.text)):
                restated[note.ref] = _older(note.text)
    return restated


def _older(text: str) -> str:
    """A recalled turn's label, marked as telling a value since changed: "[turn 70, since changed] ..."."""
    return re.sub(r"^\[(turn \d+)\]", r"[\1, since changed]", text, count=1)
