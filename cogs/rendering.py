"""How the GM's words look in Discord: split at the message limit, streamed by edits."""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable

import discord

LIMIT = 2000
EDIT_INTERVAL = 1.0  # Discord allows about five edits per five seconds per channel.

_FENCE = "```"


def split_message(text: str, limit: int = LIMIT) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at paragraph, line, sentence or word ends.

    A code fence left open by a cut is closed at the end of the piece and
    opened again at the start of the next, so Markdown renders the same.
    """
    pieces: list[str] = []
    rest = text.strip()
    reopen = ""
    while rest:
        room = limit - len(reopen) - len(_FENCE) - 1
        if len(reopen) + len(rest) <= limit:
            pieces.append(reopen + rest)
            break
        cut = _cut_point(rest, room)
        piece, rest = reopen + rest[:cut].rstrip(), rest[cut:].lstrip()
        if piece.count(_FENCE) % 2:
            language = re.search(r"```(\w*)[^`]*$", piece)
            piece += "\n" + _FENCE
            reopen = _FENCE + (language.group(1) if language else "") + "\n"
        else:
            reopen = ""
        pieces.append(piece)
    return pieces or [""]


def _cut_point(text: str, room: int) -> int:
    window = text[:room]
    for separator in ("\n\n", "\n", ". ", "! ", "? ", " "):
        at = window.rfind(separator)
        if at > room // 2:
            return at + len(separator)
    return room  # one enormous word: cut it


class StreamedReply:
    """Shows a reply as it is written, by editing one message at most once a second.

    ``send`` posts a new message; the text is finally split at the limit and
    the pieces after the first are posted in order.
    """

    def __init__(
        self,
        send: Callable[[str], Awaitable[discord.Message]],
        *,
        interval: float = EDIT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._send = send
        self._interval = interval
        self._clock = clock
        self._text = ""
        self._message: discord.Message | None = None
        self._shown = ""
        self._last_edit = 0.0
        self.messages: list[discord.Message] = []

    async def feed(self, piece: str) -> None:
        self._text += piece
        if self._clock() - self._last_edit < self._interval:
            return
        preview = split_message(self._text)[0] if len(self._text) > LIMIT else self._text
        await self._show(preview + " …")

    async def finish(self, text: str) -> list[discord.Message]:
        pieces = split_message(text)
        await self._show(pieces[0])
        for piece in pieces[1:]:
            self.messages.append(await self._send(piece))
        return self.messages

    async def _show(self, text: str) -> None:
        if text == self._shown or not text.strip():
            return
        if self._message is None:
            self._message = await self._send(text)
            self.messages.append(self._message)
        else:
            await self._message.edit(content=text)
        self._shown = text
        self._last_edit = self._clock()
