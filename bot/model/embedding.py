"""Embedding models behind one small interface (F31): text in, unit vectors out.

Three ways to get one, one interface:

- the embedded default, all-MiniLM-L6-v2 from a PyPI wheel (see
  :mod:`bot.model.minilm`), run in process by llama.cpp;
- any GGUF embedding model (the catalog's, an ``hf:`` file, a path), run in
  process by llama.cpp: :class:`LlamaEmbedder`;
- with a model server, its ``/v1/embeddings``: :class:`ServerEmbedder`.

Vectors are L2-normalised float32, so a dot product is the cosine. Each
embedder has a ``name`` that vectors are tagged with: vectors of two models
are never compared.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from bot.errors import UserError
from bot.model.catalog import file_digest

log = logging.getLogger(__name__)

# What a fragment may hold for embedding: the start of a long summary says what it is about.
MAX_EMBED_CHARS = 2000
WINDOW = 512  # tokens an in-process embedding model reads of one text


# Dimensions an embedding model may answer: the largest in use are 4,096 (e5-mistral) and 3,072; a million, from a
# broken or hostile server, would fill the database and the memory.
MAX_DIMENSION = 8192


class DimensionChanged(UserError):
    """The model answered vectors of another size than it did at start (a server restarted with another model
    under the same name): none of them is compared with the stored ones."""

    def __init__(self, embedder: str, before: int, now: int):
        super().__init__(f"{embedder} answers {now} dimensions, not the {before} it answered at start")
        self.dimension = now


class NonFiniteVector(ValueError):
    """The model answered NaN or infinity for a text (a GGUF that overflows on some input, a server writing
    ``NaN`` in its JSON): no vector of it is used, as a query or stored."""


# The bundled model's chance level: the mean cosine of 1,500 pairs of turns taken from two different conversations
# of LoCoMo's dev file (../shared/bench/locomo-dev.json, turns of six words or more; all-MiniLM-L6-v2 has no
# prefixes, so a query's and a passage's are the same). Measured with ``python -m bot bench chance``.
REFERENCE_CHANCE = 0.192


class Embedder(ABC):
    """Turns texts into unit vectors; synchronous and possibly slow: called from a thread."""

    name: str = "embedder"
    identity: str = ""  # what vectors are tagged with (the name, and for a file its digest); empty: the name
    dimension: int = 0
    placement: str = ""
    # Some models are trained with a marker before a query and before a stored passage (e5, nomic).
    query_prefix: str = ""
    document_prefix: str = ""
    # The mean cosine of unrelated texts, a query against a passage and a passage against a passage (see
    # ``comparable``); None where it was not measured.
    chance: tuple[float, float] | None = None

    def comparable(self, cosines: np.ndarray, *, query: bool = False) -> np.ndarray:
        """``cosines`` on the bundled model's scale, where the thresholds of lore by meaning and of the guard by
        meaning were set: this model's chance level (unrelated texts) maps to the bundled model's, and 1 stays 1.

        Models spread their cosines differently: multilingual-e5-small puts unrelated texts around 0.8 (its
        model card says 0.7 to 1.0, from the low temperature of its training), all-MiniLM-L6-v2 around 0.2, so a
        threshold of 0.35 fired every lore entry by meaning with e5 (bench recall: 20 of 20 actions about
        something else). A model whose chance level was not measured is taken as it is."""
        if self.chance is None:
            return cosines
        own = self.chance[0 if query else 1]
        return REFERENCE_CHANCE + (cosines - own) * ((1 - REFERENCE_CHANCE) / (1 - own))

    @abstractmethod
    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Raw vectors, one row a text."""

    def _turn(self, query: bool) -> contextlib.AbstractContextManager:
        """Held around each call of the model (``query``: a player's): a model that serves one call at a time
        makes it wait its turn."""
        return contextlib.nullcontext()

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Unit vectors for ``texts`` (stored fragments; ``query``: what is searched for), shape (n, dimension).

        Raises :class:`NonFiniteVector` when a vector is not finite: every comparison with it would be NaN, and
        NaN ranks as no number does (a search by it once put the fragments a turn may not see first)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prefix = self.query_prefix if query else self.document_prefix
        with self._turn(query):
            vectors: np.ndarray = np.asarray(
                self._embed([prefix + t[:MAX_EMBED_CHARS] for t in texts]), dtype=np.float32
            )
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise UserError(f"{self.name} did not answer one vector per text")
        if vectors.shape[1] != self.dimension:
            if not 0 < vectors.shape[1] <= MAX_DIMENSION:
                raise UserError(f"{self.name} answers {vectors.shape[1]} dimensions; at most {MAX_DIMENSION} are taken")
            raise DimensionChanged(self.name, self.dimension, vectors.shape[1])
        with np.errstate(over="ignore", invalid="ignore"):
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms == 0, 1.0, norms)
        if not np.isfinite(vectors).all():
            raise NonFiniteVector(f"the embedding model gave a vector that is not finite for {len(texts)} text(s)")
        return vectors


class LlamaEmbedder(Embedder):
    """A GGUF embedding model run in process by llama.cpp (mean or the model's own pooling)."""

    def __init__(
        self, path: Path, *, name: str | None = None, n_threads: int | None = None, n_gpu_layers: int = 0,
        query_prefix: str = "", document_prefix: str = "", chance: tuple[float, float] | None = None,
    ):  # fmt: skip
        import llama_cpp

        from bot.model.llama import physical_cores

        threads = n_threads or physical_cores()  # as the chat model: llama.cpp's own default is half the CPUs
        try:
            # 512 tokens: all that BERT-sized models take, and plenty for a fragment (a long one is cut).
            self._llama = llama_cpp.Llama(
                model_path=str(path), embedding=True, n_ctx=WINDOW, n_batch=WINDOW, n_ubatch=WINDOW,
                n_threads=threads, n_gpu_layers=n_gpu_layers, verbose=False,
            )  # fmt: skip
        except (ValueError, RuntimeError, OSError) as exc:
            raise UserError(f"The embedding model at {path} does not load: {exc}") from None
        self.name = name or path.stem
        self.dimension = self._llama.n_embd()
        # A file named by its path alone is told from another of the same name by its digest.
        self.identity = name or f"{path.stem}@{file_digest(path)}"
        self.placement = f"in process ({path.name}), {self._where(n_gpu_layers)}"
        self.query_prefix, self.document_prefix, self.chance = query_prefix, document_prefix, chance
        self._turns = QueriesFirst()  # one llama context: a player's query and background work take turns
        try:  # a chat model loads as well, and answers a vector per token: refused now, not every 30 s
            self.embed(["dimension probe"])
        except (UserError, ValueError, RuntimeError) as exc:
            raise UserError(f"{path.name} is not an embedding model ({exc})") from None

    def _where(self, n_gpu_layers: int) -> str:
        """On the CPU with how many threads, or on which GPU, as the chat model's placement says it."""
        import llama_cpp

        from bot.model.llama import gpu_devices, placement

        layers = llama_cpp.llama_model_n_layer(self._llama._model.model) + 1  # and the output layer
        devices = gpu_devices() if n_gpu_layers else []
        return placement(n_gpu_layers, layers, self._llama.n_threads, devices)

    def _turn(self, query: bool) -> contextlib.AbstractContextManager:
        return self._turns.take(query=query)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        # A call is one batch of texts at most (see bot.engine.upkeep.meaning): a query waits that long. Each text
        # is read on its own: given several, llama.cpp reads them as one batch, slower a text than one by one
        # (all-MiniLM-L6-v2 on two cores, 64 texts of 10 to 60 words: 64 ms a text together, 43 alone).
        return np.asarray([self._llama.embed([text], truncate=True)[0] for text in texts], dtype=np.float32)


class QueriesFirst:
    """One call at a time on a model, a player's query before any call of background texts that waits.

    With a plain lock, the queries of four tables started together waited behind the batches of their worlds'
    texts, taken in no order: in one run of bench tables on two cores, four turns gave up waiting after 5 s and
    recalled by words alone."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._busy = False
        self._queries = 0  # queries waiting

    @contextlib.contextmanager
    def take(self, *, query: bool) -> Iterator[None]:
        with self._changed:
            self._queries += query
            try:
                self._changed.wait_for(lambda: not self._busy and (query or not self._queries))
            finally:
                self._queries -= query
            self._busy = True
        try:
            yield
        finally:
            with self._changed:
                self._busy = False
                self._changed.notify_all()


class ServerEmbedder(Embedder):
    """``/v1/embeddings`` of an OpenAI-compatible server (llama.cpp's with ``--embedding``, vLLM, Ollama, TEI)."""

    BATCH = 32

    def __init__(self, server, model: str):  # server: bot.model.server.ServerModel, for its HTTP and its retries
        self.server = server
        self.model = model
        self.name = self.identity = f"server:{model}"
        self.placement = f"on the model server ({model})"
        probe = self._embed(["dimension probe"])
        self.dimension = len(probe[0]) if len(probe) else 0
        if not 0 < self.dimension <= MAX_DIMENSION:
            raise UserError(
                f"The server's {model} answers {self.dimension} dimensions; at most {MAX_DIMENSION} are taken"
            )

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.BATCH):
            chunk = list(texts[start : start + self.BATCH])
            answer = self.server.http.request_json("POST", "/embeddings", {"model": self.model, "input": chunk})
            try:
                data = sorted(answer["data"], key=lambda item: item["index"])
                vectors = [[float(x) for x in item["embedding"]] for item in data]
            except (KeyError, TypeError, ValueError):
                raise UserError("The model server's /embeddings answer has another shape than OpenAI's.") from None
            if len(vectors) != len(chunk) or len({len(v) for v in vectors}) != 1:
                raise UserError("The model server's /embeddings answer does not have one vector per text.")
            rows += vectors
        return np.asarray(rows, dtype=np.float32)
