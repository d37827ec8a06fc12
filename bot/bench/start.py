"""``bench start``: a game's first turn, cold, read ahead, and after a restart, beside a later turn (F35).

One run, one model file, the configured model (the default GM model unless
told otherwise), a shipped world, the same players and actions:

- **cold**: nothing kept anywhere (no state in memory or on disk, no read
  ahead): the first turn reads the world's whole frozen layer;
- **read ahead**: other games, nothing kept at first, each one's prompt read ahead
  while its players join, as ``/game start`` and the terminal do; then the
  first action;
- **restart**: those games, after their second turn the process stops (the
  states written to disk) and starts again (another model object, another
  engine, the same database): each one's next action;
- **later**: the turns after the first of every game.

Each case is played in ``--games`` games (each opening with another of the
script's actions) and the figures are medians.

The memory's upkeep is held back while the turns are timed (it would run
between turns and is measured by ``bench turns``), so each figure is the
model reading and answering one action. What a player sees is the time to
the first text shown, as ``bench turns`` counts it.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, TypeVar

from bot.engine import Engine
from bot.errors import UserError
from bot.model.base import LanguageModel
from bot.model.llama import LlamaModel
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import engine_config, load_model
from bot.store import Store
from bot.worlds import WorldLibrary

BENCH_SEED = 7
WORLD = "hollow-manor"
PLAYERS = ("Maya", "Tom")
ACTIONS = (
    "I knock on the study door and call out to Silas.",
    "I ask Mrs. Crane who else is staying in the house tonight.",
    "I kneel and look through the keyhole of the study.",
    "I ask Meg Wren who keeps the key to the study.",
)

T = TypeVar("T")


@dataclass
class Timed:
    case: str
    turn: int
    first_text: float
    reply: float
    prompt: int
    read: int  # prompt tokens the model actually read
    restored: bool


async def _act(engine: Engine, game_id: int, n: int, case: str) -> Timed:
    shown: list[float] = []
    began = time.perf_counter()
    result = await engine.act(
        game_id, PLAYERS[n % len(PLAYERS)].lower(), ACTIONS[n % len(ACTIONS)], on_text=lambda _: shown.append(
            time.perf_counter())
    )  # fmt: skip
    ended = time.perf_counter()
    stats = result.model
    return Timed(
        case, result.turn, (shown[0] if shown else ended) - began, ended - began,
        stats.prompt_tokens if stats else 0, stats.evaluated_tokens if stats else 0,
        bool(stats and stats.state_restored),
    )  # fmt: skip


async def _session(
    model: LanguageModel,
    settings: ProcessSettings,
    database: Path,
    play: Callable[[Engine], Awaitable[T]],
    *,
    read_ahead: bool,
) -> T:
    """An engine over ``database`` and ``model``, running ``play(engine)``; the memory's upkeep held back."""
    store = await Store.open(database)
    try:
        async with ModelWorker(model) as worker:
            config = engine_config(settings, read_ahead=read_ahead)
            engine = Engine(store, worker, WorldLibrary(settings.worlds_dir), config)
            engine.hold_upkeep()
            try:
                return await play(engine)
            finally:
                await engine.close()
    finally:
        await store.close()
        model.flush_states()


async def _new_game(engine: Engine, channel: str) -> int:
    game = (await engine.start_game(channel, WORLD)).game
    for name in PLAYERS:
        await engine.join(game.id, name.lower(), name)
    return game.id


def run(settings: ProcessSettings, turns: int, games: int, out: TextIO) -> dict[str, float]:
    if settings.seed is None:
        settings = settings.model_copy(update={"seed": BENCH_SEED})
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "data" / "gm.sqlite3"
        database.parent.mkdir()
        settings = settings.model_copy(update={"database": database})  # its states go under that data/, not yours
        timed: list[Timed] = []
        reading: list[float] = []
        played = _before_restart(settings, database, turns, games, timed, reading, out)
        # The process stopped there: what it kept is on disk.
        restarted = load_model(settings)

        async def after_restart(engine: Engine) -> None:
            for g, game_id in enumerate(played):
                timed.append(await _act(engine, game_id, g + 2, "restart"))
            for g, game_id in enumerate(played):
                for n in range(3, turns + 1):
                    timed.append(await _act(engine, game_id, g + n, "later"))

        asyncio.run(_session(restarted, settings, database, after_restart, read_ahead=False))
    return _report(timed, reading, out)


def _before_restart(
    settings: ProcessSettings, database: Path, turns: int, games: int, timed: list[Timed], reading: list[float],
    out: TextIO,
) -> list[int]:  # fmt: skip
    """The first process: games started cold, then games whose first prompt was read ahead; the ids of those."""
    model = load_model(settings)
    out.write(f"{model.origin}\nbench start: {model.name}, {model.placement}, world {WORLD}, {games} games a case, "
              f"{turns} turns a game\n")  # fmt: skip
    out.flush()
    forget = _in_process(model).forget

    async def cold(engine: Engine) -> None:
        for g in range(games):
            forget()  # nothing kept anywhere, not even the last game's world
            game_id = await _new_game(engine, f"bench-start:cold:{g}")
            for n in range(turns):
                timed.append(await _act(engine, game_id, g + n, "cold" if n == 0 else "later"))

    async def ahead(engine: Engine) -> list[int]:
        ids = []
        forget()  # the first read-ahead starts from nothing; the next find its world read
        for g in range(games):
            began = time.perf_counter()
            game_id = await _new_game(engine, f"bench-start:ahead:{g}")
            await engine.settled(game_id)  # the players type their names meanwhile: the read-ahead runs
            reading.append(time.perf_counter() - began)
            for n in range(2):
                timed.append(await _act(engine, game_id, g + n, "read ahead" if n == 0 else "later"))
            ids.append(game_id)
        return ids

    asyncio.run(_session(model, settings, database, cold, read_ahead=False))
    return asyncio.run(_session(model, settings, database, ahead, read_ahead=True))


def _in_process(model: LanguageModel) -> LlamaModel:
    """The model each case starts cold with (:meth:`LlamaModel.forget`): only one run in this process keeps its
    states where the bench can drop them."""
    if not isinstance(model, LlamaModel):
        raise UserError(f"bench start measures a model run in this process, not {model.name} ({model.placement})")
    return model


def _report(timed: list[Timed], reading: list[float], out: TextIO) -> dict[str, float]:
    out.write(f"\n{'case':<12} {'turn':>4} {'first text (s)':>15} {'reply (s)':>10} {'prompt':>7} {'read':>6}\n")
    for t in timed:
        out.write(
            f"{t.case:<12} {t.turn:>4} {t.first_text:>15.2f} {t.reply:>10.2f} {t.prompt:>7} {t.read:>6}"
            f"{'  (state restored)' if t.restored else ''}\n"
        )

    def median(case: str, field: str = "first_text") -> float:
        return statistics.median(getattr(t, field) for t in timed if t.case == case)

    cases = {"cold": "cold", "prefilled": "read ahead", "restart": "restart", "later": "later"}
    figures = {f"first_text_{name}": median(case) for name, case in cases.items()}
    later = figures["first_text_later"]
    out.write(
        f"\nMedians. Tokens read: cold {median('cold', 'read'):.0f}, read ahead {median('read ahead', 'read'):.0f}, "
        f"after a restart {median('restart', 'read'):.0f}, later {median('later', 'read'):.0f}. The first read-ahead "
        f"took {reading[0]:.1f} s while the players joined (from nothing; the next, of the same world, "
        f"{statistics.median(reading[1:] or reading):.1f} s). First text against a later turn's "
        f"({later:.2f} s): cold {figures['first_text_cold'] / later:.1f}x, read ahead "
        f"{figures['first_text_prefilled'] / later:.1f}x, after a restart "
        f"{figures['first_text_restart'] / later:.1f}x\n"
    )
    out.write(" ".join(f"{name}={value:.2f}" for name, value in figures.items()) + "\n")
    return figures
