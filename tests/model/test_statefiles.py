"""Model states on disk (F35): kept per model, within a budget, and a file that is no good is deleted and said."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from bot.model.statefiles import SavedState, StateFolder, model_key


def _state(n: int, fill: int = 7) -> SavedState:
    return SavedState(np.arange(n, dtype=np.intc), bytes([fill]) * (1000 + n), seed=42)


def test_a_state_written_is_read_back_whole_by_the_next_process(tmp_path: Path):
    StateFolder(tmp_path, "model-a", 10**6).write("game:1", _state(300))
    again = StateFolder(tmp_path, "model-a", 10**6)  # a restart
    assert list(again.slots()) == ["game:1"] and np.array_equal(again.slots()["game:1"], np.arange(300))
    saved = again.read("game:1")
    assert np.array_equal(saved.input_ids, np.arange(300)) and saved.state == bytes([7]) * 1300 and saved.seed == 42


def test_another_models_states_are_dropped_when_a_model_opens_its_own(tmp_path: Path, caplog):
    StateFolder(tmp_path, "model-a", 10**6).write("game:1", _state(300))
    with caplog.at_level(logging.INFO, logger="bot.model.ownfolders"):
        other = StateFolder(tmp_path, "model-b", 10**6)
    assert other.slots() == {} and not (tmp_path / "model-a").exists()
    assert "The states of another model or context removed: model-a (1 files)" in caplog.text


@pytest.mark.parametrize(
    "damage, said",
    [
        (lambda b: b[:-10], "cut short"),
        (lambda b: b[:-5] + b"xxxxx", "do not match their checksum"),
        (lambda b: b"not a state file at all", "not a state file"),
        (lambda b: b.replace(b'"model-a"', b'"model-z"'), "written for another model"),
    ],
)
def test_a_damaged_state_file_is_deleted_and_said_once_and_its_game_reads_cold(tmp_path: Path, caplog, damage, said):
    folder = StateFolder(tmp_path, "model-a", 10**6)
    folder.write("game:1", _state(300))
    path = next((tmp_path / "model-a").glob("*.state"))
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="bot.model.statefiles"):
        assert folder.read("game:1") is None
        assert StateFolder(tmp_path, "model-a", 10**6).read("game:1") is None
    assert said in caplog.text and caplog.text.count("is no good") == 1
    assert not path.exists()


def test_the_folder_keeps_within_its_budget_the_least_recently_used_out_first(tmp_path: Path):
    import os
    import time

    folder = StateFolder(tmp_path, "model-a", 3500)  # room for two states of about 1.5 kB
    folder.write("game:1", _state(100))
    folder.write("game:2", _state(100))
    os.utime(tmp_path / "model-a" / "game-2.state", (time.time() - 60, time.time() - 60))
    folder.read("game:1")  # used again: the newest
    folder.write("game:3", _state(100))
    assert sorted(folder.slots()) == ["game:1", "game:3"]
    folder.drop("game:3")
    assert sorted(p.name for p in (tmp_path / "model-a").glob("*.state*")) == ["game-1.state"]


def test_a_full_disk_is_said_once_and_nothing_half_written_is_left(tmp_path: Path, caplog, monkeypatch):
    import errno

    folder = StateFolder(tmp_path, "model-a", 10**6)
    real_open = Path.open

    def full(self, mode="r", *args, **kwargs):
        if "w" in mode:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", full)
    with caplog.at_level(logging.WARNING, logger="bot.model.statefiles"):
        folder.write("game:1", _state(100))
        folder.write("game:2", _state(100))
    assert caplog.text.count("the disk is full") == 1
    assert list((tmp_path / "model-a").glob("*.state*")) == [] and folder.slots() == {}


def test_the_key_changes_with_the_file_and_the_context(tmp_path: Path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"a" * 5000)
    key = model_key(model, 4096)
    assert model_key(model, 8192) != key
    model.write_bytes(b"GGUF" + b"b" * 5000)
    assert model_key(model, 4096) != key


def test_a_state_of_more_tokens_than_the_context_is_deleted_and_its_game_reads_cold(tmp_path: Path, caplog):
    """Such a file failed every turn of its game until deleted by hand."""
    StateFolder(tmp_path, "model-a", 10**6).write("game:1", _state(3000))
    with caplog.at_level(logging.WARNING):
        folder = StateFolder(tmp_path, "model-a", 10**6, max_tokens=2048)
        assert folder.read("game:1") is None and folder.slots() == {}
    assert "3000 tokens, more than the context's 2048" in caplog.text
    assert not list((tmp_path / "model-a").glob("*.state"))
