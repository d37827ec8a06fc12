"""What the GM is told of the world: the frozen layer (how to run the game, the public world), its GM-only
secrets, and what each NPC entering the scene witnessed, hides and knows."""

from __future__ import annotations

from collections.abc import Sequence

from bot.memory.layers import CountTokens, MemoryItem
from bot.memory.npcs import NpcScene, turn_ranges
from bot.memory.private import SYNTAX_RULE
from bot.store.models import Player
from bot.worlds import World

# Replies of the kind wanted, one of them in the frozen layer (a game's own, the same on every turn): what
# happens, not the action again; one private aside; an invitation to act. A model copies the example it is shown:
# with one for every game, Qwen2.5 1.5B wrote its "cold air smells of earth and lamp oil" into games of another
# world. So each game gets one of several (EXAMPLE_REPLIES[game % n]), of unlike places, and a sentence holding a
# run of an example's words is taken out of a reply (see bot.engine.turn.shaping).
EXAMPLE_REPLIES = (
    "The cellar door gives with a groan, and the cold air smells of earth and lamp oil. Rows of dusty casks lean "
    "against the far wall; one has a fresh chalk mark. [[to Bo: Behind the casks you glimpse a boot print, still "
    "wet.]] The lamp is burning low, Ana. What do you do, Bo?",
    "The ferryman takes your coin without a word and pushes off into the fog. Halfway over, something knocks "
    "against the hull, twice, then nothing. [[to Ana: You see a pale hand slip back under the water.]] The far "
    "bank is close now, Bo. Ana, what do you do?",
    "The clerk slides the ledger across the counter and taps a line with an inky finger. Three names are crossed "
    "out there, and the last in a different hand. [[to Bo: One of the crossed-out names is your brother's.]] Ana, "
    "the clerk is waiting for your signature. What do you do?",
    "Wind tears at the tent flaps as you step out, and the watch fire has burned down to red coals. Two sets of "
    "tracks lead off into the snow; only one comes back. [[to Ana: Under the snow by the fire lies a broken "
    "arrow, fletched in black.]] Bo, Ana: who takes the first watch?",
)
EXAMPLE_REPLY = EXAMPLE_REPLIES[0]


def example_text(example: int) -> str:
    reply = EXAMPLE_REPLIES[example % len(EXAMPLE_REPLIES)]
    return f"A good reply, from another game (its players are Ana and Bo):\n{reply}"


# A beat's private clue, as the GM-only layer gives it. The full guide's wording kept Qwen2.5 1.5B from telling it
# in public; the 135M bundled model echoed "never in public" into its replies, so a small model gets the shorter.
CLUE_NOTE = (
    "Private clue, only for the one player whose character earns it, in [[to Name: ...]] and never in public: {1}"
)
SHORT_CLUE_NOTE = "When {0} happens, tell one player alone with [[to Name: ...]]: {1}"


def world_brief(
    world: World, chapter_index: int, players: Sequence[Player], reply_words: int, *, full: bool = True,
    held: bool = False, example: int = 0,
) -> str:  # fmt: skip
    """The frozen layer: how to run the game, and the public world.

    ``full`` (a model of 1B parameters or more): how to answer an action, and one example reply (``example``:
    which). A small model gets the short guide: measured with bench quality, the 135M bundled model copied the
    example and lost the thread of the longer rules (thin, ungrounded replies), while Qwen2.5 1.5B needed them.
    ``held``: the world's secrets are held by the engine (F39), so a beat is shown by its steer, not by its
    description with the answer in it.
    """
    opening = (
        f'You are the game master (GM) of "{world.title}", a text role-playing game '
        "played by several people in a chat. Narrate what happens in response to the "
        "players' actions, voice the other characters, and end by inviting the players to act. "
    )
    if full:
        opening += (
            'Players write what their characters do, often as "I ...". Never repeat or restate what they wrote: '
            'go straight to what happens because of it, speaking to them as "you" or by their characters\' names, '
            "and never write as \"I\" in a player's place. Never decide what a player's character does, says or "
            "feels beyond what their player wrote. Write two to five sentences of story, with no labels, brackets "
            f"or notes. Keep each reply under {reply_words} words. When a player asks about or returns to something "
            "from earlier, answer with what the notes from earlier in the game and the pinned facts say, never "
            "something else. " + SYNTAX_RULE + "\n\n" + example_text(example)
        )
    else:
        opening += (
            f"Never decide what a player's character does or says. Keep each reply under {reply_words} words. "
            + SYNTAX_RULE
        )
    parts = [
        opening,
        f"Style: {world.style}",
        "Rules:\n" + "\n".join(f"- {rule}" for rule in world.rules),
        f"Setting:\n{world.setting}",
    ]
    if chapter_index < len(world.chapters):
        chapter = world.chapters[chapter_index]
        parts.append(
            f"Current chapter: {chapter.title}. Goal: {chapter.goal}\n"
            + "Beats to steer toward:\n"
            + "\n".join(f"- {beat.steer if held and beat.steer else beat.description}" for beat in chapter.beats)
        )
    else:
        parts.append("Every chapter is done: bring the story to a satisfying end, or follow where the players lead.")
    if world.npcs:
        parts.append("Characters you voice:\n" + "\n".join(f"- {npc.name}: {npc.description}" for npc in world.npcs))
    if players:
        parts.append(
            "Players: " + "; ".join(f"{p.name} ({p.description})" if p.description else p.name for p in players) + "."
        )
    return "\n\n".join(parts)


def frozen_tokens(world: World, count: CountTokens, reply_words: int, *, full: bool = True) -> int:
    """The frozen layer's size at its largest (the chapter with the most beats, the longest example), before any
    player joins."""
    return max(
        count(world_brief(world, i, (), reply_words, full=full, held=held, example=e))
        for i in range(len(world.chapters))
        for held in (False, True)
        for e in range(len(EXAMPLE_REPLIES) if full else 1)
    )


def world_secrets(world: World, chapter_index: int = 0, *, full: bool = True) -> list[MemoryItem]:
    """The front's GM-only layer, most important first (a tight budget keeps the truths): the world's truths,
    then this chapter's private clues. What each NPC hides and knows comes with its note when it enters the
    scene (see :func:`npc_secrets`), where the GM voices it."""
    items = [MemoryItem(f"truth:{truth.id}", truth.text) for truth in world.truths]
    if chapter_index < len(world.chapters):
        items += [
            MemoryItem(f"clue:{beat.id}", (CLUE_NOTE if full else SHORT_CLUE_NOTE).format(beat.id, beat.clue_text))
            for beat in world.chapters[chapter_index].beats
            if beat.private_clue
        ]
    return items


def world_hints(world: World, uncovered: frozenset[str]) -> list[MemoryItem]:
    """The front's GM-only layer when the engine holds the world's secrets (F39): each truth the players have
    uncovered (as of the front's last fixing: what a later turn uncovers is in that turn's notes), then the hints
    of those still hidden. Private clues are never in it: the engine gives them to the player who earns them."""
    items = [MemoryItem(f"truth:{t.id}", f"Uncovered: {t.text}") for t in world.truths if f"truth:{t.id}" in uncovered]
    items += [MemoryItem(f"hint:{t.id}", t.hint) for t in world.truths if f"truth:{t.id}" not in uncovered and t.hint]
    return items


def npc_notes(world: World, npc_id: str, uncovered: frozenset[str]) -> list[MemoryItem]:
    """What the GM plays an NPC by when the engine holds the world's secrets: how it behaves and how its secrets
    show, what it has admitted (uncovered), then what it knows; never what it still hides."""
    npc = next((n for n in world.npcs if n.id == npc_id), None)
    if npc is None:
        return []
    items = [MemoryItem(f"npc:{npc.id}:behaviour", f"How {npc.name} acts: {npc.behaviour}")] if npc.behaviour else []
    for i, hidden in enumerate(npc.secrets):
        if f"npc:{npc.id}:hides:{i}" in uncovered:
            items.append(MemoryItem(f"npc:{npc.id}:hides:{i}", f"{npc.name} has admitted: {hidden.text}"))
        elif hidden.hint:
            items.append(MemoryItem(f"npc:{npc.id}:hint:{i}", f"{npc.name}: {hidden.hint}"))
    return items + [
        MemoryItem(f"npc:{npc.id}:knows:{i}", f"{npc.name} knows: {fact}") for i, fact in enumerate(npc.knows)
    ]


def npc_secrets(world: World, npc_id: str) -> list[MemoryItem]:
    """What one NPC hides, then what it knows: GM-only, given when it enters the scene."""
    npc = next((n for n in world.npcs if n.id == npc_id), None)
    if npc is None:
        return []
    hides = [h.text for h in npc.secrets]
    return [MemoryItem(f"npc:{npc.id}:hides:{i}", f"{npc.name} hides: {fact}") for i, fact in enumerate(hides)] + [
        MemoryItem(f"npc:{npc.id}:knows:{i}", f"{npc.name} knows: {fact}") for i, fact in enumerate(npc.knows)
    ]


def scene_notes(
    world: World, scene: Sequence[NpcScene], turn: int, held: set[str], *, grouped: bool = True,
    uncovered: frozenset[str] | None = None,
) -> tuple[list[MemoryItem], list[MemoryItem]]:  # fmt: skip
    """What each NPC entering the scene witnessed; and what it hides and knows, not yet in the prompt (with the
    secrets held by the engine, ``uncovered`` not ``None``: how it behaves, what it admitted, what it knows).

    ``grouped``: the NPCs entering who witnessed the same turns share one note (a 1.5B model read three alike
    notes as a pattern to repeat); otherwise one note each, as the small bundled model was measured with.

    An NPC gets a note when it is present now and has none in the prompt,
    or has missed a turn since its last one (it left, or a turn was a secret
    exchange): while it stays, the turns after its note are what it saw.
    """
    noted: dict[str, int] = {}
    for ref in held:
        if ref.startswith("scene:"):
            _, npc_ids, at = ref.split(":")
            for npc_id in npc_ids.split(","):
                noted[npc_id] = max(noted.get(npc_id, 0), int(at))
    # grouped: keyed by the turns witnessed and the NPCs seen; otherwise by the NPC alone
    entering: dict[tuple[tuple[int, ...], tuple[str, ...]] | tuple[str], list[NpcScene]] = {}
    secrets = []
    for npc in scene:
        since = noted.get(npc.npc_id)
        if since is not None and all(t in npc.turns for t in range(since, turn)):
            continue
        entering.setdefault((npc.turns, npc.seen) if grouped else (npc.npc_id,), []).append(npc)
        told = npc_secrets(world, npc.npc_id) if uncovered is None else npc_notes(world, npc.npc_id, uncovered)
        secrets += [item for item in told if item.ref not in held]
    return [_scene_note(group, turn) for group in entering.values()], secrets


def _scene_note(group: Sequence[NpcScene], turn: int) -> MemoryItem:
    """One note for the NPCs entering who witnessed the same turns: what they saw is said once."""
    first = group[0]
    seen = f"turns {turn_ranges(first.turns)}" if first.turns else "nothing of the game yet"
    if len(group) == 1:
        text = f"{first.name} is here. {first.name} witnessed {seen}, and knows nothing else that happened"
    else:
        names = ", ".join(npc.name for npc in group[:-1]) + f" and {group[-1].name}"
        text = f"{names} are here. Each witnessed {seen}, and knows nothing else that happened"
    text += "".join(f"; saw: {line}" for line in first.seen) + "."
    return MemoryItem(f"scene:{','.join(npc.npc_id for npc in group)}:{turn}", text)
