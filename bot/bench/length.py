"""``bench length``: whether a long game's short GM turns shorten the model's replies.

A model continues the pattern its prompt shows: a game whose last turns are one-line GM replies may get one-line
replies, whatever the world's style asks. Two games of the long game's world (:mod:`bot.bench.long_game`), with a
style that asks for full replies, are played ``--turns`` turns with scripted GM turns: in one, one or two short
sentences a turn, as a quick table's are; in the other, the same turns with four more sentences of the scene each.
Then the configured model, as GM of each game, answers the same actions (the long game's questions), and the
words of its public replies are counted. One run, one model, side by side, ending with
``reply_words_after_short=W reply_words_after_long=W length_ratio=R`` (medians; the ratio short over long: 1.0
when the history's length does not carry into the replies, below 1 when short turns shorten them).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from pathlib import Path
from typing import TextIO

from bot.bench.long_game import LONG_GAME_WORLD, QUESTIONS, LongGameModel, play_long_game
from bot.engine import Engine, EngineConfig, ModelFailed
from bot.model.base import LanguageModel
from bot.model.sizing import reply_words
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import engine_config, load_model
from bot.store import EntryKind, Store
from bot.worlds import WorldLibrary

BENCH_SEED = 7
PADDING = 4  # sentences of the scene added to each GM turn of the game with long turns
# The long game's world asks for short replies; this one asks for what a table that wants prose expects.
LENGTH_WORLD = LONG_GAME_WORLD.model_copy(
    update={
        "style": "Unhurried and vivid: answer each action in three to five sentences, with a concrete detail of the "
        "place and of what the people there do or say.",
        "rules": ["Never decide what a player's character does or says."],
    }
)


def run(settings: ProcessSettings, turns: int, out: TextIO) -> dict[str, float]:
    if settings.seed is None:
        settings = settings.model_copy(update={"seed": BENCH_SEED})
    model = load_model(settings)
    out.write(f"{model.origin}\nbench length: {model.name}, {model.placement}, {turns} scripted turns a game, "
              f"{len(QUESTIONS)} actions answered in each\n")  # fmt: skip
    out.flush()
    words = {}
    for label, padding in (("short", 0), ("long", PADDING)):
        history, replies = asyncio.run(_game(model, engine_config(settings), turns, padding))
        words[label] = replies
        out.write(f"\nGM turns {label} (median {statistics.median(history):.0f} words in the last 20); the model's "
                  f"replies, in words:\n  {' '.join(map(str, replies))}\n")  # fmt: skip
        out.flush()
    figures = {f"reply_words_after_{label}": float(statistics.median(replies)) for label, replies in words.items()}
    figures["length_ratio"] = figures["reply_words_after_short"] / figures["reply_words_after_long"]
    out.write(f"\nThe guide asks two to five sentences, each reply under "
              f"{reply_words(engine_config(settings).reply_tokens)} words.\n")  # fmt: skip
    out.write(" ".join(f"{k}={v:.3g}" for k, v in figures.items()) + "\n")
    return figures


async def _game(model: LanguageModel, config: EngineConfig, turns: int, padding: int) -> tuple[list, list]:
    """One game played ``turns`` scripted turns (GM turns ``padding`` sentences longer), then the questions asked
    of ``model``: the words of the last 20 scripted GM turns, and of each of the model's replies."""
    forget = getattr(model, "forget", None)
    if forget is not None:
        forget()  # each game reads its prompt as the first did: nothing kept
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "length.sqlite3")
        library = WorldLibrary(Path(tmp) / "no-worlds")
        library.worlds[LENGTH_WORLD.id] = LENGTH_WORLD
        try:
            scripted = LongGameModel(topical=True, padding=padding)
            async with ModelWorker(scripted) as worker:
                played = Engine(store, worker, library, config)
                game_id = await play_long_game(played, scripted, turns)
                entries = await played.history(game_id, 40)
                history = [len(e.content.split()) for e in entries if e.kind is EntryKind.GM]
                await played.close()
            async with ModelWorker(model) as worker:
                engine = Engine(store, worker, library, config)
                engine.hold_upkeep()  # the replies only: the memory's upkeep is bench turns' business
                replies = []
                for question in QUESTIONS:
                    try:
                        result = await engine.act(game_id, question.player, question.text)
                    except ModelFailed:  # an empty reply is a reply of no words; the action waits for the next
                        replies.append(0)
                    else:
                        replies.append(len(result.text.split()))
                await engine.close()
        finally:
            await store.close()
    return history[-20:], replies
