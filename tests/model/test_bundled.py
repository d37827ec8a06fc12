"""The files of the models that come with the bot: found inside their installed packages without importing them,
and a converted model written whole, once, and again when damaged since."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.model.bundled import package_file, package_files, written_once


def test_a_packages_model_file_is_found_without_importing_the_package(tmp_path: Path, monkeypatch):
    package = tmp_path / "gm_test_weights"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('importing a model package may print or fail')\n")
    (package / "model.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert package_files("gm_test_weights", "*.gguf") == [package / "model.gguf"]
    assert package_file("gm_test_weights", "*.gguf", "Install it.") == package / "model.gguf"
    assert "gm_test_weights" not in sys.modules
    with pytest.raises(UserError, match=r"The gm_test_weights package holds no \*\.zip; reinstall it"):
        package_file("gm_test_weights", "*.zip", "Install it.")
    assert package_files("gm_test_no_such_package", "*.gguf") is None
    with pytest.raises(UserError) as missing:
        package_file("gm_test_no_such_package", "*.gguf", "The model is not installed; run scripts/install")
    assert str(missing.value) == (
        "The model is not installed; run scripts/install (package gm_test_no_such_package is not installed)"
    )


def test_a_converted_model_damaged_since_is_converted_again(tmp_path: Path, caplog):
    target = tmp_path / "bundled" / "model.gguf"
    writes = []

    def write(part: Path) -> None:
        writes.append(part)
        part.write_bytes(b"GGUF" + b"x" * 100)

    written_once(target, write)
    assert len(writes) == 1 and written_once(target, write) == target and len(writes) == 1
    target.write_bytes(b"")  # emptied
    with caplog.at_level(logging.WARNING):
        written_once(target, write)
    assert len(writes) == 2 and target.read_bytes().startswith(b"GGUF")
    assert "is damaged (0 bytes, not a GGUF); it is converted again" in caplog.text
    target.write_bytes(b"GGUF" + b"x" * 10)  # cut short
    written_once(target, write)
    assert len(writes) == 3
