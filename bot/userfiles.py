"""Files read on someone's behalf: regular files only, their size checked before a byte is read.

A name typed by a player never reaches this module (worlds are looked up by
id in the library); paths come from the command line or the bot's own
folders. Even so, a world file or a lore export can be a device, a pipe or
far too big, and reading one whole would hang or exhaust the process.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_WORLD_BYTES = 1 * 2**20  # the shipped worlds are about 20 KB; 200 lore entries of 4,000 characters fit
MAX_IMPORT_BYTES = 2 * 2**20  # a SillyTavern World Info export: 200 full entries with SillyTavern's fields fit


class UnreadableFile(Exception):
    """Why a file was not read, as a phrase to put after its name."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def read_text(path: Path, max_bytes: int, *, encoding: str = "utf-8") -> str:
    """The text of a regular file of at most ``max_bytes``, or :class:`UnreadableFile` saying why not.

    The file is opened without blocking (a named pipe would otherwise wait
    for a writer), its type and size are checked on the open descriptor,
    and no more than ``max_bytes + 1`` bytes are ever read, so a file that
    grows while it is read is refused too.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise UnreadableFile("no such file") from None
    except OSError as exc:
        raise UnreadableFile(f"cannot be read: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UnreadableFile("is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("is not a regular file (a device, pipe or socket); only plain files are read")
        raise UnreadableFile(over_limit(info.st_size, max_bytes))
    with os.fdopen(fd, "rb") as file:
        try:
            data = file.read(max_bytes + 1)
        except OSError as exc:
            raise UnreadableFile(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise UnreadableFile(f"is over the limit of {human_size(max_bytes)}")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise UnreadableFile(
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None


def over_limit(n: int, limit: int) -> str:
    """``is 3 KiB; the limit is 2 KiB``; in bytes where the rounded sizes would read the same."""
    size, most = human_size(n), human_size(limit)
    if size == most:
        size, most = f"{n:,} bytes", f"{most} ({limit:,} bytes)"
    return f"is {size}; the limit is {most}"


def human_size(n: int) -> str:
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.0f} KiB"
    return f"{n} bytes"
