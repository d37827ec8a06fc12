"""What a turn's actions uncover (F39), decided by the engine before the narrator writes, and kept.

The policy is :mod:`bot.memory.reveals`; this module reads what it judges by from the game (the turn's public
actions and rolls, the scene, what was uncovered and done before, the actions' closeness to the world's
conditions by meaning), keeps each reveal with the condition that opened it, marks the beats it finished, and
says what the narrator is told for the reply.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from bot.engine.upkeep.meaning import MeaningIndex
from bot.memory.layers import MemoryItem
from bot.memory.npcs import Cast
from bot.memory.reveals import GAME, PLAYER, Scene, Uncoverable, due, meanings, roll_total, uncoverables
from bot.store import EntryKind, Game, LogEntry, NewReveal, Player, RevealRecord, Store, Visibility
from bot.worlds import World

log = logging.getLogger(__name__)

SCENE_ENTRIES = 6  # the public entries before an action that say where the scene is and who is spoken to
# At most, for an action's closeness to the conditions (the conditions are embedded when the world's first game
# starts, with its secrets: see LeakGuards.warm); words alone after that.
MEANING_SECONDS = 5.0


class Reveals:
    """Judges each turn's actions against the world's conditions and keeps what they uncover."""

    def __init__(
        self, store: Store, world_of: Callable[[Game], World], cast_of: Callable[[Game], Cast],
        meaning: MeaningIndex | None = None,
    ):  # fmt: skip
        self.store = store
        self.world_of = world_of
        self.cast_of = cast_of
        self.meaning = meaning
        self._items: dict[str, tuple[World, list[Uncoverable]]] = {}

    def items(self, world: World) -> list[Uncoverable]:
        cached = self._items.get(world.id)
        if cached is None or cached[0] is not world:
            cached = self._items[world.id] = (world, uncoverables(world))
        return cached[1]

    async def for_turn(self, game: Game, action: LogEntry, acted: Sequence[LogEntry]) -> list[NewReveal]:
        """What the turn's public actions (``acted``; ``action`` the last) uncover, kept with ``action``; the
        beats they finish are marked done. A turn answered again gets what it uncovered the first time."""
        kept = await self.store.reveals(game.id, action.id)
        if kept:
            return [NewReveal(ref=r.ref, why=r.why, lasts=r.lasts, player_id=r.player_id) for r in kept]
        world = self.world_of(game)
        state = await self.store.memory_state(game.id)
        before = await self.store.reveals(game.id)
        uncovered = {r.ref for r in before if r.lasts == GAME}
        given = {r.ref for r in before if r.lasts == PLAYER}
        done = set(state.beats_done) | {b.id for c in world.chapters[: state.chapter_index] for b in c.beats}
        done |= {r.ref.split(":", 1)[1] for r in before if r.lasts == GAME and r.ref.startswith(("truth:", "beat:"))}
        recent = await self.store.recent_log(game.id, 50)
        public = [e for e in recent if e.visibility is Visibility.PUBLIC and e.id < action.id]
        items = self.items(world)
        found: list[NewReveal] = []
        for acting in acted:
            if acting.visibility is not Visibility.PUBLIC or acting.player_id is None or acting.deleted:
                continue  # a whispered discovery opens nothing for the table
            scene = await self._scene(game, acting, public, recent, done, items, uncovered)
            opened = due(world, state.chapter_index, scene, frozenset(uncovered), frozenset(given), items)
            for reveal in opened:
                found.append(reveal)
                if reveal.lasts == GAME:
                    uncovered.add(reveal.ref)
                    if reveal.ref.startswith(("truth:", "beat:")):
                        done.add(reveal.ref.split(":", 1)[1])
                elif reveal.lasts == PLAYER:
                    given.add(reveal.ref)
        if found:
            await self.store.add_reveals(game.id, action.turn, action.id, found)
            await self._finish_beats(game.id, [r.ref.split(":", 1)[1] for r in found if r.ref.startswith("beat:")])
            for reveal in found:
                log.info("Game %d turn %d: %s uncovered (%s)", game.id, action.turn, reveal.ref, reveal.why)
        return found

    async def _scene(
        self, game: Game, action: LogEntry, public: Sequence[LogEntry], recent: Sequence[LogEntry], done: set[str],
        items: Sequence[Uncoverable], uncovered: set[str],
    ) -> Scene:  # fmt: skip
        rolls = tuple(
            total
            for e in recent
            if e.kind is EntryKind.ROLL and e.turn == action.turn and e.player_id == action.player_id
            and not e.deleted and (total := roll_total(e.content)) is not None
        )  # fmt: skip
        before = list(public[-SCENE_ENTRIES:])
        return Scene(
            action=action.content, player_id=action.player_id or 0, player=action.author, rolls=rolls,
            addressed=frozenset(self._addressed(game, action, before)),
            where="\n".join([*(e.content for e in before), action.content]), done=frozenset(done),
            closeness=await self._closeness(action.content, [i for i in items if i.ref not in uncovered]),
        )  # fmt: skip

    def _addressed(self, game: Game, action: LogEntry, before: Sequence[LogEntry]) -> list[str]:
        """The NPCs an action is addressed to: those it names; else the one its player last named (they go on
        talking to them), else the one another player last named, else the one the GM last named."""
        cast = self.cast_of(game)
        named = cast.addressed(action.content)
        if named:
            return named
        mine = [e for e in before if e.kind is EntryKind.ACTION and e.player_id == action.player_id]
        others = [e for e in before if e.kind is EntryKind.ACTION and e.player_id != action.player_id]
        replies = [e for e in before if e.kind is EntryKind.GM]
        for entries in (mine, others, replies):
            for entry in reversed(entries):
                last = cast.last_named(entry.content)
                if last is not None:
                    return [last]
        return []

    async def _closeness(self, text: str, items: Sequence[Uncoverable]) -> dict[str, float]:
        wanted = meanings(items)
        if not wanted or self.meaning is None or not self.meaning.on:
            return {}
        try:
            scores = await asyncio.wait_for(self.meaning.closeness([text], wanted), MEANING_SECONDS)
        except TimeoutError:
            log.warning("Judging an action by meaning took over %.0f s; by its words alone this turn", MEANING_SECONDS)
            return {}
        except Exception as exc:  # the words still hold
            log.warning("Judging an action by meaning failed (%r); by its words alone this turn", exc)
            return {}
        return {meaning: float(scores[0, j]) for j, meaning in enumerate(wanted)}

    async def _finish_beats(self, game_id: int, beats: Sequence[str]) -> None:
        if not beats:
            return
        async with self.store.transaction() as db:
            state = await self.store.memory_state(game_id)
            done = tuple(dict.fromkeys([*state.beats_done, *beats]))
            await self.store.save_memory_state(db, state.model_copy(update={"beats_done": done}))

    async def uncovered(self, game_id: int, through: int | None = None) -> frozenset[str]:
        """What the game's actions uncovered for good (``through``: by the action of that entry id and before)."""
        return frozenset(
            r.ref
            for r in await self.store.reveals(game_id)
            if r.lasts == GAME and (through is None or r.entry_id <= through)
        )


def reveal_notes(world: World, reveals: Sequence[NewReveal], players: Sequence[Player]) -> list[MemoryItem]:
    """What the narrator is told, beside the action, of what it uncovered: the world's words for a truth, what
    an NPC admits, a beat that happens; for a clue, only that its player noticed something (the engine gives the
    clue to them alone)."""
    names = {p.id: p.name for p in players}
    npcs = {n.id: n for n in world.npcs}
    beats = {b.id: b for c in world.chapters for b in c.beats}
    truths = {t.id: t for t in world.truths}
    notes = []
    for reveal in reveals:
        kind, _, rest = reveal.ref.partition(":")
        who = names.get(reveal.player_id or 0, "The player")
        if kind == "truth" and rest in truths:
            text = f"{who}'s action uncovers this; the reply shows what they find, in the story's words: "
            text += truths[rest].text
        elif kind == "npc":
            npc_id, _, n = rest.partition(":hides:")
            npc = npcs.get(npc_id)
            if npc is None or not n.isdigit() or int(n) >= len(npc.hides):
                continue
            text = f"{npc.name} gives way to {who} and may now say it: {npc.secrets[int(n)].text}"
        elif kind == "beat" and rest in beats:
            # Told as what to play out, not as a line to copy: a small model copies a summary it is given.
            text = "Play this out now as a scene, in your own words, the people there speaking: "
            text += beats[rest].description
        elif kind == "clue":
            text = (
                f"{who} notices something only they see; the bot tells them privately. In public, say only that "
                f"{who} noticed something, and nothing of what."
            )
        else:
            continue
        notes.append(MemoryItem(reveal.ref, text))
    return notes


def shown(records: Sequence[RevealRecord], players: Sequence[Player]) -> list[str]:
    """The game's reveals as a game's admins read them (``/recall``): turn, what, to whom, and why."""
    names = {p.id: p.name for p in players}
    lines = []
    for r in records:
        who = names.get(r.player_id or 0, "someone")
        scope = {"game": "for good", "reply": "for that reply", "player": f"to {who} alone"}.get(r.lasts, r.lasts)
        lines.append(f"turn {r.turn}: {r.ref} ({scope}), by {who}'s action: {r.why}")
    return lines
