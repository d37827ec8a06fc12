"""Who of the world's characters is in the scene (F6), so each NPC knows only what it witnessed.

An NPC is present when the recent public messages name it: its full name,
its first name, its surname where no other name shares it, a title and
surname ("Dr. Pike"), or an alias from the world file ("the housekeeper").
What it witnessed is every public entry logged while it was present.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.worlds import World

TITLES = {
    "mr", "mrs", "ms", "miss", "dr", "doctor", "lord", "lady", "sir", "dame", "master", "mistress",
    "captain", "father", "mother", "sister", "brother", "professor", "old", "young", "the",
}  # fmt: skip


# Verbs an action speaks to or shows something to someone with: "I ask Meg", "I show Dr. Pike the bottle".
_TO_SOMEONE = (
    r"ask|asks|tell|tells|say|says|show|shows|confront|confronts|accuse|accuses|question|questions|press|presses|"
    r"beg|begs|whisper|whispers|talk|talks|speak|speaks|sit|sits|turn|turns|hand|hands|give|gives|promise|"
    r"promises|plead|pleads|warn|warns|call|calls|corner|corners|approach|approaches"
)


def _bare(word: str) -> str:
    return word.rstrip(".").lower()


@dataclass(frozen=True)
class Cast:
    """The names by which each NPC of a world may be mentioned."""

    names: dict[str, tuple[str, ...]]  # npc id -> aliases, longest first
    display: dict[str, str]  # npc id -> name

    def present(self, texts: Iterable[str]) -> list[str]:
        """The ids of the NPCs the texts name, in the world's order."""
        joined = "\n".join(texts)
        return [npc_id for npc_id, aliases in self.names.items() if any(_mentions(joined, a) for a in aliases)]

    def addressed(self, text: str) -> list[str]:
        """The NPCs an action speaks to: the one it opens by calling ("Pell, ...") or that follows a verb of
        speaking or showing ("I ask Mrs. Crane ..."); else every NPC it names."""
        named = self.present([text])
        for npc_id in named:
            for alias in self.names[npc_id]:
                name = re.escape(alias)
                if re.match(rf"\W*{name}\s*[,:!?]", text, re.IGNORECASE) or re.search(
                    rf"\b(?:{_TO_SOMEONE})\s+(?:to\s+|with\s+)?{name}(?!\w)", text, re.IGNORECASE
                ):
                    return [npc_id]
        return named

    def last_named(self, text: str) -> str | None:
        """The NPC named last in ``text`` (the one a speaker turned to last), or ``None``."""
        found: tuple[int, str] | None = None
        for npc_id, aliases in self.names.items():
            for alias in aliases:
                for match in re.finditer(rf"(?<!\w){re.escape(alias)}(?!\w)", text, re.IGNORECASE):
                    if found is None or match.start() > found[0]:
                        found = (match.start(), npc_id)
        return found[1] if found else None


def _mentions(text: str, alias: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(alias)}(?!\w)", text, re.IGNORECASE) is not None


def cast_of(world: World) -> Cast:
    """Every NPC's aliases; a first name or surname another character also uses is left out as ambiguous."""
    public = "\n".join(
        [world.setting, world.opening, *(n.description for n in world.npcs), *(e.content for e in world.lore)]
    )
    candidates: dict[str, set[str]] = {}
    for npc in world.npcs:
        words = npc.name.split()
        core = [w for w in words if _bare(w) not in TITLES] or words
        forms = {npc.name, " ".join(core)}
        if len(core) > 1:
            forms |= {core[0], core[-1]}
            forms |= {f"{title} {core[-1]}" for title in words if _bare(title) in TITLES}
        # A form made of titles alone ("The", "Captain") is no name, unless it is the whole name.
        forms = {f for f in forms if f == npc.name or not all(_bare(w) in TITLES for w in f.split())}
        forms |= set(npc.aliases)
        candidates[npc.id] = {f for f in forms if len(f) >= 3}
    counts: dict[str, int] = {}
    for forms in candidates.values():
        for form in {f.lower() for f in forms}:
            counts[form] = counts.get(form, 0) + 1
    names: dict[str, tuple[str, ...]] = {}
    for npc in world.npcs:
        firsts = {w.lower() for w in npc.name.split()}
        kept = []
        for form in candidates[npc.id]:
            if counts[form.lower()] > 1:
                continue  # "Crane" for two Cranes
            if " " not in form and form not in npc.aliases and _someone_else(public, form, firsts):
                continue  # "Wren" when the setting also speaks of Silas Wren
            kept.append(form)
        names[npc.id] = tuple(sorted(kept, key=len, reverse=True))
    return Cast(names, {npc.id: npc.name for npc in world.npcs})


def _someone_else(text: str, word: str, own: set[str]) -> bool:
    """Whether ``word`` also ends another capitalized name in the text (``Silas Wren`` for Meg Wren's ``Wren``)."""
    for match in re.finditer(rf"\b([A-Z][\w'.]*)\s+{re.escape(word)}\b", text):
        before = match.group(1).rstrip(".").lower()
        if before not in own and before not in TITLES:
            return True
    return False


@dataclass(frozen=True)
class NpcScene:
    """An NPC in the current scene and what it witnessed of the game."""

    npc_id: str
    name: str
    turns: tuple[int, ...] = ()  # the turns it was present for
    seen: tuple[str, ...] = ()  # the latest lines it witnessed, oldest first


def turn_ranges(turns: Sequence[int], limit: int = 12) -> str:
    """``[1, 2, 3, 7, 9, 10]`` as ``1-3, 7, 9-10``; only the newest ``limit`` ranges."""
    ranges: list[list[int]] = []
    for turn in sorted(set(turns)):
        if ranges and turn == ranges[-1][1] + 1:
            ranges[-1][1] = turn
        else:
            ranges.append([turn, turn])
    shown = [f"{a}-{b}" if a != b else str(a) for a, b in ranges[-limit:]]
    return ("… " if len(ranges) > limit else "") + ", ".join(shown)
