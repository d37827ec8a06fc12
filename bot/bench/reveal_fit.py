"""``bench reveals``: the threshold an action's meaning must reach to meet a world's condition, set on one world's
actions and reported on the other's (F39, F37).

Each ``meaning:`` condition of the shipped worlds has actions written for it: some that do what it means in
other words (they should meet it), some on the same things that do not (they should not). Their closeness to
the condition is measured as the engine measures it (the embedding model, on the bundled model's scale); the
threshold is chosen on Hollow Manor's actions (the most right, the higher threshold among equals) and applied
to Ember Road's, which played no part in choosing it; and the other way round.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from bot.engine import Engine, EngineConfig
from bot.memory.reveals import MEANING_THRESHOLD
from bot.model.scripted import ScriptedModel
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import load_embedder
from bot.store import Store
from bot.worlds import WorldLibrary


@dataclass(frozen=True)
class Labelled:
    condition: str  # a condition's meaning, as the world file has it
    meets: tuple[str, ...]  # actions that do what it means
    misses: tuple[str, ...]  # actions on the same things that do not


ACTIONS: dict[str, tuple[Labelled, ...]] = {
    "hollow-manor": (
        Labelled(
            "comforts Meg and offers to keep her safe",
            ("Meg, you can trust me; I won't let anyone hurt you.",
             "I put a hand on Meg's shoulder and tell her she isn't alone.",
             "I offer Meg my coat and sit with her a while.", "I quietly reassure Meg that I am on her side.",
             "Meg, stay close to me tonight. Nothing will happen to you."),
            ("Meg, where were you at ten?", "I accuse Meg of killing her uncle.", "I ask Meg about her debts.",
             "Meg, hand me that candle.", "I ask Meg who inherits the house now."),
        ),
        Labelled(
            "searches the walls and shelves for a hidden passage",
            ("Is there another way out of this room? I tap the panelling.",
             "I search the study walls for a hidden door.",
             "I run my hands along the shelves, looking for a concealed passage.",
             "How did the killer leave? I look for a secret exit.",
             "I check behind the furniture for a hidden way out."),
            ("I try the study door's lock.", "I look out of the window at the storm.", "I search the desk drawers.",
             "I ask Meg where she was at ten.", "I leave the study and go to the kitchen."),
        ),
    ),
    "ember-road": (
        Labelled(
            "listens closely to the water wagon in the night",
            ("I sit up by the water wagon tonight and keep my ears open.",
             "During the night I listen to the casks on the wagon.",
             "I lie awake near the water wagon, listening for sounds.", "At night I put my ear to the wagon."),
            ("I count the water casks in the morning.", "I listen to Marrow's song at the fire.",
             "I check the wagon wheels before we set off.", "I sleep soundly until dawn."),
        ),
        Labelled(
            "opens the red-waxed cask to see what is inside",
            ("I pry the lid off the red-waxed cask and look inside.",
             "I break the wax seal on the third cask and peer in.", "I crack open the red cask.",
             "I open the sealed cask to see what is in it."),
            ("I drink water from one of the casks.", "I ask Dessa about the red cask.",
             "I carry a cask to the wagon.", "I seal the casks against the heat."),
        ),
    ),
}  # fmt: skip


@dataclass
class Measured:
    world: str
    scores: np.ndarray  # each action's closeness to its condition
    meets: np.ndarray  # whether it should meet it

    def rates(self, threshold: float) -> tuple[float, float]:
        """(share of the actions that should meet it that do, share of those that should not that do)."""
        held = self.scores >= threshold
        return float(held[self.meets].mean()), float(held[~self.meets].mean())

    def right(self, threshold: float) -> int:
        held = self.scores >= threshold
        return int((held == self.meets).sum())


def best_threshold(measured: Measured) -> float:
    """The threshold that judges the most actions right, the highest among equals (a condition met wrongly
    opens a secret; one missed waits for the words)."""
    candidates = np.round(np.arange(0.20, 0.96, 0.01), 2)
    return float(max(candidates, key=lambda t: (measured.right(t), t)))


async def measure(embedder, worlds: WorldLibrary) -> list[Measured]:
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "fit.sqlite3")
        try:
            async with ModelWorker(ScriptedModel()) as worker:
                engine = Engine(store, worker, worlds, EngineConfig(), embedder=embedder)
                try:
                    for world, labelled in ACTIONS.items():
                        scores, meets = [], []
                        for item in labelled:
                            actions = [*item.meets, *item.misses]
                            closeness = await engine.measures.closeness(actions, [item.condition])
                            scores += [float(c) for c in closeness[:, 0]]
                            meets += [True] * len(item.meets) + [False] * len(item.misses)
                        found.append(Measured(world, np.array(scores), np.array(meets)))
                finally:
                    await engine.close()
        finally:
            await store.close()
    return found


def report(measured: list[Measured], out: TextIO) -> dict[str, float]:
    manor, road = measured
    figures: dict[str, float] = {}
    out.write(f"{'set on':<14}{'threshold':>10}   {'reported on':<14}{'met, should':>12}{'met, should not':>17}\n")
    for tuned, held_out in ((manor, road), (road, manor)):
        threshold = best_threshold(tuned)
        tp, fp = tuned.rates(threshold)
        htp, hfp = held_out.rates(threshold)
        out.write(f"{tuned.world:<14}{threshold:>10.2f}   {tuned.world + ' (tuned)':<14}{tp:>12.2f}{fp:>17.2f}\n")
        out.write(f"{'':<27}{held_out.world + ' (held out)':<14}{htp:>12.2f}{hfp:>17.2f}\n")
        figures[f"threshold_{tuned.world}"] = threshold
        figures[f"held_out_met_{held_out.world}"] = htp
        figures[f"held_out_wrongly_{held_out.world}"] = hfp
    tp, fp = road.rates(MEANING_THRESHOLD)
    out.write(f"\nthe shipped threshold {MEANING_THRESHOLD:.2f} (set on hollow-manor), on ember-road: met {tp:.2f} "
              f"of what should, {fp:.2f} of what should not\n")  # fmt: skip
    figures["shipped"] = MEANING_THRESHOLD
    out.write(" ".join(f"{k}={v:.2f}" for k, v in figures.items()) + "\n")
    return figures


def run(settings: ProcessSettings, out: TextIO) -> dict[str, float]:
    embedder, unavailable = load_embedder(settings)
    if embedder is None:
        raise SystemExit(f"bench reveals needs an embedding model: {unavailable or 'GM_EMBED_MODEL=none'}")
    out.write(f"bench reveals: actions' closeness to the worlds' meaning conditions, by {embedder.name}\n")
    return report(asyncio.run(measure(embedder, WorldLibrary(settings.worlds_dir))), out)
