"""Files read for a user: regular files only, size checked before reading, clear reasons."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.userfiles import MAX_WORLD_BYTES, UnreadableFile, read_text
from bot.worldinfo import read_world_info
from bot.worlds import WorldFileError, load_world
from tests.conftest import FIXTURES

LIGHTHOUSE = FIXTURES / "worlds" / "lighthouse.yaml"


def test_a_plain_file_is_read():
    assert read_text(LIGHTHOUSE, MAX_WORLD_BYTES) == LIGHTHOUSE.read_text(encoding="utf-8")


def test_an_endless_device_is_refused_without_reading():
    with pytest.raises(UnreadableFile, match="not a regular file"):
        read_text(Path("/dev/zero"), MAX_WORLD_BYTES)


def test_a_named_pipe_is_refused_at_once_instead_of_waiting_for_a_writer(tmp_path: Path):
    pipe = tmp_path / "world.yaml"
    os.mkfifo(pipe)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_text(pipe, MAX_WORLD_BYTES)
        except BaseException as exc:  # recorded for the main thread
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # unblock the reader so the test run can end, then fail
        with open(pipe, "w"):
            pass
        pytest.fail("reading a named pipe blocked")
    assert isinstance(outcome[0], UnreadableFile) and "not a regular file" in outcome[0].reason


def test_a_folder_a_missing_file_and_an_unreadable_one_each_say_so(tmp_path: Path):
    with pytest.raises(UnreadableFile, match="is a folder"):
        read_text(tmp_path, MAX_WORLD_BYTES)
    with pytest.raises(UnreadableFile, match="no such file"):
        read_text(tmp_path / "nothing.yaml", MAX_WORLD_BYTES)
    locked = tmp_path / "locked.yaml"
    locked.write_text("title: x\n")
    locked.chmod(0)
    if os.access(locked, os.R_OK):  # root reads anything; the refusal cannot be shown then
        return
    with pytest.raises(UnreadableFile, match="cannot be read"):
        read_text(locked, MAX_WORLD_BYTES)


def test_a_file_over_the_limit_is_refused_by_its_size(tmp_path: Path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 3000)
    with pytest.raises(UnreadableFile, match=r"is 3 KiB; the limit is 2 KiB"):
        read_text(big, 2048)


def test_bytes_that_are_not_utf8_name_the_offset(tmp_path: Path):
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("title: café".encode("latin-1"))
    with pytest.raises(UnreadableFile, match=r"not UTF-8 text \(byte 0xe9 at offset 10\)"):
        read_text(latin, MAX_WORLD_BYTES)


def test_world_files_and_lore_exports_go_through_the_same_checks(tmp_path: Path):
    with pytest.raises(WorldFileError) as raised:
        load_world(Path("/dev/zero"))
    assert str(raised.value).startswith("/dev/zero: (file): is not a regular file (a device, pipe or socket)")
    huge = tmp_path / "huge.yaml"
    huge.write_bytes(b"#" * (MAX_WORLD_BYTES + 1))
    # One byte over: in bytes, where "1.0 MiB; the limit is 1.0 MiB" would say nothing.
    with pytest.raises(
        WorldFileError, match=r"huge.yaml: \(file\): is 1,048,577 bytes; the limit is 1.0 MiB \(1,048,576 bytes\)"
    ):
        load_world(huge)
    with pytest.raises(UserError, match=r"^/dev/zero: is not a regular file"):
        read_world_info(Path("/dev/zero"))
