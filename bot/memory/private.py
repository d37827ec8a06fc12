"""The GM's private asides: ``[[to Maya: what only Maya sees]]`` inside a reply.

The reply is split into the public text and one note per addressed
player. Markup the model garbles never leaks: an aside left open hides
everything after it, an aside to a name nobody plays goes to no one, and
while a reply streams, text that might open an aside is held back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

OPEN = "[["
CLOSE = "]]"
_ADDRESS = re.compile(
    r"^\s*(?:to|for|private(?:ly)?(?:\s+to)?)\s+([^:\]\n]{1,40}?)\s*:\s*(.*)$", re.IGNORECASE | re.DOTALL
)

SYNTAX_RULE = (
    "To tell one player something only their character sees, hears or finds, write it as "
    "[[to Name: the private text]] inside your reply; only that player receives it, and the rest of "
    "the reply is public. Never put a secret outside these brackets."
)


@dataclass(frozen=True)
class PrivateNote:
    name: str  # the player's character name as the game knows it
    text: str


def split_reply(reply: str, names: Sequence[str]) -> tuple[str, list[PrivateNote]]:
    """The public text, and the private notes for known players, in order."""
    known = {name.casefold(): name for name in names}
    public: list[str] = []
    notes: list[PrivateNote] = []
    rest = reply
    while rest:
        start = rest.find(OPEN)
        if start < 0:
            public.append(rest.replace(CLOSE, ""))
            break
        public.append(rest[:start].replace(CLOSE, ""))
        end = rest.find(CLOSE, start + len(OPEN))
        inner = rest[start + len(OPEN) : end if end >= 0 else len(rest)]
        match = _ADDRESS.match(inner)
        if match:
            name = known.get(" ".join(match.group(1).split()).casefold())
            text = " ".join(match.group(2).split())
            if name and text:
                notes.append(PrivateNote(name, text))
        if end < 0:
            break  # left open: everything after it stays private
        rest = rest[end + len(CLOSE) :]
    text = re.sub(r"[ \t]{2,}", " ", "".join(public))
    text = re.sub(r"[ \t]+\n", "\n", text)  # where an aside stood between two paragraphs
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, notes


def public_prefix(text: str) -> str:
    """What may be shown of a reply still being written: no aside, nor anything that may open one."""
    shown: list[str] = []
    rest = text
    while True:
        start = rest.find(OPEN)
        if start < 0:
            visible = rest[:-1] if rest.endswith("[") else rest
            shown.append(visible.replace(CLOSE, ""))
            break
        shown.append(rest[:start].replace(CLOSE, ""))
        end = rest.find(CLOSE, start + len(OPEN))
        if end < 0:
            break
        rest = rest[end + len(CLOSE) :]
    visible = "".join(shown)
    return visible[:-1] if visible.endswith("]") else visible


class PublicStream:
    """Turns the pieces of a streaming reply into pieces that are safe to show."""

    def __init__(self) -> None:
        self._text = ""
        self._shown = 0

    def feed(self, piece: str) -> str:
        self._text += piece
        visible = public_prefix(self._text)
        if len(visible) <= self._shown:
            return ""
        new = visible[self._shown :]
        self._shown = len(visible)
        return new
