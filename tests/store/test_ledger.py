"""Tests of bot.store.ledger: the store's pins, facts, game lore, glossary and recall index by words."""

from __future__ import annotations

import pytest

from bot.errors import UserError
from bot.store import Store
from bot.store.ledger import fts_query
from bot.store.models import FactKind, NewFact
from bot.worlds import LoreEntry


def test_an_fts_query_quotes_each_word_once_in_lower_case_and_drops_what_is_not_a_word():
    query = fts_query(["Keeper", "keeper", "OR", "lamp-oil", "NEAR", "*", "cave"])
    assert query == '"keeper" OR "or" OR "near" OR "cave"'
    assert fts_query(["--", ""]) == ""


async def test_pins_are_listed_in_order_until_removed(store: Store):
    game = await store.create_game("chan", "lighthouse")
    first = await store.add_pin(game.id, "The keeper is missing.", "maya")
    second = await store.add_pin(game.id, "The boat is gone.", "tom")
    assert [(p.text, p.author) for p in await store.pins(game.id)] == [
        ("The keeper is missing.", "maya"),
        ("The boat is gone.", "tom"),
    ]
    await store.remove_pin(first.id, moved_to_fact=7)
    assert [p.id for p in await store.pins(game.id)] == [second.id]
    removed = await store.pin(first.id)
    assert removed.removed_at is not None and removed.moved_to_fact == 7
    with pytest.raises(UserError, match="There is no such pin"):
        await store.pin(9999)


async def test_a_fact_is_found_by_its_words_until_a_newer_value_supersedes_it(store: Store):
    game = await store.create_game("chan", "lighthouse")
    async with store.transaction() as db:
        old = await store.add_fact(db, game.id, NewFact(kind=FactKind.ITEM, subject="brass key", attribute="location",
                                                        value="the cave", sources=(1,), turn=1))  # fmt: skip
    hits = await store.search_recall(game.id, ["key", "cave"], 5)
    assert [h.ref for h in hits] == [f"fact:{old}"] and hits[0].turn == 1 and hits[0].score > 0
    async with store.transaction() as db:
        new = await store.add_fact(db, game.id, NewFact(kind=FactKind.ITEM, subject="brass key", attribute="location",
                                                        value="Maya's pocket", sources=(4,), turn=3))  # fmt: skip
        await store.supersede_fact(db, old, new, 3)
        await store.merge_fact_sources(db, new, (2, 4))
    assert [f.id for f in await store.facts(game.id)] == [new]
    assert [f.id for f in await store.facts(game.id, active_only=False)] == [old, new]
    assert (await store.fact(new)).sources == (2, 4)
    assert (await store.fact(old)).superseded_by == new and not (await store.fact(old)).active
    assert [h.ref for h in await store.search_recall(game.id, ["key"], 5)] == [f"fact:{new}"]
    assert await store.search_recall(game.id, ["cave"], 5) == []
    assert await store.search_recall(game.id, ["!!"], 5) == [], "no word, no query"


async def test_retracting_the_facts_of_an_entry_brings_back_the_value_they_replaced(store: Store):
    game = await store.create_game("chan", "lighthouse")
    async with store.transaction() as db:
        old = await store.add_fact(db, game.id, NewFact(kind=FactKind.PLACE, subject="door", attribute="state",
                                                        value="locked", sources=(1,), turn=1))  # fmt: skip
        new = await store.add_fact(db, game.id, NewFact(kind=FactKind.PLACE, subject="door", attribute="state",
                                                        value="open", sources=(5,), turn=2))  # fmt: skip
        await store.supersede_fact(db, old, new, 2)
    async with store.transaction() as db:
        assert await store.retract_facts_from(db, game.id, 5) == [new]
    assert [(f.id, f.value) for f in await store.facts(game.id)] == [(old, "locked")]
    assert (await store.fact(new)).retracted_at is not None
    assert [h.ref for h in await store.search_recall(game.id, ["door"], 5)] == [f"fact:{old}"]


async def test_the_glossary_keeps_a_term_once_lists_it_by_name_and_edits_or_removes_it_by_any_case(store: Store):
    game = await store.create_game("chan", "lighthouse")
    async with store.transaction() as db:
        await store.add_glossary(db, game.id, "Gull Rock", "The island.", None)
        await store.add_glossary(db, game.id, "beam", "The lighthouse's light.", None)
        await store.add_glossary(db, game.id, "Gull Rock", "Said again.", None)
    assert [(t.term, t.definition, t.edited) for t in await store.glossary(game.id)] == [
        ("beam", "The lighthouse's light.", False),
        ("Gull Rock", "The island.", False),
    ]
    await store.edit_glossary(game.id, "gull rock", "A bare island.")
    await store.edit_glossary(game.id, "Wren", "The ferryman.")
    assert {t.term: (t.definition, t.edited) for t in await store.glossary(game.id)} == {
        "beam": ("The lighthouse's light.", False),
        "Gull Rock": ("A bare island.", True),
        "Wren": ("The ferryman.", True),
    }
    assert await store.remove_glossary(game.id, "BEAM") is True
    assert await store.remove_glossary(game.id, "beam") is False
    assert [t.term for t in await store.glossary(game.id)] == ["Gull Rock", "Wren"]


async def test_game_lore_holds_the_last_version_of_each_entry_and_none_for_one_removed(store: Store):
    game = await store.create_game("chan", "lighthouse")
    await store.put_lore(game.id, LoreEntry(id="cave", keys=["cave"], content="A sea cave under the rock."))
    await store.put_lore(game.id, LoreEntry(id="boat", keys=["boat"], content="A rowing boat."))
    await store.put_lore(game.id, LoreEntry(id="cave", keys=["cave"], content="The cave floods at high tide."))
    await store.put_lore(game.id, LoreEntry(id="boat", keys=["boat"], content="gone"), removed=True)
    lore = await store.game_lore(game.id)
    assert lore["boat"] is None
    assert lore["cave"] is not None and lore["cave"].content == "The cave floods at high tide."
    assert set(lore) == {"cave", "boat"}
