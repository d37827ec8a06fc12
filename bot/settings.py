"""The process settings: what the host sets for the whole bot, from the environment and a ``.env`` file.

Every setting but the Discord token is read from a ``GM_``-prefixed
variable: ``GM_MODEL_PATH``, ``GM_N_CTX``, ``GM_DATABASE`` and so on.
They are not a game's own settings: a game's and a server's overrides of
the memory's knobs and the reply length are kept in the store (see
:class:`bot.engine.table.settings.GameSettings`), within the ceilings set here.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.memory.config import MemoryConfig
from bot.model.sizing import LARGE, SMALL

PROJECT_ROOT = Path(__file__).resolve().parent.parent


MIN_BACKUP_HOURS = 0.1  # six minutes: a copy of the whole database, the most often it is worth making


class ProcessSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="GM_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        env_nested_delimiter="__",
    )

    discord_token: str | None = Field(default=None, validation_alias=AliasChoices("DISCORD_TOKEN", "GM_DISCORD_TOKEN"))
    dev_guild_id: int | None = Field(default=None, description="Sync commands to this guild only.")
    message_content: bool = Field(default=False, description="Read plain messages as actions (privileged intent).")
    members_intent: bool = Field(
        default=False, description="Hear members leave as it happens (privileged intent); off: found when next needed."
    )
    shard_count: int | None = Field(
        default=None, ge=1, le=4096, description="Gateway shards in this process; empty: as many as Discord recommends."
    )
    ooc_prefix: str = Field(default="((", min_length=1, description="Messages starting with it are not actions.")
    gm_role: str | None = Field(default=None, description="Members of this role act as admins.")

    database: Path = Field(default=PROJECT_ROOT / "data" / "gm.sqlite3")
    backup_hours: float = Field(
        default=0, ge=0, le=24 * 365, description="Copy the database this often (0.1 hours at least); 0: never."
    )
    backup_keep: int = Field(default=7, ge=1, le=1000, description="Dated copies kept in data/backups/.")
    worlds_dir: Path = Field(default=PROJECT_ROOT / "worlds")
    server_worlds_mib: int = Field(
        default=256, ge=1, le=64 * 1024,
        description="All servers' own world files together, as stored: an upload past it is refused, a start reads "
        "no more.",
    )  # fmt: skip
    stop_seconds: float = Field(
        default=8, ge=0, le=600, description="On SIGTERM or SIGINT, how long running replies may take to finish."
    )

    # The model (F22, F35). With neither set, the default model (fetched once); GM_MODEL=tiny: the bundled SmolLM2.
    model_path: Path | None = Field(default=None, description="A GGUF file to play (GM_MODEL wins if both are set).")
    model: str | None = Field(
        default=None,
        description="A catalog name, hf:OWNER/REPO/FILE.gguf, a path, or tiny (the bundled model); empty: the "
        "default model (python -m bot model list).",
    )
    models_dir: Path = Field(default=PROJECT_ROOT / "data" / "models")
    # A model server instead of the in-process model (F27): an OpenAI-compatible API.
    model_url: str | None = Field(
        default=None,
        description="http://HOST:PORT/v1 of an OpenAI-compatible server; several, separated by commas, share games.",
    )
    model_name: str | None = Field(default=None, description="The model the server serves (GM_MODEL_URL).")
    model_api_key: str | None = None
    model_parallel: int = Field(default=4, ge=1, le=64, description="Calls sent to the server at once.")
    model_timeout: float = Field(default=120, gt=0, le=3600, description="Seconds a server call may take.")
    # llama.cpp's own server, started by the bot (F33): the path for several tables on one machine.
    server_slots: int = Field(
        default=0, ge=0, le=64,
        description="Start llama.cpp's server for the model with this many game slots (0: the model in process).",
    )  # fmt: skip
    llama_server: Path | None = Field(
        default=None, description="The llama-server binary to run; empty: the one scripts/build-llama-server built."
    )
    # Recall by meaning (F31): empty for the bundled all-MiniLM-L6-v2; e5-small (installed too); none; a catalog
    # name, hf:... or a path; or server:NAME for the model server's /v1/embeddings.
    embed_model: str | None = Field(
        default=None,
        description="The embedding model: empty (bundled), e5-small, none, a catalog name, hf:..., a path, server:...",
    )
    n_ctx: int = Field(default=4096, ge=512, le=131072)
    n_gpu_layers: int = Field(default=0, ge=-1)
    n_threads: int | None = Field(default=None, ge=1, le=1024, description="CPU threads; empty: the physical cores.")
    chat_format: str | None = Field(default=None, description="Override the GGUF's chat template.")
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, description="None: by the model's size.")
    top_p: float = Field(default=0.95, gt=0.0, le=1.0)
    top_k: int = Field(default=40, ge=0, le=1000)
    min_p: float = Field(default=0.05, ge=0.0, le=1.0)
    repeat_penalty: float | None = Field(default=None, ge=0.5, le=2.0, description="None: by the model's size.")
    seed: int | None = Field(default=None, ge=0, lt=2**32, description="Sampling seed (llama.cpp's is 32 bits).")
    cache_mib: int | None = Field(
        default=None,
        ge=0,
        le=1024 * 1024,
        description="Memory for games' saved model states; empty: four full states; 0: none.",
    )
    vectors_mib: int = Field(
        default=256, ge=1, le=1024 * 1024,
        description="Memory for the games' vectors (recall by meaning) together; the least recently played go first.",
    )  # fmt: skip
    state_disk_mib: int = Field(
        default=2048, ge=0, le=1024 * 1024,
        description="Disk for games' model states kept across restarts, under data/states/; 0: none kept.",
    )  # fmt: skip

    # Turns.
    prompt_guide: Literal["short", "full"] | None = Field(
        default=None,
        description="The GM's guide in its prompt: short, or full with an example reply; empty: by the model's size.",
    )
    reply_tokens: int | None = Field(
        default=None,
        ge=16,
        le=4096,
        description=(
            f"Longest GM reply; empty: {SMALL.reply_tokens} for a model under 1B parameters, else {LARGE.reply_tokens}."
        ),
    )
    max_action_chars: int = Field(default=2000, ge=1, le=4000)

    # Memory (F8 to F16): GM_MEMORY__PROTECTED_TAIL=4, GM_MEMORY__BUDGETS__STORY=600, ...
    memory: MemoryConfig = Field(default_factory=MemoryConfig)

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @field_validator("backup_hours")
    @classmethod
    def _backup_hours(cls, value: float) -> float:
        if 0 < value < MIN_BACKUP_HOURS:
            raise ValueError(f"backups are at least {MIN_BACKUP_HOURS} hours apart (0 for none)")
        return value

    @field_validator("model_url")
    @classmethod
    def _model_url(cls, value: str | None) -> str | None:
        """Servers of http(s) with a host, separated by commas: not a local file, not FTP, and no password in a URL
        (they are logged)."""
        if not value or not value.strip():
            return None
        urls = [url.strip() for url in value.split(",")]
        if not all(urls):
            raise ValueError("GM_MODEL_URL has an empty entry; separate several servers by single commas")
        for url in urls:
            _check_url(url)
        if len(set(urls)) != len(urls):
            raise ValueError("GM_MODEL_URL names one server twice")
        return ",".join(urls)

    @property
    def model_urls(self) -> list[str]:
        """The model servers of ``GM_MODEL_URL``, in order."""
        return self.model_url.split(",") if self.model_url else []

    @field_validator("log_level", mode="before")
    @classmethod
    def _level(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value


def _check_url(value: str) -> None:
    try:
        parts = urllib.parse.urlsplit(value)
    except ValueError:  # an unclosed "[" of an IPv6 address
        raise ValueError("GM_MODEL_URL is not a URL (like http://127.0.0.1:8080/v1)") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("GM_MODEL_URL must start with http:// or https:// (like http://127.0.0.1:8080/v1)")
    if not parts.hostname:
        raise ValueError("GM_MODEL_URL has no host (like http://127.0.0.1:8080/v1)")
    if parts.username or parts.password:
        raise ValueError("GM_MODEL_URL holds a user or password; give the server's key in GM_MODEL_API_KEY")
    # What the HTTP client would fail on only at the first call, with a traceback: the port is read there,
    # and the host name encoded for DNS (each label 1 to 63 characters).
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError("GM_MODEL_URL's port must be a number from 1 to 65535 (like http://127.0.0.1:8080/v1)")
    try:
        parts.hostname.encode("idna")
    except UnicodeError:
        raise ValueError(
            "GM_MODEL_URL's host is not a valid host name (each part between dots is 1 to 63 characters)"
        ) from None
