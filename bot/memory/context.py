"""The GM's prompt, as a pure function of the world, the log and a token budget.

This is the simple builder: the rules and the world, then as many recent
log entries as fit, then the new action, with room left for the reply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.model.base import TEMPLATE_TOKENS_PER_MESSAGE, ChatMessage
from bot.store.models import EntryKind, LogEntry, Player, Visibility
from bot.worlds import World

CountTokens = Callable[[str], int]

GAME_BEGINS = "(The game begins.)"


@dataclass(frozen=True)
class Prompt:
    messages: list[ChatMessage]
    tokens: int
    entry_ids: tuple[int, ...]  # the log entries that went in, oldest first
    left_out: tuple[int, ...]  # older entries that did not fit


def world_brief(world: World, chapter_index: int, players: Sequence[Player], reply_words: int) -> str:
    """The system message: how to run the game, and the world as the GM knows it."""
    chapter = world.chapter(chapter_index)
    parts = [
        f'You are the game master (GM) of "{world.title}", a text role-playing game '
        "played by several people in a chat. Narrate what happens in response to the "
        "players' actions, voice the other characters, and end by inviting the players to act. "
        f"Never decide what a player's character does or says. Keep each reply under {reply_words} words.",
        f"Style: {world.style}",
        "Rules:\n" + "\n".join(f"- {rule}" for rule in world.rules),
        f"Setting:\n{world.setting}",
        f"Current chapter: {chapter.title}. Goal: {chapter.goal}\n"
        + "Beats to steer toward:\n"
        + "\n".join(f"- {beat.description}" for beat in chapter.beats),
    ]
    if world.npcs:
        parts.append("Characters you voice:\n" + "\n".join(f"- {npc.name}: {npc.description}" for npc in world.npcs))
    secrets = [f"- {npc.name} knows: {item}" for npc in world.npcs for item in npc.knows]
    secrets += [f"- {npc.name} hides: {item}" for npc in world.npcs for item in npc.hides]
    secrets += [f"- {truth.text}" for truth in world.truths]
    if secrets:
        parts.append(
            "GM-only knowledge. Never state it outright; let the players discover it through play:\n"
            + "\n".join(secrets)
        )
    if players:
        parts.append(
            "Players: " + "; ".join(f"{p.name} ({p.description})" if p.description else p.name for p in players) + "."
        )
    return "\n\n".join(parts)


def entry_message(entry: LogEntry) -> ChatMessage:
    """A log entry as the model reads it: players speak as the user, the GM as itself."""
    if entry.kind is EntryKind.GM:
        return ChatMessage(role="assistant", content=entry.content)
    if entry.kind is EntryKind.ROLL:
        text = f"[{entry.author} rolls {entry.content}]"
    elif entry.kind is EntryKind.SYSTEM:
        text = f"[{entry.content}]"
    else:
        text = f"{entry.author}: {entry.content}"
    if entry.visibility is Visibility.PRIVATE:
        text = f"(private) {text}"
    return ChatMessage(role="user", content=text)


def build_prompt(
    brief: str,
    history: Sequence[LogEntry],
    *,
    n_ctx: int,
    reply_tokens: int,
    count_tokens: CountTokens,
) -> Prompt:
    """The system brief, then the newest entries of ``history`` that fit, oldest first.

    ``history`` ends with the entries of the turn being answered (the new
    action and any rolls); those always go in. Older entries are dropped
    oldest first when the context would overflow.
    """

    def cost(message: ChatMessage) -> int:
        return count_tokens(message.content) + TEMPLATE_TOKENS_PER_MESSAGE

    system = ChatMessage(role="system", content=brief)
    room = n_ctx - reply_tokens - cost(system) - cost(ChatMessage(role="user", content=GAME_BEGINS))
    kept: list[LogEntry] = []
    for entry in reversed(history):
        needed = cost(entry_message(entry))
        if needed > room and kept:
            break
        room -= needed
        kept.append(entry)
    kept.reverse()
    left_out = tuple(e.id for e in history[: len(history) - len(kept)])
    messages = [system, *_alternate([entry_message(e) for e in kept])]
    return Prompt(
        messages=messages,
        tokens=sum(cost(m) for m in messages),
        entry_ids=tuple(e.id for e in kept),
        left_out=left_out,
    )


def _alternate(messages: list[ChatMessage]) -> list[ChatMessage]:
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
