"""Real models in one command: the catalog, GM_MODEL's forms, and downloads checked against the Hub's SHA-256."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.model.catalog import CATALOG, catalog_table, hub_file, model_file, pull, sha256_of
from tests.conftest import PROJECT
from tests.model.hub import FakeHub
from tests.test_cli import run_bot

GGUF = b"GGUF" + bytes(range(256)) * 64  # the bytes do not matter, only that they arrive whole


def test_gm_model_takes_a_catalog_name_a_hub_file_or_a_path(tmp_path: Path):
    models = tmp_path / "models"
    assert hub_file("mistral-7b").repo == CATALOG["mistral-7b"].repo
    assert hub_file("hf:owner/repo/dir/model-Q4.gguf").local_path(models) == models / "owner/repo/dir/model-Q4.gguf"
    assert hub_file(str(tmp_path / "mine.gguf")) is None
    with pytest.raises(UserError, match="hf:OWNER/REPO/FILE.gguf"):
        hub_file("hf:just-a-name.gguf")
    with pytest.raises(UserError, match="Unknown model 'gpt-9'"):
        hub_file("gpt-9")
    with pytest.raises(UserError, match="python -m bot model pull mistral-7b"):
        model_file("mistral-7b", models)
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(GGUF)
    assert model_file(str(mine), models) == mine


def test_a_pull_downloads_into_the_models_folder_and_checks_the_sha256(tmp_path: Path, monkeypatch):
    with FakeHub({"test/tiny/tiny.gguf": GGUF}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        path = pull("hf:test/tiny/tiny.gguf", tmp_path)
        assert path == tmp_path / "test/tiny/tiny.gguf" and path.read_bytes() == GGUF
        assert Path(f"{path}.sha256").read_text().strip() == sha256_of(path)
        gets = [r for r in hub.requests if r[0] == "GET"]
        assert pull("hf:test/tiny/tiny.gguf", tmp_path) == path
        assert [r for r in hub.requests if r[0] == "GET"] == gets, "a checked file is not downloaded again"


def test_a_download_whose_sha256_differs_is_deleted_and_said(tmp_path: Path, monkeypatch):
    with FakeHub({"test/tiny/tiny.gguf": GGUF}, lie_about={"test/tiny/tiny.gguf"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(UserError, match="SHA-256 .* it was deleted"):
            pull("hf:test/tiny/tiny.gguf", tmp_path)
    assert not (tmp_path / "test/tiny/tiny.gguf").exists()


def test_a_missing_file_and_no_network_are_one_clear_sentence(tmp_path: Path, monkeypatch):
    with FakeHub({}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(UserError, match="has no file nothing.gguf in test/tiny"):
            pull("hf:test/tiny/nothing.gguf", tmp_path)
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(UserError, match="Cannot download from http://127.0.0.1.*set GM_MODEL to its path"):
        pull("mistral-7b", tmp_path)


def test_model_pull_from_the_command_line_and_then_play_with_it(tmp_path: Path, play_env):
    from bot.model.llama import bundled_model_path

    with FakeHub({"test/smol/smol.gguf": Path(bundled_model_path()).read_bytes()}) as hub:
        env = {**play_env, "HF_ENDPOINT": hub.url, "GM_MODELS_DIR": str(tmp_path / "models")}
        pulled = run_bot("model", "pull", "hf:test/smol/smol.gguf", cwd=tmp_path, **env)
        assert pulled.returncode == 0, pulled.stderr
        assert (tmp_path / "models/test/smol/smol.gguf").is_file()
        played = run_bot(
            "play", "lighthouse", cwd=tmp_path, stdin="Maya: I knock.\n", GM_MODEL="hf:test/smol/smol.gguf", **env
        )
        assert played.returncode == 0, played.stderr
        assert "GM:" in played.stdout
    missing = run_bot("play", "lighthouse", cwd=tmp_path, GM_MODEL="qwen2.5-7b", **env)
    assert missing.returncode == 1 and "python -m bot model pull qwen2.5-7b" in missing.stderr


def test_the_readme_lists_the_catalog_the_code_has():
    assert catalog_table() in (PROJECT / "README.md").read_text()
