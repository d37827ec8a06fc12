"""The chains of ``bench change`` (see bot.bench.change): one thing each, whose value the GM changes at given turns
of a long game, with the questions a player asks of it at the end and filler that changes nothing.

They are data, in bot/bench/chains/, one file a set:

- ``tuned.json``: the chains the change finder's sentences and the reply rules were set against (the last fifteen
  were written apart and held out until the misses on them were looked into, five or ten at a time);
- ``seen.json``: chains written apart by a writer who had not read the change finder, run and reported held out
  once, then looked into: tuned since (a chain's ``note`` says where its word lists were corrected);
- ``held_out.json``: chains written apart after that, in other words, and reported apart. A new set is written
  by someone who has not read the finder; once its figures are reported and its misses looked into, it joins
  ``seen.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

CHAINS_FOLDER = Path(__file__).with_name("chains")


@dataclass(frozen=True)
class Step:
    at: float  # when in the game, as a share of its length
    said: str  # what the GM says
    fact: tuple[str, str, str, str]  # (kind, subject, attribute, value): what a perfect facts job records


@dataclass(frozen=True)
class Chain:
    name: str
    steps: tuple[Step, ...]
    latest: tuple[str, ...]  # words of the value that holds at the end (any one)
    older: tuple[str, ...]  # words of values it held before and holds no more
    questions: tuple[str, ...]  # in the chain's words, then in others
    filler: tuple[str, ...]  # turns on the same subject that change nothing


def load_chains(path: Path) -> tuple[Chain, ...]:
    """A set of chains from its file, each checked as it is read: steps in order within the game, a value's words
    never also a word of the other's list."""
    chains = []
    for each in json.loads(path.read_text(encoding="utf-8")):
        steps = tuple(Step(float(s["at"]), s["said"], tuple(s["fact"])) for s in each["steps"])
        chain = Chain(each["name"], steps, tuple(each["latest"]), tuple(each["older"]), tuple(each["questions"]),
                      tuple(each["filler"]))  # fmt: skip
        ats = [step.at for step in steps]
        if not steps or ats != sorted(ats) or not 0 < ats[0] <= ats[-1] < 1 or any(len(s.fact) != 4 for s in steps):
            raise ValueError(f"{path.name}: {chain.name!r}: steps must be in order within the game, each with a fact")
        if not chain.latest or not chain.questions:
            raise ValueError(f"{path.name}: {chain.name!r}: no latest value's words, or no question")
        chains.append(chain)
    return tuple(chains)


TUNED = load_chains(CHAINS_FOLDER / "tuned.json")
SEEN = load_chains(CHAINS_FOLDER / "seen.json")
HELD_OUT = load_chains(CHAINS_FOLDER / "held_out.json")
CHAINS = TUNED + SEEN + HELD_OUT
