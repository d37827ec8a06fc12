"""Each player's private memory, kept up to date after every turn (F5, F19).

Every seated player with something new to take in gets one update per
turn, all of them queued together at maintenance priority, so they run
while nobody waits and never ahead of a player's turn. An update reads
only the entries that player witnessed. When a message an update read is
edited or deleted, the player's memory is rebuilt from the version before
it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from bot.memory.context import MemoryItem
from bot.memory.players import PrivateMemoryAnswer, material, tidy, update_messages
from bot.model.worker import ModelWorker, Priority
from bot.store import Game, Player, PlayerMemory, Store
from bot.worlds import World

log = logging.getLogger(__name__)


class PrivateMemoryFailed(Exception):
    """One or more players' memories could not be updated; theirs are unchanged and retried next turn."""


class PlayerMemories:
    def __init__(self, store: Store, worker: ModelWorker, world_of: Callable[[Game], World]):
        self.store = store
        self.worker = worker
        self.world_of = world_of

    async def update_private_memories(self, game_id: int) -> int:
        """Update every seated player's memory from what they witnessed since; return how many changed."""
        game = await self.store.game(game_id)
        world = self.world_of(game)
        redo = await self.store.player_memory_redo(game_id)
        players = await self.store.players(game_id)
        outcomes = await asyncio.gather(
            *(self._update(game, world, p, redo.get(p.id, [])) for p in players), return_exceptions=True
        )
        failed = [f"{p.name}: {o}" for p, o in zip(players, outcomes, strict=True) if isinstance(o, BaseException)]
        if failed:
            raise PrivateMemoryFailed("; ".join(failed))
        return sum(1 for o in outcomes if o is True)

    async def _update(self, game: Game, world: World, player: Player, redo: list[int]) -> bool:
        version = (await self.store.memory_state(game.id)).version  # an edit after this makes the read stale
        current = await self.store.player_memory(game.id, player.id)
        base = current
        if redo:
            base = await self._base(game.id, player.id, redo)
        after = base.through_entry_id if base else 0
        entries = await self.store.log_between(game.id, after)
        if not entries and not redo:
            return False
        batches = await asyncio.to_thread(material, entries, player, after, self.worker.count_tokens)
        if not batches and not redo:
            return False
        summary, facts = (base.summary, base.facts) if base else ("Nothing yet.", ())
        previous = base
        for batch in batches:  # one call a turn; a rebuild or a backlog catches up in several
            result = await self.worker.generate_object(
                update_messages(world.title, player, previous, batch),
                PrivateMemoryAnswer,
                fallback=PrivateMemoryAnswer(summary="(unchanged)"),
                max_tokens=450,
                priority=Priority.MAINTENANCE,
            )
            if not result.ok:
                raise PrivateMemoryFailed(f"no usable memory from the model: {'; '.join(result.errors)}")
            summary, facts = tidy(result.value)
            previous = PlayerMemory(
                id=0, game_id=game.id, player_id=player.id, summary=summary, facts=facts,
                through_entry_id=batch[-1].id, created_at=datetime.now(UTC),
            )  # fmt: skip
        read = [e for batch in batches for e in batch]
        saved = await self.store.save_player_memory(
            game.id, player.id, summary, facts, entries[-1].id if entries else after, [e.id for e in read],
            expect_current=current.id if current else None, expect_version=version, done_redo=redo,
        )  # fmt: skip
        if saved is None:
            raise PrivateMemoryFailed("the log or the memory changed while it was being written; it runs again")
        return True

    async def _base(self, game_id: int, player_id: int, changed: list[int]) -> PlayerMemory | None:
        """The last version built before the first changed message: where a rebuild starts."""
        history = await self.store.player_memory_history(game_id, player_id)
        return next((v for v in reversed(history) if v.through_entry_id < min(changed)), None)

    async def memory(self, game_id: int, player_id: int) -> PlayerMemory | None:
        """The player's memory as it stands: the version before any message it read that changed since."""
        redo = (await self.store.player_memory_redo(game_id)).get(player_id)
        if redo:
            return await self._base(game_id, player_id, redo)
        return await self.store.player_memory(game_id, player_id)

    async def threads(self, game_id: int, players: list[Player], versions: dict[int, int]) -> list[MemoryItem]:
        """The seated players' private memories as the prompt's front holds them: the ``versions`` fixed at the
        last compaction (a version built from a message since edited or deleted gives way to the one before it).
        """
        redo = await self.store.player_memory_redo(game_id)
        items = []
        for player in players:
            memory = await self.store.player_memory_version(versions[player.id]) if player.id in versions else None
            if memory is not None and player.id in redo and min(redo[player.id]) <= memory.through_entry_id:
                memory = await self._base(game_id, player.id, redo[player.id])
            if memory is None:
                continue
            facts = "; ".join(memory.facts)
            items.append(
                MemoryItem(
                    f"private:{player.id}",
                    f"Only {player.name} knows: {memory.summary}" + (f" Their key facts: {facts}." if facts else ""),
                )
            )
        return items
