"""A player's own notes: private reminders of a game, kept for them alone; the GM is not promised to read them."""

from __future__ import annotations

from dataclasses import dataclass

from bot.cleantext import clean_text
from bot.engine.table.seats import Seats
from bot.errors import UserError
from bot.store import Store

MAX_NOTE_CHARS = 500
MAX_NOTES = 50


@dataclass(eq=False)
class PlayerNotes:
    store: Store
    seats: Seats

    async def of(self, game_id: int, user_key: str) -> list[str]:
        await self.seats.seated(game_id, user_key)
        return list((await self.store.scope_values(_scope(game_id))).get(user_key, []))

    async def add(self, game_id: int, user_key: str, text: str) -> list[str]:
        text = " ".join(clean_text(text).split())
        if not text:
            raise UserError("Write the note after the command.")
        if len(text) > MAX_NOTE_CHARS:
            raise UserError(f"A note is at most {MAX_NOTE_CHARS} characters.")
        notes = await self.of(game_id, user_key)
        if len(notes) >= MAX_NOTES:
            raise UserError(f"You have {MAX_NOTES} notes; remove one first.")
        await self.store.set_scope_value(_scope(game_id), user_key, [*notes, text])
        return [*notes, text]

    async def remove(self, game_id: int, user_key: str, number: int) -> str:
        notes = await self.of(game_id, user_key)
        if not 1 <= number <= len(notes):
            raise UserError(f"You have no note {number}; /notes lists them.")
        removed = notes.pop(number - 1)
        await self.store.set_scope_value(_scope(game_id), user_key, notes)
        return removed


def _scope(game_id: int) -> str:
    return f"notes:{game_id}"
