"""The files of the models that come with the bot, found inside their installed packages."""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable
from pathlib import Path

from bot.errors import UserError

log = logging.getLogger(__name__)


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
    leaves only a ``.part``, which the next try writes again). A file damaged since (emptied, cut short, not a
    GGUF: its size is kept beside it, ``FILE.size``) is written again, said in the log."""
    if target.is_file():
        problem = _damaged(target)
        if problem is None:
            return target
        log.warning("The converted model %s is damaged (%s); it is converted again", target.name, problem)
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        write(part)
        part.replace(target)
    finally:
        part.unlink(missing_ok=True)
    Path(f"{target}.size").write_text(f"{target.stat().st_size}\n")
    return target


def converted_gguf(
    models_dir: Path, gguf_name: str, source: Callable[[], Path], convert: Callable[[Path, Path], None], what: str
) -> Path:
    """A packaged model as a GGUF in ``models_dir/bundled/``, converted from its package's ``source`` file by
    ``convert(source, out)`` on first use (and again if damaged since); ``what`` names it in the log."""
    target = models_dir / "bundled" / gguf_name
    fresh = not target.is_file()
    written_once(target, lambda part: convert(source(), part))
    if fresh:
        log.info("Converted %s into %s", what, target)
    return target


def _damaged(target: Path) -> str | None:
    """What is wrong with a converted model file, or ``None``."""
    try:
        size = target.stat().st_size
        with target.open("rb") as file:
            magic = file.read(4)
        kept = Path(f"{target}.size")
        expected = int(kept.read_text().strip()) if kept.is_file() else None
    except (OSError, ValueError):
        return "it cannot be read"
    if magic != b"GGUF":
        return f"{size} bytes, not a GGUF"
    if expected is not None and size != expected:
        return f"{size} bytes, not the {expected} it was written with"
    return None


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
