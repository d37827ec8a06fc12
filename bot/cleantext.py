"""Text that people type or write into world files, made safe to store and to show again.

A terminal replays ANSI escape sequences and control characters raw (a
line can clear the screen or recolour it), and Discord shows them as
garbage; bytes that are not UTF-8 cannot be stored at all. Every action,
name, note, pin, lore entry and world file goes through :func:`clean_text`.
"""

from __future__ import annotations

import re

from bot.errors import UserError

# Escape sequences (CSI, OSC and two-character ones), then the C0 and C1 control characters but tab and newline.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class NotText(UserError):
    """Bytes that are not UTF-8 text."""


def clean_text(text: str) -> str:
    """``text`` without escape sequences and control characters (tabs and newlines stay).

    Raises :class:`NotText` for bytes that are not UTF-8 (they reach Python as lone surrogates).
    """
    if _SURROGATE.search(text):
        raise NotText("That text has bytes that are not UTF-8; nothing was done with it. Save or type it as UTF-8.")
    return _CONTROL.sub("", _ANSI.sub("", text.replace("\r\n", "\n")))


def clean_tree(value: object) -> object:
    """Every string in a structure read from a file, cleaned (a world file)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_tree(item) for item in value]
    if isinstance(value, dict):
        return {clean_tree(key): clean_tree(item) for key, item in value.items()}
    return value
