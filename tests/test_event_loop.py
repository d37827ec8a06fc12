"""One server must never stall every other (F33): the bot's busiest paths, watched by asyncio's slow-callback
detection. Before the fix, a 1 MiB upload held the loop for seconds (two pure-Python YAML parses on it), and a
model server's tokenizer was called from the loop."""

from __future__ import annotations

import contextlib
from pathlib import Path

import yaml

from bot.engine import Engine, EngineConfig
from bot.engine.game import ModelFailed
from bot.engine.table.servers import WORLD_PREFIX, Servers, server_scope
from bot.model import ModelWorker, ScriptedModel
from bot.model.server import ServerModel
from bot.store import Store
from bot.worlds import WorldLibrary
from tests.conftest import FIXTURES
from tests.loopguard import slow_callbacks
from tests.model.stub_server import StubServer

MIB = 2**20


def big_world(size: int = MIB - 4096, *, valid: bool = True) -> bytes:
    """The test world grown with lore entries (valid) or a long list of short rules (not), to about ``size``."""
    world = yaml.safe_load((FIXTURES / "worlds" / "lighthouse.yaml").read_text())
    if valid:
        world["lore"] = [
            {"id": f"entry-{i}", "keys": [f"key{i}"], "content": ("word " * 790).strip()} for i in range(200)
        ]
        text = yaml.safe_dump(world, sort_keys=False)
    else:  # as many small values as fit: the slowest kind of file to parse
        text = yaml.safe_dump(world, sort_keys=False) + "extra:\n"
        text += "".join(f"  - r{i}\n" for i in range((size - len(text)) // 12))
    text += "#" * max(0, size - len(text.encode()) - 1) + "\n"
    return text.encode()


async def test_a_big_world_upload_never_stalls_the_loop(simcord_env, table, engine: Engine):
    channel, _maya, _tom, admin = table
    for data, expected in ((big_world(), "is added for this server only"), (big_world(valid=False), "extra")):
        async with slow_callbacks() as slow:
            result = await admin.slash(channel, "world add", file=("huge.yaml", data))
        text = "\n".join(m.content for m in (result.response, *result.followups) if m is not None and m.content)
        assert expected in text, text
        assert slow == [], slow


async def test_starting_with_many_server_worlds_never_stalls_the_loop(store: Store, worlds_dir: Path):
    valid, broken = big_world(MIB // 2).decode(), big_world(MIB // 2, valid=False).decode()
    for server in range(8):  # each server at its size limit: a world it can play, and one that no longer loads
        await store.set_scope_value(
            server_scope(str(server)), f"{WORLD_PREFIX}cove", valid.replace("id: lighthouse", "id: cove")
        )
        await store.set_scope_value(server_scope(str(server)), f"{WORLD_PREFIX}broken", broken)
    servers = Servers(store, WorldLibrary(worlds_dir))
    async with slow_callbacks() as slow:
        await servers.load()
    assert slow == [], slow
    assert all(servers.own(str(server)) == ["cove"] for server in range(8))


async def test_the_engine_starting_with_many_servers_worlds_never_stalls_the_loop(store: Store, worlds_dir: Path):
    """Through :meth:`Engine.start`, as the bot starts: eight servers with a world they play, an active game of
    each, and forty more servers each holding close to its 2 MiB, stored as JSON with every character escaped
    (about 250 MB, near the host's default ceiling, to decode: on the loop, that alone took half a second)."""
    valid = big_world(MIB // 2).decode().replace("id: lighthouse", "id: cove")
    escaped = "# " + "é" * (MIB - 4096)  # a world left out at once (not a mapping); six stored bytes a character
    for server in range(8):
        await store.set_scope_value(server_scope(str(server)), f"{WORLD_PREFIX}cove", valid)
    for server in range(8, 48):
        await store.set_scope_value(server_scope(str(server)), f"{WORLD_PREFIX}notes", escaped)
    async with ModelWorker(ScriptedModel()) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig())
        for server in range(8):
            game = (await engine.start_game(f"chan{server}", "lighthouse")).game
            await store.set_scope_value(f"game:{game.id}", "server", str(server))
        async with slow_callbacks() as slow:
            await engine.start()
        assert slow == [], slow
        assert all(engine.worlds_for(str(server)).keys() == {"lighthouse", "cove"} for server in range(8))
        assert engine.worlds_for("8").keys() == {"lighthouse"}
        await engine.close()


async def test_reloading_a_big_worlds_folder_never_stalls_the_loop(store: Store, worlds_dir: Path):
    """/world reload reads the shipped folder again: here four worlds of half a MiB each, and two that fail."""
    for n in range(4):
        (worlds_dir / f"big{n}.yaml").write_bytes(
            big_world(MIB // 2).replace(b"id: lighthouse", f"id: big{n}".encode())
        )
    for n in range(2):
        (worlds_dir / f"bad{n}.yaml").write_bytes(big_world(MIB // 2, valid=False))
    async with ModelWorker(ScriptedModel()) as worker:
        engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig())
        async with slow_callbacks() as slow:
            loaded, errors = await engine.reload_worlds()
        assert slow == [], slow
        assert (loaded, len(errors)) == (5, 2)
        await engine.close()


async def test_a_turn_on_a_model_server_with_a_slow_tokenizer_never_stalls_the_loop(tmp_path: Path, worlds_dir):
    with StubServer() as stub:
        stub.tokenize_seconds = 0.6  # each call; the old code made them on the loop
        model = ServerModel(stub.url, stub.name, timeout=10)
        store = await Store.open(tmp_path / "gm.sqlite3")
        async with ModelWorker(model) as worker:
            engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=40))
            game = (await engine.start_game("chan", "lighthouse")).game
            await engine.join(game.id, "maya", "Maya")
            async with slow_callbacks() as slow:
                result = await engine.act(game.id, "maya", "I climb the stair.")
                await engine.memory.idle()
            assert result.text == StubServer.REPLY
            assert slow == [], slow
            assert any(path == "/tokenize" for path in stub.paths()), "the server's tokenizer was used"
            await engine.close()
        await store.close()


async def test_a_tokenizer_that_fails_is_a_turn_to_retry_not_an_error_naming_the_server(tmp_path: Path, worlds_dir):
    with StubServer() as stub:
        model = ServerModel(stub.url, stub.name, timeout=5)
        store = await Store.open(tmp_path / "gm.sqlite3")
        async with ModelWorker(model) as worker:
            engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=40))
            game = (await engine.start_game("chan", "lighthouse")).game
            await engine.join(game.id, "maya", "Maya")
            await engine.act(game.id, "maya", "I climb the stair.")  # the tokenizer works: the route is known
            stub.tokenize_status = 500
            try:
                await engine.act(game.id, "maya", "I light the lamp with a new wick.")
            except ModelFailed as failed:
                assert "your action is saved" in str(failed) and stub.root not in str(failed)
            else:
                raise AssertionError("a tokenizer that fails must fail the turn")
            assert [e.content for e in await engine.unanswered(game.id)] == ["I light the lamp with a new wick."]
            stub.tokenize_status = 200
            assert (await engine.retry(game.id)).text == StubServer.REPLY
            stub.stream = "cut"  # a background job fails against the server too: /memory-status says so
            stub.tokenize_status = 500
            with contextlib.suppress(ModelFailed):
                await engine.act(game.id, "maya", "I wait.")
            await engine.memory.idle()
            status = await engine.memory_status(game.id)
            shown = " ".join(filter(None, [status.model, status.last_error, *status.parked]))
            assert stub.root not in shown and "127.0.0.1" not in shown, "members may run /memory-status"
            assert status.model.startswith(f"{stub.name}, on a model server"), status.model
            await engine.close()
        await store.close()
