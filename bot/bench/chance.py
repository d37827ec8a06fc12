"""``bench chance``: the embedding model's chance level, the mean cosine of unrelated texts.

Pairs of turns, each from a different conversation of a LoCoMo file
(turns of six words or more), are embedded as passages and, the first of
each pair, as a query; the means are what ``Embedder.comparable`` brings to
the bundled model's scale, so that the thresholds of lore by meaning and of
the guard by meaning, set with the bundled model, hold for another. The
benches that report on those thresholds (``bench recall``, ``bench leaks``)
use none of these texts.

Last line: ``chance_query=C chance_passage=C pairs=N``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TextIO

import numpy as np

from bot.errors import UserError
from bot.settings import ProcessSettings
from bot.startup import load_embedder

PAIRS = 1500
MIN_WORDS = 6


def conversations(path: Path) -> list[list[str]]:
    """Each conversation's turns of at least :data:`MIN_WORDS` words."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        found = []
        for sample in data:
            talk = sample["conversation"]
            sessions = [
                session for key, session in talk.items() if key.startswith("session_") and isinstance(session, list)
            ]
            turns = [
                t["text"] for session in sessions for t in session if len(str(t.get("text", "")).split()) >= MIN_WORDS
            ]
            if turns:
                found.append(turns)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path} is not a LoCoMo file: {exc}") from None
    if len(found) < 2:
        raise UserError(f"{path}: bench chance needs turns from two conversations at least.")
    return found


def unrelated_pairs(talks: list[list[str]], count: int = PAIRS, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    while len(pairs) < count:
        first, second = rng.sample(range(len(talks)), 2)
        pairs.append((rng.choice(talks[first]), rng.choice(talks[second])))
    return pairs


def run(settings: ProcessSettings, path: Path, out: TextIO) -> dict[str, float]:
    embedder, unavailable = load_embedder(settings)
    if embedder is None:
        raise UserError(f"bench chance needs an embedding model: {unavailable or 'GM_EMBED_MODEL is none'}.")
    pairs = unrelated_pairs(conversations(path))
    firsts = embedder.embed([a for a, _ in pairs])
    seconds = embedder.embed([b for _, b in pairs])
    queries = embedder.embed([a for a, _ in pairs], query=True)
    figures = {
        "chance_query": float(np.mean((queries * seconds).sum(axis=1))),
        "chance_passage": float(np.mean((firsts * seconds).sum(axis=1))),
        "pairs": len(pairs),
    }
    out.write(
        f"bench chance: {embedder.name}, {len(pairs)} pairs of turns from two different conversations of {path.name}\n"
        f"  mean cosine, a query against a passage {figures['chance_query']:.3f}, "
        f"a passage against a passage {figures['chance_passage']:.3f}\n"
    )
    out.write(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()) + "\n")
    return figures
