"""A turn's reply made ready to store: the channel's reply checked by the leak guard, or a secret action's answer.

A public reply that gives a secret away is written once more with a warning;
what still leaks then is cut. The answer to a secret action goes whole to its
player. Every private aside is checked for what is private to other players.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.engine.secrets.guard import TurnGuard
from bot.engine.turn.narration import REGENERATE, Narration, Narrator, Request, show_text
from bot.engine.turn.results import OnText
from bot.memory.leaks import Hit, strip
from bot.memory.private import PrivateNote, split_reply
from bot.store import Player

WITHHELD = "(The GM keeps that to themselves.)"


@dataclass(frozen=True)
class Drafted:
    """A reply ready to store: its public text, its private asides, and the draft the guard stopped (if any)."""

    public: str
    notes: list[PrivateNote]
    draft: str | None
    narration: Narration  # the first call's: the one the player waited for
    raw: str  # what the model wrote last, asides and all: what its cache now holds
    clues: tuple[str, ...] = ()  # the beats whose private clue the model told in public (stopped by the guard)


class Drafts:
    def __init__(self, narrator: Narrator):
        self.narrator = narrator

    async def public(self, request: Request, on_text: OnText | None, guard: TurnGuard) -> Drafted:
        """A reply for the channel, streamed a checked sentence at a time; a leak is written again, then cut."""
        names = request.shaping.names
        narration = await self.narrator.narrate(request, on_text, guard=guard)
        raw = narration.text
        public, notes = split_reply(raw, names)
        hits = await _check(guard, public, narration)
        if not hits:
            return Drafted(public, notes, None, narration, raw)
        draft = public
        clues = [h.ref.removeprefix("clue:") for h in hits if h.ref.startswith("clue:")]
        await guard.record(request.turn, "channel", hits, "regenerated")
        again = await self.narrator.narrate(request.with_note(REGENERATE))
        raw = again.text
        public, notes = split_reply(raw, names)
        hits = await _check(guard, public, again)
        if hits:
            clues += [h.ref.removeprefix("clue:") for h in hits if h.ref.startswith("clue:")]
            await guard.record(request.turn, "channel", hits, "removed")
            public = strip(public, hits) or WITHHELD
        return Drafted(public, notes, draft, narration, raw, tuple(dict.fromkeys(clues)))

    async def engine_line(self, text: str, on_text: OnText | None, player: Player | None = None) -> Drafted:
        """The engine's own answer, with no model call: in the channel (shown to ``on_text``), or to ``player``
        alone."""
        narration = Narration(text, 0.0, None)
        if player is not None:
            return Drafted("", [PrivateNote(player.name, text)], None, narration, text)
        if on_text is not None:
            await show_text(on_text, text)
        return Drafted(text, [], None, narration, text)

    async def secret(self, request: Request, player: Player) -> Drafted:
        """The answer to a secret action: all of it, asides to that player included, goes to them alone."""
        narration = await self.narrator.narrate(request)
        public, notes = split_reply(narration.text, request.shaping.names)
        whole = " ".join([public, *(n.text for n in notes if n.name == player.name)]).strip()
        return Drafted("", [PrivateNote(player.name, whole or "The GM says nothing.")], None, narration, narration.text)


async def _check(guard: TurnGuard, public: str, narration: Narration) -> list[Hit]:
    """The guard's hits in a public reply, the notes' answer the engine told after it (see
    :meth:`Narrator.narrate`) checked as the public record's own words."""
    told = narration.told_from_notes
    if not told or not public.endswith(told):
        return await guard.check(public)
    said = public[: -len(told)]
    return [*(await guard.check(said) if said.strip() else []), *await guard.check(told, public_record=True)]


async def guard_note(
    guard: TurnGuard, turn: int, player: Player, note: PrivateNote, *, answer: bool = False
) -> PrivateNote | None:
    """A private message without what is private to other players; ``None`` for an aside the guard left empty (a
    DM saying only that the GM keeps something back tells its player nothing, and the default model, reading it in
    the transcript, wrote it into its next asides: bench secrets, Ember Road). ``answer``: the answer to the
    player's own secret action, which they are waiting for: then the placeholder."""
    hits = await guard.check(note.text, audience=player.id)
    if not hits:
        return note
    await guard.record(turn, f"DM to {player.name}", hits, "removed")
    kept = strip(note.text, hits)
    if kept:
        return PrivateNote(note.name, kept)
    return PrivateNote(note.name, WITHHELD) if answer else None
