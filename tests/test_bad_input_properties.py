"""Whatever is thrown at them, world files and actions give a world or a clear refusal, and nothing dirty is kept."""

from __future__ import annotations

import asyncio
import copy
import re
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.engine import Engine, EngineConfig
from bot.errors import UserError
from bot.model import ModelWorker, ScriptedModel
from bot.store import Store
from bot.worlds import World, WorldFileError, WorldLibrary, load_world
from tests.conftest import FIXTURES, PROJECT

SHIPPED = {p.stem: yaml.safe_load(p.read_text()) for p in (PROJECT / "worlds").glob("*.yaml")}
DIRTY = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")

anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=60),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*path, index))


@st.composite
def mutated_worlds(draw):
    name = draw(st.sampled_from(sorted(SHIPPED)))
    data = copy.deepcopy(SHIPPED[name])
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(data) if p]
        path = draw(st.sampled_from(paths))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["delete", "replace", "garble"]))
        if action == "delete":
            parent.pop(path[-1]) if isinstance(parent, dict) else parent.pop(path[-1])
        elif action == "replace":
            parent[path[-1]] = draw(anything)
        elif isinstance(parent[path[-1]], str):
            parent[path[-1]] += draw(st.text(max_size=20))
    return name, data


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(mutated_worlds())
def test_a_mutated_world_loads_or_is_refused_clearly_and_keeps_no_control_characters(tmp_path: Path, case):
    name, data = case
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8", errors="surrogateescape")
    try:
        world = load_world(path)
    except WorldFileError as exc:
        assert all(line.startswith(f"{path}: ") for line in str(exc).splitlines())
        return
    assert isinstance(world, World)
    assert not DIRTY.search(world.model_dump_json()), "a world keeps no control characters"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(exclude_categories=()), max_size=200), min_size=1, max_size=4))
def test_random_actions_are_stored_clean_or_refused_clearly(actions):
    async def play() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            worlds = Path(tmp) / "worlds"
            worlds.mkdir()
            (worlds / "lighthouse.yaml").write_text((FIXTURES / "worlds" / "lighthouse.yaml").read_text())
            store = await Store.open(Path(tmp) / "gm.sqlite3")
            async with ModelWorker(ScriptedModel()) as worker:
                engine = Engine(store, worker, WorldLibrary(worlds), EngineConfig(n_ctx=2048, reply_tokens=32))
                game = (await engine.start_game("chan", "lighthouse")).game
                await engine.join(game.id, "maya", "Maya")
                for text in actions:
                    try:
                        await engine.act(game.id, "maya", text)
                    except UserError as exc:
                        assert str(exc) and "Traceback" not in str(exc)
                await engine.memory.idle()
                for entry in await store.log(game.id):
                    assert not DIRTY.search(entry.content), entry.content
                await engine.close()
            await store.close()

    asyncio.run(play())
