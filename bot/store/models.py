"""What the store returns: pydantic models, never rows."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class GameStatus(StrEnum):
    ACTIVE = "active"
    ENDED = "ended"


class EntryKind(StrEnum):
    ACTION = "action"
    GM = "gm"
    ROLL = "roll"
    SYSTEM = "system"


class Visibility(StrEnum):
    PUBLIC = "public"
    PRIVATE = "private"


class Game(_Row):
    id: int
    channel_key: str
    world_id: str
    status: GameStatus
    turn: int = Field(description="The last turn the GM answered; 0 before the first.")
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None = None


class Player(_Row):
    id: int
    game_id: int
    user_key: str = Field(description="Who plays: a Discord user id, or a name in the terminal.")
    name: str = Field(description="The character's name.")
    description: str = ""
    joined_at: datetime
    left_at: datetime | None = None


class NewEntry(_Row):
    """A log entry before the store has given it an id and a time."""

    turn: int
    kind: EntryKind
    author: str
    content: str
    player_id: int | None = None
    visibility: Visibility = Visibility.PUBLIC
    visible_to: tuple[int, ...] = ()
    message_id: str | None = None


class LogEntry(NewEntry):
    id: int
    game_id: int
    created_at: datetime
    edited_at: datetime | None = None
    deleted: bool = False
