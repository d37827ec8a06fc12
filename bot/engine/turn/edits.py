"""The game log's edits: a message changed or taken back, and the GM's last answer written again.

Summaries that covered a changed message are rebuilt in the background (see
:meth:`bot.engine.upkeep.memory.MemoryKeeper.rebuild_stale`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.engine.table.seats import Seats
from bot.engine.table.session import Sessions
from bot.engine.turn.results import OnText, TurnResult
from bot.engine.turn.turns import TURN_WINDOW, Turns, coming_actions
from bot.engine.upkeep.memory import MemoryKeeper
from bot.errors import UserError
from bot.store import EntryKind, Game, LogEntry, Store, Visibility


@dataclass(eq=False)
class LogEdits:
    store: Store
    sessions: Sessions
    memory: MemoryKeeper
    seats: Seats
    turns: Turns

    async def edit(self, game_id: int, entry_id: int, text: str, *, user_key: str | None = None) -> LogEntry:
        """Change a logged message (``text`` is checked as an action is)."""
        async with self.sessions[game_id].turn_lock:
            entry = await self._own_entry(game_id, entry_id, user_key)
            edited = await self.store.edit_entry(entry.id, text)
            await self.memory.ledger.record_changes(game_id, [edited])  # what it says now, in place of what it said
        self.memory.schedule(game_id)
        return edited

    async def delete(self, game_id: int, entry_id: int, *, user_key: str | None = None) -> LogEntry:
        async with self.sessions[game_id].turn_lock:
            entry = await self._own_entry(game_id, entry_id, user_key)
            deleted = await self.store.delete_entry(entry.id)
        self.memory.schedule(game_id)
        return deleted

    async def last_action_of(self, game_id: int, user_key: str) -> LogEntry:
        player = await self.seats.seated(game_id, user_key)
        for entry in reversed(await self.store.recent_log(game_id, TURN_WINDOW)):
            if entry.player_id == player.id and entry.kind is EntryKind.ACTION:
                return entry
        raise UserError("You have no recent action to change.")

    async def _own_entry(self, game_id: int, entry_id: int, user_key: str | None) -> LogEntry:
        entry = await self.store.entry(entry_id)
        if entry.game_id != game_id or entry.deleted:
            raise UserError("That message is not part of this game.")
        if user_key is not None:
            player = await self.store.seated_player(game_id, user_key)
            if player is None or entry.player_id != player.id:
                raise UserError("You can only change your own messages.")
        return entry

    async def retry(self, game_id: int, *, on_text: OnText | None = None, user_key: str | None = None) -> TurnResult:
        """Write the GM's last answer again; the old one and its private asides leave the log.

        An action left unanswered (the last turn failed or was cut off) is answered instead, and the reply before
        it left alone. The answer to a secret action is written again for that player alone, and only they may
        ask for it when ``user_key`` says who asks (``None``: an admin or the terminal).
        """
        async with self.sessions[game_id].turn_lock:
            game = await self.store.game(game_id)
            action, answers = await self._to_answer_again(game)
            secret = action.visibility is Visibility.PRIVATE
            if secret and user_key is not None:
                asker = await self.store.seated_player(game_id, user_key)
                if asker is None or asker.id != action.player_id:
                    raise UserError("The last answer was to someone's secret action; only they can retry it.")
            for old in answers:
                await self.store.delete_entry(old.id)
            before_id = answers[0].id if answers else None
            if secret:
                if action.player_id is None:  # never so: a secret action is a seated player's (see store_action)
                    raise UserError(f"The secret action {action.id} has no player to answer it for.")
                player = await self.store.player(action.player_id)
                return await self.turns.answer(game, action, before_id=before_id, private_to=player)
            return await self.turns.answer(game, action, before_id=before_id, on_text=on_text)

    async def _to_answer_again(self, game: Game) -> tuple[LogEntry, list[LogEntry]]:
        """The action to answer, and the GM's entries of the answer it replaces (none for an unanswered one)."""
        unanswered = await coming_actions(self.store, game)
        if unanswered:
            if self.sessions[game.id].round_open:
                raise UserError("The round is still open: the GM answers once everyone has acted or time is up.")
            return unanswered[-1], []
        recent = await self.store.recent_log(game.id, TURN_WINDOW)
        answers = [e for e in recent if e.kind is EntryKind.GM and e.turn == game.turn]
        if not answers or game.turn == 0:
            raise UserError("There is no GM reply to retry yet.")
        action = next((e for e in reversed(recent) if e.id < answers[0].id and e.kind is EntryKind.ACTION), None)
        if action is None:
            raise UserError("There is no action to answer again.")
        return action, answers
