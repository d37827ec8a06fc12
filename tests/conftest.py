from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bot.engine import Engine, EngineConfig
from bot.memory.config import MemoryConfig
from bot.model import ModelWorker, ScriptedModel
from bot.store import Store
from bot.worlds import WorldLibrary

FIXTURES = Path(__file__).parent / "fixtures"
PROJECT = Path(__file__).parent.parent
# The bot is an AutoShardedBot, which asks Discord how many shards to run; SimCord needs the count given.
os.environ.setdefault("GM_SHARD_COUNT", "1")
# A test that runs `python -m bot` in a subprocess runs it from a temporary folder: this checkout comes first on
# its path, so it runs the code under test, not the copy an editable install of another checkout points at.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT.resolve()), os.environ.get("PYTHONPATH")]))

# The bundled model, in this process and in every bot a test starts: nothing in the suite fetches the default model.
os.environ["GM_MODEL"] = "tiny"


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``make test`` runs ``-n auto``), each worker runs on its own share of the CPUs: the
    models it loads, and the bots and servers it starts, take that many threads (bot.model.llama.physical_cores
    counts the CPUs a process may run on), so two workers never run two models' threads on one core."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count or not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    share = cpus[int(worker.removeprefix("gw")) % len(cpus) :: int(count)]
    if share:
        os.sched_setaffinity(0, share)


@pytest.fixture(autouse=True)
def unhurried_meaning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall and the leak guard by meaning give a turn up to words alone after a few seconds, which a machine
    busy with other work can pass: a whisper told in other words then went unstopped in a test run beside the
    benches. A test of what they find gets the time it needs; a test of the deadline sets its own."""
    from bot.engine.secrets import guard
    from bot.engine.upkeep import meaning

    monkeypatch.setattr(guard, "MEANING_SECONDS", 600.0)
    monkeypatch.setattr(meaning, "TURN_SECONDS", 600.0)


def bot_environment() -> dict[str, str]:
    """The environment of a ``python -m bot`` a test starts: this one's without its GM_ settings and Discord token,
    with the bundled model (``GM_MODEL=tiny``); a test adds its own settings."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("GM_") and k != "DISCORD_TOKEN"}
    return kept | {"GM_MODEL": "tiny"}


# Tests that load the real model put it where GM_N_GPU_LAYERS says, as the bot does: 0 (the CPU) by default.
GPU_LAYERS = os.environ.get("GM_N_GPU_LAYERS", "0")


def loads_a_model(fixture_function):
    """Put under ``@pytest.fixture`` on a fixture that loads a model through llama.cpp (the bundled language or
    embedding model, or the opt-in instruct model), in this process or in a server or bot it starts: every test
    that uses it, itself or through another fixture, is marked ``llm`` (:func:`pytest_collection_modifyitems`).
    A test that loads one without such a fixture says ``@pytest.mark.llm`` itself."""
    fixture_function.loads_a_model = True
    return fixture_function


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``llm`` each test that uses a fixture of :func:`loads_a_model`, so ``-m "not llm"`` leaves it out."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        # The last definition of a name is the one the test gets (a module's fixture overrides the conftest's).
        used = [info.name2fixturedefs[name][-1] for name in item.fixturenames if info.name2fixturedefs.get(name)]
        if any(getattr(definition.func, "loads_a_model", False) for definition in used):
            item.add_marker(pytest.mark.llm)


def bundled_model(**config):
    """The bundled model, loaded as the tests' settings say (``GM_N_GPU_LAYERS``)."""
    from bot.model.llama import LlamaConfig, LlamaModel, bundled_model_path

    return LlamaModel(LlamaConfig(model_path=bundled_model_path(), n_gpu_layers=int(GPU_LAYERS), **config))


@pytest.fixture
def worlds_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "worlds"
    directory.mkdir()
    shutil.copy(FIXTURES / "worlds" / "lighthouse.yaml", directory)
    return directory


@pytest.fixture
async def store(tmp_path: Path):
    store = await Store.open(tmp_path / "data" / "gm.sqlite3")
    yield store
    await store.close()


@pytest.fixture
def bot_env(tmp_path: Path) -> dict[str, str]:
    """Settings for ``python -m bot`` in a subprocess: the test world, a database of its own, the bundled model.

    For a run that ends before it loads the model (a refusal at start, a command that needs none); a run that
    plays takes :func:`play_env`."""
    worlds = tmp_path / "worlds"
    worlds.mkdir()
    shutil.copy(FIXTURES / "worlds" / "lighthouse.yaml", worlds)
    return {
        "GM_WORLDS_DIR": str(worlds),
        "GM_DATABASE": str(tmp_path / "data" / "gm.sqlite3"),
        "GM_N_CTX": "2048",
        "GM_REPLY_TOKENS": "24",
        "GM_SEED": "11",
        "GM_N_GPU_LAYERS": GPU_LAYERS,
    }


@pytest.fixture
@loads_a_model
def play_env(bot_env: dict[str, str]) -> dict[str, str]:
    """:func:`bot_env` for a bot that plays: it loads the bundled model."""
    return bot_env


@pytest.fixture
@loads_a_model
def real_embedder():
    """The bundled embedding model (all-MiniLM-L6-v2), loaded once and shared: it is read-only."""
    from tests.embedding import bundled_embedder

    return bundled_embedder()


@pytest.fixture(scope="session")
def e5_embedder(tmp_path_factory):
    """multilingual-e5-small as ``GM_EMBED_MODEL=e5-small`` loads it (written once as a GGUF), shared."""
    from bot.settings import ProcessSettings
    from bot.startup import E5_SMALL, load_embedder

    settings = ProcessSettings(_env_file=None, embed_model=E5_SMALL, models_dir=tmp_path_factory.mktemp("models"))
    embedder, unavailable = load_embedder(settings)
    assert embedder is not None, unavailable
    return embedder


@pytest.fixture
def scripted() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
async def worker(scripted: ScriptedModel):
    async with ModelWorker(scripted) as worker:
        yield worker


# Engine tests fold a chunk as soon as it closes, as a tight context does: their messages are short, and
# at the default (75% of the recent turns' room) a test would play a hundred turns to see one compaction.
EAGER_FOLDING = MemoryConfig(fold_at_percent=10)
# Hollow Manor's frozen layer and GM-only secrets take about 1,800 tokens: it is written for 4k and more.
MANOR_CONTEXT = EngineConfig(n_ctx=4096, reply_tokens=128, memory=EAGER_FOLDING)


@pytest.fixture
async def engine(store: Store, worker: ModelWorker, worlds_dir: Path):
    config = EngineConfig(n_ctx=2048, reply_tokens=128, memory=EAGER_FOLDING)
    engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
    yield engine
    await engine.close()


@pytest.fixture
def simcord_bot(engine: Engine):
    from bot.discord_client import GameMasterBot
    from bot.settings import ProcessSettings

    return GameMasterBot(engine, ProcessSettings(discord_token="simulated", dev_guild_id=None, gm_role="Game Master"))


@pytest.fixture
def table(simcord_env):
    """A server with a game channel, two players and an admin."""
    import discord

    guild = simcord_env.create_guild()
    channel = guild.create_text_channel("tavern")
    maya = guild.add_member(simcord_env.create_user("maya"))
    tom = guild.add_member(simcord_env.create_user("tom"))
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(simcord_env.create_user("ada"), roles=[admins])
    return channel, maya, tom, admin
