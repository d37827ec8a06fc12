"""``bench tables``: several tables at once, through the in-process model and through llama.cpp's server.

The scripted players of ``bench turns`` play 1, 2, 4 and 8 tables at once
(the two shipped worlds in turn), each player acting a set pause after the
GM's last reply, through the real engine and memory (background work on).
The same script runs through (a) the in-process model, one call at a time,
and (b) ``llama-server`` started for the same model file with as many game
slots as tables (and one for background work); then 8 tables on 4 slots,
where games take turns in the slots through files on disk. For each: GM
replies per minute for all tables together, first-text p50 and p95 (from an
action to the first text its player sees; the p95 also without each game's
first turn, whose prompt is read cold), and each game's prefix reuse
(prompt tokens read from the cache, over all its turns). Then, through a
server of two slots, a reply written while the other slot reads a game's
first prompt, against each alone: when the reply's first sentence is out
(its 20th token) and how long the reading takes. It ends with

``replies_ratio_4=R p95_ratio_4=R reuse_4_slots=R reuse_8_on_4=R``:

the server's replies per minute at 4 tables over the in-process model's,
its first-text p95 at 4 tables over the in-process one's, and the mean
per-game reuse with 4 games on 4 slots and with 8 games on 4 slots.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bot.bench.turns import BENCH_SEED, Run, play, prose
from bot.errors import UserError
from bot.model.base import ChatMessage, LanguageModel
from bot.settings import ProcessSettings
from bot.startup import engine_config, load_embedder, load_model

TABLES = (1, 2, 4, 8)
SLOTS_FOR_MANY = 4  # the run with more tables than slots: 8 tables on 4
# A reply beside a reading: a game's first prompt is about this long (tokens), the reply this long, and its
# first sentence, when a player first sees text, about this many tokens in.
FIRST_PROMPT = 2300
BESIDE_REPLY = 120
FIRST_SENTENCE = 20


@dataclass(frozen=True)
class Beside:
    """A reply written while another slot reads a game's first prompt, and each alone (medians, seconds)."""

    sentence_alone: float  # to the reply's first sentence (its FIRST_SENTENCE-th token), alone
    sentence_beside: float  # the same, while the other slot reads
    reply_alone: float
    reply_beside: float
    reading_alone: float  # the other slot's reading of a first prompt, alone
    reading_beside: float  # the same, beside the reply
    reply_tokens: int  # the pieces of the reply beside (a token each, as the server sends them)
    read_tokens: int


@dataclass(frozen=True)
class Result:
    path: str  # "in process" or "llama-server"
    tables: int
    slots: int | None
    run: Run

    @property
    def replies_per_minute(self) -> float:
        return len(self.run.turns) / self.run.wall * 60 if self.run.wall else 0.0

    @property
    def game_reuse(self) -> float:
        """The mean over games of each game's prompt tokens read from the cache, over all its turns."""
        shares = []
        for game in {t.game for t in self.run.turns}:
            turns = [t for t in self.run.turns if t.game == game]
            prompt = sum(t.prompt for t in turns)
            shares.append(sum(t.reused for t in turns) / prompt if prompt else 0.0)
        return sum(shares) / len(shares) if shares else 0.0


def run(settings: ProcessSettings, turns: int, pause: float, out: TextIO, tables: tuple[int, ...] = TABLES) -> dict:
    if settings.seed is None:
        settings = settings.model_copy(update={"seed": BENCH_SEED})
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = settings.model_copy(update={"database": Path(tmp) / "bench.sqlite3", "model_url": None})
        settings = settings.model_copy(update={"server_slots": 0})
        in_process = load_model(settings)  # and the settings that wait on the model's size are settled
        embedder, _ = load_embedder(settings, in_process)
        for n in tables:
            forget = getattr(in_process, "forget", None)
            if forget is not None:
                forget()  # each run starts from a cold model
            results.append(Result("in process", n, None, _play(in_process, settings, n, turns, pause, embedder)))
        runs = [(n, n) for n in tables] + ([(8, SLOTS_FOR_MANY)] if max(tables) >= 8 else [])
        for n, slots in runs:
            served = _served(settings, slots)
            try:
                results.append(Result("llama-server", n, slots, _play(served, settings, n, turns, pause, embedder)))
            finally:
                served.close()
        served = _served(settings, 2)
        try:
            beside = measure_beside(served)
        finally:
            served.close()
    return report(in_process.name, settings, results, turns, pause, out, beside)


def measure_beside(model: LanguageModel, rounds: int = 3) -> Beside:
    """Through a server of two game slots: a reply whose prompt its slot holds, written alone and while the other
    slot reads a first prompt from nothing; and that reading alone. Each figure the median of ``rounds``."""
    story = prose(FIRST_PROMPT)
    writer = [
        ChatMessage(role="system", content="You are the game master of a text role-playing game."),
        ChatMessage(role="user", content="Maya: I open the cellar door. Describe all I see there, at length."),
    ]
    figures: dict[str, list[float]] = {}
    read_tokens = 0

    def reply() -> tuple[float, float, int]:
        began = time.perf_counter()
        sentence = None
        pieces = 0
        for pieces, _piece in enumerate(model.stream(writer, max_tokens=BESIDE_REPLY, slot="bench:writer"), 1):
            if pieces == FIRST_SENTENCE:
                sentence = time.perf_counter() - began
        ended = time.perf_counter() - began
        return (sentence if sentence is not None else ended), ended, pieces

    def reading(tag: str, into: list) -> None:
        began = time.perf_counter()
        prompt = [ChatMessage(role="user", content=f"{tag}. {story} Retell this.")]  # new from its first token
        written = model.stream(prompt, max_tokens=1, slot="bench:reader")
        for _piece in written:
            pass
        into.append((time.perf_counter() - began, written.stats.evaluated_tokens if written.stats else 0))

    for n in range(rounds):
        reply()  # the writer's prompt is in its slot: its turns read only their action
        sentence, whole, _ = reply()
        alone: list = []
        reading(f"Alone {n}", alone)
        read: list = []
        thread = threading.Thread(target=reading, args=(f"Round {n}", read))
        thread.start()
        time.sleep(1.0)  # the reading under way
        sentence_beside, whole_beside, pieces = reply()
        thread.join()
        read_tokens = read[0][1]
        for key, value in (("sentence_alone", sentence), ("reply_alone", whole), ("reading_alone", alone[0][0]),
                           ("sentence_beside", sentence_beside), ("reply_beside", whole_beside),
                           ("reading_beside", read[0][0]), ("reply_tokens", pieces)):  # fmt: skip
            figures.setdefault(key, []).append(value)
    medians = {key: statistics.median(values) for key, values in figures.items()}
    return Beside(
        sentence_alone=medians["sentence_alone"], sentence_beside=medians["sentence_beside"],
        reply_alone=medians["reply_alone"], reply_beside=medians["reply_beside"],
        reading_alone=medians["reading_alone"], reading_beside=medians["reading_beside"],
        reply_tokens=int(medians["reply_tokens"]), read_tokens=read_tokens,
    )  # fmt: skip


def _served(settings: ProcessSettings, slots: int) -> LanguageModel:
    model = load_model(settings.model_copy(update={"server_slots": slots}))
    if getattr(model, "owner", None) is None:
        raise UserError(
            "bench tables needs llama.cpp's server: build it with `sh scripts/build-llama-server .venv` (a few "
            "minutes, once), or name one with GM_LLAMA_SERVER; the log says why it did not start."
        )
    return model


def _play(model: LanguageModel, settings: ProcessSettings, tables: int, turns: int, pause: float, embedder) -> Run:
    config = engine_config(settings)
    name = f"{tables} tables"
    return asyncio.run(
        play(model, settings.worlds_dir, config, games=tables, turns=turns, pause=pause, hold=False,
             embedder=embedder, name=name)
    )  # fmt: skip


def report(
    name: str, settings: ProcessSettings, results: list[Result], turns: int, pause: float, out: TextIO,
    beside: Beside | None = None,
) -> dict:  # fmt: skip
    w = out.write
    w(
        f"bench tables: {', '.join(map(str, sorted({r.tables for r in results})))} tables at once, {turns} GM turns "
        f"each, players acting {pause:g} s after each reply; model {name}, n_ctx {settings.n_ctx} a game, reply up "
        f"to {settings.reply_tokens} tokens, seed {settings.seed}\n\n"
    )
    w(
        f"{'':28}{'tables':>7}{'slots':>7}{'replies/min':>13}{'first p50':>11}{'first p95':>11}{'later p95':>11}"
        f"{'reuse/game':>12}\n"
    )
    for r in results:
        slots = "-" if r.slots is None else str(r.slots)
        w(
            f"{r.path:28}{r.tables:>7}{slots:>7}{r.replies_per_minute:>13.1f}{r.run.pct('first_text', 0.5):>10.2f}s"
            f"{r.run.pct('first_text', 0.95):>10.2f}s{r.run.pct('first_text', 0.95, later=True):>10.2f}s"
            f"{r.game_reuse:>12.1%}\n"
        )
    w("\nllama-server over in process, the same tables side by side:\n")
    w(f"{'tables':>7}{'replies/min':>14}{'first p95':>12}{'later p95':>12}\n")
    local = {r.tables: r for r in results if r.path == "in process"}
    served = {r.tables: r for r in results if r.path == "llama-server" and r.slots == r.tables}
    for n in sorted(local.keys() & served.keys()):
        replies = _ratio(served[n].replies_per_minute, local[n].replies_per_minute)
        p95 = _ratio(served[n].run.pct("first_text", 0.95), local[n].run.pct("first_text", 0.95))
        later = _ratio(
            served[n].run.pct("first_text", 0.95, later=True), local[n].run.pct("first_text", 0.95, later=True)
        )
        w(f"{n:>7}{replies:>13.2f}x{p95:>11.2f}x{later:>11.2f}x\n")
    many = next((r for r in results if r.path == "llama-server" and r.slots == SLOTS_FOR_MANY and r.tables > r.slots),
                None)  # fmt: skip
    figures = {}
    if 4 in local and 4 in served:
        figures["replies_ratio_4"] = round(_ratio(served[4].replies_per_minute, local[4].replies_per_minute), 3)
        figures["p95_ratio_4"] = round(
            _ratio(served[4].run.pct("first_text", 0.95), local[4].run.pct("first_text", 0.95)), 3
        )
        figures["reuse_4_slots"] = round(served[4].game_reuse, 3)
    if many is not None:
        figures["reuse_8_on_4"] = round(many.game_reuse, 3)
    if beside is not None:
        w(
            f"\nA reply ({beside.reply_tokens} tokens) while the server's other slot reads a first prompt of "
            f"{beside.read_tokens} tokens (medians): its first sentence ({FIRST_SENTENCE} tokens) after "
            f"{beside.sentence_beside:.2f} s ({beside.sentence_alone:.2f} s alone), all of it after "
            f"{beside.reply_beside:.2f} s ({beside.reply_alone:.2f} s alone); the reading "
            f"{beside.reading_beside:.2f} s ({beside.reading_alone:.2f} s alone)\n"
        )
    w("\n" + " ".join(f"{k}={v}" for k, v in figures.items()) + "\n")
    return figures


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0
