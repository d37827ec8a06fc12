"""``bench scenes``: where a chunk summary should end, at a fixed length or where a scene ends, judged
by which summaries carry the changes (F40).

The change game of :mod:`bot.bench.change` is played again with scenes in it: every few turns (at turns drawn
apart from the chains' steps) the players set off elsewhere, or the GM opens with a time skip or an arrival, in
the words of :data:`SCENES_TUNED` (the ones the scene finder's patterns were written against) and
:data:`SCENES_HELD_OUT` (written apart, in other words). The configured model writes every chunk summary, as in
play, once with chunks closed at their length and once also where a scene ends (``--arms`` adds ``length:N``, chunks
of N messages: a control of chunks as short as the scenes made, without their borders); the rest is scripted (the
story's rewrite too: it reads the chunk summaries, not the chunk borders, so it is kept out of what is measured).

Per change step, read from the chunk summary that covers it: whether the summary says the value the step set
(the change carried), and whether it says an earlier value of the same thing without the new one (an old value
carried as current). Reported beside them: how many chunks each way made, their length, and the share of scene
openings the finder saw, tuned and held out.
"""

from __future__ import annotations

import asyncio
import random
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from bot.bench.change import ChangeGameModel, at_shares
from bot.bench.change_chains import TUNED, Chain, Step
from bot.bench.long_game import LONG_GAME_WORLD
from bot.engine import Engine, EngineConfig
from bot.memory.compaction import opens_scene
from bot.memory.config import MemoryConfig
from bot.model.base import Answer, LanguageModel, Messages
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import load_model
from bot.store import EntryKind, LogEntry, Store, SummaryKind
from bot.worlds import WorldLibrary

POLICIES = ("length", "scene")

# (the player's action, or None for the turn's usual one; the GM's opening sentence)
SCENES_TUNED: tuple[tuple[str | None, str], ...] = (
    ("We head down to the harbour.", "You arrive at the harbour as the boats come in."),
    ("I go up to the lamp room.", "You climb up into the lamp room, where the great lens stands dark."),
    (None, "Later that evening, the company gathers in the kitchen."),
    (None, "The next morning is grey and still."),
    ("We walk out to the chapel.", "You reach the chapel as its bell falls silent."),
    (None, "Hours pass, and the storm blows itself out."),
    ("I make my way to the stables.", "You come into the stable yard, churned to mud."),
    (None, "By nightfall the wind has dropped."),
)
SCENES_HELD_OUT: tuple[tuple[str | None, str], ...] = (
    ("I follow Pip across the dunes.", "The dunes give way to a shingle beach where the lifeboat waits."),
    (None, "Two days later, the post cart brings news from Brightwater."),
    ("We row out to the wreck.", "The wreck looms out of the fog, its ribs green with weed."),
    (None, "Dawn comes up cold over the headland."),
    ("I return to the cottage.", "Back at the cottage, the fire has gone out."),
    (None, "Meanwhile, in the village, the bells ring for a wedding."),
    ("We set off for the lighthouse.", "They reach the lighthouse door as the lamp is lit."),
    (None, "A week goes by without a ship."),
)


def scene_turns(turns: int, seed: int = 11) -> dict[int, tuple[tuple[str | None, str], bool]]:
    """The turns where a scene opens, every 6 to 14 turns, each with its scene and whether it is held out."""
    rng = random.Random(seed)
    scenes = [(s, False) for s in SCENES_TUNED] + [(s, True) for s in SCENES_HELD_OUT]
    rng.shuffle(scenes)
    at: dict[int, tuple[tuple[str | None, str], bool]] = {}
    turn = rng.randint(6, 14)
    while turn <= turns:
        at[turn] = scenes[len(at) % len(scenes)]
        turn += rng.randint(6, 14)
    return at


# bench change's chains the scene finder was measured with (those written later are left to bench change).
CHAINS = TUNED[:10]


class SceneGameModel(ChangeGameModel):
    """The change game's GM, opening a scene at its turns; the chunk summaries written by ``writer``."""

    def __init__(self, turns: int, writer: LanguageModel, scenes: dict[int, tuple[tuple[str | None, str], bool]]):
        super().__init__(turns, facts=False, chains=CHAINS, place=at_shares)
        self.writer = writer
        self.scenes = scenes

    def reply_at(self, turn: int) -> list[str]:
        opening = [self.scenes[turn][0][1]] if turn in self.scenes else []
        return opening + super().reply_at(turn)

    def generate(self, messages: Messages, *, max_tokens: int) -> Answer:
        system = messages[0].content
        if system.startswith("You keep the memory of") and "Summarize the new events" in system:
            return self.writer.generate(messages, max_tokens=max_tokens)
        return super().generate(messages, max_tokens=max_tokens)


@dataclass
class Carried:
    chain: Chain
    step: Step
    summary: str | None  # the chunk summary that covers the step; None: its turn was not folded
    says_new: bool = False
    says_old: list[str] = field(default_factory=list)  # earlier values said without the new one


@dataclass
class Played:
    policy: str
    chunks: list[tuple[int, str]] = field(default_factory=list)  # (messages, text) of each chunk summary
    carried: list[Carried] = field(default_factory=list)
    seen: dict[bool, list[bool]] = field(default_factory=lambda: {False: [], True: []})  # held out -> detected

    def share(self, test) -> float:
        steps = [c for c in self.carried if c.summary is not None]
        return sum(bool(test(c)) for c in steps) / len(steps) if steps else 0.0


def memory_config(policy: str) -> MemoryConfig:
    """``length`` or ``scene``: where chunks end; ``length:N``: at a length of N messages (a control: chunks as
    short as the scenes made, with no scene borders)."""
    if policy.startswith("length:"):
        return MemoryConfig(chunk_ends="length", trigger_messages=int(policy.split(":", 1)[1]))
    if policy not in POLICIES:
        raise ValueError(f"no such way to end chunks: {policy!r}")
    return MemoryConfig(chunk_ends="scene" if policy == "scene" else "length")


def value_words(chain: Chain, step: Step) -> list[str]:
    """The words of ``chain`` that name the value ``step`` set."""
    value = step.fact[3].casefold()
    return [w for w in (*chain.latest, *chain.older) if w.casefold() in value]


def _says(text: str, words: list[str]) -> bool:
    low = text.casefold()
    return any(re.search(rf"(?<!\w){re.escape(w.casefold())}", low) for w in words)


def judge(chain: Chain, step: Step, summary: str | None) -> Carried:
    carried = Carried(chain, step, summary)
    if summary is None:
        return carried
    new = value_words(chain, step)
    carried.says_new = _says(summary, new)
    earlier = [w for s in chain.steps[: chain.steps.index(step)] for w in value_words(chain, s) if w not in new]
    if not carried.says_new:
        carried.says_old = sorted({w for w in earlier if _says(summary, [w])})
    return carried


async def play(turns: int, policy: str, writer: LanguageModel) -> Played:
    played = Played(policy)
    scenes = scene_turns(turns)
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "scenes.sqlite3")
        library = WorldLibrary(Path(tmp) / "no-worlds")
        library.worlds[LONG_GAME_WORLD.id] = LONG_GAME_WORLD
        model = SceneGameModel(turns, writer, scenes)
        config = EngineConfig(n_ctx=4096, memory=memory_config(policy))
        try:
            async with ModelWorker(model) as worker:
                engine = Engine(store, worker, library, config)
                game = (await engine.start_game(f"scenes:{policy}", LONG_GAME_WORLD.id)).game
                for name in ("Maya", "Tom"):
                    await engine.join(game.id, name.lower(), name)
                actions = ["I look around.", "I walk on.", "I listen to the sea.", "I wait and watch."]
                for turn in range(1, turns + 1):
                    model.turn = turn
                    scene = scenes.get(turn)
                    action = scene[0][0] if scene and scene[0][0] else actions[turn % len(actions)]
                    await engine.act(game.id, ("maya", "tom")[turn % 2], action)
                    await engine.settled(game.id)
                await engine.measures.fold_closed(game.id)
                log = await engine.measures.log(game.id)
                await engine.close()
            summaries = await store.summaries(game.id, SummaryKind.CHUNK.value)
        finally:
            await store.close()
    played.chunks = [
        (sum(1 for e in log if s.first_entry_id <= e.id <= s.last_entry_id), s.content)
        for s in summaries if s.first_entry_id is not None and s.last_entry_id is not None
    ]  # fmt: skip
    _scenes_seen(played, log, scenes)
    for chain in CHAINS:
        for step in chain.steps:
            entry = next((e for e in log if e.kind is EntryKind.GM and step.said in e.content), None)
            covering = next(
                (s.content for s in summaries if entry is not None and s.first_entry_id is not None
                 and s.last_entry_id is not None and s.first_entry_id <= entry.id <= s.last_entry_id),
                None,
            )  # fmt: skip
            played.carried.append(judge(chain, step, covering))
    return played


def _scenes_seen(played: Played, log: list[LogEntry], scenes: dict[int, tuple[tuple[str | None, str], bool]]) -> None:
    """For each scene opened in the game, whether the finder saw it at its action or its reply."""
    for turn, ((action, opening), held_out) in scenes.items():
        entries = [e for e in log if e.turn == turn and e.kind in (EntryKind.ACTION, EntryKind.GM)]
        said = [e for e in entries if (e.kind is EntryKind.GM and e.content.startswith(opening))
                or (action is not None and e.kind is EntryKind.ACTION and e.content == action)]  # fmt: skip
        played.seen[held_out].append(any(opens_scene(e) for e in said))


def report(runs: list[Played], out: TextIO) -> dict[str, float]:
    figures: dict[str, float] = {}
    out.write(f"\n{'chunks end at':<14} {'chunks':>7} {'messages':>9} {'words':>6} {'change carried':>15}"
              f" {'old as current':>15}\n")  # fmt: skip
    for run in runs:
        messages = sum(n for n, _ in run.chunks) / len(run.chunks) if run.chunks else 0.0
        words = sum(len(t.split()) for _, t in run.chunks) / len(run.chunks) if run.chunks else 0.0
        carried = run.share(lambda c: c.says_new)
        stale = run.share(lambda c: c.says_old)
        out.write(f"{run.policy:<14} {len(run.chunks):>7} {messages:>9.1f} {words:>6.0f} {carried:>15.2f}"
                  f" {stale:>15.2f}\n")  # fmt: skip
        figures[f"carried_{run.policy}"] = carried
        figures[f"old_as_current_{run.policy}"] = stale
        figures[f"chunks_{run.policy}"] = float(len(run.chunks))
    for held_out in (False, True):
        seen = runs[0].seen[held_out]
        share = sum(seen) / len(seen) if seen else 0.0
        out.write(f"scene openings seen, {'held out' if held_out else 'tuned'}: {sum(seen)} of {len(seen)}\n")
        figures[f"scenes_seen_{'held_out' if held_out else 'tuned'}"] = share
    for run in runs:
        for c in run.carried:
            if c.summary is not None and (not c.says_new or c.says_old):
                out.write(f"  [{run.policy}] {c.step.said!r}: {'not carried' if not c.says_new else ''}"
                          f"{'; says ' + ', '.join(c.says_old) if c.says_old else ''}\n")  # fmt: skip
    out.write(" ".join(f"{k}={v:.3f}" for k, v in figures.items()) + "\n")
    return figures


def run(settings: ProcessSettings, turns: int, out: TextIO, policies: tuple[str, ...] = POLICIES) -> dict[str, float]:
    writer = load_model(settings)
    out.write(f"bench scenes: {turns} turns, chunk summaries by {writer.name}, "
              f"{len(CHAINS)} chains, {sum(len(c.steps) for c in CHAINS)} change steps\n")  # fmt: skip
    runs = []
    for policy in policies:
        runs.append(asyncio.run(play(turns, policy, writer)))
        out.write(f"  played, chunks ending at {policy}: {len(runs[-1].chunks)} chunk summaries\n")
        out.flush()
    return report(runs, out)
