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
    check = _WorldCheck(world)
    check.truths()
    check.npcs()
    check.beats()
    return check.lines


class _WorldCheck:
    """One pass over a world's secrets, gathering what is wrong with them as lines."""

    def __init__(self, world: World):
        self.world = world
        self.ids = known_ids(world)
        self.lines: list[str] = []
        self.guard = Guard(
            guarded_world_secrets(world, 0, (), ""), world_public_runs(world), world_public_sentences(world)
        )

    def conditions(self, path: str, given: list[Condition], own: str | None = None) -> list[Condition]:
        """The conditions that can hold; a line for each problem (one that cannot hold is left out)."""
        kept = []
        for n, condition in enumerate(given):
            problems = problems_of(condition, self.ids)
            if own is not None and own in condition.after:
                problems.append(f"after: waits on {own!r} itself, so it can never hold")
            fatal = [p for p in problems if not p.endswith("never matched")]
            self.lines.extend(
                f"{path}.{n}.{p}" + ("; this condition is left out" if p in fatal else "") for p in problems
            )
            if not fatal:
                kept.append(condition)
        return kept

    def gives_away(self, path: str, text: str | None, allowed: Set[str] = frozenset()) -> None:
        """A line where ``text`` (a hint, a behaviour) says a secret in the secret's own words."""
        if not text:
            return
        for hit in self.guard.candidates(text):
            if hit.ref not in allowed:
                self.lines.append(f'{path}: gives away {hit.ref} in its own words ("{hit.phrase}")')
                return

    def truths(self) -> None:
        for t, truth in enumerate(self.world.truths):
            path = f"truths.{t} ({truth.id})"
            kept = self.conditions(f"{path}.uncovered_by", list(truth.uncovered_by), truth.id)
            if not kept and not truth.unlocked_by and not truth.revealed_by:
                self.lines.append(
                    f"{path}: no action can uncover it (give it uncovered_by, unlocked_by or revealed_by)"
                )
            if truth.hint is None:
                self.lines.append(f"{path}: no hint; the GM has nothing to steer the players toward it with until "
                                  "it is uncovered (add hint:)")  # fmt: skip
            self.gives_away(f"{path}.hint", truth.hint)

    def npcs(self) -> None:
        for n, npc in enumerate(self.world.npcs):
            path = f"npcs.{n} ({npc.id})"
            own = {f"npc:{npc.id}:hides:{i}" for i in range(len(npc.hides))}
            self.gives_away(f"{path}.behaviour", npc.behaviour)
            for k, fact in enumerate(npc.knows):
                self.gives_away(f"{path}.knows.{k}", fact, own)
            for h, hidden in enumerate(npc.secrets):
                self.conditions(f"{path}.hides.{h}.uncovered_by", list(hidden.uncovered_by))
                self.gives_away(f"{path}.hides.{h}.hint", hidden.hint)

    def beats(self) -> None:
        for c, chapter in enumerate(self.world.chapters):
            for b, beat in enumerate(chapter.beats):
                path = f"chapters.{c}.beats.{b} ({beat.id})"
                self.conditions(f"{path}.done_when", list(beat.done_when), beat.id)
                if beat.steer is not None:
                    self.gives_away(f"{path}.steer", beat.steer)
                else:
                    self.gives_away(f"{path}.description", beat.description, {f"clue:{beat.id}"})
                clue = beat.clue
                if clue is None:
                    continue
                kept = self.conditions(f"{path}.private_clue.earned_by", list(clue.earned_by))  # may wait on its beat
                if clue.earned_by and not kept:
                    self.lines.append(f"{path}.private_clue: no action can earn it (its conditions are all left out)")
                elif not clue.earned_by and len(stems(sentences(clue.text)[0])) < CLUE_WORDS:
                    self.lines.append(f"{path}.private_clue: no action can earn it: its first sentence has fewer "
                                      f"than {CLUE_WORDS} words to act on (give it earned_by)")  # fmt: skip
