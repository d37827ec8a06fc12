"""The leak guard at work: the game's private material for this turn, checked against the public record.

The policy (what is secret, which sentence gives it away) is in
:mod:`bot.memory.leaks`; this module gathers the material from the store
and drops the hits whose words the game has already said in public.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.memory.leaks import Guard, Hit, guarded_world_secrets, private_secrets, prompt_secret, world_public_runs
from bot.store import Game, Store
from bot.worlds import World

log = logging.getLogger(__name__)

PRIVATE_ENTRIES = 200  # the newest private messages guarded word for word; older ones live on in private memories


class TurnGuard:
    """The guard for one reply of one game."""

    def __init__(self, store: Store, game: Game, guard: Guard):
        self.store = store
        self.game = game
        self.guard = guard
        self._public: dict[tuple[str, ...], bool] = {}

    async def check(self, text: str, audience: int | None = None) -> list[Hit]:
        """The hits in ``text`` for ``audience`` (a player id; ``None`` for the channel), public ones dropped."""
        hits: dict[tuple[str, str], Hit] = {}  # one per sentence and secret
        for hit in self.guard.candidates(text, audience):
            if (hit.sentence, hit.ref) in hits:
                continue
            if hit.uncoverable and hit.words not in self._public:
                self._public[hit.words] = await self.store.said_in_public(self.game.id, hit.words)
            if not hit.uncoverable or not self._public[hit.words]:
                hits[hit.sentence, hit.ref] = hit
        return list(hits.values())

    async def record(self, turn: int, audience: str, hits: Sequence[Hit], action: str) -> None:
        """Log every hit, in the log and in the game's record of them."""
        for hit in hits:
            log.warning(
                "Game %d turn %d: leak to %s stopped (%s, %r): %s", self.game.id, turn, audience, hit.ref,
                hit.phrase, action,
            )  # fmt: skip
        await self.store.add_leak_hits(
            self.game.id,
            turn,
            [{"audience": audience, "ref": h.ref, "phrase": h.phrase, "sentence": h.sentence, "action": action}
             for h in hits],
        )  # fmt: skip


class LeakGuards:
    def __init__(self, store: Store):
        self.store = store
        self._public_runs: dict[str, tuple[World, set[tuple[str, ...]]]] = {}

    async def for_turn(self, game: Game, world: World, unlocked: str) -> TurnGuard:
        """The guard for a reply; ``unlocked`` is the turn's public actions (they may open a truth)."""
        state = await self.store.memory_state(game.id)
        secrets = guarded_world_secrets(world, state.chapter_index, state.beats_done, unlocked)
        entries = await self.store.private_entries(game.id, PRIVATE_ENTRIES)
        secrets += private_secrets(entries, await self.store.player_memories(game.id))
        secrets.append(prompt_secret())
        return TurnGuard(self.store, game, Guard(secrets, self._world_public(world)))

    def _world_public(self, world: World) -> set[tuple[str, ...]]:
        cached = self._public_runs.get(world.id)
        if cached is None or cached[0] is not world:
            cached = (world, world_public_runs(world))
            self._public_runs[world.id] = cached
        return cached[1]
