"""Recall by meaning (F31): the embedding index beside the word index.

Everything the word index holds (public messages, summaries, facts), and
each private message with its witnesses, is queued for embedding as it is
stored (:mod:`bot.store.vectors`). A background task embeds the queue in
small batches at the lowest priority of the model worker, so a player's
turn interrupts it; only the query (the new action with its scene) is
embedded on a player's turn. Vectors live in the game's database, tagged
with the model that made them; each game's are searched in memory with
numpy, a matrix product over its rows.

An embedding model that will not load leaves the game on words alone: the
start-up log and /memory-status say so once, and no turn fails for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Sequence, Set
from dataclasses import dataclass

import numpy as np

from bot.memory.recall import passages
from bot.memory.vectors import GameVectors, nearest_sentence
from bot.model.base import Interrupted
from bot.model.embedding import DimensionChanged, Embedder, NonFiniteVector
from bot.model.worker import ModelWorker, Priority
from bot.store import RecallHit, Store
from bot.store.vectors import DAMAGED, VectorRow, VectorTodo

log = logging.getLogger(__name__)

BATCH = 16  # fragments a background job embeds; a player's turn interrupts between two of them
GAMES_KEPT = 64  # games whose vectors stay in memory
PROGRESS_SECONDS = 30.0  # how often a backlog's progress is logged
RETRY_SECONDS = 30.0  # after the embedding model failed, before trying again
IDLE_SECONDS = 60.0  # the background task looks at the queue at least this often
QUERIES_KEPT = 256
ROWS_ON_THE_LOOP = 500  # vector rows read into memory on the event loop; more are read in a thread
READ_BLOCK = 5000  # vector rows fetched at once when a game's vectors are read
TEXTS_KEPT = 4096  # texts compared whole (lore, the world's secrets, a reply's sentences) whose vectors are kept
TEXT_BATCH = 64  # parts of such texts embedded in one call
# Stored fragments' parts (a reply's sentences, a clause) whose vectors are kept: a sentence the log says again
# (a model that repeats itself, "I look around") is embedded once; a part's vector depends on its text alone.
PARTS_KEPT = 4096
# What a turn waits for the embedding model (its query, its lore) at most; past it, that turn goes by words.
TURN_SECONDS = 5.0
# A fragment is found by its closest part (a clue told in one sentence of a long reply), plus this much of the
# whole's closeness, so that of two fragments with an equally close sentence the one that is about the question
# throughout comes first. Measured with bench locomo at 1,000 tokens: 0 gives 0.742, 0.15 0.745, 0.2 0.750,
# 0.3 0.748, 0.5 0.749, 1.0 0.745.
WHOLE_WEIGHT = 0.3

# A fragment read from the table and not added yet (its parts may go on in the next block): its first row's id,
# its ref, its turn, its witnesses (``None``: public) and its parts' vectors, as ``GameVectors.add`` takes them.
_Pending = tuple[int, str, int, tuple[int, ...] | None, list[np.ndarray]]


@dataclass(frozen=True)
class Query:
    """What a turn searches for, embedded once and used by recall and by lore."""

    text: str
    vector: np.ndarray
    seconds: float  # what embedding it cost the turn


class MeaningIndex:
    """The embedding index of every game of the process; ``on`` is false when there is no embedding model."""

    def __init__(
        self, store: Store, worker: ModelWorker, embedder: Embedder | None, unavailable: str | None = None,
        cap_bytes: int = 256 * 2**20,
    ):  # fmt: skip
        self.store = store
        self.cap_bytes = cap_bytes  # what the games' vectors held in memory may take together
        self._over_cap_said = False
        self.worker = worker
        self.embedder = embedder
        # Why there is none, when one was asked for: said in the log at start and in /memory-status.
        self.unavailable = unavailable
        self.model = self._tag() if embedder else None
        self._games: OrderedDict[int, GameVectors] = OrderedDict()
        self._reading = asyncio.Lock()  # one reader of the games' vectors at a time
        self._dirty: set[int] = set()  # games the background wrote vectors for since their matrix was read
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._adopting: asyncio.Task | None = None  # taking the model's new vector size (see _adopt)
        self._texts: OrderedDict[str, np.ndarray] = OrderedDict()  # a text -> its parts' vectors (this model's)
        self._parts: OrderedDict[str, np.ndarray] = OrderedDict()  # a stored fragment's part -> its vector
        # texts being embedded now -> the call that embeds them
        self._embedding: dict[str, asyncio.Future[dict[str, np.ndarray]]] = {}
        self._damaged: set[str] = set()
        self._queries: OrderedDict[str, Query] = OrderedDict()
        self.query_seconds: deque[float] = deque(maxlen=1000)  # the cost of each turn's query, for bench turns
        self.embedded = 0  # fragments embedded by this process
        self.failure: str | None = None  # the last background failure, while it lasts

    @property
    def _embedding_model(self) -> Embedder:
        """``embedder``, for what runs only with one: the background, a search, the guard by meaning."""
        if self.embedder is None:
            raise RuntimeError("the meaning index has no embedding model")
        return self.embedder

    @property
    def _vectors_tag(self) -> str:
        """``model``, for what runs only with an embedding model (see ``_embedding_model``)."""
        if self.model is None:
            raise RuntimeError("the meaning index has no embedding model")
        return self.model

    def _tag(self) -> str:
        """What this model's vectors are stored under: vectors of two models, or two sizes, are never compared."""
        embedder = self._embedding_model
        return f"{embedder.identity or embedder.name}/{embedder.dimension}"

    async def _adopt(self, changed: DimensionChanged) -> None:
        """The model now answers vectors of another size (a server restarted with another model under its name):
        every fragment is embedded again with it; until then recall goes by words, and no turn fails."""
        embedder = self._embedding_model
        if changed.dimension == embedder.dimension:  # taken already (by the background, or a turn)
            return
        log.warning("%s; every fragment is embedded again, recall by words meanwhile", changed)
        embedder.dimension = changed.dimension
        self.model = model = self._tag()
        self._games.clear()
        self._texts.clear()
        self._parts = OrderedDict()  # replaced, not cleared: the worker's thread may be reading the old one
        self._queries.clear()
        await self.store.use_embedding_model(model)
        self.notify()

    @property
    def on(self) -> bool:
        return self.embedder is not None

    @property
    def placement(self) -> str:
        return self.embedder.placement if self.embedder else ""

    # The background: embed what is queued

    def notify(self) -> None:
        """Something was stored: embed it when the model is free (started on first use)."""
        if self.embedder is None:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="embedding")
        self._wake.set()

    async def idle(self) -> None:
        """Wait until nothing is queued (tests and benches)."""
        self.notify()
        while self.embedder is not None and await self.store.vectors_waiting():
            if self._task is None or self._task.done():
                return
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        if self._adopting is not None:
            with contextlib.suppress(Exception):
                await self._adopting
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        calls = set(self._embedding.values())  # texts still being embedded, their callers gone with the games
        for call in calls:
            call.cancel()
        await asyncio.gather(*calls, return_exceptions=True)

    async def _run(self) -> None:
        if await self.store.use_embedding_model(self._vectors_tag):
            log.info("Embedding model changed to %s: every fragment is embedded again", self.model)
        waiting = await self.store.vectors_waiting()
        if waiting:
            log.info("Embedding %d fragments in the background with %s (%s)", waiting, self.model, self.placement)
        reported = time.monotonic()
        while True:
            todo = await self.store.vector_todo(BATCH)
            if not todo:
                if waiting >= BATCH:
                    log.info("Embedding done: every fragment has its vector (%d this run)", self.embedded)
                waiting = 0
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), IDLE_SECONDS)
                continue
            try:
                vectors = await self.worker.run(
                    functools.partial(self._embed_batch, [t.text for t in todo]),
                    priority=Priority.EMBEDDING, label="embed", interruptible=self.worker.interrupts_background,
                )  # fmt: skip
            except DimensionChanged as changed:
                await self._adopt(changed)
                continue
            except Exception as exc:
                self.failure = f"embedding failed: {exc}"
                log.warning("Embedding %d fragments failed (%s); trying again in %.0f s", len(todo), exc, RETRY_SECONDS)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            self.failure = None
            await self._save(todo, vectors)
            waiting = max(waiting, len(todo))
            if time.monotonic() - reported > PROGRESS_SECONDS:
                reported = time.monotonic()
                log.info("Embedding: %d fragments left", await self.store.vectors_waiting())

    def _embed_batch(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """In the worker's thread: each fragment's parts (see ``passages``), one fragment at a time, stopping
        when a player's turn is waiting; ``None`` for a fragment the model gives no finite vector."""
        embedder = self._embedding_model
        done: list[np.ndarray | None] = []
        for text in texts:
            stop = self.worker.model.stop
            if stop is not None and stop.is_set():
                raise Interrupted
            try:
                done.append(self._part_vectors(embedder, passages(text)))
            except NonFiniteVector:
                done.append(None)
        return done

    def _part_vectors(self, embedder: Embedder, parts: list[str]) -> np.ndarray:
        """In the worker's thread: ``parts``' vectors, the parts embedded lately taken from memory."""
        kept = self._parts
        if not parts:
            return embedder.embed(parts)
        missing = [part for part in dict.fromkeys(parts) if part not in kept]
        fresh = dict(zip(missing, embedder.embed(missing), strict=True))
        vectors = np.vstack([fresh[part] if part in fresh else kept[part] for part in parts])
        for part in parts:
            if part in fresh:
                kept[part] = fresh[part]
            kept.move_to_end(part)
        while len(kept) > PARTS_KEPT:
            kept.popitem(last=False)
        return vectors

    async def _save(self, todo: Sequence[VectorTodo], vectors: Sequence[np.ndarray | None]) -> None:
        """Store each fragment's vectors; one without a finite vector leaves the queue with none (it is still
        recalled by words), said in the log."""
        dim = self._embedding_model.dimension
        done: list[tuple[VectorTodo, list[bytes]]] = []
        for item, parts in zip(todo, vectors, strict=True):
            if parts is None:
                log.warning("%s got not a finite vector from %s; it is recalled by words alone", item.ref, self.model)
                done.append((item, []))
            else:
                done.append((item, [row.astype(np.float32).tobytes() for row in parts]))
        for game_id in await self.store.save_vectors(self._vectors_tag, dim, done):
            self._dirty.add(game_id)
        self.embedded += len(done)

    # A player's turn: embed the query, search the game's vectors

    async def query(self, text: str) -> Query | None:
        """The turn's query, embedded now (its cost is the turn's); ``None`` without a model or when it fails."""
        if self.embedder is None or not text.strip():
            return None
        if (known := self._queries.get(text)) is not None:  # asked again (a /retry, a preview): no cost
            return known
        started = time.perf_counter()
        try:
            embedding = asyncio.to_thread(self.embedder.embed, [text], query=True)
            vector = (await asyncio.wait_for(embedding, TURN_SECONDS))[0]
        except TimeoutError:
            log.warning("Embedding the query took over %.0f s; this turn recalls by words alone", TURN_SECONDS)
            return None
        except DimensionChanged as changed:  # the background embeds everything again; this turn goes by words
            if self._adopting is None or self._adopting.done():
                self._adopting = asyncio.create_task(self._adopt(changed), name="embedding-model-changed")
            return None
        except Exception as exc:  # recall goes on by words: a turn never fails for the meaning index
            log.warning("Embedding the query failed (%s); this turn recalls by words alone", exc)
            return None
        seconds = time.perf_counter() - started
        self.query_seconds.append(seconds)
        self._queries[text] = query = Query(text, vector, seconds)
        while len(self._queries) > QUERIES_KEPT:
            self._queries.popitem(last=False)
        return query

    async def search(
        self, game_id: int, query: Query | None, limit: int, audience: int | None = None
    ) -> list[RecallHit]:
        """The fragments of a game nearest ``query`` in meaning, best first, as many as ``limit``.

        Public fragments only, unless ``audience`` names a player: then also the private ones they witnessed
        (the answer to their secret action goes to them alone).
        """
        if query is None or self.embedder is None:
            return []
        vectors = await self._vectors(game_id)
        if not vectors.refs or len(query.vector) != vectors.dimension:  # a query of the model before a change
            return []
        starts, allowed = vectors.starts, vectors.public
        if audience is not None and vectors.private:
            allowed = allowed.copy()
            allowed[[row for row, seen in vectors.private.items() if audience in seen]] = True

        def nearest() -> list[tuple[int, float, int]]:  # fragment, score, nearest part
            similar = vectors.scores(query.vector)
            # Each fragment by its closest part, and a little by the whole (see WHOLE_WEIGHT).
            closest = np.maximum.reduceat(similar, starts) + WHOLE_WEIGHT * similar[starts]
            # Only what the turn may see, and only a number: NaN would rank anywhere, masked fragments first.
            ranked = allowed & np.isfinite(closest)
            scores = np.where(ranked, closest, -np.inf)
            k = min(limit, int(ranked.sum()))
            if k <= 0:
                return []
            top = np.argpartition(-scores, k - 1)[:k]
            ends = vectors.ends()
            return sorted(
                ((int(i), float(scores[i]), nearest_sentence(similar, starts[i], ends[i])) for i in top),
                key=lambda found: -found[1],
            )

        found = await asyncio.to_thread(nearest) if vectors.rows > 5000 else nearest()
        texts = await self.store.vector_texts([vectors.row_ids[i] for i, _, _ in found])
        return [
            RecallHit(ref=vectors.refs[i], text=texts[vectors.row_ids[i]], turn=vectors.turns[i], score=s, part=part)
            for i, s, part in found
            if vectors.row_ids[i] in texts  # gone from the table since (an edit): not found
        ]

    async def _vectors(self, game_id: int) -> GameVectors:
        """A game's vectors in memory: read whole once, then only what changed: rows the background added, and
        fragments whose vectors left the table (an edit, a delete, a superseded fact), marked gone."""
        async with self._reading:
            return await self._read_vectors(game_id)

    async def _read_vectors(self, game_id: int) -> GameVectors:
        vectors = self._games.get(game_id)
        epoch = self.store.vectors_epoch
        whole = vectors is None or vectors.epoch != epoch or vectors.gone * 4 > max(1, len(vectors.refs))
        if vectors is None or whole:
            vectors = GameVectors(epoch, self._embedding_model.dimension)
            self._dirty.add(game_id)
        # Removals first: a row removed and written again since is then read as the new fragment it is.
        removed = self.store.removed_vector_rows(game_id, vectors.removals_seen)
        vectors.removals_seen += len(removed)
        for row_id in removed:
            vectors.remove(row_id)
        if game_id in self._dirty:
            self._dirty.discard(game_id)
            # A whole game (read at start) comes in blocks, each added in a thread: never long on the loop.
            pending: _Pending | None = None
            while True:
                rows = await self.store.vector_rows(
                    game_id, self._vectors_tag, after_id=vectors.last_id, limit=READ_BLOCK
                )
                if len(rows) > ROWS_ON_THE_LOOP:
                    pending = await asyncio.to_thread(self._read_rows, vectors, rows, pending)
                else:
                    pending = self._read_rows(vectors, rows, pending)
                if len(rows) < READ_BLOCK:
                    break
            if pending is not None:
                vectors.add(*pending)
            if whole:
                vectors.fit()
        self._games[game_id] = vectors
        self._games.move_to_end(game_id)
        self._keep_within_cap()
        return vectors

    def _keep_within_cap(self) -> None:
        """The least recently searched games' vectors go (read again when needed) while those held pass the byte
        cap or :data:`GAMES_KEPT` games; the game just used always stays, said once if it alone is past the cap."""
        held = sum(v.nbytes for v in self._games.values())
        while len(self._games) > 1 and (held > self.cap_bytes or len(self._games) > GAMES_KEPT):
            _, dropped = self._games.popitem(last=False)
            held -= dropped.nbytes
        if held > self.cap_bytes and not self._over_cap_said:
            self._over_cap_said = True
            log.warning("One game's vectors take %d MiB, more than GM_VECTORS_MIB (%d); they are kept while it is "
                        "played", held >> 20, self.cap_bytes >> 20)  # fmt: skip

    def _read_rows(
        self, vectors: GameVectors, rows: Sequence[tuple[int, VectorRow]], pending: _Pending | None
    ) -> _Pending | None:
        """Add a game's new rows to its vectors, a fragment with all its parts; a fragment whose first part is
        damaged is left out whole, a damaged later part alone. ``pending``: the fragment the last block ended in
        (its parts may go on in this one), as this block's last is returned, to be added by the caller."""
        for row_id, row in rows:
            vectors.last_id = max(vectors.last_id, row_id)
            vector = self._vector_of(row.ref, row.vector)
            if row.part == 0 and (not isinstance(row.text, str) or row.audience == DAMAGED):
                self._said_damaged(row.ref, "its text or its witnesses cannot be read")
                vector = None  # left out whole: a private fragment is never taken for a public one
            if row.part == 0:
                if pending is not None:
                    vectors.add(*pending)
                pending = None if vector is None else (row_id, row.ref, row.turn, row.audience, [vector])
            elif pending is not None and row.ref == pending[1] and vector is not None:
                pending[4].append(vector)
        return pending

    def _vector_of(self, ref: str, blob: object) -> np.ndarray | None:
        """A stored vector, or ``None`` (logged once) for a damaged row: not bytes, the wrong size, or not finite."""
        dim = self._embedding_model.dimension
        vector = np.frombuffer(blob, dtype=np.float32) if isinstance(blob, bytes) and len(blob) == dim * 4 else None
        if vector is None or not np.isfinite(vector).all():
            size = f"{len(blob)} bytes" if isinstance(blob, bytes) else f"a {type(blob).__name__}, not bytes"
            self._said_damaged(ref, size)
            return None
        return vector

    def _said_damaged(self, ref: str, why: str) -> None:
        if ref not in self._damaged:
            self._damaged.add(ref)
            log.warning("The vector of %s is damaged (%s); it is left out of recall by meaning", ref, why)

    # Texts compared whole: lore entries, the world's secrets, sentences of a reply (cached, this model's)

    async def vectors_of(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each text's parts' vectors (whole, then its sentences: see ``passages``; clauses are for recall's
        fragments), embedding the texts not seen yet; raises when the model fails."""
        found = {}
        for text in texts:  # those used now go last out, and are held here whatever a concurrent call evicts
            if text in self._texts:
                self._texts.move_to_end(text)
                found[text] = self._texts[text]
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        # A text another call is embedding now is waited for, not embedded again: games of one world started
        # together asked for its lore and secrets at once, each call embedding them all.
        elsewhere = {t: self._embedding[t] for t in missing if t in self._embedding}
        mine = [t for t in missing if t not in elsewhere]
        calls = set(elsewhere.values())
        if mine:
            call: asyncio.Future[dict[str, np.ndarray]] = asyncio.ensure_future(self._embed_texts(mine))
            self._embedding.update(dict.fromkeys(mine, call))
            call.add_done_callback(lambda done: self._embedded(mine, done))
            calls.add(call)
        for call in calls:  # shielded: a caller that gives up (a turn's deadline) leaves it to the others
            found.update({t: v for t, v in (await asyncio.shield(call)).items() if t in missing})
        return {t: found[t] for t in texts}

    async def _embed_texts(self, texts: list[str]) -> dict[str, np.ndarray]:
        def embed() -> list[np.ndarray]:
            # In batches of parts, not a call a text: a world's 100 texts are a few calls to a server, and a
            # player's query waits for one batch at most.
            embedder = self._embedding_model
            parts = [passages(text, clauses=False) for text in texts]
            flat = [part for each in parts for part in each]
            vectors = np.vstack([embedder.embed(flat[i : i + TEXT_BATCH]) for i in range(0, len(flat), TEXT_BATCH)])
            ends = np.cumsum([len(each) for each in parts])
            return np.split(vectors, ends[:-1])

        done = dict(zip(texts, await asyncio.to_thread(embed), strict=True))
        self._texts.update(done)
        while len(self._texts) > TEXTS_KEPT:
            self._texts.popitem(last=False)
        return done

    def _embedded(self, texts: list[str], call: asyncio.Future) -> None:
        for text in texts:
            if self._embedding.get(text) is call:
                del self._embedding[text]
        if not call.cancelled():
            call.exception()  # said to its callers; not again as "never retrieved" when none waited

    async def lore_scores(self, texts: Sequence[str], query: Query | None) -> list[float]:
        """How close each lore text is to the turn's query (its closest part's cosine)."""
        if query is None or self.embedder is None or not texts:
            return [0.0] * len(texts)
        try:
            vectors = await asyncio.wait_for(self.vectors_of(texts), TURN_SECONDS)
        except Exception as exc:
            log.warning("Embedding lore failed (%s); lore fires by its keys alone this turn", exc or "too slow")
            return [0.0] * len(texts)
        cosines = np.array([(vectors[t] @ query.vector).max() for t in texts])
        return [float(c) for c in self._embedding_model.comparable(cosines, query=True)]

    # The leak guard by meaning (F17 with F31)

    async def closeness(self, sentences: Sequence[str], secrets: Sequence[str]) -> np.ndarray:
        """How close each sentence is to each secret (the secret's closest part), shape (sentences, secrets), on the
        bundled model's scale (see ``Embedder.comparable``)."""
        vectors = await self.vectors_of([*sentences, *secrets])
        said = np.vstack([vectors[s][0] for s in sentences])
        cosines = np.array([(vectors[t] @ said.T).max(axis=0) for t in secrets]).T.reshape(len(sentences), len(secrets))
        return self._embedding_model.comparable(cosines)

    async def nearest_private(
        self, game_id: int, sentences: Sequence[str], audience: int | None, skip: Set[str] = frozenset()
    ) -> list[tuple[str, str, float] | None]:
        """For each sentence, the closest private message of the game that ``audience`` did not witness (all of
        them for the channel, ``None``), leaving out the refs in ``skip``: its ref, its text and the cosine (on the
        bundled model's scale);
        ``None`` where there is none.

        A private message the background has not embedded yet (a whisper of this very turn) is embedded now:
        the guard never waits for the queue."""
        vectors = await self._vectors(game_id)
        rows = [
            i for i, seen in vectors.private.items()
            if (audience is None or audience not in seen) and vectors.refs[i] not in skip
        ]  # fmt: skip
        embedded = {vectors.refs[i] for i in rows}
        queued = [
            todo for todo in await self.store.queued_private_vectors(game_id)
            # (queued private messages always have witnesses: their audience is never None)
            if (audience is None or (todo.audience is not None and audience not in todo.audience))
            and todo.ref not in embedded and todo.ref not in skip
        ]  # fmt: skip
        if not rows and not queued:
            return [None] * len(sentences)
        said = await self.vectors_of(sentences)
        late = await self.vectors_of([todo.text for todo in queued])
        texts = await self.store.vector_texts([vectors.row_ids[i] for i in rows])
        rows = [i for i in rows if vectors.row_ids[i] in texts]
        if not rows and not queued:
            return [None] * len(sentences)
        parts = [vectors.parts(i) for i in rows] + [late[todo.text] for todo in queued]
        found = [(vectors.refs[i], texts[vectors.row_ids[i]]) for i in rows] + [(t.ref, t.text) for t in queued]
        offsets = np.cumsum([0] + [len(block) for block in parts])[:-1]
        scores = np.maximum.reduceat(np.vstack(parts) @ np.vstack([said[s][0] for s in sentences]).T, offsets, axis=0)
        best = scores.argmax(axis=0)  # per sentence, the closest private fragment
        scores = self._embedding_model.comparable(scores)
        return [(*found[b], float(scores[b, n])) for n, b in enumerate(best)]

    # What /memory-status says

    async def status(self, game_id: int) -> MeaningStatus:
        if self.embedder is None:
            return MeaningStatus(None, "", 0, 0, self.unavailable)
        done, waiting = await self.store.vector_counts(game_id, self._vectors_tag)
        return MeaningStatus(self.embedder.name, self.placement, done, waiting, self.failure)


@dataclass(frozen=True)
class MeaningStatus:
    model: str | None  # None: recall by words alone
    placement: str
    embedded: int
    waiting: int
    problem: str | None = None
