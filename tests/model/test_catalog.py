"""Real models in one command: the catalog, GM_MODEL's forms, and downloads checked against the Hub's SHA-256."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bot.errors import UserError
from bot.model.catalog import CATALOG, catalog_table, hub_file, model_file, pull, sha256_of
from tests.conftest import PROJECT, bot_environment
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
        assert Path(f"{path}.sha256").read_text().split() == [sha256_of(path), str(len(GGUF))]
        gets = [r for r in hub.requests if r[0] == "GET"]
        assert pull("hf:test/tiny/tiny.gguf", tmp_path) == path
        assert [r for r in hub.requests if r[0] == "GET"] == gets, "a checked file is not downloaded again"


def test_a_download_whose_sha256_differs_is_deleted_and_said(tmp_path: Path, monkeypatch):
    with FakeHub({"test/tiny/tiny.gguf": GGUF}, lie_about={"test/tiny/tiny.gguf"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(UserError, match="SHA-256 .* it was deleted"):
            pull("hf:test/tiny/tiny.gguf", tmp_path)
    assert not (tmp_path / "test/tiny/tiny.gguf").exists()


def test_a_download_that_is_not_a_gguf_is_deleted_and_said(tmp_path: Path, monkeypatch):
    page = b"<!DOCTYPE html><html><body>Sign in to continue</body></html>"
    with FakeHub({"test/tiny/tiny.gguf": page}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(UserError, match=r"is not a GGUF model \(it begins b'<!DO'.*it was deleted"):
            pull("hf:test/tiny/tiny.gguf", tmp_path)
    assert list(tmp_path.rglob("*")) == [tmp_path / "test", tmp_path / "test/tiny"], "no file left, no name given"


def test_a_download_cut_halfway_resumes_from_where_it_stopped(tmp_path: Path, monkeypatch):
    # huggingface_hub writes in chunks of 10 MiB: the connection drops past the first, in the second.
    big = b"GGUF" + bytes(range(256)) * 4096 * 24  # 24 MiB
    with FakeHub({"test/tiny/tiny.gguf": big}, cut={"test/tiny/tiny.gguf": 15 * 2**20}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        path = pull("hf:test/tiny/tiny.gguf", tmp_path)
        assert path.read_bytes() == big and not Path(f"{path}.part").exists()
        ranges = [r[2] for r in hub.requests if r[0] == "GET"]
        assert len(ranges) == 2 and ranges[0] is None
        assert int(ranges[1].removeprefix("bytes=").rstrip("-")) >= 2**20, "resumed, not started again"


def test_a_pull_left_unfinished_is_resumed_by_the_next_one(tmp_path: Path, monkeypatch):
    """Ctrl-C (or a crash) leaves FILE.part; the next pull asks only for the rest."""
    big = b"GGUF" + bytes(range(256)) * 4096
    part = tmp_path / "test/tiny/tiny.gguf.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(big[:400_000])
    with FakeHub({"test/tiny/tiny.gguf": big}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert pull("hf:test/tiny/tiny.gguf", tmp_path).read_bytes() == big
        assert [r[2] for r in hub.requests if r[0] == "GET"] == ["bytes=400000-"]


def test_a_full_disk_is_said_before_and_during_a_download_and_no_half_file_is_used(tmp_path: Path, bot_env):
    big = b"GGUF" + bytes(range(256)) * 4096
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"  # a write past the limit fails instead of killing
        "resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))\n"  # this process's disk holds 200 kB
        "sys.argv = ['bot', 'model', 'pull', 'hf:test/tiny/tiny.gguf']\n"
        "import runpy; runpy.run_module('bot', run_name='__main__')\n"
    )
    models = tmp_path / "models"
    with FakeHub({"test/tiny/tiny.gguf": big}) as hub:
        env = {**bot_env, "HF_ENDPOINT": hub.url, "GM_MODELS_DIR": str(models)}
        environment = bot_environment() | env
        full = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=300
        )
        assert full.returncode == 1 and "Traceback" not in full.stderr, full.stderr
        assert full.stderr.strip().startswith("No room to write tiny.gguf in ") and "pull again" in full.stderr
        target = models / "test/tiny/tiny.gguf"
        assert not target.exists(), "the model's name appears only for a whole, checked file"
        played = run_bot("play", "lighthouse", cwd=tmp_path, GM_MODEL="hf:test/tiny/tiny.gguf", **env)
        assert played.returncode == 1 and "model pull hf:test/tiny/tiny.gguf" in played.stderr
        again = run_bot("model", "pull", "hf:test/tiny/tiny.gguf", cwd=tmp_path, **env)
        assert again.returncode == 0, again.stderr
        assert target.read_bytes() == big
        assert [r[2] for r in hub.requests if r[0] == "GET"][-1].startswith("bytes="), "it resumed"


def test_a_download_the_disk_cannot_hold_is_refused_before_a_byte_is_fetched(tmp_path: Path, monkeypatch):
    import shutil

    with FakeHub({"test/tiny/tiny.gguf": GGUF}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setattr(shutil, "disk_usage", lambda _path: shutil._ntuple_diskusage(10**9, 10**9 - 100, 100))
        with pytest.raises(UserError, match=r"No room for tiny.gguf in .*it needs .* more and .* is free"):
            pull("hf:test/tiny/tiny.gguf", tmp_path)
        assert not [r for r in hub.requests if r[0] == "GET"]


def test_hf_token_goes_to_the_hub_and_not_to_the_host_it_redirects_the_download_to(tmp_path: Path, monkeypatch):
    with FakeHub({"test/tiny/tiny.gguf": GGUF}) as store, FakeHub({"test/tiny/tiny.gguf": GGUF}, store=store) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", "hf_sekrit")
        assert pull("hf:test/tiny/tiny.gguf", tmp_path).read_bytes() == GGUF
        assert hub.authorizations and set(hub.authorizations) == {"Bearer hf_sekrit"}, "the Hub gets the token"
        assert [method for method, *_ in store.requests] == ["GET"], "the bytes came from the other host"
        assert store.authorizations == [None], "which never saw the token"


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
    assert catalog_table() in (PROJECT / "docs" / "models.md").read_text()


@pytest.mark.parametrize(
    "name",
    [
        "hf:a/b//tmp/x.gguf",  # an absolute file part
        "hf:a/b/../../../x.gguf",  # up out of the models folder
        "hf:a/b/../../OWNER/REPO/FILE.gguf",  # over another model's file
        "hf:../../x/y.gguf",  # a repo id that climbs
        "hf:a/b/./x.gguf",
        "hf:a/b/.hidden.gguf",
        "hf:a/../b/x.gguf",
        "hf:a/b/dir//x.gguf",
        "hf:-a/b/x.gguf",
        "hf:a/b--c/x.gguf" * 1,
        "hf:a/b/" + "x" * 10_000 + ".gguf",  # too long a name for any file system
        "hf:" + "a" * 10_000 + "/b/x.gguf",
    ],
)
def test_a_hub_name_that_would_leave_the_models_folder_is_refused(tmp_path: Path, monkeypatch, name: str):
    models = tmp_path / "data" / "models"
    with FakeHub({}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(UserError, match="hf:OWNER/REPO/FILE.gguf") as refused:
            pull(name, models)
        assert len(str(refused.value)) < 400, "one clear line, not the whole name"
        assert hub.requests == [], "nothing was asked of the Hub"
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written == [], "nothing was written anywhere"


def test_a_hub_file_is_always_inside_the_models_folder(tmp_path: Path):
    models = tmp_path / "models"
    for name in ("hf:owner/repo/model.gguf", "hf:owner/repo.v2/sub/dir/model-Q4_K_M.gguf", "mistral-7b"):
        path = hub_file(name).local_path(models)
        assert path.resolve().is_relative_to(models.resolve())


@pytest.mark.parametrize("link", ["owner", "owner/repo"])
def test_a_link_inside_the_models_folder_that_leads_out_is_refused(tmp_path: Path, monkeypatch, link: str):
    models, outside = tmp_path / "data" / "models", tmp_path / "elsewhere"
    outside.mkdir()
    (models / link).parent.mkdir(parents=True, exist_ok=True)
    (models / link).symlink_to(outside, target_is_directory=True)
    with pytest.raises(UserError, match="would be written outside"):
        hub_file("hf:owner/repo/model.gguf").local_path(models)
    with FakeHub({"owner/repo/model.gguf": GGUF}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(UserError, match=f"owner/repo/model.gguf would be written outside {models}; refused"):
            pull("hf:owner/repo/model.gguf", models)
        assert hub.requests == [], "refused before the Hub was asked"
    assert list(outside.rglob("*")) == [], "nothing was written where the link leads"


def test_two_pulls_of_one_model_at_once_both_end_with_the_file(tmp_path: Path):
    """The second of two pulls at once (a `model pull` and a bot fetching the default together) waits for the
    first and finds the file there, instead of dying on the first's `.part` file."""
    big = b"GGUF" + bytes(range(256)) * 4096 * 8
    with FakeHub({"test/tiny/tiny.gguf": big}, slow=3.0) as hub:  # the second starts while the first downloads
        code = (
            "import sys; from pathlib import Path; from bot.model.catalog import pull; "
            f"print(pull('hf:test/tiny/tiny.gguf', Path({str(tmp_path)!r})))"
        )
        env = {**bot_environment(), "HF_ENDPOINT": hub.url}
        runs = [
            subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]  # fmt: skip
        done = [run.communicate(timeout=120) for run in runs]
    path = tmp_path / "test/tiny/tiny.gguf"
    for run, (out, err) in zip(runs, done, strict=True):
        assert run.returncode == 0 and "Traceback" not in err, err
        assert out.strip().endswith(str(path))
    assert path.read_bytes() == big and not Path(f"{path}.part").exists()


def test_a_model_file_cut_short_after_its_check_is_no_longer_trusted(tmp_path: Path, monkeypatch):
    """The marker alone said "ready" for ever: a file truncated since is fetched again, and with a pinned file
    it is not taken for the pinned one."""
    from bot.model.catalog import has_pinned_file

    with FakeHub({"test/tiny/tiny.gguf": GGUF}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        path = pull("hf:test/tiny/tiny.gguf", tmp_path)
        digest = sha256_of(path)
        with path.open("r+b") as file:
            file.truncate(len(GGUF) // 2)  # a copy broken off, a full disk
        assert not has_pinned_file(path, digest), "its size is not the one checked"
        gets = len([r for r in hub.requests if r[0] == "GET"])
        assert pull("hf:test/tiny/tiny.gguf", tmp_path) == path and path.read_bytes() == GGUF
        assert len([r for r in hub.requests if r[0] == "GET"]) == gets + 1, "fetched again"
    old = tmp_path / "old.gguf"  # a marker written before markers held the size: the file is read once
    old.write_bytes(GGUF)
    Path(f"{old}.sha256").write_text(sha256_of(old) + "\n")
    assert has_pinned_file(old, sha256_of(old)) and Path(f"{old}.sha256").read_text().split()[1] == str(len(GGUF))
