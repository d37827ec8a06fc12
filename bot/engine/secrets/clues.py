"""A beat's private clue, earned by an action: which clues a turn's action earns, and which go to its player.

A beat's private clue goes to the acting player when their action shares content words with the clue's first
sentence (what earns it: "Whoever sniffs the brandy glass on the desk ..."), once, by DM, whether the model wrote
an aside for it or not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.memory.private import PrivateNote
from bot.store import Game, LogEntry, NewReveal, Player, Store, Visibility
from bot.words import sentences, stems
from bot.worlds import World

# The words an action must share with a clue's first sentence: two when the model told the clue in public (it
# judged the clue due), three when it left it unsaid (a model that writes no asides). An aside of the turn
# holding this many of the clue's words gave it already.
EARNED_WORDS = 2
EARNED_WORDS_UNSAID = 3
TOLD_WORDS = 3
# On a turn whose action plainly earns a clue, a public sentence with this many of the clue's own words that the
# action did not use tells it ("found it to be sharp and bitter"): the guard keeps it from the channel, and the
# clue goes to the player by DM. Measured with bench quality on Qwen2.5 1.5B, which told the clue in public in
# other words than the guard's runs of four.
EARNED_CLUE_TOLD = 2


class Clues:
    """The private clues of the world's current chapter, as a game's actions earn them."""

    def __init__(self, store: Store, world_of: Callable[[Game], World]):
        self.store = store
        self.world_of = world_of

    async def earned_by(self, game: Game, action: LogEntry) -> dict[str, frozenset[str]]:
        """The clues that ``action`` plainly earns (see :data:`EARNED_WORDS_UNSAID`), each with its own words that
        the action did not use: what a public sentence would tell it by."""
        if action.player_id is None or action.visibility is not Visibility.PUBLIC:
            return {}
        beats = _beats(self.world_of(game))
        did = stems(action.content)
        return {
            f"clue:{ref}": stems(beats[ref].clue_text) - did
            for ref in await self._due(game)
            if _earns(action.content, beats[ref].clue_text, EARNED_WORDS_UNSAID)
        }

    async def to_give(
        self, game: Game, action: LogEntry, told: Sequence[str], notes: Sequence[PrivateNote]
    ) -> list[PrivateNote]:
        """The private clues the acting player's action earned and no aside of the turn (``notes``) gave: a beat's
        clue the model told in public (``told``: the guard kept it from the channel), or one of this chapter's it
        left unsaid (a small model rarely writes asides). Each goes to that player alone, once, as the world
        means."""
        if action.player_id is None:
            return []
        beats = _beats(self.world_of(game))
        wanted = dict.fromkeys(told, EARNED_WORDS)
        for ref in await self._due(game):
            wanted.setdefault(ref, EARNED_WORDS_UNSAID)
        given: list[str] | None = None
        earned = []
        for ref, needed in wanted.items():
            clue = beats[ref].clue_text if ref in beats else None
            if not clue or not _earns(action.content, clue, needed):  # it stays unsaid
                continue
            if gave(notes, action.author, clue, action.content):
                continue  # the model gave it in an aside of its own
            if given is None:
                given = [e.content for e in await self.store.private_entries(game.id)]
            if clue in given:
                continue  # a clue is given once
            earned.append(PrivateNote(action.author, clue))
        return earned

    async def from_reveals(
        self, game: Game, reveals: Sequence[NewReveal], notes: Sequence[PrivateNote], players: Sequence[Player],
        action: str = "",
    ) -> list[PrivateNote]:  # fmt: skip
        """The private clues the engine judged this turn's actions earned (F39), each to the player who earned it,
        in the world's words: not one an aside of the turn (``notes``) already gave that player (``action``: what
        they did, whose words an aside says back without giving anything)."""
        beats = _beats(self.world_of(game))
        names = {p.id: p.name for p in players}
        earned = []
        for reveal in reveals:
            beat = beats.get(reveal.ref.removeprefix("clue:")) if reveal.ref.startswith("clue:") else None
            clue = beat.clue_text if beat is not None else None
            name = names.get(reveal.player_id or 0)
            if clue is None or name is None:
                continue
            if gave(notes, name, clue, action):
                continue  # the model gave it in an aside of its own
            earned.append(PrivateNote(name, clue))
        return earned

    async def _due(self, game: Game) -> list[str]:
        """The beats of the current chapter, not done yet, that carry a private clue."""
        world = self.world_of(game)
        state = await self.store.memory_state(game.id)
        if state.chapter_index >= len(world.chapters):
            return []
        beats = world.chapters[state.chapter_index].beats
        return [b.id for b in beats if b.clue_text and b.id not in state.beats_done]


def earned_words(world: World, action: LogEntry, reveals: Sequence[NewReveal]) -> dict[str, frozenset[str]]:
    """The clues this turn's actions earned (the engine's reveals), each with its own words that ``action`` did not
    use: what a public sentence would tell it by."""
    beats = _beats(world)
    did = stems(action.content)
    found = {}
    for reveal in reveals:
        beat = beats.get(reveal.ref.removeprefix("clue:")) if reveal.ref.startswith("clue:") else None
        if beat is not None and beat.clue_text:
            found[reveal.ref] = stems(beat.clue_text) - did
    return found


def world_clues(world: World) -> frozenset[str]:
    """Every private clue of ``world``, in its own words: what the engine gives the player who earns it."""
    return frozenset(b.clue_text for b in _beats(world).values() if b.clue_text)


def gave(notes: Sequence[PrivateNote], to: str, clue: str, action: str) -> bool:
    """Whether an aside of the turn gave ``clue`` to ``to``: one to that player holding :data:`TOLD_WORDS` of the
    clue's words beyond those of the ``action``. "You smell something strange on the brandy glass." to another
    player, on the turn Maya sniffed the glass, once kept the clue from her (bench quality): it was to Ines, and
    said back little more than the action."""
    own = stems(clue) - stems(action)
    return any(n.name == to and len(stems(n.text) & own) >= TOLD_WORDS for n in notes)


def _beats(world: World) -> dict:
    return {b.id: b for chapter in world.chapters for b in chapter.beats}


def _earns(action: str, clue: str, needed: int) -> bool:
    """Whether an action does what a clue is for: ``needed`` content words of the clue's first sentence ("Whoever
    sniffs the brandy glass on the desk ...")."""
    return len(stems(action) & stems(sentences(clue)[0])) >= needed
