"""What a world lacks for the engine to direct its secrets (F39), one line each: ``check`` prints them, a start
logs them, and a game goes on with what is valid.

- a condition naming an NPC, beat or truth the world does not have (it is left out);
- something no action can uncover or earn (no conditions at all, or only ones that wait on itself);
- a truth with no hint (the GM has nothing to steer by until it is uncovered);
- a hint, a steer, a behaviour or what an NPC knows that gives a secret away in its own words (the guard's
  phrases of that secret are in it), or a beat's description that does, with no steer to show instead.
"""

from __future__ import annotations

from collections.abc import Set

from bot.memory.leaks import Guard, guarded_world_secrets, world_public_runs, world_public_sentences
from bot.memory.reveals import CLUE_WORDS, known_ids, problems_of
from bot.words import sentences, stems
from bot.worlds import Condition, World


def world_problems(world: World) -> list[str]:
    """Every problem of ``world`` for the narrator's secrets, as ``field.path: what is wrong`` lines."""
    ids = known_ids(world)
    lines: list[str] = []

    def conditions(path: str, given: list[Condition], own: str | None = None) -> list[Condition]:
        kept = []
        for n, condition in enumerate(given):
            problems = problems_of(condition, ids)
            if own is not None and own in condition.after:
                problems.append(f"after: waits on {own!r} itself, so it can never hold")
            fatal = [p for p in problems if not p.endswith("never matched")]
            lines.extend(f"{path}.{n}.{p}" + ("; this condition is left out" if p in fatal else "") for p in problems)
            if not fatal:
                kept.append(condition)
        return kept

    guard = Guard(guarded_world_secrets(world, 0, (), ""), world_public_runs(world), world_public_sentences(world))

    def gives_away(path: str, text: str | None, allowed: Set[str] = frozenset()) -> None:
        if not text:
            return
        for hit in guard.candidates(text):
            if hit.ref not in allowed:
                lines.append(f'{path}: gives away {hit.ref} in its own words ("{hit.phrase}")')
                return

    for t, truth in enumerate(world.truths):
        path = f"truths.{t} ({truth.id})"
        kept = conditions(f"{path}.uncovered_by", list(truth.uncovered_by), truth.id)
        if not kept and not truth.unlocked_by and not truth.revealed_by:
            lines.append(f"{path}: no action can uncover it (give it uncovered_by, unlocked_by or revealed_by)")
        if truth.hint is None:
            lines.append(f"{path}: no hint; the GM has nothing to steer the players toward it with until it is "
                         "uncovered (add hint:)")  # fmt: skip
        gives_away(f"{path}.hint", truth.hint)
    for n, npc in enumerate(world.npcs):
        path = f"npcs.{n} ({npc.id})"
        own = {f"npc:{npc.id}:hides:{i}" for i in range(len(npc.hides))}
        gives_away(f"{path}.behaviour", npc.behaviour)
        for k, fact in enumerate(npc.knows):
            gives_away(f"{path}.knows.{k}", fact, own)
        for h, hidden in enumerate(npc.secrets):
            conditions(f"{path}.hides.{h}.uncovered_by", list(hidden.uncovered_by))
            gives_away(f"{path}.hides.{h}.hint", hidden.hint)
    for c, chapter in enumerate(world.chapters):
        for b, beat in enumerate(chapter.beats):
            path = f"chapters.{c}.beats.{b} ({beat.id})"
            conditions(f"{path}.done_when", list(beat.done_when), beat.id)
            if beat.steer is not None:
                gives_away(f"{path}.steer", beat.steer)
            else:
                gives_away(f"{path}.description", beat.description, {f"clue:{beat.id}"})
            clue = beat.clue
            if clue is None:
                continue
            kept = conditions(f"{path}.private_clue.earned_by", list(clue.earned_by))  # may wait on its own beat
            if clue.earned_by and not kept:
                lines.append(f"{path}.private_clue: no action can earn it (its conditions are all left out)")
            elif not clue.earned_by and len(stems(sentences(clue.text)[0])) < CLUE_WORDS:
                lines.append(f"{path}.private_clue: no action can earn it: its first sentence has fewer than "
                             f"{CLUE_WORDS} words to act on (give it earned_by)")  # fmt: skip
    return lines
