"""Servers' own worlds within the host's limits: at most 2 MiB a server, and a ceiling on every server's worlds
together (GM_SERVER_WORLDS_MIB), kept at upload and at start."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from bot.engine.table.servers import WORLD_PREFIX, Servers, server_scope
from bot.errors import UserError
from bot.store import Store
from bot.worlds import WorldLibrary
from tests.conftest import FIXTURES

WORLD = (FIXTURES / "worlds" / "lighthouse.yaml").read_text()


def world(name: str) -> str:
    """The test world under another id."""
    return WORLD.replace("id: lighthouse", f"id: {name}")


def stored_size(name: str) -> int:
    """What one world takes in the database (its text as JSON)."""
    return len(json.dumps(world(name)))


async def test_a_server_past_its_own_limit_is_refused_at_upload_with_the_sizes(
    store: Store, worlds_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    limit = len(world("aa").encode()) * 5 // 2  # two worlds fit, a third does not
    monkeypatch.setattr("bot.engine.table.servers.MAX_SERVER_WORLD_BYTES", limit)
    servers = Servers(store, WorldLibrary(worlds_dir))
    for name in ("aa", "bb"):
        await servers.add_world("1", f"{name}.yaml", world(name).encode())
    with pytest.raises(UserError) as refused:
        await servers.add_world("1", "cc.yaml", world("cc").encode())
    size = len(world("aa").encode()) + len(world("bb").encode()) + len(world("cc").encode())
    assert str(refused.value) == (
        f"This server's worlds would come to {size:,} bytes, more than the {limit:,} a server may keep; "
        "/world remove one first."
    )
    await servers.add_world("1", "aa.yaml", world("aa").replace("Gull Rock", "Gull Stack").encode())
    assert servers.own("1") == ["aa", "bb"], "a world replaced by its own id still fits"
    assert WORLD_PREFIX + "cc" not in await store.scope_values(server_scope("1"))


async def test_a_server_past_its_own_limit_at_start_loads_what_fits_and_logs_the_rest(
    store: Store, worlds_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog
):
    monkeypatch.setattr("bot.engine.table.servers.MAX_SERVER_WORLD_BYTES", len(world("aa").encode()) * 5 // 2)
    for name in ("aa", "bb", "cc"):  # stored when the limit was higher
        await store.set_scope_value(server_scope("1"), WORLD_PREFIX + name, world(name))
    servers = Servers(store, WorldLibrary(worlds_dir))
    with caplog.at_level(logging.WARNING, logger="bot.engine.table.servers"):
        await servers.load()
    assert servers.own("1") == ["aa", "bb"]
    assert any("Server 1: world cc left out: the server's worlds pass" in r.getMessage() for r in caplog.records)


async def test_every_servers_worlds_together_stay_under_the_hosts_ceiling_at_upload(store: Store, worlds_dir: Path):
    ceiling = stored_size("aa") * 5 // 2  # two worlds of any servers fit, a third does not
    servers = Servers(store, WorldLibrary(worlds_dir), max_total_bytes=ceiling)
    await servers.add_world("1", "aa.yaml", world("aa").encode())
    await servers.add_world("2", "bb.yaml", world("bb").encode())
    with pytest.raises(UserError) as refused:
        await servers.add_world("3", "cc.yaml", world("cc").encode())
    total = stored_size("aa") + stored_size("bb") + stored_size("cc")
    assert str(refused.value).startswith(
        f"Every server's own worlds together would come to {total:,} bytes, more than the {ceiling:,}"
    )
    assert "(GM_SERVER_WORLDS_MIB); nothing was added." in str(refused.value)
    assert servers.own("3") == [] and await store.scope_values(server_scope("3")) == {}
    await servers.add_world("2", "bb.yaml", world("bb").replace("Gull Rock", "Gull Stack").encode())
    assert servers.world("2/bb").title == "The Lighthouse at Gull Stack", "a replacement counts once"


async def test_at_start_the_worlds_past_the_hosts_ceiling_are_left_out_and_their_servers_named(
    store: Store, worlds_dir: Path, caplog
):
    for server, name in (("1", "aa"), ("2", "bb"), ("3", "cc"), ("3", "dd")):  # stored under a higher ceiling
        await store.set_scope_value(server_scope(server), WORLD_PREFIX + name, world(name))
    servers = Servers(store, WorldLibrary(worlds_dir), max_total_bytes=stored_size("aa") * 5 // 2)
    with caplog.at_level(logging.WARNING, logger="bot.engine.table.servers"):
        await servers.load()
    assert (servers.own("1"), servers.own("2"), servers.own("3")) == (["aa"], ["bb"], [])
    logged = [r.getMessage() for r in caplog.records if "GM_SERVER_WORLDS_MIB" in r.getMessage()]
    assert len(logged) == 1 and logged[0].endswith("server 3: cc, dd"), logged


async def test_a_games_settings_and_bucket_switches_inherit_through_one_path(engine, monkeypatch):
    """Game over server over the process's defaults is written once, for settings and switches alike: both read
    what that one method layers, and a reset of either kind goes through one method too."""
    game = (await engine.start_game("discord:1", "lighthouse")).game
    await engine.settings.set_server_of(game.id, "7")
    await engine.server("7").set_default("pin_cap", "5")
    await engine.server("7").set_bucket_default("lore", False)
    await engine.set_bucket(game.id, "glossary", False)
    await engine.set_setting(game.id, "pin_cap", "6")
    _, memory = await engine.settings.resolved(game.id)
    buckets = await engine.buckets(game.id)
    assert memory.pin_cap == 6 and not buckets.lore and not buckets.glossary

    layered = []
    original = type(engine.settings).layered

    async def watched(self, game_id, kind="config"):
        layered.append(kind)
        return await original(self, game_id, kind)

    monkeypatch.setattr(type(engine.settings), "layered", watched)
    await engine.settings.resolved(game.id)
    await engine.buckets(game.id)
    assert layered == ["config", "buckets"]

    await engine.reset_setting(game.id, "buckets.glossary")
    await engine.reset_setting(game.id, "pin_cap")
    _, memory = await engine.settings.resolved(game.id)
    assert memory.pin_cap == 5 and (await engine.buckets(game.id)).glossary
    with pytest.raises(UserError, match="'buckets.glossary' is not set for this game"):
        await engine.reset_setting(game.id, "buckets.glossary")
