"""What an action uncovers (F39): the engine decides, from the world's data, what the narrator may now be told.

A world's secrets are kept out of the narrator's prompt until the players
earn them: a truth, what an NPC hides, a beat's private clue. Each has
conditions (:class:`bot.worlds.Condition`): the words of a player's public
action, who it is addressed to, their roll this turn, where the scene is,
what was uncovered before, and (with an embedding model) what the action
means. When one holds, the engine records a reveal with the condition that
opened it, and the narrator is told, for that reply, what it uncovers. A
chapter's beat may be done the same way.

Before that, the narrator gets what it needs to stay consistent and to steer
without spoiling: each truth's hint, each NPC's behaviour and the hints of
what they hide, each beat's steer.

This module is the policy, on plain data: :mod:`bot.engine.secrets.reveals` reads the
game, asks for the meaning scores and keeps the reveals.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from bot.store.models import NewReveal as Reveal
from bot.words import content_words, sentences, stems
from bot.worlds import Condition, World

# A clue without conditions of its own is earned by an action holding this many content words of its first
# sentence ("Whoever sniffs the brandy glass on the desk ..."), as before conditions existed.
CLUE_WORDS = 3
# An action meets a condition by meaning when its cosine to the condition's text (on the bundled MiniLM's scale)
# is at least this. Set on Hollow Manor's labelled actions by bench reveals (bot/bench/reveal_fit.py): there 7 of
# 10 actions that mean a condition met it, 1 of 10 on the same things that do not; on Ember Road's, held out, 8 of
# 8 and 0 of 8. A condition by meaning is best narrowed by the NPC it is said to, or a place.
MEANING_THRESHOLD = 0.57

GAME, REPLY, PLAYER = "game", "reply", "player"  # how long a reveal lasts: for good, for one reply, for its player


@dataclass(frozen=True)
class Uncoverable:
    """Something the narrator is told only once the players earn it."""

    ref: str  # "truth:<id>", "npc:<id>:hides:<n>", "clue:<beat>", "beat:<id>"
    text: str  # what the narrator is told once it is uncovered
    conditions: tuple[Condition, ...]
    lasts: str = GAME
    chapter: int | None = None  # a clue or beat: only while its chapter is the current one
    npc: str | None = None
    # A clue with no conditions of its own: the stems of its first sentence, CLUE_WORDS of them to earn it.
    first_words: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Scene:
    """One public action as the conditions read it."""

    action: str
    player_id: int
    player: str
    rolls: tuple[int, ...] = ()  # the acting player's roll totals this turn
    addressed: frozenset[str] = frozenset()  # the NPCs the action is addressed to
    where: str = ""  # the action and the last public turns: what `place` is looked for in
    done: frozenset[str] = frozenset()  # beats done and truths uncovered, by id
    closeness: Mapping[str, float] = field(default_factory=dict)  # a condition's meaning -> cosine to the action
    meaning_threshold: float = MEANING_THRESHOLD


def uncoverables(world: World) -> list[Uncoverable]:
    """Everything of the world that waits to be uncovered, with its conditions (a world written before
    conditions: a truth's ``unlocked_by`` words open it for one reply, its ``revealed_by`` beats for good)."""
    ids = known_ids(world)

    def valid(conditions: Sequence[Condition]) -> tuple[Condition, ...]:
        # A condition naming what the world does not have is left out (check says so); the others still hold.
        return tuple(c for c in conditions if not [p for p in problems_of(c, ids) if not p.endswith("never matched")])

    found: list[Uncoverable] = []
    for truth in world.truths:
        conditions = [*truth.uncovered_by, *(Condition(after=[beat]) for beat in truth.revealed_by)]
        found.append(Uncoverable(f"truth:{truth.id}", truth.text, valid(conditions)))
        if truth.unlocked_by:
            words = [Condition(words=[key]) for key in truth.unlocked_by if content_words(key)]
            found.append(Uncoverable(f"truth:{truth.id}", truth.text, valid(words), lasts=REPLY))
    for npc in world.npcs:
        for n, hidden in enumerate(npc.secrets):
            found.append(Uncoverable(f"npc:{npc.id}:hides:{n}", hidden.text, valid(hidden.uncovered_by), npc=npc.id))
    for index, chapter in enumerate(world.chapters):
        for beat in chapter.beats:
            if beat.done_when:
                found.append(Uncoverable(f"beat:{beat.id}", beat.description, valid(beat.done_when), chapter=index))
            clue = beat.clue
            if clue is not None:
                first = frozenset() if clue.earned_by else stems(sentences(clue.text)[0])
                found.append(
                    Uncoverable(f"clue:{beat.id}", clue.text, valid(clue.earned_by), lasts=PLAYER, chapter=index,
                                first_words=first)
                )  # fmt: skip
    return found


@dataclass(frozen=True)
class KnownIds:
    """What a world's conditions may name."""

    npcs: frozenset[str]
    done: frozenset[str]  # beats and truths: what ``after`` may wait for


def known_ids(world: World) -> KnownIds:
    beats = {beat.id for chapter in world.chapters for beat in chapter.beats}
    return KnownIds(frozenset(npc.id for npc in world.npcs), frozenset(beats | {t.id for t in world.truths}))


def problems_of(condition: Condition, ids: KnownIds) -> list[str]:
    """What of a condition names something the world does not have."""
    problems = []
    if condition.to is not None and condition.to not in ids.npcs:
        problems.append(f"to: no NPC {condition.to!r} in this world")
    unknown = [name for name in condition.after if name not in ids.done]
    if unknown:
        problems.append(f"after: no beat or truth {', '.join(map(repr, unknown))} in this world")
    for group in condition.words:
        common = [word.strip() for word in group.split("|") if not content_words(word)]
        if len(common) == len(group.split("|")):
            problems.append(f"words: {group!r} holds common words only, which no action is told by")
        elif common:  # the rest of the group still holds: said, not left out
            problems.append(f"words: {', '.join(map(repr, common))} in {group!r} is a common word, never matched")
    return problems


def met(condition: Condition, scene: Scene) -> str | None:
    """Why ``condition`` holds for the action (``"words: sniff + glass"``), or ``None`` when it does not."""
    said = stems(scene.action)
    why = []
    if condition.words:
        found = []
        for group in condition.words:
            word = next((w for w in group.split("|") if _holds(said, w)), None)
            if word is None:
                return None
            found.append(word.strip())
        why.append("words: " + " + ".join(found))
    if condition.to is not None:
        if condition.to not in scene.addressed:
            return None
        why.append(f"to {condition.to}")
    if condition.roll is not None:
        if not any(total >= condition.roll for total in scene.rolls):
            return None
        why.append(f"rolled {max(scene.rolls)} (needs {condition.roll})")
    if condition.place:
        place = next((p for p in condition.place if _names(scene.where, p)), None)
        if place is None:
            return None
        why.append(f"in {place}")
    if condition.after:
        if not set(condition.after) <= scene.done:
            return None
        why.append("after " + ", ".join(condition.after))
    if condition.meaning is not None:
        closeness = scene.closeness.get(condition.meaning)
        if closeness is None or closeness < scene.meaning_threshold:
            return None
        why.append(f"meaning {closeness:.2f}: {condition.meaning[:60]}")
    return "; ".join(why)


def _holds(said: frozenset[str], word: str) -> bool:
    wanted = stems(word)
    return bool(wanted) and wanted <= said


def _names(text: str, place: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(place.strip())}(?!\w)", text, re.IGNORECASE) is not None


def due(
    world: World, chapter_index: int, scene: Scene, uncovered: frozenset[str], given: frozenset[str],
    items: Sequence[Uncoverable] | None = None,
) -> list[Reveal]:  # fmt: skip
    """What ``scene``'s action uncovers now: not uncovered before (``uncovered``: refs opened for good;
    ``given``: clues already given to someone), in the world's order. A reveal of this action counts for the
    conditions after it (a beat it finishes opens the truths that wait on that beat)."""
    done = set(scene.done)
    opened: dict[str, Reveal] = {}
    for _ in range(3):  # what this action opens may meet another condition (after: [that beat])
        before = len(opened)
        current = replace(scene, done=frozenset(done))
        for item in items if items is not None else uncoverables(world):
            if item.ref in opened or item.ref in uncovered or item.ref in given:
                continue
            if item.chapter is not None and item.chapter != chapter_index:
                continue
            # A beat waits for the beats before it to be done by earlier actions: one action is one step of the
            # story, though what it finishes opens at once the secrets that wait on it.
            why = _why(item, scene if item.ref.startswith("beat:") else current)
            if why is None:
                continue
            opened[item.ref] = Reveal(ref=item.ref, why=why, lasts=item.lasts, player_id=scene.player_id)
            if item.lasts == GAME:
                done.add(item.ref.split(":", 1)[1] if item.ref.startswith(("truth:", "beat:")) else item.ref)
        if len(opened) == before:
            break
    return list(opened.values())


def _why(item: Uncoverable, scene: Scene) -> str | None:
    for condition in item.conditions:
        why = met(condition, scene)
        if why is not None:
            return why
    if item.first_words:
        shared = stems(scene.action) & item.first_words
        if len(shared) >= CLUE_WORDS:
            return "words of the clue: " + " + ".join(sorted(shared)[:4])
    return None


def meanings(items: Sequence[Uncoverable]) -> list[str]:
    """Every condition's meaning text, for the engine to measure the action against."""
    return list(dict.fromkeys(c.meaning for item in items for c in item.conditions if c.meaning is not None))


def roll_total(text: str) -> int | None:
    """A logged roll's total (``1d20 (14) + 5 = `19```), or ``None``."""
    found = re.findall(r"`(-?\d+)`", text)
    return int(found[-1]) if found else None
