"""The game's log as the model reads it: each entry as a chat message, a turn's notes with its action, and
neighbours of one role merged so that any chat template takes them."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.memory.layers import AFTER_ACTION, BRIEF_CHOICE, BRIEF_CLOSING, HEADERS, NOTES
from bot.model.base import ChatMessage
from bot.store.models import EntryKind, LogEntry, TurnNote, Visibility

GAME_BEGINS = "(The game begins.)"
# The GM's last replies a new one is read against: it may not say them again (the reply rules), and a change it says
# again moves nothing again (the changes found in play).
RECENT_REPLIES = 3


def notes_text(notes: Sequence[TurnNote], layers: Sequence[str] = NOTES) -> str:
    """A turn's notes of ``layers`` as its message shows them, a block per layer."""
    blocks = []
    for layer in layers:
        lines = [note.text for note in notes if note.layer == layer]
        if lines and layer == "brief":
            turns = sum(note.ref.startswith("entry:") for note in notes if note.layer == layer)
            closing = BRIEF_CHOICE if turns > 1 else BRIEF_CLOSING  # two turns: the model tells which answers
            blocks.append(f"{HEADERS[layer]} {' '.join(_plain(line) for line in lines)}\n{closing}")
        elif lines:
            blocks.append(HEADERS[layer] + "\n" + "\n".join(f"- {line}" for line in lines))
    return "\n\n".join(blocks)


# What the brief says is told as prose, without the recall layer's plain turn label: "[turn 6] … GM: Gorse grows
# thick." reads "Gorse grows thick." A player's words keep their name, and a label that says more than the turn
# ("[fact, now]", "[turn 5, since changed]") stays.
_LABEL = re.compile(r"^\[turn \d+\]\s*(?:…\s*)?(?:GM:\s*)?")


def _plain(line: str) -> str:
    text = _LABEL.sub("", line).removesuffix("…").strip()
    return text if text.endswith((".", "!", "?", ")", '"', "'")) else f"{text}."


def entry_message(entry: LogEntry, notes: Sequence[TurnNote] = (), *, bracketed: bool = False) -> ChatMessage:
    """A log entry as the model reads it: players speak as the user, the GM as itself.

    An action's turn notes come first in its message, as they did when the GM answered it, but for what it
    uncovered and what the notes say of it (``AFTER_ACTION``), told after it: a small model answers from what sits
    beside the question. Joins and rolls are plain sentences, or ``bracketed`` (``[Maya joins the game.]``) for a
    small model, which was measured with them.
    """
    message = _entry_message(entry, bracketed)
    if not notes or message.role != "user":
        return message
    before = notes_text(notes, [layer for layer in NOTES if layer not in AFTER_ACTION])
    after = notes_text(notes, AFTER_ACTION)
    content = "\n\n".join(part for part in (before, message.content, after) if part)
    return ChatMessage(role="user", content=content)


def _entry_message(entry: LogEntry, bracketed: bool) -> ChatMessage:
    if entry.kind is EntryKind.GM:
        if entry.visibility is Visibility.PRIVATE:
            return ChatMessage(
                role="assistant", content=f"[[to {entry.author.removeprefix('GM to ')}: {entry.content}]]"
            )
        return ChatMessage(role="assistant", content=entry.content)
    # Joins and rolls read as plain sentences: in brackets, right before an action, a model copies the form and
    # opens its reply with "[".
    if entry.kind in (EntryKind.ROLL, EntryKind.SYSTEM):
        said = f"{entry.author} rolls {entry.content}" if entry.kind is EntryKind.ROLL else entry.content
        text = f"[{said}]" if bracketed else _sentence(said)
    else:
        text = f"{entry.author}: {entry.content}"
    if entry.visibility is Visibility.PRIVATE:
        text = f"(private) {text}"
        if entry.kind is EntryKind.ACTION:  # a secret action, answered to its player alone
            text += f"\n(Answer {entry.author} privately: your whole reply goes to them alone.)"
    return ChatMessage(role="user", content=text)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?", ")")) else text + "."


def alternate(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Merge neighbours of one role and start with the user.

    Several players act between two GM replies, but many chat templates
    (Mistral's, Llama 2's) refuse two user messages in a row.
    """
    merged: list[ChatMessage] = []
    for message in messages:
        if merged and merged[-1].role == message.role:
            merged[-1] = ChatMessage(role=message.role, content=f"{merged[-1].content}\n{message.content}")
        else:
            merged.append(message)
    if merged and merged[0].role == "assistant":
        merged.insert(0, ChatMessage(role="user", content=GAME_BEGINS))
    return merged
