"""Recall by meaning through the engine, with the bundled embedding model (F31): paraphrases found, private
messages kept to their witnesses, lore and the leak guard by meaning, and faults that leave words alone."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bot import reports
from bot.engine import Engine, EngineConfig
from bot.memory.config import MemoryConfig
from bot.memory.recall import passages
from bot.model import ModelWorker, ScriptedModel
from bot.model.embedding import Embedder
from bot.store import Store
from bot.worlds import WorldLibrary
from tests.conftest import PROJECT
from tests.engine.upkeep.test_memory import scripted_memory

CLUE = "Stepping past the nets, you see that the lifeboat's oars were sawn halfway through, near the blades."
QUESTION = "Had anybody damaged the rowing paddles of the rescue vessel?"
FILLER = (
    "Rain drums on the slate roof.", "Gulls wheel and cry above the rocks.", "The stairs creak underfoot.",
    "Fog rolls in from the sea and thins again.", "A bell tolls faintly across the water.",
)  # fmt: skip
CONFIG = EngineConfig(n_ctx=2048, reply_tokens=128, memory=MemoryConfig(fold_at_percent=10))


def lossy(messages) -> str:
    """Summaries and private memories that keep nothing: what is recalled comes from the turns themselves."""
    system = messages[0].content
    if system.startswith("You keep the private memory"):
        return '{"summary": "The character waited about.", "facts": []}'
    if system.startswith("You keep the memory"):
        return "The players waited out the weather."
    return scripted_memory(messages)


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(default=lossy)


async def _engine(store: Store, worker: ModelWorker, worlds_dir: Path, embedder: Embedder | None) -> Engine:
    return Engine(store, worker, WorldLibrary(worlds_dir), CONFIG, embedder=embedder)


async def _maya_and_tom(engine: Engine):
    """A new game of the lighthouse with Maya and Tom seated."""
    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.join(game.id, "maya", "Maya")
    await engine.join(game.id, "tom", "Tom")
    return game


async def _play_with_a_clue(engine: Engine, model: ScriptedModel) -> int:
    """A game where the GM shows a clue at turn 2, then 24 turns of weather push it out of the recent turns.

    Played with recall switched off: earlier turns' notes (which later prompts show) then hold nothing, and
    the question's own recall is what the test sees."""
    game = await _maya_and_tom(engine)
    await engine.set_bucket(game.id, "recall", False)
    for turn in range(1, 27):
        model.enqueue(CLUE if turn == 2 else " ".join(FILLER[(turn + i) % len(FILLER)] for i in range(3)))
        await engine.act(game.id, ("maya", "tom")[turn % 2], "I look around.")
        await engine.memory.idle(game.id)
    await engine.set_bucket(game.id, "recall", True)
    return game.id


@pytest.mark.slow
async def test_a_clue_asked_about_in_other_words_is_recalled_by_meaning(store, worlds_dir, model, real_embedder):
    async with ModelWorker(model) as worker:
        words = await _engine(store, worker, worlds_dir, None)
        game_id = await _play_with_a_clue(words, model)
        engine = await _engine(store, worker, worlds_dir, real_embedder)
        await engine.meaning.idle()  # what the background embeds of the game
        hot = (await engine.preview(game_id, "Maya", "I look around.")).trace.layer("hot").items
        clue = next(e for e in await store.log(game_id) if e.content == CLUE)
        assert f"entry:{clue.id}" not in hot, "the clue's turn has left the recent turns"

        context = await engine.preview(game_id, "Maya", QUESTION)
        assert CLUE in context.messages[-1].content
        assert context.trace.found_by[f"entry:{clue.id}"] == "meaning"

        prompt = "\n".join(m.content for m in (await words.preview(game_id, "Maya", QUESTION)).messages)
        assert CLUE not in prompt, "by words alone, the question does not find it"
        status = await engine.memory_status(game_id)
        assert status.meaning.model == "all-MiniLM-L6-v2" and status.meaning.waiting == 0
        assert status.meaning.embedded >= 50
        # What /recall and /memory-status show, in the terminal and in Discord alike.
        assert f"entry:{clue.id} (meaning)" in reports.trace_text(context.trace, show_secrets=False)
        assert "Recall: by words and by meaning, with all-MiniLM-L6-v2 (in process" in reports.status_text(status)
        assert f"{status.meaning.embedded} fragments embedded" in reports.status_text(status)
        await engine.close()


async def test_a_private_message_is_recalled_by_meaning_only_in_its_witness_secret_turn(
    store, worlds_dir, model, real_embedder
):
    secret = "Under the bed you find a silver cufflink shaped like a heron, which you keep."
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, real_embedder)
        game = await _maya_and_tom(engine)
        model.enqueue(secret)
        await engine.whisper(game.id, "maya", "I search under the bed, quietly.")
        for turn in range(24):
            model.enqueue(" ".join(FILLER[(turn + i) % len(FILLER)] for i in range(3)))
            await engine.act(game.id, ("maya", "tom")[turn % 2], "I wait by the window.")
            await engine.memory.idle(game.id)
        await engine.meaning.idle()
        question = "Did anyone pick up a piece of jewellery in the shape of a bird?"
        public = await engine.preview(game.id, "Tom", question)
        assert "heron" not in "\n".join(m.content for m in public.messages[1:]), "a public turn never recalls it"
        model.enqueue("You turn it over in your fingers.")
        answered = await engine.whisper(game.id, "maya", question)
        # Recalled, or told as the answer beside the question (the brief), which recall then leaves out: a turn is
        # shown once in a prompt.
        recalled = answered.context.trace.layer("recall").items + answered.context.trace.layer("brief").items
        reply_to = next(
            e for e in await store.log(game.id) if e.content.startswith("GM: " + secret[:10]) or e.content == secret
        )
        assert f"entry:{reply_to.id}" in recalled, "her own secret turn may recall what she witnessed"
        assert answered.context.trace.private_to == answered.action.player_id
        await engine.close()


class Failing(Embedder):
    name = "failing"
    dimension = 4
    placement = "nowhere"

    def _embed(self, texts):
        raise RuntimeError("the embedding model fell over")


async def test_an_embedding_model_that_fails_or_will_not_load_leaves_the_game_on_words(
    store, worlds_dir, model, caplog
):
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, Failing())
        game = (await engine.start_game("chan", "lighthouse")).game
        await engine.join(game.id, "maya", "Maya")
        with caplog.at_level(logging.WARNING, logger="bot.engine.upkeep.meaning"):
            result = await engine.act(game.id, "maya", "I climb the stair.")
        assert result.text == "The GM answers in 4 words' time, while rain drums on the slate roof." or result.text
        assert "recalls by words alone" in caplog.text
        await engine.close()

        unavailable = Engine(store, worker, WorldLibrary(worlds_dir), CONFIG, embedder_unavailable="no such file")
        with caplog.at_level(logging.WARNING):
            await unavailable.start()
            await unavailable.start()
        assert caplog.text.count("Recall by words alone: no such file") == 1, "said once at start"
        assert (await unavailable.act(game.id, "maya", "I climb on.")).text
        status = await unavailable.memory_status(game.id)
        assert status.meaning.model is None and status.meaning.problem == "no such file"
        await unavailable.close()


@pytest.mark.slow
async def test_a_damaged_vector_is_skipped_and_logged_and_the_rest_still_found(
    store, worlds_dir, model, caplog, real_embedder
):
    async with ModelWorker(model) as worker:
        game_id = await _play_with_a_clue(await _engine(store, worker, worlds_dir, None), model)
        engine = await _engine(store, worker, worlds_dir, real_embedder)
        await engine.meaning.idle()
        await store._db.execute(
            "UPDATE vectors SET vector = x'0011' WHERE id = (SELECT min(id) FROM vectors WHERE part = 0)"
        )
        store.vectors_epoch += 1  # as any change of the table the index did not make itself
        with caplog.at_level(logging.WARNING, logger="bot.engine.upkeep.meaning"):
            first = await engine.preview(game_id, "Maya", QUESTION)
            await engine.preview(game_id, "Maya", QUESTION + " Tell me.")
        assert caplog.text.count("is damaged") == 1, "logged once"
        assert CLUE in first.messages[-1].content
        await engine.close()


async def test_lore_fires_by_meaning_and_by_keys(store, worlds_dir, model, real_embedder):
    await _lore_by_meaning_and_keys(store, worlds_dir, model, real_embedder)


@pytest.mark.llm
async def test_lore_by_meaning_keeps_its_threshold_with_a_model_whose_cosines_run_high(
    store, worlds_dir, model, e5_embedder
):
    """multilingual-e5-small puts unrelated texts around 0.8 apart (cosine), the bundled model around 0.2: with
    e5 the default threshold of 0.35 fired the lamp's lore for an action about the supply boat (bench recall: for
    20 of 20 actions about something else). Its cosines are brought to the bundled model's scale first."""
    await _lore_by_meaning_and_keys(store, worlds_dir, model, e5_embedder)


async def _lore_by_meaning_and_keys(store, worlds_dir, model, embedder):
    world = worlds_dir / "lighthouse.yaml"
    world.write_text(
        world.read_text().replace(
            "lore:\n",
            "lore:\n  - id: lamp\n    match: meaning\n"
            "    content: The lighthouse lamp burns colza oil; a full reservoir keeps it lit for one night.\n",
        )
    )
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, embedder)
        game = (await engine.start_game("chan", "lighthouse")).game
        await engine.join(game.id, "maya", "Maya")
        about = await engine.preview(game.id, "Maya", "Is there enough fuel to keep the beacon burning tonight?")
        assert "lore:lamp" in about.trace.layer("lore").items
        other = await engine.preview(game.id, "Maya", "I ask Wren about the supply boat.")
        assert "lore:lamp" not in other.trace.layer("lore").items
        keys = await engine.preview(game.id, "Maya", "I look at Gull Rock from the boat.")
        assert "lore:gull-rock" in keys.trace.layer("lore").items, "keys work as before"
        await engine.close()


async def test_a_truth_told_in_other_words_is_stopped_like_a_word_for_word_one(store, worlds_dir, model, real_embedder):
    leak = "The missing keeper is still alive; he is hiding in a cave in the sea below the rock."
    async with ModelWorker(model) as worker:
        config = dataclasses.replace(CONFIG, secrets="prompt")
        engine = Engine(store, worker, WorldLibrary(worlds_dir), config, embedder=real_embedder)
        game = (await engine.start_game("chan", "lighthouse")).game
        await engine.join(game.id, "maya", "Maya")
        model.enqueue(f"The wind howls. {leak}", "The wind howls around the tower. What do you do?")
        result = await engine.act(game.id, "maya", "Where is the keeper?")
        assert result.draft is not None and "cave" not in result.text
        hits = await store.leak_hits(game.id)
        assert any(h.ref == "truth:keeper-alive" for h in hits)
        await engine.close()


async def test_words_of_a_truth_that_the_world_itself_says_in_public_do_not_uncover_it(
    store, worlds_dir, model, real_embedder
):
    """The opening names the sea cave (a run of the truth's words, public by the world's design): that does not
    uncover the truth, and the truth told in other words (none of its key phrases) is still stopped.

    With the truth in the narrator's prompt: a narrator that never held it (the engine's default) is judged by a
    stricter rule, a guess on the topic being no paraphrase (see ``NEVER_HELD_RULE``)."""
    world = (worlds_dir / "lighthouse.yaml").read_text()
    (worlds_dir / "lighthouse.yaml").write_text(
        world.replace("What do you do?", "Below it, waves boom in a sea cave. What do you do?")
    )
    leak = "The keeper never drowned: he is hiding down in a cave under the rock, where the tide comes in."
    async with ModelWorker(model) as worker:
        config = dataclasses.replace(CONFIG, secrets="prompt")
        engine = Engine(store, worker, WorldLibrary(worlds_dir), config, embedder=real_embedder)
        game = (await engine.start_game("chan", "lighthouse")).game
        await engine.join(game.id, "maya", "Maya")
        model.enqueue(f"The wind howls. {leak}", "The wind howls around the tower. What do you do?")
        result = await engine.act(game.id, "maya", "Where is the keeper?")
        assert result.draft is not None and "drowned" not in result.text
        hits = await store.leak_hits(game.id)
        assert [h.phrase for h in hits if h.ref == "truth:keeper-alive"] == ["(in other words)"]
        await engine.close()


@pytest.mark.llm
@pytest.mark.slow
def test_kill_9_while_embedding_loses_nothing_and_the_next_start_carries_on(tmp_path: Path):
    """A backlog of 300 messages being embedded; the process is killed mid-way; the next one finishes it."""
    database = tmp_path / "gm.sqlite3"
    fill = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from bot.store import Store, NewEntry, EntryKind
        async def main():
            store = await Store.open(Path({str(database)!r}))
            game = await store.create_game("chan", "lighthouse")
            for n in range(300):
                await store.append(game.id, NewEntry(turn=n, kind=EntryKind.GM, author="GM",
                    content=f"Turn {{n}}: the rain goes on. The gulls cry. A lamp is lit in window {{n}}."))
            await store.close()
        asyncio.run(main())
        """
    )
    embed = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from bot.engine import Engine, EngineConfig
        from bot.model import ModelWorker, ScriptedModel
        from bot.store import Store
        from bot.worlds import WorldLibrary
        from tests.embedding import bundled_embedder
        async def main():
            store = await Store.open(Path({str(database)!r}))
            async with ModelWorker(ScriptedModel()) as worker:
                engine = Engine(store, worker, WorldLibrary(Path(".")), EngineConfig(), embedder=bundled_embedder())
                print("ready", flush=True)
                await engine.meaning.idle()
                print("done", flush=True)
            await store.close()
        asyncio.run(main())
        """
    )
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    subprocess.run([sys.executable, "-c", fill], check=True, cwd=PROJECT, env=env)
    process = subprocess.Popen([sys.executable, "-c", embed], cwd=PROJECT, env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    import sqlite3

    for _ in range(600):  # until some but not all are embedded
        with sqlite3.connect(database) as con:
            done = con.execute("SELECT count(DISTINCT ref) FROM vectors").fetchone()[0]
        if done >= 20:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    with sqlite3.connect(database) as con:
        embedded = {r[0] for r in con.execute("SELECT DISTINCT ref FROM vectors")}
        waiting = {r[0] for r in con.execute("SELECT ref FROM vector_todo")}
        parts = dict(con.execute("SELECT ref, count(*) FROM vectors GROUP BY ref").fetchall())
    assert 20 <= len(embedded) < 300 and embedded.isdisjoint(waiting) and len(embedded | waiting) == 300
    whole = len(passages("GM: Turn 7: the rain goes on. The gulls cry. A lamp is lit in window 7."))
    assert set(parts.values()) == {whole} == {3}, "a fragment's vectors are written whole or not at all"
    again = subprocess.run([sys.executable, "-c", embed], cwd=PROJECT, env=env, capture_output=True, text=True)
    assert again.stdout.split() == ["ready", "done"], again.stderr
    with sqlite3.connect(database) as con:
        assert con.execute("SELECT count(DISTINCT ref) FROM vectors").fetchone()[0] == 300
        assert con.execute("SELECT count(*) FROM vector_todo").fetchone()[0] == 0


async def test_an_edit_leaves_the_meaning_index_at_once_and_no_game_is_read_again_whole(
    store, worlds_dir, model, real_embedder
):
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, real_embedder)
        games = []
        for channel in ("north", "south"):
            game = (await engine.start_game(channel, "lighthouse")).game
            await engine.join(game.id, "maya", "Maya")
            for reply in (" ".join(FILLER[:3]), CLUE, " ".join(FILLER[2:])):
                model.enqueue(reply)
                await engine.act(game.id, "maya", "I look around.")
                await engine.memory.idle(game.id)  # no background call takes the next turn's reply
            games.append(game.id)
        await engine.meaning.idle()
        query = await engine.meaning.query(QUESTION)
        for game_id in games:
            assert CLUE in [hit.text.removeprefix("GM: ") for hit in await engine.meaning.search(game_id, query, 3)]
        reads = []
        rows = store.vector_rows

        async def counted(game_id, model_name, *, after_id=0, **more):
            reads.append((game_id, after_id))
            return await rows(game_id, model_name, after_id=after_id, **more)

        store.vector_rows = counted
        north, south = games
        clue = next(e for e in await store.log(north) if e.content == CLUE)
        await engine.edit_entry(north, clue.id, "The nets are dry and the boat is sound.")

        found = [hit.text for hit in await engine.meaning.search(north, query, 3)]
        assert not any("sawn" in text for text in found), "the old text is gone before anything is embedded again"
        assert CLUE in [hit.text.removeprefix("GM: ") for hit in await engine.meaning.search(south, query, 3)]
        await engine.meaning.idle()
        sound = await engine.meaning.query("Is the rescue vessel seaworthy?")
        assert any("The nets are dry" in hit.text for hit in await engine.meaning.search(north, sound, 3))
        assert all(after_id > 0 for _, after_id in reads), f"only what was added is read: {reads}"
        await engine.close()


async def test_another_players_whisper_told_in_other_words_is_stopped_even_before_it_is_embedded(
    store, worlds_dir, model, real_embedder
):
    whisper = "I pry up the loose floorboard under my bunk and hide the keeper's logbook there."
    leak = "Maya has tucked the keeper's journal beneath a loose plank under her bed."
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, real_embedder)
        engine.meaning.notify = lambda: None  # nothing is embedded in the background: the guard embeds it now
        game = await _maya_and_tom(engine)
        model.enqueue("The board creaks back into place; nobody saw. What do you do?")
        secret = await engine.whisper(game.id, "maya", whisper)
        await engine.memory.idle(game.id)
        assert await store.vectors_waiting(), "the whisper is still queued for the background"

        model.enqueue(f"Wind rattles the shutters. {leak}", "Wind rattles the shutters. What do you do?")
        result = await engine.act(game.id, "tom", "I look around the keeper's cottage.")
        assert result.draft is not None and "plank" not in result.text
        hits = await store.leak_hits(game.id)
        assert [h.phrase for h in hits if h.ref == f"entry:{secret.action.id}"] == ["(in other words)"]

        model.enqueue("Maya pulls on her boots and looks out at the grey sea. What do you do?")
        clean = await engine.act(game.id, "tom", "I wait for the tide.")
        assert clean.draft is None, "a reply that is not about her secret is not stopped"

        del engine.meaning.notify  # the background embeds the whisper: the same guard from its stored vectors
        await engine.meaning.idle()
        assert not await store.vectors_waiting()
        model.enqueue(f"Gulls cry. {leak}", "Gulls cry over the rocks. What do you do?")
        again = await engine.act(game.id, "tom", "I search the keeper's cottage again.")
        assert again.draft is not None and "plank" not in again.text
        await engine.close()


async def test_an_aside_that_only_says_again_what_the_channel_was_told_guards_nothing(
    store, worlds_dir, model, real_embedder
):
    """A small model writes its public line again as an aside to a player; the channel heard it, so a later
    public reply saying it in other words is no leak (with Qwen2.5 1.5B as GM, "Where is the brass key now?" was
    answered "(The GM keeps that to themselves.)" after such an aside). A real whisper stays guarded."""
    told = "The keeper's logbook lies open on the desk beside the lamp."
    public = f"{told} Its last page is blotted with rain, and the ink of the final entry is still wet."
    again = "Wind rattles the shutters. The keeper's logbook still lies open there on the desk, by the lamp."
    whisper = "I pry up the loose floorboard under my bunk and hide the keeper's brass telescope there."
    leak = "Maya has tucked the keeper's brass spyglass beneath a loose plank under her bed."
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, real_embedder)
        game = await _maya_and_tom(engine)
        model.enqueue(f"{public} [[to Maya: {told}]]")
        first = await engine.act(game.id, "maya", "I look over the keeper's desk.")
        assert first.text.strip() == public and [m.entry.content for m in first.private] == [told]
        await engine.memory.idle(game.id)
        await engine.meaning.idle()

        model.enqueue(again, "Wind rattles the shutters. What do you do?")
        result = await engine.act(game.id, "tom", "I look at the keeper's desk too.")
        assert result.draft is None and "logbook" in result.text, "the channel was told it: no leak"
        assert not await store.leak_hits(game.id)

        model.enqueue("The board creaks back into place. What do you do?")
        await engine.whisper(game.id, "maya", whisper)
        await engine.memory.idle(game.id)
        await engine.meaning.idle()
        model.enqueue(f"Gulls cry. {leak}", "Gulls cry over the rocks. What do you do?")
        stopped = await engine.act(game.id, "tom", "I search the keeper's cottage.")
        assert stopped.draft is not None and "plank" not in stopped.text, "a real whisper is still guarded"
        await engine.close()


async def test_a_games_vectors_read_in_blocks_keep_every_fragment_whole(store, monkeypatch, real_embedder):
    """A fragment's parts that a block boundary splits are put back together: nothing lost, nothing doubled."""
    import numpy as np

    from bot.engine.upkeep import meaning
    from bot.store.vectors import VectorTodo

    monkeypatch.setattr(meaning, "READ_BLOCK", 7)
    monkeypatch.setattr(meaning, "ROWS_ON_THE_LOOP", 3)  # blocks in a thread, as a big game's are
    game = await store.create_game("chan", "lighthouse")
    index = meaning.MeaningIndex(store, None, real_embedder)
    rng = np.random.default_rng(1)
    fragments = []
    for n in range(20):
        parts = [rng.normal(size=real_embedder.dimension).astype(np.float32) for _ in range(1 + n % 4)]
        fragments.append((VectorTodo(n + 1, game.id, f"entry:{n + 1}", n, None, f"fragment {n}"), parts))
    async with store.transaction() as db:
        await db.executemany(
            "INSERT INTO vectors (game_id, ref, part, model, dim, turn, audience, text, vector)"
            " VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?)",
            [(t.game_id, t.ref, i, index.model, real_embedder.dimension, t.turn, t.text if i == 0 else "", v.tobytes())
             for t, parts in fragments for i, v in enumerate(parts)],
        )  # fmt: skip
    vectors = await index._vectors(game.id)
    assert vectors.refs == [t.ref for t, _ in fragments]
    assert vectors.rows == sum(len(parts) for _, parts in fragments)
    for n, (_, parts) in enumerate(fragments):
        # Held as int8 with a scale a row: each part comes back within its quantization step, in its place.
        assert np.allclose(vectors.parts(n), np.vstack(parts), atol=np.abs(np.vstack(parts)).max() / 127)


class DigestEmbedder(Embedder):
    """Vectors drawn from each text's digest: the same text, the same vector, in any process.

    Sixty-four dimensions and a digest, not ``hash()``: with eight, the random vectors of one run in a few were
    close enough for the guard by meaning to stop a test's reply as a leak, by the process's hash seed."""

    name, dimension, placement = "digest", 64, "in the test"

    def _embed(self, texts):
        import hashlib

        import numpy as np

        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big") for t in texts]
        return np.array([np.random.default_rng(seed).normal(size=self.dimension) for seed in seeds])


class HeldEmbedder(DigestEmbedder):
    """A digest embedder whose first background call waits until the test lets it go."""

    name = "held"

    def __init__(self):
        import threading

        self.hold = threading.Event()  # set: the next call waits for ``go``
        self.started, self.go = threading.Event(), threading.Event()

    def _embed(self, texts):
        if self.hold.is_set():
            self.hold.clear()
            self.started.set()
            self.go.wait(10)
        return super()._embed(texts)


async def test_embedding_gives_the_model_up_to_a_players_turn_and_carries_on_after(store, worlds_dir, model, caplog):
    """The background embeds at the lowest priority: a turn that arrives while a batch runs is served after the
    fragment being embedded, and the batch runs again afterwards; nothing is left unembedded."""
    import asyncio

    embedder = HeldEmbedder()
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, embedder)
        notify, engine.meaning.notify = engine.meaning.notify, lambda: None  # a backlog first
        game = (await engine.start_game("chan", "lighthouse")).game
        await engine.join(game.id, "maya", "Maya")
        for n in range(4):
            model.enqueue(" ".join(FILLER[(n + i) % len(FILLER)] for i in range(3)))
            await engine.act(game.id, "maya", f"I look around the tower, step {n}.")
            await engine.memory.idle(game.id)
        engine.meaning.notify = notify
        embedder.hold.set()
        with caplog.at_level(logging.INFO, logger="bot.engine.upkeep.meaning"):
            engine.meaning.notify()
            await asyncio.to_thread(embedder.started.wait, 10)  # a batch of the backlog is running
        assert "fragments in the background with held/64 (in the test)" in caplog.text, "the backlog, in the log"
        status = await engine.memory_status(game.id)
        assert status.meaning.waiting > 0 and f"{status.meaning.waiting} waiting" in reports.status_text(status)

        model.enqueue(
            "Gulls wheel over the rocks as the tide turns, and the wet stone of each step is cold under your hand. "
            "What now?"
        )
        turn = asyncio.create_task(engine.act(game.id, "maya", "I climb the stair."))
        await asyncio.sleep(0.2)
        assert not turn.done(), "the fragment being embedded is finished first"
        embedder.go.set()
        result = await asyncio.wait_for(turn, 10)
        assert result.text.startswith("Gulls wheel")
        assert worker.interruptions >= 1, "the batch stopped for the turn"
        await engine.memory.idle(game.id)
        await engine.meaning.idle()
        assert await store.vectors_waiting() == 0, "and was done afterwards"
        await engine.close()


POISON = "overflow"


class PoisonedEmbedder(DigestEmbedder):
    """A digest embedder that answers NaN for any text with ``POISON`` in it, as a GGUF that overflows on some
    input or a server that writes ``NaN`` in its JSON would."""

    name = "poisoned"

    def _embed(self, texts):
        import numpy as np

        vectors = super()._embed(texts)
        vectors[[POISON in t for t in texts]] = np.nan
        return vectors


async def _whispered(engine: Engine, model: ScriptedModel) -> tuple[int, str]:
    """A game where Maya whispers a secret among a few public turns, all embedded; the secret's text."""
    secret = "I slip the brass key into my boot."
    game = await _maya_and_tom(engine)
    model.enqueue("Nobody sees the key vanish. What do you do?")
    await engine.whisper(game.id, "maya", secret)
    for turn in range(3):
        model.enqueue(" ".join(FILLER[(turn + i) % len(FILLER)] for i in range(3)))
        await engine.act(game.id, "tom", "I wait by the window.")
        await engine.memory.idle(game.id)
    await engine.meaning.idle()
    return game.id, secret


async def test_a_query_that_embeds_to_nan_is_no_query_and_never_ranks_a_private_message(store, worlds_dir, model):
    """With a non-finite query every score is NaN; ranked as numbers, the masked fragments (other players'
    whispers) came first. Such a query is no query, and only allowed, finite scores are ever ranked."""
    import numpy as np

    from bot.engine.upkeep.meaning import Query

    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, PoisonedEmbedder())
        game_id, secret = await _whispered(engine, model)
        assert await engine.meaning.query(f"I ask Tom about the {POISON}.") is None

        nan = Query("anything", np.full(PoisonedEmbedder.dimension, np.nan, dtype=np.float32), 0.0)
        found = await engine.meaning.search(game_id, nan, 50)
        assert not any(secret in hit.text for hit in found), "a private message ranked for the channel"
        assert found == [], "no score of a NaN query is a ranking"

        whisper = next(e for e in await store.log(game_id) if e.content == secret)
        context = await engine.preview(game_id, "Tom", f"I ask Maya about the {POISON} and her boots.")
        assert f"entry:{whisper.id}" not in context.trace.layer("recall").items
        await engine.close()


async def test_a_fragment_that_embeds_to_nan_is_never_stored_and_the_backlog_goes_on(store, worlds_dir, model, caplog):
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, PoisonedEmbedder())
        game = (await engine.start_game("chan", "lighthouse")).game
        await engine.join(game.id, "maya", "Maya")
        for reply in (
            f"The lamp flares and dies: an {POISON} of oil spills across the sill and drips onto the floorboards.",
            "Gulls wheel above the rocks, crying into the wind as the grey tide climbs the stones.",
        ):
            model.enqueue(reply)
            await engine.act(game.id, "maya", "I look around.")
            await engine.memory.idle(game.id)
        with caplog.at_level(logging.WARNING, logger="bot.engine.upkeep.meaning"):
            await asyncio.wait_for(engine.meaning.idle(), 10)
        assert await store.vectors_waiting() == 0, "a fragment without a finite vector leaves the queue"
        stored = [row.text for _, row in await store.vector_rows(game.id, engine.meaning.model) if row.part == 0]
        assert any("Gulls wheel" in text for text in stored)
        assert not any(POISON in text for text in stored), "a NaN vector was stored"
        assert "not a finite vector" in caplog.text
        await engine.close()


async def test_damaged_vector_rows_are_skipped_and_logged_and_never_make_a_private_one_public(
    store, worlds_dir, model, caplog
):
    """Rows a broken tool or a bad disk left behind: a private fragment whose witnesses are not a JSON list of
    ints, a vector stored as text, a fragment's text that is not text. Each is skipped (a private one is never
    taken for public), said once, and every turn and every other fragment goes on."""
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, DigestEmbedder())
        game_id, secret = await _whispered(engine, model)
        whisper = next(e for e in await store.log(game_id) if e.content == secret)
        async with store.transaction() as db:
            await db.execute("UPDATE vectors SET audience = 'not json' WHERE ref = ?", (f"entry:{whisper.id}",))
            await db.execute(
                "UPDATE vectors SET vector = 'text, not bytes' WHERE id = (SELECT min(id) FROM vectors WHERE part = 0"
                " AND audience IS NULL)"
            )
            await db.execute(
                "UPDATE vectors SET text = x'00ff' WHERE id = (SELECT max(id) FROM vectors WHERE part = 0)"
            )
        store.vectors_epoch += 1
        with caplog.at_level(logging.WARNING):
            query = await engine.meaning.query(secret)
            found = await engine.meaning.search(game_id, query, 50)
            again = await engine.meaning.search(game_id, query, 50)
            context = await engine.preview(game_id, "Tom", "I ask Maya about her boots.")
        assert not any(secret in hit.text for hit in found), "a damaged audience is no one's, not everyone's"
        assert found and [h.ref for h in found] == [h.ref for h in again]
        assert f"entry:{whisper.id}" not in context.trace.layer("recall").items
        damaged = [m for m in caplog.messages if "damaged" in m]
        assert len(damaged) == 3 and len(set(damaged)) == 3, f"each said once: {damaged}"
        await engine.close()


async def test_a_damaged_row_in_the_embedding_queue_is_dropped_and_logged_and_the_backlog_goes_on(
    store, worlds_dir, model, caplog
):
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, DigestEmbedder())
        engine.meaning.notify = lambda: None  # a backlog first
        game = (await engine.start_game("chan", "lighthouse")).game
        await engine.join(game.id, "maya", "Maya")
        for reply in (
            "Gulls wheel above the rocks, crying into the wind as the grey tide climbs the stones.",
            "Rain drums on the slate roof, and water seeps under the door into the cold kitchen.",
            "The stairs creak underfoot, and a cold draught whistles down from the gallery above the landing.",
        ):
            model.enqueue(reply)
            await engine.act(game.id, "maya", "I look around.")
            await engine.memory.idle(game.id)
        async with store.transaction() as db:
            await db.execute("UPDATE vector_todo SET text = 42 WHERE id = (SELECT max(id) FROM vector_todo)")
            await db.execute(
                "UPDATE vector_todo SET audience = '[\"maya\"' WHERE id = (SELECT min(id) FROM vector_todo)"
            )
        del engine.meaning.notify
        with caplog.at_level(logging.WARNING):
            await asyncio.wait_for(engine.meaning.idle(), 10)
        assert await store.vectors_waiting() == 0, "the damaged rows left the queue; the rest was embedded"
        assert engine.meaning.failure is None
        stored = [row.text for _, row in await store.vector_rows(game.id, engine.meaning.model) if row.part == 0]
        assert any("Rain drums" in text for text in stored)
        assert "is damaged" in caplog.text
        await engine.close()


TIDE = "The tide turns, and grey water slides over the black rocks below the lamp room."
SKY = "Gulls wheel and cry under a low sky the colour of pewter, far out over the water."


async def test_a_server_whose_embedding_size_changes_costs_no_turn_and_everything_is_embedded_again(
    store, worlds_dir, model, caplog
):
    """The embedding server restarted with another model under the same name: its vectors have another size. Every
    turn went on failing until the bot restarted; now the turn goes by words, it is said once, and the background
    embeds every fragment again with the new size."""
    from bot.model.embedding import ServerEmbedder
    from bot.model.server import ServerModel
    from tests.model.stub_server import StubServer

    with StubServer() as stub:
        embedder = ServerEmbedder(ServerModel(stub.url, "gm", timeout=5), "nomic")
        async with ModelWorker(model) as worker:
            engine = await _engine(store, worker, worlds_dir, embedder)
            game_id, secret = await _whispered(engine, model)
            assert engine.meaning.model == "server:nomic/8"
            stub.embedding_dimension = 12
            replies = []
            with caplog.at_level(logging.WARNING):
                for action, reply in (("I look at the sea.", TIDE), ("I look at the sky.", SKY)):
                    await engine.memory.idle(game_id)
                    model.enqueue(reply)
                    replies.append((await engine.act(game_id, "tom", action)).text)
            assert replies == [TIDE, SKY], "no turn failed"
            assert caplog.text.count("answers 12 dimensions, not the 8") == 1
            await asyncio.wait_for(engine.meaning.idle(), 10)
            assert engine.meaning.model == "server:nomic/12" and await store.vectors_waiting() == 0
            query = await engine.meaning.query("Gulls wheel above the rocks.")
            assert query is not None and len(query.vector) == 12
            assert await engine.meaning.search(game_id, query, 3), "found by meaning again, at the new size"
            await engine.close()


async def test_a_server_answering_a_million_dimensions_is_refused_at_the_probe():
    from bot.errors import UserError
    from bot.model.embedding import MAX_DIMENSION, ServerEmbedder
    from bot.model.server import ServerModel
    from tests.model.stub_server import StubServer

    with StubServer() as stub:
        stub.embedding_dimension = 1_000_000
        with pytest.raises(UserError, match=f"answers 1000000 dimensions; at most {MAX_DIMENSION}"):
            ServerEmbedder(ServerModel(stub.url, "gm", timeout=5), "nomic")


async def test_memory_status_never_shows_members_the_embedding_servers_address(store, worlds_dir, model):
    from bot.model.embedding import ServerEmbedder
    from bot.model.server import ServerModel
    from tests.model.stub_server import StubServer

    with StubServer() as stub:
        embedder = ServerEmbedder(ServerModel(stub.url, "gm", timeout=5), "nomic")
        async with ModelWorker(model) as worker:
            engine = await _engine(store, worker, worlds_dir, embedder)
            game_id, _ = await _whispered(engine, model)
            stub.embeddings_status = 500  # the server fails from now on
            model.enqueue(TIDE)
            await engine.act(game_id, "tom", "I look at the sea.")
            for _ in range(200):
                if engine.meaning.failure:
                    break
                await asyncio.sleep(0.05)
            assert stub.url.split("/v1")[0] in engine.meaning.failure, "the log and the index know where"
            shown = reports.status_text(await engine.memory_status(game_id))
            assert "embedding failed" in shown and "127.0.0.1" not in shown and "http" not in shown
            await engine.close()


class SlowEmbedder(DigestEmbedder):
    """A digest embedder that takes ``seconds`` a call, as a remote server under load does; counts its calls."""

    name = "slow"

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.calls = 0

    def _embed(self, texts):
        self.calls += 1
        time.sleep(self.seconds)
        return super()._embed(texts)


async def test_a_slow_embedding_model_embeds_a_worlds_texts_in_batches_and_holds_no_reply_past_the_deadline(
    store, worlds_dir, model, caplog, monkeypatch
):
    """The guard's texts (a world's secrets and public text) went one call each: 107 calls for Hollow Manor, and
    at 0.5 s a call the first reply waited 27.7 s. Now they go in batches, and the guard by meaning gives up on a
    reply after its deadline: the words still guard it."""
    from bot.engine.secrets import guard
    from bot.engine.upkeep import meaning
    from bot.memory.leaks import guarded_world_secrets, world_public_texts

    slow = SlowEmbedder(0.05)
    async with ModelWorker(model) as worker:
        engine = Engine(store, worker, WorldLibrary(PROJECT / "worlds"), CONFIG, embedder=slow)
        world = engine.worlds.get("hollow-manor")
        texts = [s.text for s in guarded_world_secrets(world, 0, (), "") if s.text] + world_public_texts(world)
        assert len(texts) > 50
        await engine.meaning.vectors_of(texts)
        assert slow.calls <= 1 + len(texts) // 20, f"{slow.calls} calls for {len(texts)} texts"

        monkeypatch.setattr(guard, "MEANING_SECONDS", 0.3)
        monkeypatch.setattr(meaning, "TURN_SECONDS", 0.3)
        slow.seconds = 2.0  # the server slows right down
        game = (await engine.start_game("chan", "hollow-manor")).game
        await engine.join(game.id, "maya", "Maya")
        model.enqueue("Rain hammers the windows; nobody answers your knock while Mrs. Crane rattles the locked handle.")
        with caplog.at_level(logging.WARNING):
            result = await asyncio.wait_for(engine.act(game.id, "maya", "I knock on the study door."), 60)
        assert result.text.startswith("Rain hammers")
        assert "took over" in caplog.text, "said in the log: words alone this time"
        await engine.close()


async def test_the_games_vectors_held_in_memory_keep_within_their_byte_cap(store, caplog):
    """Up to 64 games' vectors were kept, with no cap on their bytes (a 100,000-fragment game took 425 MiB; as
    int8 it takes 102 MiB). Past the cap the least recently searched game's go, and come back when it is searched."""
    import numpy as np

    from bot.engine.upkeep.meaning import MeaningIndex, Query

    embedder = DigestEmbedder()
    index = MeaningIndex(store, None, embedder, cap_bytes=30_000)
    games = []
    for channel in ("north", "south"):
        game = await store.create_game(channel, "lighthouse")
        texts = [f"Fact {n} of {channel}." for n in range(200)]
        async with store.transaction() as db:
            await db.executemany(
                "INSERT INTO vectors (game_id, ref, part, model, dim, turn, audience, text, vector)"
                " VALUES (?, ?, 0, ?, 64, ?, NULL, ?, ?)",
                [(game.id, f"fact:{game.id}-{n}", index.model, n, text, vector.tobytes())
                 for n, (text, vector) in enumerate(zip(texts, embedder.embed(texts), strict=True))],
            )  # fmt: skip
        games.append(game.id)
    query = Query("q", embedder.embed(["Fact 3 of north."])[0], 0.0)
    north, south = games
    assert (await index.search(north, query, 1))[0].text == "Fact 3 of north."
    assert index._games[north].nbytes > 15_000
    await index.search(south, query, 1)
    assert list(index._games) == [south], "the least recently searched game's vectors went"
    assert (await index.search(north, query, 1))[0].text == "Fact 3 of north.", "and came back when searched"
    index.cap_bytes = 1_000
    with caplog.at_level(logging.WARNING):
        await index.search(north, query, 1)
        await index.search(north, query, 1)
    assert caplog.text.count("more than GM_VECTORS_MIB") == 1
    assert np.isfinite(query.vector).all()


async def test_the_guard_by_meaning_still_compares_a_secret_whose_vector_is_the_oldest_kept(store, monkeypatch):
    """bench context at 4k, 500 turns: past the texts kept whole (the world's truths first, then every reply's
    sentences), the guard by meaning failed three turns running with a KeyError naming a truth: the truths, kept
    since the warm-up and never moved up when used, were the oldest, and went as the reply's new sentences came
    in, between looking them up and reading them."""
    import numpy as np

    from bot.engine.upkeep import meaning
    from bot.engine.upkeep.meaning import MeaningIndex

    monkeypatch.setattr(meaning, "TEXTS_KEPT", 4)
    index = MeaningIndex(store, None, DigestEmbedder())
    secrets = ["Ashby killed Silas.", "The will was changed."]
    await index.vectors_of(secrets)  # the warm-up
    for turn in range(3):
        said = [f"Turn {turn}: the rain falls.", f"Turn {turn}: Ashby pours the brandy."]
        closeness = await index.closeness(said, secrets)
        assert closeness.shape == (2, 2) and np.isfinite(closeness).all()
    assert set(secrets) <= set(index._texts), "the truths, used at every reply, are the last to go"


async def test_texts_asked_for_by_two_calls_at_once_are_embedded_once(store):
    """Games of one world started together asked for its lore and secrets at once (their prompts read ahead,
    their first turns), and each call embedded them all. A text another call is embedding is waited for."""
    import numpy as np

    from bot.engine.upkeep.meaning import MeaningIndex
    from bot.memory.recall import passages

    embedder = SlowEmbedder(0.2)
    seen: list[str] = []
    embed = embedder._embed

    def recorded(texts):
        seen.extend(texts)
        return embed(texts)

    embedder._embed = recorded
    index = MeaningIndex(store, None, embedder)
    lore = [f"The {name} of the manor holds a secret." for name in ("cellar", "attic", "chapel", "library")]
    first, second, third = await asyncio.gather(
        index.vectors_of(lore), index.vectors_of(lore[1:]), index.vectors_of([*lore[:2], "A new text."])
    )
    once = [part for text in [*lore, "A new text."] for part in passages(text, clauses=False)]
    assert sorted(seen) == sorted(once), "each text embedded once"
    for got in (second, third):
        for text, vectors in got.items():
            if text in first:
                assert np.array_equal(vectors, first[text])
    await index.close()


def test_a_part_the_log_says_again_is_embedded_once_and_keeps_its_vector(store, monkeypatch):
    """A model that repeats itself ("The clock in the hall ticks on.", reply after reply) had each fragment's
    sentences embedded afresh: a 60-turn game of the long-game test embedded 2,008 parts, 167 of them distinct."""
    import numpy as np

    from bot.engine.upkeep import meaning

    embedder = SlowEmbedder(0)
    seen: list[str] = []
    embed = embedder._embed

    def recorded(texts):
        seen.extend(texts)
        return embed(texts)

    embedder._embed = recorded
    index = meaning.MeaningIndex(store, None, embedder)
    first = index._part_vectors(embedder, ["The clock ticks.", "Rain falls.", "The clock ticks."])
    second = index._part_vectors(embedder, ["Rain falls.", "A door bangs."])
    assert seen == ["The clock ticks.", "Rain falls.", "A door bangs."], "each part embedded once, in order"
    assert first.shape == (3, embedder.dimension) and second.shape == (2, embedder.dimension)
    assert np.array_equal(first[0], first[2]) and np.array_equal(first[1], second[0])
    assert np.array_equal(second, embedder.embed(["Rain falls.", "A door bangs."])), "the same vectors as afresh"
    monkeypatch.setattr(meaning, "PARTS_KEPT", 2)
    index._part_vectors(embedder, ["Gulls cry."])  # the least lately used goes
    seen.clear()
    index._part_vectors(embedder, ["The clock ticks.", "Gulls cry."])
    assert seen == ["The clock ticks."]
    assert index._part_vectors(embedder, []).shape == (0, embedder.dimension)


@pytest.mark.slow
async def test_a_thing_asked_about_by_meaning_is_told_only_for_what_the_question_can_ask_of_it(
    store, worlds_dir, model, real_embedder
):
    """The nearest followed thing by meaning is a lead for the brief only where the question can ask its attribute:
    "Where is Tally hiding?" is not asking Tally's side. In bench change, the whalebone compass asked in other words
    ("Where would I find the carved bone needle that points north?") came nearest Tally, and the engine told
    "Tally, allegiance: the smugglers." after the reply, as the notes' answer."""
    async with ModelWorker(model) as worker:
        engine = await _engine(store, worker, worlds_dir, real_embedder)
        game = await _maya_and_tom(engine)
        for said in ("Wren Tally now works for the smugglers.", "Tom carries the brass key down to the cellar."):
            model.enqueue(said)
            await engine.act(game.id, "maya", "I look around.")
            await engine.memory.idle(game.id)
        await engine.meaning.idle()
        tally = next(f for f in await store.facts(game.id) if f.subject == "Wren Tally")

        side = await engine.preview(game.id, "Maya", "Who does Tally answer to now?")
        assert f"fact:{tally.id}" in side.trace.layer("brief").items, "found by meaning: a side is asked"
        hiding = await engine.preview(game.id, "Maya", "Where is Tally hiding?")
        assert f"fact:{tally.id}" not in hiding.trace.layer("brief").items, "a place is no side"
        await engine.close()
