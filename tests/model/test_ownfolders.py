"""The bot removes only folders it made for other models' states, never an admin's files, never through a link."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bot.model.ownfolders import MARK
from bot.model.slots import SlotFolder
from bot.model.statefiles import SavedState, StateFolder

KEY_A = "qwen2.5-coder-1.5b-4096-0123456789ab"
KEY_B = "smollm2-135m-2048-ba9876543210"


def _state(n: int = 50) -> SavedState:
    return SavedState(np.arange(n, dtype=np.intc), b"k" * 500, seed=1)


def _home_like(folder: Path) -> None:
    """A folder as an admin's home holds: notes, projects, keys."""
    (folder / "projects" / "novel").mkdir(parents=True)
    (folder / "projects" / "novel" / "chapter1.txt").write_text("It was a dark and stormy night.")
    (folder / ".ssh").mkdir()
    (folder / ".ssh" / "id_ed25519").write_text("secret key")
    (folder / "my-notes").mkdir()
    (folder / "my-notes" / "todo.state").write_text("a file that happens to end as the bot's do")


def _untouched(folder: Path) -> None:
    assert (folder / "projects" / "novel" / "chapter1.txt").read_text() == "It was a dark and stormy night."
    assert (folder / ".ssh" / "id_ed25519").read_text() == "secret key"
    assert (folder / "my-notes" / "todo.state").is_file()


def test_folders_the_bot_did_not_make_are_left_as_they_are(tmp_path: Path, caplog):
    states = tmp_path / "states"
    states.mkdir()
    _home_like(states)
    with caplog.at_level(logging.INFO, logger="bot.model.ownfolders"):
        folder = StateFolder(states, KEY_A, 10**6)
    _untouched(states)
    assert folder.on and (states / KEY_A / MARK).is_file()
    assert "my-notes is not a folder of the bot's states; left as it is" in caplog.text
    assert "another model" not in caplog.text


def test_states_that_is_a_link_to_a_home_loses_nothing_of_it(tmp_path: Path):
    """The fault as found: ``states`` a link to a home-like folder, whose projects/ and .ssh/ were deleted."""
    home = tmp_path / "home"
    home.mkdir()
    _home_like(home)
    data = tmp_path / "data"
    data.mkdir()
    (data / "states").symlink_to(home, target_is_directory=True)
    old = StateFolder(data / "states", KEY_B, 10**6)  # the bot made this one, through the link
    old.write("game:1", _state())
    old.close()
    StateFolder(data / "states", KEY_A, 10**6).write("game:1", _state())
    _untouched(home)
    assert (home / KEY_B / "game-1.state").is_file(), "nothing is cleared through a link, not even the bot's own"


def test_a_link_among_the_folders_is_never_followed(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / MARK).write_text('{"made_by": "discord-gm", "kind": "states", "key": "x"}')
    (elsewhere / "game-1.state").write_text("the bot's own kind of file, reached through a link")
    states = tmp_path / "states"
    states.mkdir()
    (states / KEY_B).symlink_to(elsewhere, target_is_directory=True)
    StateFolder(states, KEY_A, 10**6)
    assert (elsewhere / "game-1.state").is_file() and (states / KEY_B).is_symlink()


def test_another_models_folder_the_bot_made_is_cleared_when_no_process_uses_it(tmp_path: Path, caplog):
    old = StateFolder(tmp_path, KEY_B, 10**6)
    old.write("game:1", _state())
    old.close()  # that bot stopped
    with caplog.at_level(logging.INFO, logger="bot.model.ownfolders"):
        StateFolder(tmp_path, KEY_A, 10**6)
    assert not (tmp_path / KEY_B).exists()
    assert f"The states of another model or context removed: {KEY_B} (1 files)" in caplog.text


def test_a_folder_another_bot_process_uses_is_kept(tmp_path: Path, caplog):
    """Two bots with their own databases in one data folder, with other models: neither clears the other's."""
    StateFolder(tmp_path, KEY_B, 10**6).write("game:1", _state())
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from bot.model.statefiles import StateFolder; "
         f"f = StateFolder(Path({str(tmp_path)!r}), {KEY_B!r}, 10**6); print('open', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "open"
        with caplog.at_level(logging.INFO, logger="bot.model.ownfolders"):
            StateFolder(tmp_path, KEY_A, 10**6)
        assert (tmp_path / KEY_B / "game-1.state").is_file()
        assert f"The states folder {KEY_B} is in use by another bot process; kept" in caplog.text
    finally:
        holder.communicate("", timeout=60)


def test_a_marked_folder_holding_an_admins_file_keeps_that_file(tmp_path: Path, caplog):
    old = StateFolder(tmp_path, KEY_B, 10**6)
    old.write("game:1", _state())
    old.close()
    (tmp_path / KEY_B / "README.txt").write_text("an admin's note")
    with caplog.at_level(logging.WARNING, logger="bot.model.ownfolders"):
        StateFolder(tmp_path, KEY_A, 10**6)
    assert (tmp_path / KEY_B / "README.txt").read_text() == "an admin's note"
    assert not (tmp_path / KEY_B / "game-1.state").exists(), "the bot's own file goes"
    assert "holds files the bot did not write (README.txt); kept" in caplog.text


def test_a_folder_of_the_bots_written_before_marks_is_still_recognised(tmp_path: Path):
    legacy = tmp_path / KEY_B
    legacy.mkdir()
    (legacy / "game-1.state").write_bytes(b"GMSTATE1...")
    (legacy / "game-2.state.tmp").write_bytes(b"cut off")
    StateFolder(tmp_path, KEY_A, 10**6)
    assert not legacy.exists()


def test_a_folder_of_another_kind_is_left_to_its_kind(tmp_path: Path):
    """A slots folder put under states (or the reverse) is the bot's, but not for states to clear."""
    slots = SlotFolder(tmp_path, KEY_B, 10**6)
    slots.close()
    StateFolder(tmp_path, KEY_A, 10**6)
    assert (tmp_path / KEY_B / MARK).is_file()


def test_the_models_own_folder_is_refused_when_it_is_a_link_or_holds_foreign_files(tmp_path: Path, caplog):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    states = tmp_path / "states"
    states.mkdir()
    (states / KEY_A).symlink_to(elsewhere, target_is_directory=True)
    with caplog.at_level(logging.WARNING, logger="bot.model.statefiles"):
        folder = StateFolder(states, KEY_A, 10**6)
    assert not folder.on and list(elsewhere.iterdir()) == []
    assert f"{KEY_A} is a link; the bot keeps its files only in a folder of its own" in caplog.text

    with pytest.raises(OSError, match="holds files the bot did not write"):
        (tmp_path / "slots" / KEY_A).mkdir(parents=True)
        (tmp_path / "slots" / KEY_A / "diary.txt").write_text("mine")
        SlotFolder(tmp_path / "slots", KEY_A, 10**6)
    assert (tmp_path / "slots" / KEY_A / "diary.txt").is_file()


def test_a_lowered_budget_and_leftover_partial_files_are_cleaned_at_start(tmp_path: Path):
    folder = StateFolder(tmp_path, KEY_A, 10**6)
    for n in range(4):
        folder.write(f"game:{n}", _state())
        os.utime(folder.folder / f"game-{n}.state", (n, n))
    (folder.folder / "game-9.state.tmp").write_bytes(b"cut off")
    folder.close()
    size = (folder.folder / "game-0.state").stat().st_size
    smaller = StateFolder(tmp_path, KEY_A, 2 * size)
    assert sorted(smaller.slots()) == ["game:2", "game:3"]
    assert sorted(p.name for p in smaller.folder.glob("game-*")) == ["game-2.state", "game-3.state"]
