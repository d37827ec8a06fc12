"""Tests of bot.engine.table.server_admin: what one server's admins set for its games (F20, F23): its own worlds,
the shipped ones it hides, its GM role, and the defaults its games' settings and bucket switches take."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.engine import Engine, ServerAdmin
from bot.engine.table.servers import Servers
from bot.engine.table.settings import GameSettings
from bot.errors import UserError
from bot.memory.config import MemoryConfig
from bot.store import Store
from bot.worlds import WorldFileError, WorldLibrary
from tests.conftest import FIXTURES

WORLD = (FIXTURES / "worlds" / "lighthouse.yaml").read_text()


async def test_an_uploaded_world_is_the_servers_own_and_playable_there_alone(engine: Engine):
    admin = engine.server("7")
    world = await admin.add_world("cove.yaml", WORLD.replace("Gull Rock", "Cove Rock").encode())
    assert world.title == "The Lighthouse at Cove Rock"
    assert admin.own_worlds() == ["cove"] and engine.server("8").own_worlds() == []
    started = await engine.start_game("chan", "cove", server="7")
    assert started.game.world_id == "7/cove"
    with pytest.raises(UserError, match="Unknown world 'cove'"):
        await engine.start_game("other", "cove", server="8")


async def test_a_broken_upload_is_refused_with_its_problems_and_nothing_kept(engine: Engine):
    admin = engine.server("7")
    with pytest.raises(WorldFileError, match="a world is a YAML file"):
        await admin.add_world("cove.txt", WORLD.encode())
    with pytest.raises(WorldFileError):
        await admin.add_world("cove.yaml", b"title: Only a title\n")
    assert admin.own_worlds() == []


async def test_removing_an_own_world_deletes_it_but_not_while_a_game_there_plays_it(engine: Engine):
    admin = engine.server("7")
    await admin.add_world("cove.yaml", WORLD.encode())
    await engine.start_game("chan", "cove", server="7")
    with pytest.raises(UserError, match=r"1 game\(s\) here still play 'cove'; /game end them first."):
        await admin.remove_world("cove")
    assert admin.own_worlds() == ["cove"]
    await engine.end_game("chan")
    assert await admin.remove_world("cove") == "removed"
    assert admin.own_worlds() == [] and admin.hidden_worlds() == []


async def test_a_game_of_another_server_or_of_a_shipped_world_does_not_keep_an_own_world(engine: Engine):
    admin = engine.server("7")
    await admin.add_world("cove.yaml", WORLD.encode())
    await engine.server("8").add_world("cove.yaml", WORLD.encode())
    await engine.start_game("chan", "cove", server="8")
    await engine.start_game("other", "lighthouse", server="7")
    assert await admin.remove_world("cove") == "removed"


async def test_removing_a_shipped_world_hides_it_in_that_server_until_it_is_restored(engine: Engine):
    admin = engine.server("7")
    assert await admin.remove_world("lighthouse") == "hidden"
    assert admin.hidden_worlds() == ["lighthouse"] and engine.server("8").hidden_worlds() == []
    assert "lighthouse" not in engine.worlds_for("7") and "lighthouse" in engine.worlds_for("8")
    with pytest.raises(UserError, match="hidden in this server"):
        await engine.start_game("chan", "lighthouse", server="7")
    with pytest.raises(UserError, match="No world 'lighthouse' to remove here"):
        await admin.remove_world("lighthouse")
    await admin.restore_world("lighthouse")
    assert admin.hidden_worlds() == []
    assert (await engine.start_game("chan", "lighthouse", server="7")).game.world_id == "lighthouse"
    with pytest.raises(UserError, match="'lighthouse' is not hidden in this server."):
        await admin.restore_world("lighthouse")


async def test_the_gm_role_is_kept_per_server_and_taken_back_with_none(engine: Engine):
    admin = engine.server("7")
    assert await admin.gm_role() is None, "Manage Server only, until a role is set"
    await admin.set_gm_role(42)
    assert await admin.gm_role() == 42 and await engine.server("8").gm_role() is None
    assert await engine.server("7").gm_role() == 42, "kept in the store, not in the admin object"
    await admin.set_gm_role(None)
    assert await admin.gm_role() is None


async def test_a_servers_defaults_are_checked_kept_and_taken_by_its_new_games(engine: Engine):
    admin = engine.server("7")
    assert await admin.defaults() == {}
    assert await admin.set_default("pin_cap", "5") == {"pin_cap": 5}
    assert await admin.set_default("turn-policy", "round") == {"pin_cap": 5, "turn_policy": "round"}
    with pytest.raises(UserError, match="There is no setting 'colour'"):
        await admin.set_default("colour", "blue")
    with pytest.raises(UserError, match="reply_tokens: a whole number from"):
        await admin.set_default("reply_tokens", "100000")
    assert await admin.defaults() == {"pin_cap": 5, "turn_policy": "round"}
    game = (await engine.start_game("chan", "lighthouse", server="7")).game
    assert (await engine.settings.memory(game.id)).pin_cap == 5
    assert await engine.turn_policy(game.id) == "round"
    assert await engine.setting_sources(game.id) == {"pin_cap": "server", "turn_policy": "server"}


async def test_bucket_defaults_are_set_per_server_and_a_reset_takes_back_either_kind(engine: Engine):
    admin = engine.server("7")
    assert await admin.bucket_defaults() == {}
    assert await admin.set_bucket_default("lore", False) == {"lore": False}
    await admin.set_default("pin_cap", "5")
    game = (await engine.start_game("chan", "lighthouse", server="7")).game
    assert not (await engine.buckets(game.id)).lore
    await admin.reset_default("buckets.lore")
    await admin.reset_default("pin_cap")
    assert await admin.bucket_defaults() == {} and await admin.defaults() == {}
    assert (await engine.buckets(game.id)).lore
    with pytest.raises(UserError, match="'pin_cap' is not set for this server."):
        await admin.reset_default("pin_cap")
    with pytest.raises(UserError):
        await admin.set_bucket_default("no-such-bucket", True)


async def test_a_default_set_before_the_host_lowered_its_ceiling_is_shown_with_the_ceiling_used(
    store: Store, worlds_dir: Path
):
    servers = Servers(store, WorldLibrary(worlds_dir))
    before = ServerAdmin("7", store, servers, GameSettings(store, MemoryConfig(), reply_tokens=200))
    await before.set_default("reply_tokens", "180")
    await before.set_default("pin_cap", "5")
    assert await before.capped_defaults() == {}
    lowered = ServerAdmin("7", store, servers, GameSettings(store, MemoryConfig(), reply_tokens=120))
    assert await lowered.defaults() == {"reply_tokens": 180, "pin_cap": 5}, "what the admins set is kept"
    assert await lowered.capped_defaults() == {"reply_tokens": 120}
