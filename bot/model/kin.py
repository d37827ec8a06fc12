"""Which kept state a game's call starts from, and which kept state goes first: one policy for the states a model
run in this process keeps (:class:`bot.model.llamacpp.GameStates`) and for the slots of a llama.cpp server
(:class:`bot.model.slots.SlotMap`).

Each game has its own state (its prompt as the model last read it). A game with no state of its own yet starts
from its kin's: the kept state whose prompt begins as its own for longest, at least a world's frozen layer (the
rules, the setting, the characters), so a world is read once, not once per game. What is kept goes least recently
used first. The two keep their states differently, in the process's memory (as token ids) and in a server's slots
(as the first message's text), so each measures kinship in its own unit: :data:`MIN_SHARED_TOKENS` tokens or
:data:`MIN_SHARED_CHARS` characters, the same frozen layer either way.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)

# A new game starts from another game's kept state when their prompts share at least this many tokens (in process)
# or characters of their first message (on a server): about the smallest shipped world's frozen layer.
MIN_SHARED_TOKENS = 256
MIN_SHARED_CHARS = 2000


def shared_prefix(a: str | np.ndarray, b: str | np.ndarray) -> int:
    """How many tokens (two arrays of token ids) or characters (two texts) ``a`` and ``b`` share from their start."""
    if isinstance(a, str) or isinstance(b, str):
        return len(os.path.commonprefix([str(a), str(b)]))
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


def nearest_kin(
    kept: Iterable[tuple[K, str | np.ndarray]], wanted: str | np.ndarray, at_least: int, *,
    used: Mapping[K, float] | None = None, beats: int = 0,
) -> tuple[K, int] | None:  # fmt: skip
    """Of ``kept`` (each a key and how its prompt begins), the one whose prompt begins as ``wanted`` for longest,
    with that length: at least ``at_least``, and more than ``beats`` (what the state a call already has shares with
    it: a kin no closer is no better). Between kin alike the most recently ``used``; ``None`` without kin."""
    best: tuple[int, float, K] | None = None
    for key, beginning in kept:
        length = shared_prefix(beginning, wanted)
        if length < at_least or length <= beats:
            continue
        ranked = (length, (used or {}).get(key, 0.0), key)
        if best is None or ranked[:2] > best[:2]:
            best = ranked
    return None if best is None else (best[2], best[0])


def least_recent(keys: Iterable[K], used: Mapping[K, float]) -> K:
    """The key of ``keys`` used longest ago (one never used first): the state to give up for another."""
    return min(keys, key=lambda key: used.get(key, 0.0))
