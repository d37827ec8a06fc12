"""The bundled embedding model, all-MiniLM-L6-v2: its upstream weights, checked, converted once into a GGUF that
llama.cpp runs faithfully; the float16 file of earlier versions goes."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bot.model import minilm


def _reference(ids: list[int]) -> np.ndarray:
    """all-MiniLM-L6-v2's sentence embedding of token ``ids``, computed from its safetensors with numpy alone:
    BERT's encoder, then the mean of its token vectors, normalised."""
    from math import erf

    with zipfile.ZipFile(minilm.bundled_archive()) as files:
        weights = {
            name: array.astype(np.float32) for name, array in minilm._safetensors(files.read("model.safetensors"))
        }
        config = json.loads(files.read("config.json"))

    def norm(x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + config["layer_norm_eps"]) * weights[name + ".weight"] + weights[
            name + ".bias"
        ]

    def dense(x, name):
        return x @ weights[name + ".weight"].T + weights[name + ".bias"]

    n, heads = len(ids), config["num_attention_heads"]
    size = config["hidden_size"] // heads
    e = "embeddings."
    x = weights[e + "word_embeddings.weight"][ids] + weights[e + "position_embeddings.weight"][:n]
    x = norm(x + weights[e + "token_type_embeddings.weight"][0], e + "LayerNorm")
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        q, k, v = (
            dense(x, p + f"attention.self.{w}").reshape(n, heads, size).transpose(1, 0, 2)
            for w in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(size)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attended = (scores / scores.sum(-1, keepdims=True) @ v).transpose(1, 0, 2).reshape(n, heads * size)
        x = norm(x + dense(attended, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        hidden = dense(x, p + "intermediate.dense")
        hidden = 0.5 * hidden * (1 + np.vectorize(erf)(hidden / np.sqrt(2)))
        x = norm(x + dense(hidden, p + "output.dense"), p + "output.LayerNorm")
    mean = x.mean(0)
    return mean / np.linalg.norm(mean)


def test_the_bundled_model_is_the_upstream_weights_run_faithfully_by_llama_cpp(real_embedder):
    assert real_embedder.name == "all-MiniLM-L6-v2" and real_embedder.dimension == 384
    for text in ("The groom led the horses to the stable.", "Maya kneels by the study door and looks in!"):
        ids = real_embedder._llama.tokenize(text.encode())
        assert ids[0] == 101 and ids[-1] == 102, "[CLS] ... [SEP], as BERT's tokenizer writes it"
        assert float(_reference(ids) @ real_embedder.embed([text])[0]) > 0.9999


def test_the_bundled_weights_are_checked_against_the_upstream_sha256(tmp_path: Path):
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(minilm.bundled_archive()) as source, zipfile.ZipFile(archive, "w") as changed:
        for item in source.infolist():
            data = source.read(item)
            changed.writestr(item, data[:-1] + b"\0" if item.filename == "model.safetensors" else data)
    with pytest.raises(Exception, match="SHA-256 .* not the upstream 53aa5117"):
        minilm.convert(archive, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists() or (tmp_path / "out.gguf").stat().st_size == 0


def test_the_float16_file_of_earlier_versions_goes_once_the_float32_one_is_written(tmp_path: Path):
    folder = tmp_path / "bundled"
    folder.mkdir()
    for name in (minilm.FORMER_GGUF_NAME, f"{minilm.FORMER_GGUF_NAME}.size", "someone-elses.gguf"):
        (folder / name).write_bytes(b"GGUF")
    path = minilm.bundled_gguf(tmp_path)
    assert path.name == minilm.GGUF_NAME and path.read_bytes()[:4] == b"GGUF"
    assert sorted(p.name for p in folder.iterdir()) == sorted([minilm.GGUF_NAME, f"{minilm.GGUF_NAME}.size",
                                                               "someone-elses.gguf"])  # fmt: skip
