"""``bench quality``: how often the GM's replies break rules a reader can check, with the reply rules off and on.

Scripted players play both shipped worlds (the actions of ``bench turns``)
with the configured model through the real engine and memory. Every reply
is scored by rules that need no judge:

- ``speaks_for_players``: a line of the reply is spoken for a seated player
  (``Maya: ...``, ``**Maya**: ...``) or for "User"/"Player";
- ``echo``: the reply opens by restating the action it answers (most of the
  opening sentence's content words are the action's);
- ``repeats``: a sentence the reply says twice, or one of the last three
  replies said;
- ``cut_off``: the reply ends mid-sentence;
- ``ungrounded``: the reply names nothing from the world (its names and key
  nouns: capitalised words of its public text, its characters, lore keys),
  the players' characters, or the action it answers;
- ``empty``: nothing at all.

Plus ``json_fallback``: the share of structured background calls (memory,
facts, beats, glossary) whose answer failed validation twice and fell back.

The same script runs twice in one invocation with the same seed: with the
rules of :mod:`bot.engine.shaping` switched off (what the model writes) and
on (what players read), side by side.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from bot.bench.turns import BENCH_SEED, SCRIPTS, WORLDS
from bot.engine import Engine, EngineConfig
from bot.engine.shaping import GENERIC_SPEAKERS, ends_a_sentence, normal_form, restates, speaker_line
from bot.memory.leaks import content_words, sentences
from bot.model.base import LanguageModel
from bot.model.worker import ModelWorker
from bot.settings import Settings
from bot.store import Store
from bot.worlds import World, WorldLibrary

FAULTS = ("speaks_for_players", "echo", "repeats", "cut_off", "ungrounded", "empty")
EXAMPLES = 3
TURNS = 12  # a world; two worlds make 24 turns


@dataclass
class Reply:
    world: str
    turn: int
    action: str
    text: str
    faults: list[str] = field(default_factory=list)


@dataclass
class Run:
    label: str
    replies: list[Reply] = field(default_factory=list)
    structured_calls: int = 0
    structured_fallbacks: int = 0

    def rate(self, fault: str) -> float:
        return sum(fault in r.faults for r in self.replies) / len(self.replies) if self.replies else 0.0

    @property
    def json_fallback(self) -> float:
        return self.structured_fallbacks / self.structured_calls if self.structured_calls else 0.0


def _stems(text: str) -> set[str]:
    return {stem for stem, _ in content_words(text)}


def world_names(world: World) -> set[str]:
    """The stems of what a world names: its characters, lore keys, and capitalised words of its public text."""
    text = " ".join([world.title, world.pitch, world.setting, world.opening, *(c.title for c in world.chapters)])
    capitalised = re.findall(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}", text)
    names = [*capitalised, *(n.name for n in world.npcs), *(a for n in world.npcs for a in n.aliases)]
    names += [k for entry in world.lore for k in entry.keys]
    return _stems(" ".join(names))


def score(text: str, action: str, players: Sequence[str], recent: Sequence[str], grounding: set[str]) -> list[str]:
    """The faults of one reply, by the rules above."""
    text = text.strip()
    if not text:
        return ["empty"]
    faults = []
    if speaker_line([*players, *GENERIC_SPEAKERS]).search(text):
        faults.append("speaks_for_players")
    said = sentences(text)
    if said and restates(_stems(said[0]), _stems(action)):
        faults.append("echo")
    before = {normal_form(s) for r in recent[-3:] for s in sentences(r)}
    seen: set[str] = set()
    for sentence in map(normal_form, said):
        if sentence and (sentence in seen or sentence in before):
            faults.append("repeats")
            break
        seen.add(sentence)
    if not ends_a_sentence(text):
        faults.append("cut_off")
    if not _stems(text) & (grounding | _stems(action) | _stems(" ".join(players))):
        faults.append("ungrounded")
    return faults


async def play(model: LanguageModel, worlds_dir: Path, config: EngineConfig, turns: int, label: str) -> Run:
    run = Run(label)
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "bench.sqlite3")
        try:
            async with ModelWorker(model) as worker:
                engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
                for index, world_id in enumerate(WORLDS):
                    await _play_world(engine, index, world_id, turns, run)
                    await engine.memory.idle()
                run.structured_calls = worker.structured_calls
                run.structured_fallbacks = worker.structured_fallbacks
                await engine.close()
        finally:
            await store.close()
    return run


async def _play_world(engine: Engine, index: int, world_id: str, turns: int, run: Run) -> None:
    names, actions = SCRIPTS[world_id]
    started = await engine.start_game(f"bench-quality:{index}", world_id)
    game_id = started.game.id
    grounding = world_names(started.world)
    for name in names:
        await engine.join(game_id, name.lower(), name)
    recent: list[str] = []
    for n in range(turns):
        action = actions[n % len(actions)]
        try:
            result = await engine.act(game_id, names[n % len(names)].lower(), action)
            text = result.text
        except Exception:  # an empty reply is a fault like the others; the turn's action waits for the next
            text = ""
        run.replies.append(Reply(world_id, n + 1, action, text, score(text, action, names, recent, grounding)))
        if text:
            recent.append(text)


def run(settings: Settings, turns: int, out: TextIO) -> dict[str, float]:
    from bot.__main__ import engine_config, load_model

    if settings.seed is None:  # both runs sample alike: a difference between them is the rules'
        settings = settings.model_copy(update={"seed": BENCH_SEED})
    model = load_model(settings)
    runs = []
    for shape in (False, True):
        forget = getattr(model, "forget", None)
        if forget is not None:
            forget()
        config = engine_config(settings, shape_replies=shape)
        label = "rules on (what players read)" if shape else "rules off (what the model wrote)"
        runs.append(asyncio.run(play(model, settings.worlds_dir, config, turns, label)))
    return report(model.name, settings, runs, turns, out)


def report(name: str, settings: Settings, runs: list[Run], turns: int, out: TextIO) -> dict[str, float]:
    off, on = runs
    print(
        f"bench quality: {len(WORLDS)} worlds x {turns} turns ({', '.join(WORLDS)}); model {name}, "
        f"reply up to {settings.reply_tokens} tokens, temperature {settings.temperature}, seed {settings.seed}",
        file=out,
    )
    print(f"\n{'':<22}{off.label:>36}{on.label:>34}", file=out)
    for fault in FAULTS:
        print(f"{fault:<22}{off.rate(fault):>36.2f}{on.rate(fault):>34.2f}", file=out)
    print(
        f"{'json_fallback':<22}{off.json_fallback:>36.2f}{on.json_fallback:>34.2f}"
        f"   ({on.structured_fallbacks} of {on.structured_calls} structured calls with the rules on)",
        file=out,
    )
    for run in runs:
        print(f"\nExamples, {run.label}:", file=out)
        for fault in FAULTS:
            found = [r for r in run.replies if fault in r.faults][:EXAMPLES]
            for reply in found:
                shown = reply.text.replace("\n", " / ")
                shown = shown if len(shown) <= 240 else shown[:239] + "…"
                print(f"  [{fault}] {reply.world} turn {reply.turn} ({reply.action!r}): {shown!r}", file=out)
    figures = {fault: on.rate(fault) for fault in FAULTS}
    figures["json_fallback"] = on.json_fallback
    figures.update({f"{fault}_off": off.rate(fault) for fault in FAULTS})
    figures["replies"] = len(on.replies)
    print("\n" + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()), file=out)
    return figures
