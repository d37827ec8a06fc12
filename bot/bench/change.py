"""``bench change``: whether the memory tells where a value is now, after it changed again and again (F40).

Built as MEME (arXiv 2605.12477) measures a memory's tracking of changing values: chains of two to five changes of
one thing (a place, a holder, a code, a side, an end), values that return to an earlier one, things that stop
existing, a change that makes another fact false (the candlestick in the well leaves the altar bare). Each chain is
told by the GM at its turns of a long scripted game, among filler on the same subjects; at the game's end a player
asks about each, in the chain's words and in others. Per question: whether the latest value reached the GM's prompt,
and whether an older value reached it unmarked (not shown as older, nor followed by the newer one).

Played through the real engine and store (recall by words and by meaning, the bundled embedding model), with the
facts job finding nothing (as a small model's often does) and finding every change, at 300 and 1,000 turns. The
chains of :data:`TUNED` are the ones the change finder's sentences and the reply rules were set against (the last
thirty were held out until the misses on them were looked into, five or ten at a time), and those of
:data:`SEEN` were held out once, then looked into; :data:`HELD_OUT` were written apart after that, in other
words, and are reported apart. With ``--replies`` (``--replies held-out``: the held-out questions alone, the
figure the aim is set on, in a quarter of the time on a CPU), the configured model answers
the questions at the end of the 300-turn game, in each arm played (``--facts``: none, all, or both), each on its own
copy of the game as it stood then, and its replies are checked for the latest value.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from bot.bench.change_chains import CHAINS, HELD_OUT, SEEN, TUNED, Chain, Step
from bot.bench.long_game import FILLER, LONG_GAME_WORLD, says
from bot.engine import Engine, EngineConfig
from bot.engine.game import ModelFailed
from bot.model.base import ChatMessage, LanguageModel
from bot.model.embedding import Embedder
from bot.model.scripted import ScriptedModel, found_nothing
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import load_embedder, load_model
from bot.store import Store
from bot.store.backup import backup_database
from bot.worlds import WorldLibrary

MARKERS = ("since changed", "before:", "until turn")  # how the prompt marks a value as older


def at_shares(turns: int, chains: Sequence[Chain]) -> dict[int, list[Step]]:
    """Each chain's steps at the turns their shares put them, several to a turn where they meet (bench scenes
    plays its ten chains so, as its figures were measured)."""
    at: dict[int, list[Step]] = {}
    for chain in chains:
        for step in chain.steps:
            at.setdefault(max(1, round(step.at * turns)), []).append(step)
    return at


def planted(turns: int, chains: Sequence[Chain] = CHAINS) -> dict[int, list[Step]]:
    """Each chain's steps at their turns of a game of ``turns`` turns, one step a turn where the game is long
    enough: all chains' steps in the order of their shares, spread evenly over the game, so a step's turn is where
    its share ranks among all of them. A GM turn tells one change or two, not fourteen: with the steps where their
    shares put them, one turn of 300 told fourteen (the writers' shares are round: .1, .3, .8), the facts job found
    five of them, and "the facts job finding every change" was not so. Placed chain by chain at the free turn
    nearest each share instead, the chains listed last (the held-out ones) found the turns near their shares taken
    and told all their changes in the game's last twenty turns."""
    order = sorted(
        ((step.at, i, n) for n, chain in enumerate(chains) for i, step in enumerate(chain.steps)),
    )  # a chain's shares rise, so its steps keep their order
    at: dict[int, list[Step]] = {}
    for rank, (_, i, n) in enumerate(order):
        at.setdefault(1 + rank * (turns - 1) // len(order), []).append(chains[n].steps[i])
    return at


Placing = Callable[[int, Sequence[Chain]], dict[int, list[Step]]]


class ChangeGameModel(ScriptedModel):
    """The GM of the change game: a planted step at its turn, filler on the chains' subjects otherwise; the facts
    job finds every planted change (``facts``) or nothing; summaries keep nothing of the chains."""

    def __init__(
        self, turns: int, *, facts: bool, seed: int = 3, chains: Sequence[Chain] = CHAINS, place: Placing = planted
    ):
        super().__init__(default=self._background)
        self.rng = random.Random(seed)
        self.turn = 0
        self.steps = place(turns, chains)
        self.facts = facts
        self.topical = [line for chain in chains for line in chain.filler]

    def _background(self, messages: list[ChatMessage]) -> str:
        system, user = messages[0].content, messages[-1].content
        if system.startswith("You record the facts"):
            found = []
            if self.facts:
                for steps in self.steps.values():
                    for step in steps:
                        if step.said in user:
                            kind, subject, attribute, value = step.fact
                            found.append({"kind": kind, "subject": subject, "attribute": attribute, "value": value})
            return json.dumps({"facts": found[:5]})
        if (quiet := found_nothing(messages)) is not None:
            return quiet
        if system.startswith("You keep the private memory"):
            return json.dumps({"summary": "The character walked about the island and saw little.", "facts": []})
        return "The players wandered the island for a while; the weather turned and nothing was settled."

    def reply_at(self, turn: int) -> list[str]:
        """The sentences of the GM's reply at ``turn``: its planted steps, then filler."""
        said = [step.said for step in self.steps.get(turn, [])]
        return [*said, *self.rng.sample(self.topical, 1), *self.rng.sample(FILLER, 1)]

    def stream(
        self, messages, *, max_tokens: int, slot: str | None = None, stop=(), fresh: bool = False, min_tokens: int = 0
    ):
        self.enqueue(" ".join(self.reply_at(self.turn)))
        return super().stream(messages, max_tokens=max_tokens, slot=slot, stop=stop, fresh=fresh, min_tokens=min_tokens)


@dataclass
class Asked:
    chain: Chain
    question: str
    held_out: bool
    latest_in: bool
    older_unmarked: list[str]
    reply: str | None = None

    @property
    def reply_says_latest(self) -> bool:
        return (
            self.reply is not None
            and says(self.reply, self.chain.latest)
            or (self.reply is not None and any(w.casefold() in self.reply.casefold() for w in self.chain.latest))
        )


@dataclass
class Run:
    turns: int
    facts: bool
    asked: list[Asked] = field(default_factory=list)

    def share(self, held_out: bool, test) -> float:
        chosen = [a for a in self.asked if a.held_out == held_out]
        return sum(bool(test(a)) for a in chosen) / len(chosen) if chosen else 0.0


def memory_lines(messages: Sequence[ChatMessage]) -> list[str]:
    """The lines of a prompt the memory chose: the front (summaries, facts, pins) and every turn's notes (recall,
    lore), not the recent turns themselves, which tell the game in its order, nor the question."""
    lines = messages[0].content.splitlines()
    for message in messages[1:]:
        if message.role == "user":
            lines += [line for line in message.content.splitlines() if line.startswith("- ")]
    return lines


def older_unmarked(lines: Sequence[str], chain: Chain) -> list[str]:
    """The older values of ``chain`` that a line the memory chose shows, about the chain's subject, without marking
    them older."""
    head = chain.steps[0].fact[1].split()[-1].casefold().removesuffix("'s")
    found = []
    for line in lines:
        low = line.casefold()
        if head not in low or any(marker in low for marker in MARKERS):
            continue
        for word in chain.older:
            if re.search(rf"(?<!\w){re.escape(word.casefold())}", low) and not any(
                re.search(rf"(?<!\w){re.escape(w.casefold())}", low) for w in chain.latest
            ):
                found.append(word)
    return sorted(set(found))


async def play(
    turns: int, facts: bool, embedder: Embedder | None, reply_model: LanguageModel | None = None,
    held_out_only: bool = False,
) -> Run:  # fmt: skip
    run = Run(turns, facts)
    with tempfile.TemporaryDirectory() as tmp:
        played = Path(tmp) / "change.sqlite3"
        library = WorldLibrary(Path(tmp) / "no-worlds")
        library.worlds[LONG_GAME_WORLD.id] = LONG_GAME_WORLD
        store = await Store.open(played)
        model = ChangeGameModel(turns, facts=facts)
        try:
            async with ModelWorker(model) as worker:
                engine = Engine(store, worker, library, EngineConfig(n_ctx=4096), embedder=embedder)
                game = (await engine.start_game("change", LONG_GAME_WORLD.id)).game
                for name in ("Maya", "Tom"):
                    await engine.join(game.id, name.lower(), name)
                actions = ["I look around.", "I walk on.", "I listen to the sea.", "I wait and watch."]
                for turn in range(1, turns + 1):
                    model.turn = turn
                    await engine.act(game.id, ("maya", "tom")[turn % 2], actions[turn % len(actions)])
                    await engine.settled(game.id)
                for chain in CHAINS:
                    for question in chain.questions:
                        context = await engine.preview(game.id, "Maya", question)
                        prompt = "\n".join(m.content for m in context.messages)
                        run.asked.append(Asked(
                            chain, question, chain in HELD_OUT,
                            any(re.search(rf"(?<!\w){re.escape(w.casefold())}", prompt.casefold())
                                for w in chain.latest),
                            older_unmarked(memory_lines(context.messages), chain),
                        ))  # fmt: skip
                await engine.close()
        finally:
            await store.close()
        if reply_model is not None:
            async with ModelWorker(reply_model) as worker:
                for i, asked in enumerate(run.asked):
                    if held_out_only and not asked.held_out:
                        continue
                    asked.reply = await _answer_alone(played, Path(tmp) / f"asked-{i}.sqlite3", worker, library,
                                                      embedder, game.id, asked.question)  # fmt: skip
    return run


async def _answer_alone(
    played: Path,
    copy: Path,
    worker: ModelWorker,
    library: WorldLibrary,
    embedder: Embedder | None,
    game_id: int,
    question: str,
) -> str:
    """The GM's reply to ``question`` asked of the game as it stood at its last turn, in a copy of it: each case is
    asked on its own, so that no earlier answer (a wrong code the model made up, an aside to the asking player)
    stands in the game when the next is asked."""
    store = await Store.open(backup_database(played, copy))
    try:
        engine = Engine(store, worker, library, EngineConfig(n_ctx=4096), embedder=embedder)
        engine.hold_upkeep()  # the question only
        try:
            return await _answer(engine, game_id, question)
        finally:
            await engine.close()
    finally:
        await store.close()


async def _answer(engine: Engine, game_id: int, question: str) -> str:
    """The GM's reply to ``question``; where it had nothing to say, pressed Retry once, as a player would, and a
    second failure counts as a reply that does not say the latest value."""
    try:
        return (await engine.act(game_id, "maya", question)).text
    except ModelFailed:
        try:
            return (await engine.retry(game_id)).text
        except ModelFailed as failed:
            return f"({failed})"


def report(runs: Sequence[Run], out: TextIO) -> dict[str, float]:
    figures: dict[str, float] = {}
    out.write(f"\n{'turns':>6} {'facts job':<10} {'set':<9} {'latest in prompt':>17} {'older unmarked':>15}"
              f" {'reply says latest':>18}\n")  # fmt: skip
    for run in runs:
        for held_out in (False, True):
            label = "held out" if held_out else "tuned"
            latest = run.share(held_out, lambda a: a.latest_in)
            older = run.share(held_out, lambda a: a.older_unmarked)
            replied = [a for a in run.asked if a.held_out == held_out and a.reply is not None]
            says_latest = sum(a.reply_says_latest for a in replied) / len(replied) if replied else None
            shown = f"{says_latest:.2f}" if says_latest is not None else "-"
            out.write(f"{run.turns:>6} {'finds all' if run.facts else 'finds none':<10} {label:<9} {latest:>17.2f}"
                      f" {older:>15.2f} {shown:>18}\n")  # fmt: skip
            key = f"{run.turns}_{'all' if run.facts else 'none'}_{'held_out' if held_out else 'tuned'}"
            figures[f"latest_{key}"] = latest
            figures[f"older_unmarked_{key}"] = older
            if says_latest is not None:
                figures[f"reply_latest_{key}"] = says_latest
    for run in runs:
        for asked in run.asked:
            if not asked.latest_in or asked.older_unmarked or (asked.reply is not None and not asked.reply_says_latest):
                out.write(f"  [{run.turns} {'all' if run.facts else 'none'}] {asked.question!r}: latest "
                          f"{'in' if asked.latest_in else 'NOT in'} the prompt; older unmarked: "
                          f"{asked.older_unmarked or 'none'}"
                          + (f"; reply: {asked.reply[:160]!r}" if asked.reply is not None else "") + "\n")  # fmt: skip
    out.write(" ".join(f"{k}={v:.3f}" for k, v in figures.items()) + "\n")
    return figures


def run(
    settings: ProcessSettings, lengths: Sequence[int], replies: str | None, out: TextIO,
    facts_arms: Sequence[str] = ("none", "all"),
) -> dict[str, float]:  # fmt: skip
    """``replies``: None, "all" (every question answered by the configured model) or "held-out" (those alone), in
    each of ``facts_arms`` played ("none": the facts job finds nothing; "all": every change)."""
    embedder, unavailable = load_embedder(settings)
    out.write(
        f"bench change: {len(CHAINS)} chains ({len(TUNED) + len(SEEN)} tuned, {len(HELD_OUT)} held out), "
        f"{sum(len(c.questions) for c in CHAINS)} questions; recall by "
        f"{'words and meaning (' + embedder.name + ')' if embedder else 'words alone: ' + str(unavailable)}\n"
    )
    reply_model = None
    if replies:
        reply_model = load_model(settings)
        out.write(f"replies by {reply_model.name}\n")
    runs = []
    for turns in lengths:
        for facts in [arm == "all" for arm in facts_arms]:
            with_replies = reply_model if (replies and turns == min(lengths)) else None
            runs.append(asyncio.run(play(turns, facts, embedder, with_replies, held_out_only=replies == "held-out")))
            out.write(f"  played {turns} turns, the facts job finding {'every change' if facts else 'nothing'}\n")
            out.flush()
    return report(runs, out)
