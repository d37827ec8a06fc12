"""The process settings: what the host sets for the whole bot, from GM_ variables and a .env file, each checked
at start so a mistake is one clear line, not a failure at the first turn."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.memory.config import MemoryConfig
from bot.settings import MIN_BACKUP_HOURS, PROJECT_ROOT, ProcessSettings


@pytest.fixture(autouse=True)
def bare_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No GM_ variable, no Discord token and no .env file but what a test sets (the suite sets GM_MODEL)."""
    for name in list(os.environ):
        if name.startswith("GM_") or name == "DISCORD_TOKEN":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_the_token_is_read_from_a_dotenv_file(tmp_path: Path, monkeypatch):
    from bot.settings import ProcessSettings

    for name in ("DISCORD_TOKEN", "GM_DISCORD_TOKEN", "GM_REPLY_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / ".env").write_text("DISCORD_TOKEN=abc.def\nGM_REPLY_TOKENS=77\n")
    monkeypatch.chdir(tmp_path)
    settings = ProcessSettings()
    assert settings.discord_token == "abc.def" and settings.reply_tokens == 77


def test_several_servers_in_the_setting_are_checked_each():
    from bot.settings import ProcessSettings

    settings = ProcessSettings(model_url=" http://a:8080/v1 , http://b:8081/v1")
    assert settings.model_urls == ["http://a:8080/v1", "http://b:8081/v1"]
    for bad, said in [
        ("http://a:8080/v1,,http://b:1/v1", "empty entry"),
        ("http://a:8080/v1,ftp://b/v1", "must start with http"),
        ("http://a:8080/v1,http://a:8080/v1", "one server twice"),
    ]:
        with pytest.raises(ValueError, match=said):
            ProcessSettings(model_url=bad)


def test_with_nothing_set_the_bot_has_its_defaults():
    settings = ProcessSettings()
    assert settings.discord_token is None and settings.model is None and settings.model_path is None
    assert settings.database == PROJECT_ROOT / "data" / "gm.sqlite3"
    assert settings.worlds_dir == PROJECT_ROOT / "worlds"
    assert (settings.n_ctx, settings.backup_hours, settings.backup_keep, settings.ooc_prefix) == (4096, 0, 7, "((")
    assert settings.message_content is False and settings.members_intent is False
    assert settings.reply_tokens is None and settings.temperature is None, "by the model's size"
    assert settings.memory == MemoryConfig() and settings.log_level == "INFO"
    assert settings.model_url is None and settings.model_urls == []


def test_each_setting_is_read_from_its_gm_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("GM_N_CTX", "2048")
    monkeypatch.setenv("GM_MESSAGE_CONTENT", "true")
    monkeypatch.setenv("GM_DATABASE", str(tmp_path / "games.sqlite3"))
    monkeypatch.setenv("GM_DEV_GUILD_ID", "1234")
    monkeypatch.setenv("GM_PROMPT_GUIDE", "full")
    monkeypatch.setenv("GM_SOMETHING_ELSE", "ignored")
    settings = ProcessSettings()
    assert (settings.n_ctx, settings.message_content, settings.dev_guild_id) == (2048, True, 1234)
    assert settings.database == tmp_path / "games.sqlite3" and settings.prompt_guide == "full"


def test_the_discord_token_may_be_given_as_discord_token_or_gm_discord_token(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GM_DISCORD_TOKEN", "from.gm")
    assert ProcessSettings().discord_token == "from.gm"
    monkeypatch.setenv("DISCORD_TOKEN", "plain")
    assert ProcessSettings().discord_token == "plain", "the plain name wins when both are set"
    assert ProcessSettings(discord_token="given").discord_token == "given", "a test or a caller may pass it by name"


def test_the_memorys_knobs_are_set_by_nested_names(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GM_MEMORY__PROTECTED_TAIL", "2")
    monkeypatch.setenv("GM_MEMORY__BUDGETS__STORY", "900")
    settings = ProcessSettings()
    assert settings.memory.protected_tail == 2 and settings.memory.budgets.story == 900
    assert settings.memory.trigger_messages == MemoryConfig().trigger_messages, "the others keep their defaults"
    monkeypatch.setenv("GM_MEMORY__PROTECTED_TALE", "3")
    with pytest.raises(ValidationError, match="protected_tale"):
        ProcessSettings()  # a misspelt knob is refused, not silently ignored


@pytest.mark.parametrize(
    "name, value",
    [("GM_N_CTX", "256"), ("GM_BACKUP_KEEP", "0"), ("GM_TEMPERATURE", "3"), ("GM_SHARD_COUNT", "0"),
     ("GM_OOC_PREFIX", ""), ("GM_PROMPT_GUIDE", "long"), ("GM_SEED", str(2**32)), ("GM_MODEL_TIMEOUT", "0")],
)  # fmt: skip
def test_a_value_out_of_its_range_is_refused_at_start(monkeypatch: pytest.MonkeyPatch, name: str, value: str):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        ProcessSettings()


def test_backups_are_never_or_at_least_six_minutes_apart():
    assert ProcessSettings(backup_hours=0).backup_hours == 0
    assert ProcessSettings(backup_hours=MIN_BACKUP_HOURS).backup_hours == MIN_BACKUP_HOURS
    assert ProcessSettings(backup_hours=6).backup_hours == 6
    with pytest.raises(ValidationError, match=r"backups are at least 0\.1 hours apart \(0 for none\)"):
        ProcessSettings(backup_hours=0.05)
    with pytest.raises(ValidationError):
        ProcessSettings(backup_hours=-1)


def test_the_log_level_is_read_in_any_case():
    assert ProcessSettings(log_level=" debug ").log_level == "DEBUG"
    with pytest.raises(ValidationError):
        ProcessSettings(log_level="chatty")


def test_a_blank_model_server_is_none_and_good_ones_are_kept():
    assert ProcessSettings(model_url="   ").model_url is None
    for url in ("https://gm.example/v1", "http://[::1]:8080/v1", "http://gpu-box/v1"):
        assert ProcessSettings(model_url=url).model_urls == [url]


@pytest.mark.parametrize(
    "url, said",
    [
        ("http://gm:secret@gpu:8080/v1", "holds a user or password; give the server's key in GM_MODEL_API_KEY"),
        ("file:///models/gm.gguf", "must start with http:// or https://"),
        ("http:///v1", "has no host"),
        ("http://gpu:99999/v1", "port must be a number from 1 to 65535"),
        ("http://gpu:0/v1", "port must be a number from 1 to 65535"),
        ("http://[::1/v1", "is not a URL"),
        ("http://" + "a" * 64 + ":8080/v1", "host is not a valid host name"),
    ],
)
def test_a_model_server_the_bot_could_not_call_is_refused_with_what_is_wrong(url: str, said: str):
    with pytest.raises(ValidationError, match="GM_MODEL_URL.*" + re.escape(said)):
        ProcessSettings(model_url=url)
