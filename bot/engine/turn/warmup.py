"""No cold first turn (F35): a game's prompt is read by the model before anyone acts.

Reading a world's frozen layer (its rules, setting, characters, about 2,000
tokens) is most of a game's first turn: a minute on two cores for a 1.5B
model. So as soon as a game exists (``/game start``, the terminal while
players type their names), and again when a player joins (the players' line
closes the frozen layer), the prompt its next turn would get is read into
the game's slot at :attr:`Priority.PREFILL`: after any player's turn, which
interrupts it, before the memory's upkeep. Its last message carries a
placeholder where the action goes, so the turn reads only from there on.

A warm-up that would run after a turn of its game is skipped: the turn's own
state is newer, and the placeholder would only replace it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot.engine.table.session import Sessions
from bot.engine.turn.prompt import Prompts
from bot.errors import UserError
from bot.memory.context import Context
from bot.model.base import CallStats
from bot.model.worker import ModelWorker, Priority
from bot.store import EntryKind, LogEntry, Store, Visibility

log = logging.getLogger(__name__)

PLACEHOLDER = "..."  # the action's place in the prompt read ahead: the turn reads its own action from there
SCENE_LAYERS = ("scene", "lore")  # what the scene calls up before any action (recall answers an action)


@dataclass(frozen=True)
class ReadAhead:
    """A game's prompt read ahead of its turn, and what that cost (None: the model keeps no state to read into)."""

    stats: CallStats | None


@dataclass(eq=False)
class WarmUps:
    """The warm-ups of every game, one at a time per game (a newer one replaces one still waiting)."""

    store: Store
    worker: ModelWorker
    prompts: Prompts
    sessions: Sessions
    stopping: Callable
    _tasks: dict[int, asyncio.Task] = field(init=False, default_factory=dict)
    done: int = field(init=False, default=0)  # warm-ups that read a prompt (for tests and benches)
    skipped: int = field(init=False, default=0)

    def schedule(self, game_id: int) -> None:
        """Read ``game_id``'s next prompt ahead of its turn, when the model has nothing more urgent to do."""
        if self.stopping():
            return
        earlier = self._tasks.get(game_id)
        if earlier is not None and not earlier.done():
            earlier.cancel()  # still queued: it never runs; already reading: it is stopped by the newer one's turn
        self._tasks[game_id] = asyncio.create_task(self._warm(game_id), name=f"warm-up-{game_id}")

    def cancel(self, game_id: int) -> None:
        """The game ended: a warm-up waiting or under way for it reads nothing."""
        task = self._tasks.pop(game_id, None)
        if task is not None and not task.done():
            task.cancel()

    async def _warm(self, game_id: int) -> None:
        session = self.sessions[game_id]
        asked = session.turns_asked
        try:
            async with session.turn_lock.quietly():  # what a turn stores meanwhile is read first
                if session.turns_asked != asked or (await self.store.game(game_id)).status != "active":
                    self.skipped += 1
                    return
                context = await self._prompt(game_id)
        except (UserError, LookupError) as exc:  # a game gone, a world removed: its turn says so
            log.debug("Game %d: nothing to read ahead (%s)", game_id, exc)
            return
        model = self.worker.model

        def read() -> ReadAhead | None:
            if session.turns_asked != asked:  # a turn of this game came first: its state is newer
                return None
            return ReadAhead(model.prefill(context.messages, slot=session.slot))

        try:
            read_ahead = await self.worker.run(read, priority=Priority.PREFILL, label=f"prefill {session.slot}",
                                               interruptible=self.worker.interrupts_background)  # fmt: skip
        except Exception as exc:  # the turn reads it cold then; nothing else is lost
            log.warning("Game %d: reading its prompt ahead failed (%s)", game_id, exc)
            return
        if read_ahead is not None:
            self.done += 1
            log.info("Game %d: its prompt is read ahead of its next turn", game_id)
        else:
            self.skipped += 1

    async def _prompt(self, game_id: int) -> Context:
        """The prompt the game's next turn would get, up to a placeholder where its action goes.

        What the scene brings into the prompt before any action (the characters present, what they hide and know,
        the lore the opening calls up), which the first turn would add as its own notes ahead of its action, is
        written now as the notes of the last join (a message of the players' side), where later prompts show it
        too: the turn then reads only what its action adds."""
        game = await self.store.game(game_id)
        players = await self.store.players(game_id)
        placeholder = LogEntry(
            id=0, game_id=game_id, turn=game.turn + 1, kind=EntryKind.ACTION,
            author=players[-1].name if players else "Player", content=PLACEHOLDER, created_at=datetime.now(UTC),
        )  # fmt: skip
        context = await self.prompts.build(game, placeholder, remember=False)
        scene = [note for note in context.notes if note.layer in SCENE_LAYERS]
        recent = await self.store.recent_log(game_id, 1)
        last = recent[0] if recent else None
        if scene and last is not None and last.kind is EntryKind.SYSTEM and last.visibility is Visibility.PUBLIC:
            if not (await self.store.turn_notes(game_id, last.id - 1)).get(last.id):
                await self.store.save_turn_notes(game_id, last.id, scene)
                context = await self.prompts.build(game, placeholder, remember=False)
        return context

    async def idle(self, game_id: int | None = None) -> None:
        """Wait for the warm-ups of a game (of every game, ``None``) to end (tests and benches)."""
        tasks = [t for g, t in self._tasks.items() if game_id is None or g == game_id]
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        self._tasks.clear()
