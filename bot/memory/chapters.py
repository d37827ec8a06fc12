"""Chapters: judging beats, writing a recap, folding a finished chapter into the story."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, create_model

from bot.memory.compaction import PRESERVE, render_entry
from bot.model.base import ChatMessage
from bot.store.models import LogEntry
from bot.worlds import Chapter


class BeatsAnswer(BaseModel):
    """The shape every beat judgement has; the model gets a schema narrowed to the open beats."""

    done: list[str] = Field(default_factory=list)


def beats_schema(open_beats: Sequence[str]) -> type[BeatsAnswer]:
    """A schema whose only allowed values are the open beats' ids, bounded so a small model cannot loop."""
    if not open_beats:
        return BeatsAnswer
    choice = Literal[tuple(open_beats)]  # type: ignore[valid-type]
    return create_model(
        "BeatsAnswer",
        __base__=BeatsAnswer,
        done=(list[choice], Field(max_length=len(open_beats))),  # type: ignore[valid-type]
    )


def beats_messages(chapter: Chapter, open_beats: Sequence[str], recent: Sequence[LogEntry]) -> list[ChatMessage]:
    listed = "\n".join(f"- {beat.id}: {beat.description}" for beat in chapter.beats if beat.id in open_beats)
    system = (
        "You track the progress of a role-playing game. Given the latest events, list the ids of the "
        "beats that have now clearly happened. List none if unsure. Answer in JSON."
    )
    user = f"Chapter: {chapter.title}. Goal: {chapter.goal}\nOpen beats:\n{listed}\n\nLatest events:\n" + "\n".join(
        render_entry(e) for e in recent
    )
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]


def recap_messages(title: str, chapter: Chapter, material: Sequence[str], words: int) -> list[ChatMessage]:
    system = (
        f'You keep the memory of "{title}", a role-playing game. A chapter has ended. Write its recap: '
        f"2 to 3 sentences, at most {words} words, past tense: what the players achieved, what they "
        "learned, and what is left open. Write only the recap."
    )
    user = f"Chapter: {chapter.title}. Goal: {chapter.goal}\n\nWhat happened:\n" + "\n".join(material)
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]


def integrate_messages(title: str, story: str, chapter: Chapter, recap: str, words: int) -> list[ChatMessage]:
    """Rewrite the story summary now that a chapter's recap carries that chapter."""
    system = (
        f'You keep the memory of "{title}", a role-playing game. The chapter "{chapter.title}" has ended '
        "and its recap is kept separately. Rewrite the story summary so that it no longer retells that "
        "chapter in detail: keep only what still matters going forward (characters' states, promises, "
        f"open threads, clues not yet used). At most {words} words, and shorter than before if you can. "
        f"{PRESERVE} Write only the summary."
    )
    user = f"Story summary:\n{story}\n\nRecap of the finished chapter:\n{recap}"
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]
