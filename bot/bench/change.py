"""``bench change``: whether the memory tells where a value is now, after it changed again and again (F40).

Built as MEME (arXiv 2605.12477) measures a memory's tracking of changing values: chains of two to five changes
of one thing (a place, a holder, a code, a side, an end), values that return to an earlier one, things that stop
existing, a change that makes another fact false (the candlestick in the well leaves the altar bare). Each chain is
told by the GM at its turns of a long scripted game, among filler on the same subjects; at the game's end a player
asks about each, in the chain's words and in others. Per question: whether the latest value reached the GM's
prompt, and whether an older value reached it unmarked (not shown as older, nor followed by the newer one).

Played through the real engine and store (recall by words and by meaning, the bundled embedding model), with the
facts job finding nothing (as a small model's often does) and finding every change, at 300 and 1,000 turns. The
chains of :data:`TUNED` are the ones the change finder's sentences and the reply rules were set against (the
last ten were held out until the misses on them were looked into, five at a time); :data:`HELD_OUT` were written
apart after that, in other words, and are reported apart. With ``--replies``, the configured model answers the
questions at the end of the 300-turn game (the facts job finding nothing), each on its own copy of the game as it
stood then, and its replies are checked for the latest value.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

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


def _item(subject: str, attribute: str, value: str, kind: str = "item") -> tuple[str, str, str, str]:
    return (kind, subject, attribute, value)


TUNED: tuple[Chain, ...] = (
    Chain(
        "candlestick moved four times",
        (
            Step(0.04, "Ines sets the swan candlestick on the chapel altar.",
                 _item("swan candlestick", "location", "on the chapel altar")),
            Step(0.23, "Pip carries the swan candlestick into the vestry.",
                 _item("swan candlestick", "location", "in the vestry")),
            Step(0.47, "Mrs Ashdown takes the swan candlestick up to the bell tower.",
                 _item("swan candlestick", "location", "in the bell tower")),
            Step(0.77, "Wren drops the swan candlestick into the old well.",
                 _item("swan candlestick", "location", "in the old well")),
        ),
        ("well",), ("altar", "vestry", "bell tower"),
        ("Where is the swan candlestick now?", "Where did the silver candle holder end up?",
         "What stands on the chapel altar these days?"),
        ("The swan candlestick gleams in the lamplight.", "Someone polishes the swan candlestick's base."),
    ),
    Chain(
        "a side switched and switched back",
        (
            Step(0.08, "The ferryman works for Ashby, everyone says.",
                 _item("ferryman", "allegiance", "Ashby", "character")),
            Step(0.37, "The ferryman now works for the Crown.",
                 _item("ferryman", "allegiance", "the Crown", "character")),
            Step(0.87, "The ferryman is back with Ashby.", _item("ferryman", "allegiance", "Ashby", "character")),
        ),
        ("Ashby",), ("Crown",),
        ("Who does the ferryman work for now?", "Whose side is the boatman on these days?"),
        ("The ferryman spits into the grey water.", "The ferryman counts his coins twice."),
    ),
    Chain(
        "a code changed once",
        (
            Step(0.15, "The cellar door code is 419.", _item("cellar door code", "code", "419")),
            Step(0.63, "Mrs Ashdown changes the cellar door code to 882.", _item("cellar door code", "code", "882")),
        ),
        ("882",), ("419",),
        ("What is the cellar door code?", "What number opens the wine vault's lock now?"),
        ("The cellar door's keypad is stiff with salt.", "Nobody goes near the cellar door after dark."),
    ),
    Chain(
        "a thing that stops existing",
        (
            Step(0.06, "The captain's letter lies in the desk drawer.",
                 _item("captain's letter", "location", "in the desk drawer")),
            Step(0.67, "Wren burns the captain's letter in the kitchen stove.",
                 _item("captain's letter", "state", "burned")),
        ),
        ("burn", "burned", "burnt", "ashes"), ("drawer",),
        ("Where is the captain's letter?", "What became of the skipper's correspondence?"),
        ("The captain mutters about the letter.", "The desk in the study creaks when leaned on."),
    ),
    Chain(
        "a thing handed on three times",
        (
            Step(0.1, "Maya hands the storm lantern to Pip.", _item("storm lantern", "holder", "Pip")),
            Step(0.4, "Pip gives the storm lantern to Mrs Ashdown.", _item("storm lantern", "holder", "Mrs Ashdown")),
            Step(0.73, "Mrs Ashdown hands the storm lantern to Wren.", _item("storm lantern", "holder", "Wren")),
        ),
        ("Wren",), ("Pip", "Ashdown"),
        ("Who has the storm lantern now?", "Whose hands is the hurricane lamp in?"),
        ("The storm lantern hisses as its wick burns.", "The storm lantern's glass is sooty."),
    ),
    Chain(
        "a key moved three times",
        (
            Step(0.05, "Tom hides the brass key under the mat.", _item("brass key", "location", "under the mat")),
            Step(0.33, "The brass key now rests in the chapel bell.",
                 _item("brass key", "location", "in the chapel bell")),
            Step(0.8, "Wren tucks the brass key inside his boot.",
                 _item("brass key", "location", "inside Wren's boot")),
        ),
        ("boot",), ("mat", "bell"),
        ("Where is the brass key now?", "Where's the little metal key kept these days?"),
        ("The brass key is cold to the touch.", "Nobody has used the brass key in years."),
    ),
    Chain(
        "a side switched once",
        (
            Step(0.12, "Tally serves the excise men.", _item("Tally", "allegiance", "the excise men", "character")),
            Step(0.57, "Tally has gone over to the smugglers.",
                 _item("Tally", "allegiance", "the smugglers", "character")),
        ),
        ("smuggler", "smugglers"), ("excise",),
        ("Which side is Tally on?", "Who does Tally answer to now?"),
        ("Tally whistles a shanty on the jetty.", "Tally's boots are always wet."),
    ),
    Chain(
        "a code changed twice",
        (
            Step(0.09, "The combination of the strongbox is 7-3-1.", _item("strongbox combination", "code", "7-3-1")),
            Step(0.43, "The strongbox combination was changed to 2-9-4.",
                 _item("strongbox combination", "code", "2-9-4")),
            Step(0.83, "The strongbox combination is now 5-5-0.", _item("strongbox combination", "code", "5-5-0")),
        ),
        ("5-5-0",), ("7-3-1", "2-9-4"),
        ("What is the strongbox combination?", "Which numbers open the iron chest?"),
        ("The strongbox sits heavy in the corner.", "The strongbox's hinges are rusted."),
    ),
    Chain(
        "a thing used up",
        (
            Step(0.14, "The last oil barrel stands in the lamp room.",
                 _item("last oil barrel", "location", "in the lamp room")),
            Step(0.6, "The last oil barrel is used up.", _item("last oil barrel", "state", "used up")),
        ),
        ("used up", "empty"), ("lamp room",),
        ("Where is the last oil barrel?", "Is there any lamp fuel left in the barrel?"),
        ("The oil barrel smells of whale fat.", "Someone taps the oil barrel to hear it ring."),
    ),
    Chain(
        "a thing moved and brought back",
        (
            Step(0.07, "Pip carries the red signal flag to the boathouse.",
                 _item("red signal flag", "location", "in the boathouse")),
            Step(0.3, "The red signal flag now hangs on the cottage door.",
                 _item("red signal flag", "location", "on the cottage door")),
            Step(0.53, "Wren throws the red signal flag into the sea.",
                 _item("red signal flag", "location", "in the sea")),
            Step(0.9, "Mrs Ashdown puts the red signal flag back in the boathouse.",
                 _item("red signal flag", "location", "in the boathouse")),
        ),
        ("boathouse",), ("cottage door", "sea"),
        ("Where is the red signal flag?", "Where has the scarlet banner got to?"),
        ("The red signal flag snaps in the wind.", "Someone has mended a tear in the red signal flag."),
    ),
    Chain(
        "a chart lent and given back",
        (
            Step(0.11, "Nell keeps the tide chart folded in her apron.", _item("tide chart", "holder", "Nell")),
            Step(0.46, "Nell lends the tide chart to the harbourmaster.",
                 _item("tide chart", "holder", "the harbourmaster")),
            Step(0.81, "The harbourmaster gives the tide chart back to Nell.", _item("tide chart", "holder", "Nell")),
        ),
        ("Nell",), ("harbourmaster",),
        ("Who has the tide chart now?", "Whose keeping is the map of the currents in?"),
        ("The tide chart is stained with candle wax.", "Someone has pencilled notes on the tide chart."),
    ),
    Chain(
        "a compass moved twice",
        (
            Step(0.16, "The whalebone compass sits on the mantelpiece.",
                 _item("whalebone compass", "location", "on the mantelpiece")),
            Step(0.5, "Tom slips the whalebone compass into his oilskin locker.",
                 _item("whalebone compass", "location", "in Tom's oilskin locker")),
            Step(0.88, "Pip buries the whalebone compass in the dunes.",
                 _item("whalebone compass", "location", "buried in the dunes")),
        ),
        ("dunes",), ("mantelpiece", "locker"),
        ("Where is the whalebone compass?", "Where would I find the carved bone needle that points north?"),
        ("The whalebone compass needle trembles.", "A whale is carved on the whalebone compass."),
    ),
    Chain(
        "a password changed twice",
        (
            Step(0.13, "The wreckers' password is gannet.", _item("wreckers' password", "code", "gannet")),
            Step(0.48, "The wreckers change their password to cormorant.",
                 _item("wreckers' password", "code", "cormorant")),
            Step(0.78, "From tonight the wreckers' password is puffin.", _item("wreckers' password", "code", "puffin")),
        ),
        ("puffin",), ("gannet", "cormorant"),
        ("What is the wreckers' password?", "Which word gets you past the wreckers' door these nights?"),
        ("The wreckers keep their door barred.", "A wrecker whistles at the door before knocking."),
    ),
    Chain(
        "a boat wrecked",
        (
            Step(0.2, "The rowing boat is drawn up on the slipway.",
                 _item("rowing boat", "location", "on the slipway")),
            Step(0.7, "The storm smashes the rowing boat to splinters on the rocks.",
                 _item("rowing boat", "state", "smashed to splinters")),
        ),
        ("smashed", "splinters", "wrecked", "destroyed", "broken"), ("slipway",),
        ("Where is the rowing boat?", "Can we take the little skiff out to the rock?"),
        ("The rowing boat's paint is peeling.", "Someone has left a bailing tin in the rowing boat."),
    ),
    Chain(
        "a keeper replaced",
        (
            Step(0.18, "Old Morwen keeps the light at night.", _item("light", "keeper", "Morwen")),
            Step(0.55, "Morwen is too ill to climb the stairs, so Jory keeps the light now.",
                 _item("light", "keeper", "Jory")),
        ),
        ("Jory",), ("Morwen",),
        ("Who keeps the light at night?", "Who tends the great lamp up the tower after dark?"),
        ("The light turns slowly over the black water.", "The great light's brass is polished every evening."),
    ),
)  # fmt: skip

HELD_OUT: tuple[Chain, ...] = (
    Chain(
        "a telescope that changes owners",
        (
            Step(0.12, "The brass telescope belongs to Captain Hale.",
                 _item("brass telescope", "holder", "Captain Hale")),
            Step(0.52, "Hale trades the brass telescope to a tinker for a jug of rum.",
                 _item("brass telescope", "holder", "a tinker")),
            Step(0.85, "The tinker loses the brass telescope at cards to Orla.",
                 _item("brass telescope", "holder", "Orla")),
        ),
        ("Orla",), ("Hale", "tinker"),
        ("Who owns the brass telescope now?", "Whose is the spyglass these days?"),
        ("The brass telescope's lens is scratched.", "Someone has engraved a star on the brass telescope."),
    ),
    Chain(
        "a locket moved twice",
        (
            Step(0.09, "The silver locket hangs on a nail above the stove.",
                 _item("silver locket", "location", "on a nail above the stove")),
            Step(0.41, "Bram wraps the silver locket in a rag and stuffs it behind the loose brick.",
                 _item("silver locket", "location", "behind the loose brick")),
            Step(0.74, "Someone has moved the silver locket to the chapel windowsill.",
                 _item("silver locket", "location", "on the chapel windowsill")),
        ),
        ("windowsill",), ("nail", "brick"),
        ("Where is the silver locket now?", "Where did the little silver pendant go?"),
        ("The silver locket is tarnished at the clasp.", "The silver locket holds a curl of red hair."),
    ),
    Chain(
        "a master changed",
        (
            Step(0.15, "The innkeeper takes his orders from the magistrate.",
                 _item("innkeeper", "allegiance", "the magistrate", "character")),
            Step(0.6, "The innkeeper now takes his orders from the Black Gull gang.",
                 _item("innkeeper", "allegiance", "the Black Gull gang", "character")),
        ),
        ("Gull",), ("magistrate",),
        ("Who does the innkeeper take orders from now?", "Which master does the man who keeps the tavern obey?"),
        ("The innkeeper wipes the same mug over and over.", "The innkeeper's apron is stained with ale."),
    ),
    Chain(
        "a loaf eaten",
        (
            Step(0.25, "The last loaf of bread sits in the pantry.",
                 _item("last loaf of bread", "location", "in the pantry")),
            Step(0.66, "The children eat the last loaf of bread.", _item("last loaf of bread", "state", "eaten")),
        ),
        ("eaten", "gone", "ate"), ("pantry",),
        ("Where is the last loaf of bread?", "Is there anything left to eat in the larder?"),
        ("The last loaf of bread smells of caraway.", "Someone has cut a heel off the last loaf of bread."),
    ),
    Chain(
        "a signal changed",
        (
            Step(0.2, "The signal for danger is three long flashes.",
                 _item("danger signal", "code", "three long flashes")),
            Step(0.7, "The signal for danger is changed to two short flashes.",
                 _item("danger signal", "code", "two short flashes")),
        ),
        ("two short",), ("three long",),
        ("What is the danger signal?", "How does the lighthouse warn of danger now?"),
        ("The signal lamp is trimmed and ready.", "Nobody has given the danger signal in years."),
    ),
)  # fmt: skip

CHAINS = TUNED + HELD_OUT


def planted(turns: int, chains: Sequence[Chain] = CHAINS) -> dict[int, list[Step]]:
    """Each chain's steps at their turns of a game of ``turns`` turns."""
    at: dict[int, list[Step]] = {}
    for chain in chains:
        for step in chain.steps:
            at.setdefault(max(1, round(step.at * turns)), []).append(step)
    return at


class ChangeGameModel(ScriptedModel):
    """The GM of the change game: a planted step at its turn, filler on the chains' subjects otherwise; the facts
    job finds every planted change (``facts``) or nothing; summaries keep nothing of the chains."""

    def __init__(self, turns: int, *, facts: bool, seed: int = 3, chains: Sequence[Chain] = CHAINS):
        super().__init__(default=self._background)
        self.rng = random.Random(seed)
        self.turn = 0
        self.steps = planted(turns, chains)
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


async def play(turns: int, facts: bool, embedder: Embedder | None, reply_model: LanguageModel | None = None) -> Run:
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


def run(settings: ProcessSettings, lengths: Sequence[int], replies: bool, out: TextIO) -> dict[str, float]:
    embedder, unavailable = load_embedder(settings)
    out.write(
        f"bench change: {len(CHAINS)} chains ({len(TUNED)} tuned, {len(HELD_OUT)} held out), "
        f"{sum(len(c.questions) for c in CHAINS)} questions; recall by "
        f"{'words and meaning (' + embedder.name + ')' if embedder else 'words alone: ' + str(unavailable)}\n"
    )
    reply_model = None
    if replies:
        reply_model = load_model(settings)
        out.write(f"replies by {reply_model.name}\n")
    runs = []
    for turns in lengths:
        for facts in (False, True):
            with_replies = reply_model if (replies and not facts and turns == min(lengths)) else None
            runs.append(asyncio.run(play(turns, facts, embedder, with_replies)))
            out.write(f"  played {turns} turns, the facts job finding {'every change' if facts else 'nothing'}\n")
            out.flush()
    return report(runs, out)
