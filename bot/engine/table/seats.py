"""A game's seats: a player joins as a character, leaves, and is found seated or not."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.cleantext import clean_text
from bot.engine.table.session import Sessions
from bot.errors import UserError
from bot.store import EntryKind, NewEntry, Player, Store

# Names the log and the prompt give to the game's own voices: a player by one of them would read as narration.
RESERVED_NAMES = frozenset({"gm", "the gm", "game master", "the game master", "dm", "system", "narrator", "bot"})
NAME_PATTERN = re.compile(r"[^\W_][\w '’.-]*")
MAX_NAME_CHARS = 40
MAX_DESCRIPTION_CHARS = 300


@dataclass(eq=False)
class Seats:
    store: Store
    sessions: Sessions

    async def join(self, game_id: int, user_key: str, name: str, description: str = "") -> Player:
        name = " ".join(clean_text(name).split())
        description = " ".join(clean_text(description).split())
        _check_character(name, description)
        async with self.sessions[game_id].turn_lock:
            players = await self.store.players(game_id)
            if any(p.user_key == user_key for p in players):
                raise UserError("You have already joined this game.")
            if any(p.name.casefold() == name.casefold() for p in players):
                raise UserError(f"Someone already plays {name}; choose another name.")
            player = await self.store.add_player(game_id, user_key, name, description)
            joined = f"{name} joins the game" + (f": {description}" if description else ".")
            await self._note(game_id, joined)
        return player

    async def leave(self, game_id: int, user_key: str) -> Player:
        async with self.sessions[game_id].turn_lock:
            player = await self.seated(game_id, user_key)
            await self.store.remove_player(player.id)
            await self._note(game_id, f"{player.name} leaves.")
        return player

    async def seated(self, game_id: int, user_key: str) -> Player:
        """The player ``user_key`` plays in the game, or a :class:`UserError` saying to join first."""
        player = await self.store.seated_player(game_id, user_key)
        if player is None:
            raise UserError("Join the game first.")
        return player

    async def _note(self, game_id: int, text: str) -> None:
        """A line of the log for the coming turn, in the game's own voice."""
        game = await self.store.game(game_id)
        await self.store.append(
            game_id, NewEntry(turn=game.turn + 1, kind=EntryKind.SYSTEM, author="system", content=text)
        )


def _check_character(name: str, description: str) -> None:
    if not name:
        raise UserError("Give your character a name.")
    if name.casefold() in RESERVED_NAMES or name.casefold().startswith(("gm ", "gm:")):
        raise UserError(f"{name!r} is a name the game itself uses; choose another for your character.")
    if not NAME_PATTERN.fullmatch(name):
        raise UserError("A character's name is letters, digits, spaces, apostrophes, hyphens and full stops.")
    if len(name) > MAX_NAME_CHARS:
        raise UserError(f"A character name is at most {MAX_NAME_CHARS} characters.")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise UserError(f"A character description is at most {MAX_DESCRIPTION_CHARS} characters.")
