"""``python -m bot model list|pull``: what an admin reads of the catalog, chat and embedding models apart."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.__main__ import model_command
from bot.model.catalog import CATALOG, EMBEDDING_CATALOG
from bot.settings import ProcessSettings
from tests.model.hub import FakeHub
from tests.model.test_catalog import GGUF


def test_model_list_names_chat_and_embedding_models_each_with_its_setting(tmp_path: Path, capsys):
    settings = ProcessSettings(_env_file=None, models_dir=tmp_path)
    model_command(settings, argparse.Namespace(model_command="list"))
    out = capsys.readouterr().out
    chat, embedding = out.split("Embedding models")
    assert "GM_MODEL" in chat and all(name in chat for name in CATALOG)
    assert "GM_EMBED_MODEL" in embedding and all(name in embedding for name in EMBEDDING_CATALOG)
    assert "downloaded" not in out


def test_a_pulled_embedding_model_is_named_for_gm_embed_model_not_gm_model(tmp_path: Path, monkeypatch, capsys):
    name = "bge-m3"
    entry = EMBEDDING_CATALOG[name]
    with FakeHub({f"{entry.repo}/{entry.file}": GGUF}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        settings = ProcessSettings(_env_file=None, models_dir=tmp_path)
        assert model_command(settings, argparse.Namespace(model_command="pull", name=name)) == 0
    said = capsys.readouterr().out
    assert f"GM_EMBED_MODEL={name}" in said and "GM_MODEL=" not in said.replace("GM_EMBED_MODEL", "")
    model_command(settings, argparse.Namespace(model_command="list"))
    listed = capsys.readouterr().out.split("Embedding models")[1]
    assert next(line for line in listed.splitlines() if name in line).rstrip().endswith("downloaded")
