"""Embedding models (F31): the bundled all-MiniLM-L6-v2's vectors, what is embedded of a fragment, and choosing a
model with GM_EMBED_MODEL (the model's own file and conversion: test_minilm.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bot.memory.recall import passages
from bot.model import minilm
from bot.model.embedding import Embedder, LlamaEmbedder
from bot.settings import ProcessSettings
from bot.startup import load_embedder


def test_texts_of_one_call_are_embedded_as_each_alone(real_embedder):
    """Each text is read on its own (faster than as one batch): its vector is the one it gets alone."""
    texts = ["The lamp oil was watered down.", "Rain drums on the roof of the boathouse all night long."]
    together = real_embedder.embed(texts)
    for text, vector in zip(texts, together, strict=True):
        assert float(vector @ real_embedder.embed([text])[0]) > 0.9999


def test_vectors_are_unit_length_and_near_in_meaning(real_embedder):
    doctor, physician, weather = real_embedder.embed(
        ["The doctor put the little brown bottle in his pocket.", "The physician hid the vial in his coat.",
         "It rained all night."]
    )  # fmt: skip
    assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-5 for v in (doctor, physician, weather))
    assert float(doctor @ physician) > float(doctor @ weather) + 0.3
    assert real_embedder.embed([]).shape == (0, 384)


def test_a_fragment_is_embedded_whole_and_sentence_by_sentence():
    reply = 'GM: Rain drums on the roof. He nods. The oil was watered down. "Who did this?" Wren asks.\nWhat next?'
    assert passages(reply) == [
        reply,
        "GM: Rain drums on the roof.",
        "He nods. The oil was watered down.",  # a sentence of fewer than four words goes with the next
        '"Who did this?" Wren asks. What next?',  # and a short last one with the one before
    ]
    assert passages("Maya: I open the door.") == ["Maya: I open the door."]
    assert passages("Version 1.5 of the map. It shows 3.14 miles!") == [
        "Version 1.5 of the map. It shows 3.14 miles!", "Version 1.5 of the map.", "It shows 3.14 miles!"
    ]  # fmt: skip
    long = " ".join(f"Sentence number {n} is here." for n in range(60))
    assert len(passages(long)) == 1 + 20, "at most 24 parts: neighbours read together past that"


@pytest.mark.llm
def test_gm_embed_model_chooses_the_model_and_one_that_does_not_load_leaves_words_alone(tmp_path: Path):
    settings = ProcessSettings(_env_file=None)
    assert load_embedder(settings.model_copy(update={"embed_model": "none"})) == (None, None)
    default, problem = load_embedder(settings)
    assert isinstance(default, LlamaEmbedder) and default.name == "all-MiniLM-L6-v2" and problem is None
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    for choice in (str(broken), str(tmp_path / "missing.gguf"), "nomic-embed-text-v1.5", "server:nomic"):
        embedder, reason = load_embedder(settings.model_copy(update={"embed_model": choice, "models_dir": tmp_path}))
        assert embedder is None and reason.startswith("the embedding model ") and "unavailable" in reason, reason
        assert "\n" not in reason
    _, reason = load_embedder(
        settings.model_copy(update={"embed_model": "nomic-embed-text-v1.5", "models_dir": tmp_path})
    )
    assert (
        "model pull nomic-embed-text-v1.5" in reason
        and "GM_EMBED_MODEL: " in reason
        and "GM_MODEL" not in (reason.replace("GM_EMBED_MODEL", ""))
    )
    _, missing = load_embedder(settings.model_copy(update={"embed_model": str(tmp_path / "missing.gguf")}))
    assert "GM_EMBED_MODEL: no model file at" in missing, "the setting that names it, not GM_MODEL"


@pytest.mark.llm
def test_a_chat_model_named_as_the_embedding_model_is_refused_when_it_loads_not_every_30_seconds():
    from bot.model.llama import bundled_model_path

    embedder, reason = load_embedder(ProcessSettings(_env_file=None, embed_model=str(bundled_model_path())))
    assert embedder is None
    assert "SmolLM2-135M-Instruct.Q4_1.gguf is not an embedding model (" in reason and "one vector per text" in reason


def test_two_model_files_of_one_name_are_two_models(tmp_path: Path):
    from bot.model.catalog import file_digest

    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first, second = tmp_path / "a" / "embed.gguf", tmp_path / "b" / "embed.gguf"
    first.write_bytes(b"GGUF" + b"\1" * 4096)
    second.write_bytes(b"GGUF" + b"\2" * 4096)
    assert file_digest(first) != file_digest(second)
    third = tmp_path / "copy.gguf"
    third.write_bytes(first.read_bytes())
    assert file_digest(third) == file_digest(first), "the same bytes under another name: the same model"


def test_a_catalog_embedding_model_knows_its_query_and_document_markers(tmp_path: Path):
    from bot.model.catalog import EMBEDDING_CATALOG, embedding_catalog_table, hub_file

    nomic = EMBEDDING_CATALOG["nomic-embed-text-v1.5"]
    assert nomic.query_prefix == "search_query: " and nomic.document_prefix == "search_document: "
    assert hub_file("bge-m3").local_path(tmp_path) == tmp_path / "gpustack/bge-m3-GGUF/bge-m3-Q8_0.gguf"
    readme = (Path(__file__).parents[2] / "docs" / "memory.md").read_text()
    assert embedding_catalog_table() in readme


class Marked(Embedder):
    """Records what it was asked to embed."""

    name = "marked"
    dimension = 2
    query_prefix, document_prefix = "q: ", "d: "

    def __init__(self):
        self.seen: list[str] = []

    def _embed(self, texts):
        self.seen += texts
        return np.ones((len(texts), 2))


def test_queries_and_stored_passages_get_their_markers_and_long_texts_are_cut():
    marked = Marked()
    marked.embed(["where is the key"], query=True)
    marked.embed(["x" * 5000])
    assert marked.seen[0] == "q: where is the key"
    assert marked.seen[1].startswith("d: x") and len(marked.seen[1]) == 3 + 2000


def test_gm_n_threads_unset_gives_the_embedding_model_the_physical_cores(real_embedder):
    """As the chat model: llama.cpp's own default, half the CPUs, is one thread on a 2-core host."""
    from bot.model.llama import physical_cores

    threads = physical_cores()
    assert real_embedder._llama.n_threads == threads and f"{threads} thread" in real_embedder.placement


def test_cosines_are_brought_to_the_bundled_models_scale_by_each_models_chance_level():
    from bot.model import e5
    from bot.model.embedding import REFERENCE_CHANCE

    assert minilm.CHANCE == (REFERENCE_CHANCE, REFERENCE_CHANCE), "the scale the thresholds were set on"

    class Fixed(Embedder):
        name, dimension = "fixed", 2

        def __init__(self, chance):
            self.chance = chance

        def _embed(self, texts):
            return np.ones((len(texts), 2))

    cosines = np.array([-0.2, 0.1, 0.35, 0.9])
    assert np.allclose(Fixed(minilm.CHANCE).comparable(cosines), cosines)
    assert np.array_equal(Fixed(None).comparable(cosines), cosines), "a model not measured is taken as it is"
    high = Fixed(e5.CHANCE)
    query_chance, passage_chance = e5.CHANCE
    assert high.comparable(np.array([query_chance, 1.0]), query=True) == pytest.approx([REFERENCE_CHANCE, 1.0])
    assert high.comparable(np.array([passage_chance, 1.0])) == pytest.approx([REFERENCE_CHANCE, 1.0])
    # the order never changes: a closer text stays closer
    assert np.all(np.diff(high.comparable(np.linspace(0.5, 1.0, 11))) > 0)


def test_a_players_query_goes_before_background_texts_waiting_for_the_embedding_model(real_embedder, monkeypatch):
    """Four tables started together: the turns' queries waited behind batches of the worlds' texts, taken in no
    order, and four of them gave up after 5 s. The model takes a waiting query before any batch of texts."""
    import threading
    import time

    order: list[str] = []
    running = threading.Event()
    held = threading.Event()
    embed = real_embedder._llama.embed

    def recorded(texts, **kwargs):
        order.append(texts[0])
        if texts[0] == "first batch":
            running.set()
            held.wait(10)
        return embed(texts, **kwargs)

    monkeypatch.setattr(real_embedder._llama, "embed", recorded)
    first = threading.Thread(target=lambda: real_embedder.embed(["first batch"]))
    first.start()
    assert running.wait(10)
    texts = [threading.Thread(target=lambda n=n: real_embedder.embed([f"batch {n}"])) for n in range(3)]
    for thread in texts:
        thread.start()
    time.sleep(0.2)  # the batches wait their turn
    query = threading.Thread(target=lambda: real_embedder.embed(["where is the key?"], query=True))
    query.start()
    time.sleep(0.2)
    held.set()
    for thread in [first, *texts, query]:
        thread.join(10)
    assert order[0] == "first batch" and len(order) == 5
    assert order[1] == real_embedder.query_prefix + "where is the key?", order
