"""The world book: which lore entries this turn's texts trigger.

Keys are matched before the GM writes, against the player's new action and
the last few turns, so an entry arrives on the very turn its key is first
said rather than one turn late. Pure functions of plain data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from bot.worlds import LoreEntry

# Players type straight and curly apostrophes alike; a key matches either.
APOSTROPHES = "'\u2018\u2019\u02bc"
_APOSTROPHE = f"[{APOSTROPHES}]"

# Texts are joined with a character that is neither a word character nor
# whitespace: a key cannot run from one text into the next, and each text's
# edges still count as word boundaries.
_SEPARATOR = "\x00"

_NEVER = re.compile(r"(?!)")


@dataclass(frozen=True)
class LoreMatch:
    """An entry that fires this turn, and the key that fired it (``None`` when always on)."""

    entry: LoreEntry
    key: str | None


def scan_texts(action: str, recent: Sequence[str], depth: int) -> list[str]:
    """The texts keys are matched against: the last ``depth`` of ``recent`` (oldest first), then the new action."""
    earlier = list(recent[-depth:]) if depth > 0 else []
    return [*earlier, action]


def match_lore(entries: Sequence[LoreEntry], texts: Sequence[str]) -> list[LoreMatch]:
    """The entries that fire for ``texts``, highest priority first, then in the order given.

    A key matches case-insensitively as a whole word or phrase. An entry with
    secondary keys fires only when one of its keys and one of its secondary
    keys both match somewhere in ``texts``. Each entry (by id) fires at most
    once, however many of its keys match.
    """
    said = _said_in(_SEPARATOR.join(texts))
    matches: list[LoreMatch] = []
    fired: set[str] = set()
    for entry in entries:
        if entry.id in fired:
            continue
        match = _fire(entry, said)
        if match is not None:
            matches.append(match)
            fired.add(entry.id)
    # sorted() is stable, so entries of equal priority keep the order they were given in.
    return sorted(matches, key=lambda match: -match.entry.priority)


def _fire(entry: LoreEntry, said: Callable[[str], bool]) -> LoreMatch | None:
    if entry.always_on:
        return LoreMatch(entry, None)
    key = next((key for key in entry.keys if said(key)), None)
    if key is None:
        return None
    if entry.secondary_keys and not any(said(secondary) for secondary in entry.secondary_keys):
        return None
    return LoreMatch(entry, key)


def _said_in(haystack: str) -> Callable[[str], bool]:
    """A membership test that searches ``haystack`` at most once per key, however many entries share it."""
    seen: dict[str, bool] = {}

    def said(key: str) -> bool:
        if key not in seen:
            seen[key] = _key_pattern(key).search(haystack) is not None
        return seen[key]

    return said


@lru_cache(maxsize=4096)
def _key_pattern(key: str) -> re.Pattern[str]:
    """The compiled pattern for one key; cached, since the same keys are tried every turn.

    The key may not touch a letter or digit on either side ("oil" is not in
    "boiling"), its words may be split by any whitespace, and it may take a
    possessive ("Silas" is in "Silas's") but not a contraction ("don" is not
    in "don't").
    """
    words = key.split()
    if not words:
        return _NEVER
    body = r"\s+".join(_word_pattern(word) for word in words)
    return re.compile(
        rf"(?<!\w){body}(?:{_APOSTROPHE}s)?(?!\w|{_APOSTROPHE}\w)",
        re.IGNORECASE,
    )


def _word_pattern(word: str) -> str:
    return "".join(_APOSTROPHE if char in APOSTROPHES else re.escape(char) for char in word)
