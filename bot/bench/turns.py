"""``bench turns``: how long players wait for the GM, against what the model physically needs.

Scripted players play the shipped worlds through the real engine, memory
and model (the configured one: the bundled model by default), several games
at once, each acting as soon as the GM's last reply is in, as a table at
full speed does. Before that, it measures this machine's reading and
writing speed with the same model, which gives each turn a floor: the
prompt tokens it actually had to read at reading speed plus the tokens it
wrote at writing speed. The whole script runs twice, with the background
memory work on and with it held back until the end, so what the memory
costs a player shows as a ratio measured side by side; and, with an
embedding model, a third time recalling by words alone, so what recall by
meaning costs a turn shows the same way. Last, one player acts while another
game's prompt is being read ahead (F35), and once with the model idle: how
long their turn waited for the model in each, beside what one step of an
interruptible read takes.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from bot.engine import Engine, EngineConfig
from bot.engine.turn.results import NOTHING_TO_SAY, ModelFailed, OnText, TurnResult
from bot.model.base import ChatMessage, LanguageModel
from bot.model.embedding import Embedder
from bot.model.worker import JobRecord, ModelWorker, Priority
from bot.settings import ProcessSettings
from bot.startup import engine_config, load_embedder, load_model
from bot.store import Store
from bot.worlds import WorldLibrary

WORLDS = ("hollow-manor", "ember-road")
BENCH_SEED = 7

# Each world's players and what they do, in order; a game longer than the list starts it again.
SCRIPTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "hollow-manor": (
        ("Maya", "Tom", "Ines"),
        (
            "I knock on the front door and wait under the porch.",
            "I ask the housekeeper who else is staying in the house tonight.",
            "I look at the portraits along the hall, one by one.",
            "I ask Dr. Pike when he last saw Silas Wren alive.",
            "I try the handle of the study door.",
            "I kneel and look through the keyhole of the study.",
            "I ask Meg Wren who keeps the key to the study.",
            "I light a candle and go up the main stair.",
            "I listen at the door of the room where the noise came from.",
            "I search the library shelves for anything out of place.",
            "I ask Meg Wren what she argued about with her uncle.",
            "I go down to the kitchen and talk to the cook.",
        ),
    ),
    "ember-road": (
        ("Rook", "Sable"),
        (
            "I climb onto the lead wagon and ask Dessa how far to the first camp.",
            "I walk beside Pell and ask what the stones tell her.",
            "I help Old Marrow count the water casks and ask about the red wax one.",
            "I keep my boots on the black stones and watch the ash for movement.",
            "I ask Sarn why the road was built in six-sided stones.",
            "I feed Duchess a cabbage and check her harness.",
            "I look back toward Brinewell to see if anyone follows us.",
            "I ask Dessa what happened to her eye.",
            "I put my hand near the ash to feel how hot it is, without touching it.",
            "I ask Orrin Thale what he is carrying to Kettle.",
            "I take the first watch at camp and keep the fire low.",
            "I wake the others when the ash starts to glow at the edge of the road.",
        ),
    ),
}
# A second game of a world (``--games 3`` and more) is another table: other players, the same actions. Its
# first turn shows what is read when a world's game has been played before (only what differs, see docs/models.md).
OTHER_CASTS = {"hollow-manor": ("Ada", "Bram", "Cleo"), "ember-road": ("Vesk", "Lio")}


@dataclass(frozen=True)
class Speeds:
    """Reading and writing speed measured at a few prompt lengths: both slow down as the context fills."""

    points: tuple[tuple[int, float, float], ...]  # (prompt tokens, read tokens/s, write tokens/s), shortest first

    def read(self, tokens: int) -> float:
        return self._at(tokens, 1)

    def write(self, tokens: int) -> float:
        return self._at(tokens, 2)

    def _at(self, tokens: int, column: int) -> float:
        points = self.points
        if tokens <= points[0][0]:
            return points[0][column]
        for low, high in zip(points, points[1:], strict=False):
            if tokens <= high[0]:
                share = (tokens - low[0]) / (high[0] - low[0])
                return low[column] + share * (high[column] - low[column])
        return points[-1][column]


@dataclass
class Turn:
    game: int
    turn: int
    first_text: float  # from the action to the first text a player sees
    reply: float  # from the action to the whole reply
    prompt: int
    reused: int
    evaluated: int
    written: int
    model_time: float  # waiting for and running the model, this turn's calls
    waited: float = 0.0  # in the queue before its first call ran: behind other games' turns, or background work
    run: float = 0.0  # the model's own time on this turn's calls
    floor: float = 0.0

    @property
    def ratio(self) -> float:
        return self.reply / self.floor if self.floor else 0.0

    @property
    def run_ratio(self) -> float:
        return self.run / self.floor if self.floor else 0.0


@dataclass
class Run:
    name: str
    turns: list[Turn] = field(default_factory=list)
    player_busy: float = 0.0
    background_busy: float = 0.0
    background_calls: int = 0
    embedding_busy: float = 0.0
    query_seconds: list[float] = field(default_factory=list)  # embedding each turn's query
    facts_behind: list[int] = field(default_factory=list)  # at each action: turns the facts job has not read
    fold_waiting: list[bool] = field(default_factory=list)  # at each action: a closed chunk waits for its summary
    catch_up: float = 0.0  # from the last reply until the background work was done
    interruptions: int = 0
    state_restores: int = 0
    retried: int = 0  # turns the GM had nothing to say for at first: its player pressed Retry
    wall: float = 0.0

    def pct(self, attribute: str, q: float, *, later: bool = False) -> float:
        """The ``q`` quantile of an attribute over the turns; ``later``: each game's first turn left out."""
        return _percentile([getattr(t, attribute) for t in self.turns if not later or t.turn > 1], q)

    @property
    def live_reuse(self) -> float:
        prompt = sum(t.prompt for t in self.turns)
        return sum(t.reused for t in self.turns) / prompt if prompt else 0.0

    @property
    def engine_share(self) -> float:
        total = sum(t.reply for t in self.turns)
        return sum(max(0.0, t.reply - t.model_time) for t in self.turns) / total if total else 0.0

    @property
    def calls_per_turn(self) -> float:
        return self.background_calls / len(self.turns) if self.turns else 0.0


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def prose(tokens: int) -> str:
    """About ``tokens`` tokens of plain sentences, each one new: a long prompt for a bench to have read."""
    return " ".join(f"The keeper counted {n} gulls on the rock at dusk." for n in range(tokens // 13))  # ~13 each


def measure_speeds(model: LanguageModel, n_ctx: int) -> Speeds:
    """This machine's reading and writing speed with ``model``, from cold, at a quarter, half and three quarters
    of the context."""
    points = []
    for share in (0.25, 0.5, 0.75):
        forget = getattr(model, "forget", None)
        if forget is not None:
            forget()
        text = prose(int(n_ctx * share))
        retell = [ChatMessage(role="user", content=text + " Retell this at length.")]
        stats = model.generate(retell, max_tokens=48).stats
        if stats is None or not stats.evaluated_tokens or stats.generated_tokens < 2:
            raise RuntimeError("the model reported no figures to measure its speed with")
        read = stats.evaluated_tokens / max(stats.first_token_seconds, 1e-6)
        write = (stats.generated_tokens - 1) / max(stats.seconds - stats.first_token_seconds, 1e-6)
        points.append((stats.prompt_tokens, read, write))
    return Speeds(tuple(sorted(points)))


def _stamp(shown: list[float]):
    """An ``on_text`` that notes when each piece of the reply was shown."""
    return lambda _piece: shown.append(time.perf_counter())


async def played(
    engine: Engine, game_id: int, who: str, action: str, on_text: OnText | None = None, run: Run | None = None
) -> TurnResult:
    """``who``'s action, as a player plays it: where the GM had nothing to say ("... Try again."), the player
    presses Retry, once. The bundled 135M model, asked twice, now and then writes only the players' own lines,
    which the reply rules take out; a player would try again, and a bench of turns' speed goes on."""
    try:
        return await engine.act(game_id, who, action, on_text=on_text)
    except ModelFailed as failed:
        if str(failed) != NOTHING_TO_SAY:
            raise
        if run is not None:
            run.retried += 1
        return await engine.retry(game_id, on_text=on_text, user_key=who)


async def _play_game(
    engine: Engine, worker: ModelWorker, index: int, world_id: str, turns: int, pause: float, run: Run
) -> None:
    names, actions = SCRIPTS[world_id]
    if index > len(WORLDS):
        names = OTHER_CASTS[world_id]
    started = await engine.start_game(f"bench-turns:{index}", world_id)
    game_id = started.game.id
    for name in names:
        await engine.join(game_id, name.lower(), name)
    for n in range(turns):
        if n:
            await asyncio.sleep(pause)  # the players read the reply and type: background work gets the model
        await _sample_lag(engine, game_id, run)
        who = names[n % len(names)].lower()
        shown: list[float] = []
        began = time.perf_counter()
        result = await played(engine, game_id, who, actions[n % len(actions)], _stamp(shown), run)
        ended = time.perf_counter()
        records = [
            r
            for r in worker.records
            if r.label == engine.measures.slot(game_id) and r.queued_at >= began and r.ended_at <= ended
        ]
        stats = result.model
        run.turns.append(
            Turn(
                game=index,
                turn=result.turn,
                first_text=(shown[0] if shown else ended) - began,
                reply=ended - began,
                prompt=stats.prompt_tokens if stats else 0,
                reused=stats.reused_tokens if stats else 0,
                evaluated=sum(r.stats.evaluated_tokens for r in records if r.stats) if records else 0,
                written=sum(r.stats.generated_tokens for r in records if r.stats) if records else 0,
                model_time=sum(r.ended_at - r.queued_at for r in records),
                waited=records[0].waited if records else 0.0,
                run=sum(r.busy_seconds for r in records),
            )
        )


async def _sample_lag(engine: Engine, game_id: int, run: Run) -> None:
    """How far the memory is behind the moment a player acts: turns whose facts are not extracted yet, and
    whether a closed chunk of the log waits for its summary."""
    lag = await engine.measures.lag(game_id)
    run.facts_behind.append(lag.facts_behind)
    run.fold_waiting.append(lag.fold_waiting)


async def play(
    model: LanguageModel, worlds_dir: Path, config: EngineConfig, *, games: int, turns: int, pause: float, hold: bool,
    embedder: Embedder | None = None, name: str | None = None,
) -> Run:  # fmt: skip
    run = Run(name or ("background held to the end" if hold else "background on"))
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "bench.sqlite3")
        try:
            async with ModelWorker(model) as worker:
                engine = Engine(store, worker, WorldLibrary(worlds_dir), config, embedder=embedder)
                if hold:
                    engine.hold_upkeep()
                began = time.perf_counter()
                await asyncio.gather(
                    *(
                        _play_game(engine, worker, i + 1, WORLDS[i % len(WORLDS)], turns, pause, run)
                        for i in range(games)
                    )
                )
                ended = time.perf_counter()
                run.wall = ended - began
                engine.release_upkeep()
                await engine.settled()
                run.catch_up = time.perf_counter() - ended
                _account(run, list(worker.records), worker.interruptions)
                run.query_seconds = engine.measures.query_seconds
                run.state_restores = sum(1 for r in worker.records if r.stats and r.stats.state_restored)
                await engine.close()
        finally:
            await store.close()
    return run


@dataclass(frozen=True)
class Preemption:
    """A player's turn with the model idle and while another game's prompt is read ahead: what each waited for the
    model before its call ran, and when its first text came."""

    waited_idle: float
    waited_reading: float
    first_text_idle: float
    first_text_reading: float
    read_ahead_running: bool  # the other game's read-ahead was running when the player acted


async def _timed_act(engine: Engine, worker: ModelWorker, game_id: int, who: str, action: str) -> tuple[float, float]:
    """The seconds ``who``'s action waited for the model (its first call's queueing) and to its first text."""
    shown: list[float] = []
    began = time.perf_counter()
    await played(engine, game_id, who, action, _stamp(shown))
    ended = time.perf_counter()
    slot = engine.measures.slot(game_id)
    calls = [r for r in worker.records if r.label == slot and r.priority is Priority.PLAYER and r.queued_at >= began]
    return (calls[0].waited if calls else 0.0), (shown[0] if shown else ended) - began


async def preemption(model: LanguageModel, worlds_dir: Path, config: EngineConfig) -> Preemption:
    """A game of Hollow Manor is played to its second turn; its third player acts with the model idle, its first
    again while an Ember Road game just started has its world's prompt read ahead (about 1,200 tokens)."""
    names, actions = SCRIPTS["hollow-manor"]
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "bench.sqlite3")
        try:
            async with ModelWorker(model) as worker:
                engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
                engine.hold_upkeep()  # the turns alone: no summary or facts call between them
                game_id = (await engine.start_game("bench-turns:preempt", "hollow-manor")).game.id
                for name in names:
                    await engine.join(game_id, name.lower(), name)
                await engine.settled(game_id)
                await played(engine, game_id, names[0].lower(), actions[0])
                await played(engine, game_id, names[1].lower(), actions[1])
                waited_idle, first_idle = await _timed_act(engine, worker, game_id, names[2].lower(), actions[2])
                other = (await engine.start_game("bench-turns:preempt-other", "ember-road")).game.id
                await engine.join(other, "rook", "Rook")
                reading = False
                for _ in range(2000):  # until the other game's prompt is being read (a few seconds at most)
                    if any(priority is Priority.PREFILL for priority, _ in worker.running()):
                        reading = True
                        break
                    await asyncio.sleep(0.005)
                waited, first = await _timed_act(engine, worker, game_id, names[0].lower(), actions[3])
                engine.release_upkeep()
                await engine.close()
        finally:
            await store.close()
    return Preemption(waited_idle, waited, first_idle, first, reading)


def _account(run: Run, records: list[JobRecord], interruptions: int) -> None:
    run.player_busy = sum(r.busy_seconds for r in records if r.priority is Priority.PLAYER)
    run.background_busy = sum(r.busy_seconds for r in records if r.priority is Priority.MAINTENANCE)
    run.background_calls = sum(1 for r in records if r.priority is Priority.MAINTENANCE)
    run.embedding_busy = sum(r.busy_seconds for r in records if r.priority is Priority.EMBEDDING)
    run.interruptions = interruptions


def run(
    settings: ProcessSettings,
    games: int,
    turns: int,
    pause: float,
    out: TextIO,
    *,
    compare: bool = True,
    series: dict[str, list[float]] | None = None,
) -> dict:
    """``series``: filled with each run's first-text seconds, turn by turn."""
    if settings.seed is None:  # both runs sample alike, so a difference between them is the background work's
        settings = settings.model_copy(update={"seed": BENCH_SEED})
    model = load_model(settings)
    embedder, _ = load_embedder(settings, model)
    config = engine_config(settings)
    speeds = measure_speeds(model, settings.n_ctx)
    runs = []
    plans: list[tuple[bool, Embedder | None, str | None]] = [(False, embedder, None)]  # held back, embedder, name
    if compare:  # the same script with the background work held back, and by words alone
        plans.append((True, embedder, None))
        if embedder is not None:
            plans.append((False, None, "words alone"))
    for hold, used, name in plans:
        forget = getattr(model, "forget", None)
        if forget is not None:
            forget()  # each run starts from a cold model
        played = asyncio.run(
            play(model, settings.worlds_dir, config, games=games, turns=turns, pause=pause, hold=hold,
                 embedder=used, name=name)
        )  # fmt: skip
        for t in played.turns:
            t.floor = t.evaluated / speeds.read(t.prompt) + t.written / speeds.write(t.prompt)
        runs.append(played)
    forget = getattr(model, "forget", None)
    if forget is not None:
        forget()
    preempted = asyncio.run(preemption(model, settings.worlds_dir, config))
    meaning = f"recall by meaning with {embedder.name}" if embedder else "recall by words alone"
    if series is not None:
        for played in runs:
            key = "first_text_" + played.name.replace(" ", "_").replace(",", "")
            series[key] = [round(t.first_text, 2) for t in played.turns]
    return report(f"{model.name}, {meaning}", settings, speeds, runs, games, turns, pause, out, preempted)


def preemption_report(preempted: Preemption, speeds: Speeds, out: TextIO) -> dict:
    """What a read-ahead running when a player acts costs their turn, beside one step of an interruptible read."""
    from bot.model.llamacpp import INTERRUPTIBLE_CHUNK  # loads llama.cpp: the in-process model's step

    step = INTERRUPTIBLE_CHUNK / speeds.points[0][1]
    out.write(
        f"\na player acting while another game's prompt is read ahead"
        f"{'' if preempted.read_ahead_running else ' (it had ended before the action: nothing to interrupt)'}: "
        f"waited {preempted.waited_reading:.2f}s for the model, first text {preempted.first_text_reading:.2f}s; "
        f"with the model idle: waited {preempted.waited_idle:.2f}s, first text {preempted.first_text_idle:.2f}s; "
        f"one step of an interruptible read ({INTERRUPTIBLE_CHUNK} tokens): {step:.2f}s\n"
    )
    return {
        "read_ahead_wait": round(preempted.waited_reading, 3),
        "idle_wait": round(preempted.waited_idle, 3),
        "read_step": round(step, 3),
        "read_ahead_interrupted": int(preempted.read_ahead_running),
    }


# The table comparing the runs: a label, and how to read it off a run.
ROWS = [
    ("first text p50 (s)", lambda r: f"{r.pct('first_text', 0.5):.2f}"),
    ("first text p95 (s)", lambda r: f"{r.pct('first_text', 0.95):.2f}"),
    ("reply p50 (s)", lambda r: f"{r.pct('reply', 0.5):.2f}"),
    ("reply p95 (s)", lambda r: f"{r.pct('reply', 0.95):.2f}"),
    ("waited for the model p50 (s)", lambda r: f"{r.pct('waited', 0.5):.2f}"),
    ("reply / floor p50", lambda r: f"{r.pct('ratio', 0.5):.2f}"),
    ("reply / floor p95", lambda r: f"{r.pct('ratio', 0.95):.2f}"),
    ("model run / floor p50", lambda r: f"{r.pct('run_ratio', 0.5):.2f}"),
    ("prompt reused from cache", lambda r: f"{r.live_reuse:.1%}"),
    ("game states restored", lambda r: f"{r.state_restores}"),
    ("turns retried (nothing to say)", lambda r: f"{r.retried}"),
    ("model busy: player turns (s)", lambda r: f"{r.player_busy:.1f}"),
    ("model busy: background (s)", lambda r: f"{r.background_busy:.1f}"),
    ("background calls per turn", lambda r: f"{r.calls_per_turn:.2f}"),
    ("background calls interrupted", lambda r: f"{r.interruptions}"),
    ("model busy: embedding (s)", lambda r: f"{r.embedding_busy:.1f}"),
    ("embedding a turn's query p50 (ms)", lambda r: f"{_percentile(r.query_seconds, 0.5) * 1000:.1f}"),
    (
        "facts not extracted, at an action: p50 / max (turns)",
        lambda r: f"{_percentile(r.facts_behind, 0.5):.0f} / {max(r.facts_behind, default=0)}",
    ),
    ("a summary waiting, at an action", lambda r: f"{_share(r.fold_waiting):.0%}"),
    ("caught up after the last reply (s)", lambda r: f"{r.catch_up:.1f}"),
    ("engine's own share of a turn", lambda r: f"{r.engine_share:.1%}"),
    ("wall time of the games (s)", lambda r: f"{r.wall:.1f}"),
]


def report(
    name: str,
    settings: ProcessSettings,
    speeds: Speeds,
    runs: list[Run],
    games: int,
    turns: int,
    pause: float,
    out: TextIO,
    preempted: Preemption | None = None,
) -> dict:
    on, *others = runs  # the live run, then (when compared) jobs held back, then words alone
    off, words = (others[0], others[1:]) if others else (None, [])
    w = out.write
    w(
        f"bench turns: {games} games of {turns} turns at once ({', '.join(WORLDS[: games if games < 2 else 2])}), "
        f"players acting {pause:g}s after each reply; model {name}, n_ctx {settings.n_ctx}, reply up to "
        f"{settings.reply_tokens} tokens, seed {settings.seed}\n"
        "this machine with this model, from cold: "
        + ", ".join(f"{n} prompt tokens read at {r:.0f}/s, then written at {wr:.1f}/s" for n, r, wr in speeds.points)
        + "\n\n"
    )
    for played in runs:
        _turn_table(played, out)
    compared = [r for r in (off, *words) if r is not None]
    w(f"{'':34}{on.name:>22}" + "".join(f"{r.name:>30}" for r in compared) + "\n")
    for label, value in ROWS:
        w(f"{label:34}{value(on):>22}" + "".join(f"{value(r):>30}" for r in compared) + "\n")
    figures = _figures(on, off, words, speeds)
    if preempted is not None:
        figures |= preemption_report(preempted, speeds, out)
    w("\n" + " ".join(f"{k}={v}" for k, v in figures.items()) + "\n")
    return figures


def _turn_table(played: Run, out: TextIO) -> None:
    """One run's turns, a line each."""
    w = out.write
    w(f"{played.name}:\n")
    w("game turn  first   reply  waited  prompt reused  read  wrote   floor  reply/floor  run/floor\n")
    for t in played.turns:
        w(
            f"{t.game:>4} {t.turn:>4} {t.first_text:>6.2f}s {t.reply:>6.2f}s {t.waited:>6.2f}s {t.prompt:>7} "
            f"{t.reused:>6} {t.evaluated:>5} {t.written:>6} {t.floor:>6.2f}s {t.ratio:>8.2f} {t.run_ratio:>10.2f}\n"
        )
    w("\n")


def _figures(on: Run, off: Run | None, words: list[Run], speeds: Speeds) -> dict:
    """The ``name=value`` figures of the live run, against the run without jobs and the one by words alone."""
    figures = {
        "first_text_p50": round(on.pct("first_text", 0.5), 3),
        "first_text_p95": round(on.pct("first_text", 0.95), 3),
    }
    if off is not None:
        p95_off = off.pct("first_text", 0.95)
        figures["first_text_p95_no_jobs"] = round(p95_off, 3)
        figures["jobs_delay_ratio"] = round(on.pct("first_text", 0.95) / p95_off, 3) if p95_off else 0.0
    figures |= {
        "reply_p95": round(on.pct("reply", 0.95), 3),
        "floor_ratio_p50": round(on.pct("ratio", 0.5), 3),
        "run_floor_ratio_p50": round(on.pct("run_ratio", 0.5), 3),
        "waited_p50": round(on.pct("waited", 0.5), 3),
        "live_reuse": round(on.live_reuse, 4),
        "engine_share": round(on.engine_share, 4),
        "calls_per_turn": round(on.calls_per_turn, 3),
        "interruptions": on.interruptions,
        "retried": on.retried,
        "facts_lag_p50": _percentile(on.facts_behind, 0.5),
        "facts_lag_max": max(on.facts_behind, default=0),
        "summary_waiting_share": round(_share(on.fold_waiting), 3),
        "catch_up_s": round(on.catch_up, 1),
        "read_tps": round(speeds.points[0][1], 1),
        "write_tps": round(speeds.points[0][2], 1),
    }
    if words:  # what recall by meaning costs a turn, measured beside words alone
        p50_words = words[0].pct("first_text", 0.5)
        figures["first_text_p50_words"] = round(p50_words, 3)
        figures["meaning_p50_ratio"] = round(on.pct("first_text", 0.5) / p50_words, 3) if p50_words else 0.0
        # The same turns side by side: the two games' turns differ more than the two runs do (the p50 of both games
        # together falls between them), so each turn is compared with itself, then the median is taken.
        alone = {(t.game, t.turn): t.first_text for t in words[0].turns}
        paired = [t.first_text / alone[t.game, t.turn] for t in on.turns if alone.get((t.game, t.turn))]
        figures["meaning_paired_ratio_p50"] = round(_percentile(paired, 0.5), 3)
        figures["query_ms_p50"] = round(_percentile(on.query_seconds, 0.5) * 1000, 1)
    return figures


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0
