"""Tests of bot.engine.upkeep.players: each seated player's private memory (F5, F19), updated from what that player
witnessed, rebuilt from the version before a message it read was edited, and shown to the GM as GM-only."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.engine.upkeep.players import PlayerMemories, PrivateMemoryFailed
from bot.model import ModelWorker, ScriptedModel
from bot.model.base import ChatMessage
from bot.store import EntryKind, Game, NewEntry, Player, Store, Visibility
from bot.worlds import WorldLibrary
from tests.engine.upkeep.test_memory import scripted_private_memory


def _memory_only(messages: list[ChatMessage]) -> str:
    """The model as the private memory asks it: a summary that quotes what the player witnessed."""
    assert messages[0].content.startswith("You keep the private memory of "), "only private-memory calls here"
    return scripted_private_memory(messages[-1].content)


@pytest.fixture
def remembering(scripted: ScriptedModel) -> ScriptedModel:
    scripted.default = _memory_only
    return scripted


@pytest.fixture
def memories(store: Store, worker: ModelWorker, worlds_dir: Path, remembering: ScriptedModel) -> PlayerMemories:
    library = WorldLibrary(worlds_dir)
    return PlayerMemories(store, worker, lambda game: library.get(game.world_id))


async def _table(store: Store) -> tuple[Game, Player, Player]:
    game = await store.create_game("chan", "lighthouse")
    return game, await store.add_player(game.id, "maya", "Maya"), await store.add_player(game.id, "tom", "Tom")


def _public(text: str) -> NewEntry:
    return NewEntry(turn=1, kind=EntryKind.GM, author="GM", content=text)


def _to(player: Player, text: str) -> NewEntry:
    return NewEntry(turn=1, kind=EntryKind.GM, author=f"GM to {player.name}", content=text,
                    visibility=Visibility.PRIVATE, visible_to=(player.id,))  # fmt: skip


def _calls(model: ScriptedModel) -> list[str]:
    """Whose memory each call was for."""
    return [c.messages[0].content.split("private memory of ", 1)[1].split()[0].rstrip(",.") for c in model.calls]


async def test_each_player_remembers_what_they_witnessed_and_nothing_told_only_to_another(
    store: Store, memories: PlayerMemories, remembering: ScriptedModel
):
    game, maya, tom = await _table(store)
    entries = await store.append(
        game.id, _public("PUBLICSTORM rolls in."), _to(maya, "MAYASECRET: the lens is cracked.")
    )
    assert await memories.update_private_memories(game.id) == 2
    mayas, toms = await memories.memory(game.id, maya.id), await memories.memory(game.id, tom.id)
    assert "PUBLICSTORM" in mayas.summary and "MAYASECRET" in mayas.summary
    assert "PUBLICSTORM" in toms.summary and "MAYASECRET" not in toms.summary + " ".join(toms.facts)
    assert mayas.through_entry_id == toms.through_entry_id == entries[-1].id
    assert any("(only you) GM, privately: MAYASECRET" in fact for fact in mayas.facts), "marked as hers alone"
    assert sorted(_calls(remembering)) == ["Maya", "Tom"]


async def test_a_player_with_nothing_new_is_not_asked_about_and_nothing_changes(
    store: Store, memories: PlayerMemories, remembering: ScriptedModel
):
    game, maya, tom = await _table(store)
    assert await memories.update_private_memories(game.id) == 0, "an empty log"
    await store.append(game.id, _public("The tide turns."))
    assert await memories.update_private_memories(game.id) == 2
    toms = await memories.memory(game.id, tom.id)
    asked = len(remembering.calls)
    assert await memories.update_private_memories(game.id) == 0
    assert len(remembering.calls) == asked
    await store.append(game.id, _to(maya, "Only Maya hears the bell."))
    assert await memories.update_private_memories(game.id) == 1
    assert _calls(remembering)[asked:] == ["Maya"]
    assert await memories.memory(game.id, tom.id) == toms, "Tom's memory is the same version"


async def test_a_model_that_gives_no_usable_memory_fails_the_update_and_leaves_the_memory_for_next_turn(
    store: Store, memories: PlayerMemories, remembering: ScriptedModel
):
    game, maya, tom = await _table(store)
    await store.append(game.id, _public("The lamp flickers."))
    remembering.default = "not a memory"
    with pytest.raises(PrivateMemoryFailed) as failed:
        await memories.update_private_memories(game.id)
    assert str(failed.value).startswith("Maya: no usable memory from the model: ")
    assert "; Tom: no usable memory from the model: " in str(failed.value)
    assert await memories.memory(game.id, maya.id) is None and await memories.memory(game.id, tom.id) is None
    remembering.default = _memory_only
    assert await memories.update_private_memories(game.id) == 2, "retried: the entries are still new to them"
    assert "The lamp flickers." in (await memories.memory(game.id, maya.id)).summary


async def test_an_edited_message_is_forgotten_at_once_and_the_memory_rebuilt_from_the_version_before_it(
    store: Store, memories: PlayerMemories, remembering: ScriptedModel
):
    game, maya, _ = await _table(store)
    await store.append(game.id, _to(maya, "FIRSTKEY lies in the drawer."))
    await memories.update_private_memories(game.id)
    first = await memories.memory(game.id, maya.id)
    (edited,) = await store.append(game.id, _to(maya, "ORIGINALKEY hides under the mat."))
    await memories.update_private_memories(game.id)
    assert "ORIGINALKEY" in (await memories.memory(game.id, maya.id)).summary

    await store.edit_entry(edited.id, "EDITEDKEY hides in the boot.")
    before = await memories.memory(game.id, maya.id)
    assert (before.id, before.summary) == (first.id, first.summary), "until the rebuild, the version before the edit"
    assert await memories.update_private_memories(game.id) == 1
    rebuilt = await memories.memory(game.id, maya.id)
    asked = remembering.last("json").prompt_text
    assert first.summary in asked and "ORIGINALKEY" not in asked, "built on the version before the edit"
    assert "EDITEDKEY" in rebuilt.summary and "ORIGINALKEY" not in rebuilt.summary + " ".join(rebuilt.facts)
    assert await store.player_memory_redo(game.id) == {}, "the rebuild is done"


async def test_a_memory_whose_first_message_was_deleted_is_none_until_it_is_rebuilt(
    store: Store, memories: PlayerMemories
):
    game, maya, _ = await _table(store)
    (told,) = await store.append(game.id, _to(maya, "GONEKEY is in the well."))
    await store.append(game.id, _to(maya, "The rope is frayed."))
    await memories.update_private_memories(game.id)
    await store.delete_entry(told.id)
    assert await memories.memory(game.id, maya.id) is None
    await memories.update_private_memories(game.id)
    rebuilt = await memories.memory(game.id, maya.id)
    assert "The rope is frayed." in rebuilt.summary and "GONEKEY" not in rebuilt.summary


async def test_a_message_edited_while_the_memory_is_written_fails_that_update_so_it_runs_again(
    store: Store, memories: PlayerMemories, remembering: ScriptedModel
):
    game, maya, tom = await _table(store)
    (said,) = await store.append(game.id, _public("OLDWORDS on the wind."))
    remembering.block.clear()  # hold the update at its model call
    update = asyncio.create_task(memories.update_private_memories(game.id))
    while not remembering.started:  # the worker runs one call at a time
        await asyncio.sleep(0.01)
    await store.edit_entry(said.id, "NEWWORDS on the wind.")
    remembering.block.set()
    with pytest.raises(PrivateMemoryFailed, match="the log or the memory changed while it was being written"):
        await update
    assert await memories.memory(game.id, maya.id) is None
    await memories.update_private_memories(game.id)
    assert "NEWWORDS" in (await memories.memory(game.id, maya.id)).summary


async def test_the_gm_is_shown_each_players_memory_as_fixed_at_the_last_compaction(
    store: Store, memories: PlayerMemories
):
    game, maya, tom = await _table(store)
    ada = await store.add_player(game.id, "ada", "Ada")
    (told,) = await store.append(game.id, _to(maya, "MAYAKEY is in the boot."))
    await memories.update_private_memories(game.id)
    mayas = await memories.memory(game.id, maya.id)
    toms = await memories.memory(game.id, tom.id)
    assert toms is None, "Tom witnessed nothing"
    items = await memories.threads(game.id, [maya, tom, ada], {maya.id: mayas.id})
    (item,) = items
    assert item.ref == f"private:{maya.id}"
    assert item.text == f"Only Maya knows: {mayas.summary} Their key facts: {'; '.join(mayas.facts)}."

    await store.append(game.id, _to(maya, "The lantern is lit."))
    await memories.update_private_memories(game.id)
    fixed = await memories.threads(game.id, [maya], {maya.id: mayas.id})
    assert fixed == items, "the version fixed at the last compaction, not the newest"

    await store.edit_entry(told.id, "A different key.")
    assert await memories.threads(game.id, [maya], {maya.id: mayas.id}) == [], (
        "a version built from an edited message gives way to the one before it: here none"
    )


async def test_a_memory_without_facts_is_shown_without_them(store: Store, memories: PlayerMemories, remembering):
    game, maya, _ = await _table(store)
    await store.append(game.id, _to(maya, "Quiet."))
    remembering.default = json.dumps({"summary": "Maya heard nothing.", "facts": []})
    await memories.update_private_memories(game.id)
    mayas = await memories.memory(game.id, maya.id)
    (item,) = await memories.threads(game.id, [maya], {maya.id: mayas.id})
    assert item.text == "Only Maya knows: Maya heard nothing."
