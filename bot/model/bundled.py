"""The files of the models that come with the bot, found inside their installed packages."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path

from bot.errors import UserError


def package_files(package: str, pattern: str) -> list[Path] | None:
    """The files matching ``pattern`` in an installed package, found without importing it (importing a model's
    package may print, or need another tool); ``None`` when the package is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return [
        path
        for location in spec.submodule_search_locations
        for path in sorted(Path(location).glob(pattern))
        if path.is_file()
    ]


def package_file(package: str, pattern: str, missing: str) -> Path:
    """The first file matching ``pattern`` in an installed package; ``missing`` says what to do without it."""
    found = package_files(package, pattern)
    if found is None:
        raise UserError(f"{missing} (package {package} is not installed)")
    if not found:
        raise UserError(f"The {package} package holds no {pattern}; reinstall it (scripts/install).")
    return found[0]


def written_once(target: Path, write: Callable[[Path], None]) -> Path:
    """``target``, written by ``write`` the first time it is asked for: whole or not at all (a crash midway
    leaves only a ``.part``, which the next try writes again)."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        write(part)
        part.replace(target)
    finally:
        part.unlink(missing_ok=True)
    return target


def bert_writer(out: Path, name: str, *, context: int, width: int, ffn: int, layers: int, heads: int, eps: float,
                file_type):  # fmt: skip
    """A GGUF writer for a BERT encoder that llama.cpp embeds with (mean pooling, no causal mask), its shape
    written; the caller adds the vocabulary and the tensors."""
    import gguf

    writer = gguf.GGUFWriter(str(out), "bert")
    writer.add_name(name)
    writer.add_context_length(context)
    writer.add_embedding_length(width)
    writer.add_feed_forward_length(ffn)
    writer.add_block_count(layers)
    writer.add_head_count(heads)
    writer.add_layer_norm_eps(eps)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(file_type)
    return writer
