"""Pins, facts, lore, glossary and recall for each game: what survives summaries (F11 to F15, F20).

Summaries are lossy; these keep the specific clue, the coined name and the
promise made at turn 12. Pins and lore are set by people, facts and the
glossary are written by background jobs after each GM turn, and recall
searches everything the game has said before the GM writes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass

from pydantic import ValidationError

from bot.cleantext import clean_text, clean_tree
from bot.engine.table.config import MEANING_WEIGHT
from bot.engine.table.settings import GameSettings
from bot.engine.upkeep.indexes import RecallIndex, Scene, recall_indexes
from bot.engine.upkeep.meaning import MeaningIndex, Query
from bot.errors import UserError
from bot.memory.changes import ATTRIBUTE_NAMES, Change, attribute_name, beyond_the_questions, changes_in, said_anew
from bot.memory.compaction import in_batches
from bot.memory.config import MemoryConfig
from bot.memory.context import MemoryItem
from bot.memory.facts import (
    Extraction,
    changes_as_facts,
    ends,
    extraction_messages,
    grounded,
    merge,
    same_thing,
    sources_for,
    to_new_fact,
)
from bot.memory.glossary import Definition, candidate_terms, definition_messages, definitions_schema
from bot.memory.history import ValueHistory
from bot.memory.lore import LoreMatch, match_lore, scan_texts
from bot.memory.recall import (
    candidates_by_meaning,
    clear_by_meaning,
    distinct,
    found_by,
    fragments,
    fuse,
    leads,
    meaning_leads,
    query_terms,
    recent_places,
)
from bot.memory.transcript import RECENT_REPLIES
from bot.model.worker import ModelWorker, Priority
from bot.store import (
    EntryKind,
    Fact,
    FactKind,
    Game,
    GlossaryTerm,
    LogEntry,
    NewFact,
    Pin,
    RecallHit,
    Store,
    Visibility,
)
from bot.worlds import LoreEntry, World, format_validation_error

log = logging.getLogger(__name__)


MAX_GAME_LORE = 500  # entries in one game's world book, the world's and the game's own
MAX_IMPORT_ENTRIES = 200  # entries one import may add


class LedgerFailed(Exception):
    """A background ledger job could not finish; nothing was written."""


@dataclass(frozen=True)
class PinResult:
    pin: Pin
    moved: Pin | None = None  # the oldest pin, moved to the facts library because of the cap


@dataclass(frozen=True)
class LoreListing:
    entry: LoreEntry
    source: str  # "world" or "game"


class Ledger:
    def __init__(
        self,
        store: Store,
        worker: ModelWorker,
        world_of: Callable[[Game], World],
        settings: GameSettings,
        indexes: Sequence[RecallIndex] | None = None,
        meaning: MeaningIndex | None = None,
        meaning_weight: int = MEANING_WEIGHT,
    ):
        self.store = store
        self.worker = worker
        self.world_of = world_of
        self.settings = settings
        self.meaning = meaning
        self.indexes = list(recall_indexes(store, meaning, meaning_weight) if indexes is None else indexes)

    # Pins (F11)

    async def pin(self, game_id: int, text: str, author: str) -> PinResult:
        text = " ".join(clean_text(text).split())
        if not text:
            raise UserError("Say what to pin.")
        if len(text) > 300:
            raise UserError("A pin is at most 300 characters.")
        pins = await self.store.pins(game_id)
        config = await self.settings.memory(game_id)
        if any(p.text.casefold() == text.casefold() for p in pins):
            raise UserError("That is pinned already.")
        pin = await self.store.add_pin(game_id, text, author)
        moved = None
        if len(pins) + 1 > config.pin_cap:
            moved = pins[0]
            game = await self.store.game(game_id)
            async with self.store.transaction() as db:
                fact_id = await self.store.add_fact(
                    db,
                    game_id,
                    NewFact(kind=FactKind.PINNED, subject="pin", attribute=f"pin {moved.id}", value=moved.text,
                            turn=game.turn),
                )  # fmt: skip
            await self.store.remove_pin(moved.id, moved_to_fact=fact_id)
        return PinResult(pin, moved)

    async def unpin(self, game_id: int, which: str) -> Pin:
        """Remove a pin named by its number in ``/pins`` or by the start of its text."""
        pins = await self.store.pins(game_id)
        which = which.strip()
        chosen = None
        if which.isdigit() and 1 <= int(which) <= len(pins):
            chosen = pins[int(which) - 1]
        else:
            matches = [p for p in pins if p.text.casefold().startswith(which.casefold())] if which else []
            if len(matches) > 1:
                raise UserError(f"{len(matches)} pins start with that; give its number from /pins.")
            chosen = matches[0] if matches else None
        if chosen is None:
            raise UserError("No pin matches that; /pins lists them.")
        await self.store.remove_pin(chosen.id)
        return chosen

    # Facts (F12)

    async def extract_facts(self, game_id: int) -> int:
        """Record the facts in the entries since the last extraction; return how many were new."""
        game = await self.store.game(game_id)
        world = self.world_of(game)
        written = 0
        for entry_id in await self.store.facts_to_redo(game_id):
            entry = await self.store.entry(entry_id)
            turn_entries = [
                e
                for e in await self.store.log_between(game_id, 0)
                if e.turn == entry.turn and e.visibility is Visibility.PUBLIC
            ]
            written += await self._extract(game_id, world, turn_entries, done_redo=[entry_id])
        checked = await self.store.checked_through("facts_checked", game_id)
        # Facts are public memory: what the GM told one player alone stays out of them.
        fresh = [e for e in await self.store.log_between(game_id, checked) if e.visibility is Visibility.PUBLIC]
        if not any(e.kind is EntryKind.GM for e in fresh):
            return written
        # Behind by several turns (a busy table), the backlog is read in as few calls as fit, all of it.
        for batch in in_batches(fresh, await self.worker.count_many([e.line for e in fresh])):
            written += await self._extract(game_id, world, batch, checked_through=batch[-1].id)
        return written

    async def _extract(
        self,
        game_id: int,
        world: World,
        entries: list[LogEntry],
        *,
        checked_through: int | None = None,
        done_redo: list[int] | None = None,
    ) -> int:
        result = await self.worker.generate_object(
            extraction_messages(world.title, entries),
            Extraction,
            fallback=Extraction(facts=[]),
            max_tokens=400,
            priority=Priority.MAINTENANCE,
        )
        if not result.ok:
            raise LedgerFailed(f"no usable facts from the extractor: {'; '.join(result.errors)}")
        turn = max((e.turn for e in entries), default=0)
        known = [fact.subject for fact in await self.store.facts(game_id)]
        kept = [f for f in result.value.facts if grounded(f, entries, known)]
        if len(kept) < len(result.value.facts):
            log.info("Game %d: %d extracted facts name nothing in the events; left out", game_id,
                     len(result.value.facts) - len(kept))  # fmt: skip
        new = [to_new_fact(f, sources_for(f, entries), turn) for f in kept] if entries else []
        async with self.store.transaction() as db:
            plan = merge(await self.store.facts(game_id), new)
            await self._apply(db, game_id, plan)
            if checked_through is not None:
                await self.store.set_checked_through(db, "facts_checked", game_id, checked_through)
            if done_redo:
                await self.store.done_redo(db, game_id, done_redo)
        added = sum(1 for step in plan if step.duplicate_of is None)
        if added:
            log.info("Game %d: %d facts recorded", game_id, added)
        return added

    async def record_changes(self, game_id: int, entries: Sequence[LogEntry]) -> int:
        """What the turn's public entries say changed (a thing moved, handed over, a code, a side, an end), found in
        their words (:mod:`bot.memory.changes`) as soon as they are stored, and recorded as facts superseding what
        the memory held: a small model's facts job misses a move as often as not. Returns how many were new."""
        public = [e for e in entries if e.visibility is Visibility.PUBLIC and not e.deleted]
        if not public:
            return 0
        # A reply's answer to a question of its turn, or a sentence it says again, moves nothing.
        questions = [e.content for e in public if e.kind is EntryKind.ACTION and "?" in e.content]
        these = {e.id for e in public}
        earlier = [e.content for e in await self.store.recent_log(game_id, 4 * RECENT_REPLIES)
                   if e.kind is EntryKind.GM and e.id not in these][-RECENT_REPLIES:]  # fmt: skip
        # read off the event loop: a sentence's grammar takes milliseconds (bot.memory.parsed)
        read = await asyncio.to_thread(_changes_of, public, [f.subject for f in await self.store.facts(game_id)])
        async with self.store.transaction() as db:
            active = await self.store.facts(game_id)
            new = []
            for entry, found in zip(public, read, strict=True):
                if entry.kind is EntryKind.GM:
                    found = said_anew(beyond_the_questions(found, questions), earlier)
                new += changes_as_facts(found, (entry.id,), entry.turn)
            if not new:
                return 0
            plan = merge(active, new)
            added = await self._apply(db, game_id, plan)
        for step in plan:
            if step.adds:
                log.info("Game %d: change found in play: %s", game_id, step.fact.text)
        return added

    async def _apply(self, db, game_id: int, plan: list) -> int:
        """A merge plan written: facts added, superseding what they contradict, duplicates' sources merged."""
        added: dict[int, int] = {}  # plan step -> the id of the fact it added
        for index, step in enumerate(plan):
            if step.duplicate_of is not None or step.duplicate_of_step is not None:
                target = step.duplicate_of.id if step.duplicate_of else added[step.duplicate_of_step]
                await self.store.merge_fact_sources(db, target, step.fact.sources)
                continue
            added[index] = fact_id = await self.store.add_fact(db, game_id, step.fact)
            if step.supersedes is not None or step.supersedes_step is not None:
                replaced = step.supersedes.id if step.supersedes else added[step.supersedes_step]
                await self.store.supersede_fact(db, replaced, fact_id, step.fact.turn)
            for fact in await self.store.facts(game_id):
                if fact.id != fact_id and same_thing(fact, step.fact) and _made_false(fact, step.fact):
                    await self.store.supersede_fact(db, fact.id, fact_id, step.fact.turn)
        return len(added)

    async def value_history(self, game_id: int) -> ValueHistory:
        """The game's facts as a history of values: which holds now in place of each superseded one, and what
        each current one replaced (for the prompt: the latest value as current, older ones marked older)."""
        return ValueHistory(await self.store.facts(game_id, active_only=False))

    async def facts(self, game_id: int, *, include_superseded: bool = False) -> list[Fact]:
        return await self.store.facts(game_id, active_only=not include_superseded)

    # World book (F13)

    async def lore(self, game_id: int) -> list[LoreListing]:
        """The game's lore: the world's entries, with run-time additions and changes applied."""
        game = await self.store.game(game_id)
        changes = await self.store.game_lore(game_id)
        listing = []
        for entry in self.world_of(game).lore:
            if entry.id in changes:
                continue
            listing.append(LoreListing(entry, "world"))
        listing += [LoreListing(entry, "game") for entry in changes.values() if entry is not None]
        return listing

    async def lore_add(self, game_id: int, **fields) -> LoreEntry:
        existing = {item.entry.id for item in await self.lore(game_id)}
        _room_for(len(existing), 1)
        if not fields.get("id"):
            base = _slug(fields.get("keys", ["entry"])[0] if fields.get("keys") else "entry")
            fields["id"] = _unique(base, existing)
        elif fields["id"] in existing:
            raise UserError(f"There is already a lore entry {fields['id']!r}; edit it instead.")
        entry = _lore_entry(fields)
        await self.store.put_lore(game_id, entry)
        return entry

    async def lore_edit(self, game_id: int, entry_id: str, **changes) -> LoreEntry:
        current = {item.entry.id: item.entry for item in await self.lore(game_id)}
        if entry_id not in current:
            raise UserError(f"There is no lore entry {entry_id!r}.")
        data = current[entry_id].model_dump()
        data.update({k: v for k, v in changes.items() if v is not None})
        entry = _lore_entry(data)
        await self.store.put_lore(game_id, entry)
        return entry

    async def lore_remove(self, game_id: int, entry_id: str) -> LoreEntry:
        current = {item.entry.id: item.entry for item in await self.lore(game_id)}
        if entry_id not in current:
            raise UserError(f"There is no lore entry {entry_id!r}.")
        await self.store.put_lore(game_id, current[entry_id], removed=True)
        return current[entry_id]

    async def lore_import(self, game_id: int, entries: Sequence[LoreEntry]) -> list[LoreEntry]:
        """Add imported entries to a game's world book, all of them or (past a limit) none."""
        existing = {item.entry.id for item in await self.lore(game_id)}
        if len(entries) > MAX_IMPORT_ENTRIES:
            raise UserError(
                f"That export has {len(entries)} entries; at most {MAX_IMPORT_ENTRIES} are imported at once. "
                "Nothing was added: split the export."
            )
        _room_for(len(existing), len(entries))
        added = []
        for entry in entries:
            entry = entry.model_copy(update={"id": _unique(entry.id, existing)})
            existing.add(entry.id)
            await self.store.put_lore(game_id, entry)
            added.append(entry)
        return added

    # Glossary (F14)

    async def define_terms(self, game_id: int) -> int:
        """Define the new proper nouns and coined terms of the GM's latest replies; return how many."""
        checked = await self.store.checked_through("glossary_checked", game_id)
        fresh = [
            e
            for e in await self.store.log_between(game_id, checked)
            if e.kind is EntryKind.GM and e.visibility is Visibility.PUBLIC
        ]
        if not fresh:
            return 0
        game = await self.store.game(game_id)
        world = self.world_of(game)
        known = await self._known_terms(game_id, world)
        config = await self.settings.memory(game_id)
        text = "\n".join(e.content for e in fresh)
        terms = candidate_terms(text, known, config.glossary_terms_per_turn)
        added = 0
        definitions: list[Definition] = []
        if terms:
            schema = definitions_schema(terms)
            result = await self.worker.generate_object(
                definition_messages(world.title, terms, text[-2000:]),
                schema,
                fallback=schema(definitions=[]),
                max_tokens=60 * len(terms),
                priority=Priority.MAINTENANCE,
            )
            if not result.ok:
                raise LedgerFailed(f"no usable glossary definitions: {'; '.join(result.errors)}")
            definitions = result.value.definitions
        async with self.store.transaction() as db:
            for item in definitions:
                source = next((e.id for e in fresh if item.term in e.content), fresh[-1].id)
                await self.store.add_glossary(db, game_id, item.term, " ".join(item.definition.split()), source)
                added += 1
            await self.store.set_checked_through(db, "glossary_checked", game_id, fresh[-1].id)
        return added

    async def _known_terms(self, game_id: int, world: World) -> set[str]:
        known = {world.title, *(npc.name for npc in world.npcs), *(c.title for c in world.chapters)}
        known |= {name for npc in world.npcs for name in npc.name.split()}
        known |= {key for item in await self.lore(game_id) for key in item.entry.keys}
        known |= {p.name for p in await self.store.players(game_id)}
        known |= {t.term for t in await self.store.glossary(game_id)}
        return known

    async def glossary(self, game_id: int) -> list[GlossaryTerm]:
        return await self.store.glossary(game_id)

    async def glossary_edit(self, game_id: int, term: str, definition: str) -> None:
        term, definition = " ".join(term.split()), " ".join(definition.split())
        if not term or not definition:
            raise UserError("Give a term and its definition.")
        if len(term) > 60 or len(definition) > 200:
            raise UserError("A term is at most 60 characters and a definition at most 200.")
        await self.store.edit_glossary(game_id, term, definition)

    async def glossary_remove(self, game_id: int, term: str) -> None:
        if not await self.store.remove_glossary(game_id, term):
            raise UserError(f"The glossary has no {term!r}.")

    # What goes into the prompt

    async def layers(
        self,
        game: Game,
        scene: Scene,
        exclude: set[str],
        config: MemoryConfig,
        *,
        glossary_through: int | None = None,
        recent: Set[str] = frozenset(),
    ) -> tuple[list[MemoryItem], list[MemoryItem], list[MemoryItem], list[MemoryItem], list[tuple[str, MemoryItem]]]:
        """Pins, glossary, triggered lore and recalled fragments for this turn, each bucket if switched on, and the
        fragments of the ``recent`` turns (which ``exclude`` leaves out of recall: the prompt holds them) that
        recall ranked, each with the ref of the recalled fragment it ranks before ("" for none), in case the
        prompt's budget cuts their turn from the recent window.

        ``glossary_through`` keeps to the terms the prompt's front was fixed with (see FrontSnapshot).
        """
        buckets = await self.settings.buckets(game.id)
        pins = [MemoryItem(f"pin:{p.id}", p.text) for p in await self.store.pins(game.id)] if buckets.pins else []
        terms = await self.store.glossary(game.id) if buckets.glossary else []
        glossary = [
            MemoryItem(f"glossary:{t.id}", f"{t.term}: {t.definition}")
            for t in terms
            if glossary_through is None or t.id <= glossary_through
        ]
        kinds = {"entry", "summary"} if buckets.recall else set()
        if buckets.facts:
            kinds.add("fact")
        if self.meaning is not None and (kinds or buckets.lore):
            scene = dataclasses.replace(scene, query=await self.meaning.query(scene.meaning))
        lore = []
        if buckets.lore:
            entries = [item.entry for item in await self.lore(game.id)]
            texts = scan_texts(scene.action, scene.recent, config.lore_scan_depth)
            fired = match_lore([e for e in entries if e.match != "meaning"], texts)
            fired += await self._lore_by_meaning([e for e in entries if e.match != "keys"], fired, scene.query)
            lore = [MemoryItem(f"lore:{m.entry.id}", m.entry.content, m.entry.priority) for m in fired]
        recall, placed = await self._recalled(game.id, scene, kinds, exclude, recent, config) if kinds else ([], [])
        return pins, glossary, lore, recall, placed

    async def _recalled(
        self, game_id: int, scene: Scene, kinds: set[str], exclude: set[str], recent: Set[str], config: MemoryConfig
    ) -> tuple[list[MemoryItem], list[tuple[str, MemoryItem]]]:
        """:meth:`layers`' recalled fragments, marked as leads, clear by meaning or candidates for the brief, and
        the recent turns' fragments with the recalled one each ranks before."""
        fused, named, by_meaning = await self._rankings(game_id, scene, kinds, config.recall_candidates)
        hits = meaning_leads([h for h in fused if h.ref not in exclude], named.get("meaning", ()))
        following = {}
        if config.recall_following:
            # Only the leading hits can fit a prompt; their neighbours are looked up, not all 200.
            lead = [int(h.ref.split(":")[1]) for h in hits[: config.recall_following] if h.ref.startswith("entry:")]
            following = await self.store.following_entries(game_id, lead)
        keywords, words, sources = query_terms(scene.action), config.excerpt_words, found_by(named)
        recall = fragments(hits, exclude, kinds, following, sources, keywords, words)
        leading = leads(hits, named.get("meaning", ()))
        # Of what the prompt does not hold: the action itself is indexed as soon as it is logged.
        clear = clear_by_meaning([h for h in by_meaning if h.ref not in exclude])
        meant = candidates_by_meaning(by_meaning, exclude, recent)
        recall = [
            dataclasses.replace(
                item, lead=item.ref in leading or item.lead, clear=item.ref == clear,
                meant=meant.index(item.ref) + 1 if item.ref in meant else 0,
            )
            if item.ref in leading or item.ref == clear or item.ref in meant else item
            for item in recall
        ]  # fmt: skip
        return recall, recent_places(fused, exclude, recent, kinds, sources, keywords, words)

    async def ranked(
        self, game_id: int, scene: Scene, kinds: set[str], exclude: set[str], limit: int
    ) -> tuple[list[RecallHit], dict[str, list[RecallHit]]]:
        """Every index's ranking for ``scene`` by the index's name (``bm25-action``: the action's words,
        ``bm25``: with the scene's, ``meaning``), and the fused one recall offers from, of ``kinds`` and leaving
        out ``exclude``."""
        fused, named, _ = await self._rankings(game_id, scene, kinds, limit)
        return meaning_leads([h for h in fused if h.ref not in exclude], named.get("meaning", ())), named

    async def _rankings(
        self, game_id: int, scene: Scene, kinds: set[str], limit: int
    ) -> tuple[list[RecallHit], dict[str, list[RecallHit]], list[RecallHit]]:
        """The fused ranking of ``kinds``, whatever the prompt holds, every index's by name, and the meaning
        index's before :func:`bot.memory.recall.distinct` (a fragment saying what others say too, each there)."""
        searched: dict[int, list[RecallHit]] = {}  # an index listed twice counts twice, searched once
        every: list[RecallHit] = []
        for index in self.indexes:
            if id(index) not in searched:
                found = await index.search(game_id, scene, limit)
                searched[id(index)] = distinct(found)
                if index.name == "meaning":
                    every = [h for h in found if h.ref.split(":")[0] in kinds]
        rankings = [searched[id(index)] for index in self.indexes]
        named = {index.name: searched[id(index)] for index in self.indexes}
        return [h for h in fuse(rankings) if h.ref.split(":")[0] in kinds], named, every

    async def _lore_by_meaning(
        self, entries: Sequence[LoreEntry], fired: Sequence[LoreMatch], query: Query | None
    ) -> list[LoreMatch]:
        """Entries that fire because the scene means what they are about (``match: meaning`` or ``both``)."""
        if self.meaning is None or query is None or not entries:
            return []
        taken = {m.entry.id for m in fired}
        candidates = [e for e in entries if e.id not in taken and not e.always_on]
        scores = await self.meaning.lore_scores([e.content for e in candidates], query)
        matches = [LoreMatch(e, None) for e, score in zip(candidates, scores, strict=True) if score >= e.threshold]
        return sorted(matches, key=lambda match: -match.entry.priority)


def _room_for(present: int, more: int) -> None:
    """Refuse lore past the per-game limit: every entry is matched against every turn."""
    if present + more > MAX_GAME_LORE:
        raise UserError(
            f"This game's world book has {present} entries; {more} more would pass the limit of {MAX_GAME_LORE}. "
            "Nothing was added: remove some first."
        )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "entry"


def _unique(base: str, taken: set[str]) -> str:
    candidate, n = base, 2
    while candidate in taken:
        candidate = f"{base}-{n}"
        n += 1
    return candidate


def _lore_entry(fields: dict) -> LoreEntry:
    try:
        return LoreEntry.model_validate(clean_tree(fields))
    except ValidationError as exc:
        problems = (line.removeprefix("(top level): ") for line in format_validation_error(exc))
        raise UserError("; ".join(problems)) from None


def _made_false(fact: Fact, new: NewFact) -> bool:
    """Whether a new fact of the same thing makes an older one of another attribute false: a thing burned or used
    up is nowhere and held by no one any more; one put somewhere is no longer held as it was told before, one
    taken or handed over no longer where it lay ("the chart hangs above the tavern's hearth": Corwin Thale, who
    pocketed it turns before, holds it no more). Said in one turn, a place and a holder stand together ("keeps the
    compass on a chain at her throat"). And one held under another of its names ("sealed orders", then "sealed
    orders envelope", both in the wardroom safe) has one current value: the newer, whichever name it came by."""
    was = attribute_name(fact.attribute)
    if was == attribute_name(new.attribute) and was in ATTRIBUTE_NAMES:
        return fact.turn <= new.turn
    if was not in ("location", "holder"):
        return False
    if ends(new):
        return True
    other = {"location": "holder", "holder": "location"}.get(attribute_name(new.attribute))
    return was == other and fact.turn < new.turn


def _changes_of(entries: Sequence[LogEntry], known: Sequence[str]) -> list[list[Change]]:
    """The changes each entry states, in order: a subject one names is known to the next."""
    known, found = list(known), []
    for entry in entries:
        found.append(changes_in(entry.content, known))
        known += [change.subject for change in found[-1]]
    return found
