"""The bundled embedding model, loaded once for the tests that need it (it is read-only: tests may share it)."""

from __future__ import annotations

import functools

from bot.model.embedding import LlamaEmbedder
from bot.model.minilm import NAME, bundled_gguf
from bot.settings import ProcessSettings


@functools.cache
def bundled_embedder() -> LlamaEmbedder:
    return LlamaEmbedder(bundled_gguf(ProcessSettings(_env_file=None).models_dir), name=NAME)
