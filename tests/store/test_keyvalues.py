"""The key-value table: a game's and a server's settings, players' notes and the like, kept as JSON by scope and
key."""

from __future__ import annotations

import json

from bot.store import Store


async def test_settings_round_trip_per_scope(store: Store):
    await store.set_scope_value("global", "pin_cap", 20)
    await store.set_scope_value("game:1", "pin_cap", 5)
    await store.set_scope_value("game:1", "pin_cap", 8)
    await store.set_scope_value("game:1", "buckets", {"glossary": False})
    assert await store.scope_values("global") == {"pin_cap": 20}
    assert await store.scope_values("game:1") == {"buckets": {"glossary": False}, "pin_cap": 8}
    await store.delete_scope_value("game:1", "pin_cap")
    assert await store.scope_values("game:1") == {"buckets": {"glossary": False}}


async def test_every_kind_of_json_value_comes_back_as_it_was_set(store: Store):
    values = {"a_list": [1, "two", None], "flag": True, "nothing": None, "number": 2.5, "text": "Maya's note"}
    for key, value in values.items():
        await store.set_scope_value("notes:7", key, value)
    assert await store.scope_values("notes:7") == values
    assert list(await store.scope_values("notes:7")) == sorted(values), "keys come in order"


async def test_a_scope_of_nothing_is_empty_and_deleting_what_is_not_there_is_no_error(store: Store):
    assert await store.scope_values("game:404") == {}
    await store.delete_scope_value("game:404", "pin_cap")
    assert await store.scope_values("game:404") == {}


async def test_scopes_are_found_by_the_start_of_their_name(store: Store):
    await store.set_scope_value("server:1", "gm_role", "Keepers")
    await store.set_scope_value("server:2", "worlds", {"cove": {"title": "The Cove"}})
    await store.set_scope_value("game:1", "pin_cap", 5)
    await store.set_scope_value("serverless", "x", 1)
    assert await store.scopes("server:") == {
        "server:1": {"gm_role": "Keepers"},
        "server:2": {"worlds": {"cove": {"title": "The Cove"}}},
    }
    assert await store.scopes("game:") == {"game:1": {"pin_cap": 5}}
    assert await store.scopes("notes:") == {}
    assert set(await store.scopes("server")) == {"server:1", "server:2", "serverless"}


async def test_scopes_as_stored_are_the_json_texts_for_a_caller_to_decode(store: Store):
    world = {"cove": {"title": "The Cove", "beats": ["land", "dive"]}}
    await store.set_scope_value("server:1", "worlds", world)
    stored = await store.scopes_as_stored("server:")
    assert stored == {"server:1": {"worlds": json.dumps(world)}}
    assert json.loads(stored["server:1"]["worlds"]) == world


async def test_the_size_of_stored_values_is_counted_by_scope_and_key_prefix(store: Store):
    """What a server's uploaded worlds take, against the ceiling on all of them."""
    big, small = {"text": "é" * 100}, ["fog"]
    await store.set_scope_value("server:1", "world:cove", big)
    await store.set_scope_value("server:2", "world:reef", small)
    await store.set_scope_value("server:2", "gm_role", "Keepers")
    await store.set_scope_value("game:1", "world:cove", big)
    size = len(json.dumps(big)) + len(json.dumps(small))
    assert len(json.dumps(big)) == 12 + 6 * 100, "a character past ASCII is stored escaped, six bytes"
    assert await store.stored_bytes("server:", "world:") == size
    assert await store.stored_bytes("server:2", "") == len(json.dumps(small)) + len(json.dumps("Keepers"))
    assert await store.stored_bytes("notes:", "world:") == 0, "nothing stored is 0, not None"


async def test_setting_a_value_again_replaces_it_in_place(store: Store):
    await store.set_scope_value("game:1", "buckets", {"glossary": False, "lore": False})
    await store.set_scope_value("game:1", "buckets", {"glossary": True})
    assert await store.scope_values("game:1") == {"buckets": {"glossary": True}}
    assert await store._value("SELECT count(*) FROM settings WHERE scope = 'game:1'") == 1
