"""Model states kept on disk (F35): a game's first turn after a restart reads only what is new.

A state is what llama.cpp holds after reading a prompt (its KV cache) with
the prompt's token ids. One file per slot (a game), under a folder named for
the model file and the context size: a state is only ever loaded into the
model that wrote it, and the folders of any other model are removed when a
model opens its own. The folder keeps within a byte budget, the least
recently used file out first; a game's file goes with the game.

A file is written whole under another name and then renamed, and carries a
CRC of its bytes: a file cut short, damaged, or written for another model
is deleted with one line in the log, and that game reads its prompt cold,
losing nothing else. No file I/O library beyond the standard one, and no
llama.cpp: the caller turns a :class:`SavedState` into llama.cpp's own.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.model.ownfolders import ModelFolder, safe_file_name

log = logging.getLogger(__name__)

MAGIC = b"GMSTATE1"
SUFFIX = ".state"
MAX_HEADER = 4096


@dataclass(frozen=True)
class SavedState:
    input_ids: np.ndarray  # int32, the prompt (and reply) tokens the state holds
    state: bytes | memoryview  # llama.cpp's state data (from a live state: a view of its buffer, not a copy)
    seed: int


def over_budget(folder: Path, suffix: str, capacity_bytes: int) -> list[Path]:
    """The files of ``folder`` ending in ``suffix`` to remove, least recently written first, for the rest to fit
    in ``capacity_bytes`` (a file removed meanwhile is skipped)."""
    files = []
    for path in folder.glob(f"*{suffix}"):
        try:
            info = path.stat()
        except OSError:
            continue
        files.append((info.st_mtime, info.st_size, path))
    total = sum(size for _, size, _ in files)
    chosen = []
    for _, size, path in sorted(files, key=lambda f: f[0]):
        if total <= capacity_bytes:
            break
        chosen.append(path)
        total -= size
    return chosen


def model_key(path: Path, n_ctx: int) -> str:
    """A name for a model file at a context size: its name, and a digest of its size and first and last MiB (a file
    replaced under the same name has another key)."""
    from bot.model.catalog import file_digest

    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", path.stem)[:60]
    return f"{stem}-{n_ctx}-{file_digest(path, str(n_ctx))}"


class StateFolder:
    """The saved states of one model, on disk, within ``capacity_bytes``."""

    def __init__(self, root: Path, key: str, capacity_bytes: int, max_tokens: int | None = None):
        """``max_tokens``: the context's size; a file of more tokens is no good (its game would fail every turn)."""
        self.max_tokens = max_tokens
        self.root = root
        self.key = key
        self.own = ModelFolder(root, key, "states", (SUFFIX,))
        self.folder = self.own.folder
        self.capacity_bytes = capacity_bytes
        self._lock = threading.Lock()
        self._ids: dict[str, np.ndarray] = {}  # slot -> the token ids of its file (read from headers only)
        self._full_said = False
        self.written = self.read_back = self.dropped = 0
        try:
            self._open()
        except OSError as exc:
            log.warning("Model states cannot be kept in %s (%s); games read their prompts cold after a restart",
                        root, exc.strerror or exc)  # fmt: skip
            self.capacity_bytes = 0

    def _open(self) -> None:
        self.own.open()
        for path in self.folder.glob(f"*{SUFFIX}.tmp"):  # a write a crash cut off
            if not path.is_symlink():
                path.unlink(missing_ok=True)
        for path in sorted(self.folder.glob(f"*{SUFFIX}")):
            header = self._header(path)
            if header is None:
                continue
            self._ids[header["slot"]] = header["ids"]
        self._keep_within_budget()

    def close(self) -> None:
        """Let the folder go: another process may clear it once this one no longer uses it."""
        self.own.close()

    @property
    def on(self) -> bool:
        return self.capacity_bytes > 0

    def slots(self) -> dict[str, np.ndarray]:
        """Each saved slot's token ids (for a new game to start from another's state)."""
        with self._lock:
            return dict(self._ids)

    def _path(self, slot: str) -> Path:
        return self.folder / safe_file_name(slot, SUFFIX, limit=200)

    def write(self, slot: str, saved: SavedState) -> None:
        """Keep ``slot``'s state on disk (replacing its last one), then the folder within its budget."""
        if not self.on or len(saved.state) > self.capacity_bytes:
            return
        ids = np.ascontiguousarray(saved.input_ids, dtype="<i4")
        header = json.dumps(
            {"model": self.key, "slot": slot, "n_tokens": len(ids), "seed": int(saved.seed),
             "state_bytes": len(saved.state), "crc32": zlib.crc32(saved.state, zlib.crc32(ids.tobytes()))}
        ).encode()  # fmt: skip
        path = self._path(slot)
        partial = path.with_name(path.name + ".tmp")
        try:
            with partial.open("wb") as file:
                file.write(MAGIC + struct.pack("<I", len(header)) + header)
                file.write(ids.tobytes())
                file.write(saved.state)
            partial.replace(path)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            if not self._full_said:
                self._full_said = True
                full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
                log.warning("A model state could not be written in %s (%s); games may read their prompts cold "
                            "after a restart", self.folder, "the disk is full" if full else exc.strerror)  # fmt: skip
            return
        with self._lock:
            self._ids[slot] = ids.astype(np.intc)
        self.written += 1
        self._keep_within_budget()

    def read(self, slot: str) -> SavedState | None:
        """``slot``'s saved state, or ``None``; a damaged file or one of another model is deleted and said."""
        with self._lock:
            if slot not in self._ids:
                return None
        path = self._path(slot)
        try:
            with path.open("rb") as file:
                data = file.read()
        except OSError:
            self._forget(slot)
            return None
        saved = self._parse(path, data)
        if saved is None:
            self.drop(slot)
            return None
        try:
            os.utime(path)  # recently used: the last out
        except OSError:
            pass
        self.read_back += 1
        return saved

    def drop(self, slot: str) -> None:
        """Forget ``slot``'s saved state (its game ended, or its file is no good)."""
        self._forget(slot)
        self._path(slot).unlink(missing_ok=True)

    def _forget(self, slot: str) -> None:
        with self._lock:
            self._ids.pop(slot, None)

    def _keep_within_budget(self) -> None:
        for path in over_budget(self.folder, SUFFIX, self.capacity_bytes):
            header = self._header(path)
            path.unlink(missing_ok=True)
            if header is not None:
                self._forget(header["slot"])
            self.dropped += 1

    def _header(self, path: Path) -> dict | None:
        """A file's header and token ids, read without its state; ``None`` (and the file deleted) if damaged."""
        try:
            with path.open("rb") as file:
                head = file.read(len(MAGIC) + 4)
                if len(head) < len(MAGIC) + 4 or head[: len(MAGIC)] != MAGIC:
                    raise ValueError("not a state file")
                (length,) = struct.unpack("<I", head[len(MAGIC) :])
                if length > MAX_HEADER:
                    raise ValueError("header too long")
                header = json.loads(file.read(length))
                if header.get("model") != self.key:
                    raise ValueError("written for another model")
                if self.max_tokens is not None and int(header["n_tokens"]) > self.max_tokens:
                    raise ValueError(f"{header['n_tokens']} tokens, more than the context's {self.max_tokens}")
                ids = np.frombuffer(file.read(4 * int(header["n_tokens"])), dtype="<i4")
                if len(ids) != int(header["n_tokens"]) or not isinstance(header.get("slot"), str):
                    raise ValueError("cut short")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("The model state %s is no good (%s); deleted: its game reads its prompt cold", path.name, exc)
            path.unlink(missing_ok=True)
            return None
        header["ids"] = ids.astype(np.intc)
        return header

    def _parse(self, path: Path, data: bytes) -> SavedState | None:
        try:
            if data[: len(MAGIC)] != MAGIC:
                raise ValueError("not a state file")
            (length,) = struct.unpack("<I", data[len(MAGIC) : len(MAGIC) + 4])
            if length > MAX_HEADER:
                raise ValueError("header too long")
            start = len(MAGIC) + 4
            header = json.loads(data[start : start + length])
            if header.get("model") != self.key:
                raise ValueError("written for another model")
            n, size = int(header["n_tokens"]), int(header["state_bytes"])
            if self.max_tokens is not None and n > self.max_tokens:
                raise ValueError(f"{n} tokens, more than the context's {self.max_tokens}")
            ids_at = start + length
            state_at = ids_at + 4 * n
            if len(data) != state_at + size:
                raise ValueError("cut short" if len(data) < state_at + size else "longer than it says")
            ids, state = data[ids_at:state_at], data[state_at:]
            if zlib.crc32(state, zlib.crc32(ids)) != int(header["crc32"]):
                raise ValueError("its bytes do not match their checksum")
        except (ValueError, KeyError, TypeError, struct.error) as exc:
            log.warning("The model state %s is no good (%s); deleted: its game reads its prompt cold", path.name, exc)
            return None
        return SavedState(np.frombuffer(ids, dtype="<i4").astype(np.intc), state, int(header["seed"]))
