"""Tests of bot.store.summaries: where a game's memory stands, its turn notes, parked jobs and turn traces."""

from __future__ import annotations

from bot.store import EntryKind, NewEntry, Store
from bot.store.models import JobFailure, MemoryState, TurnNote


async def test_a_games_memory_state_starts_empty_and_is_read_back_as_saved(store: Store):
    game = await store.create_game("chan", "lighthouse")
    assert await store.memory_state(game.id) == MemoryState(game_id=game.id)
    state = MemoryState(game_id=game.id, folded_through=12, chapter_index=1, beats_done=("arrival", "the keeper"))
    async with store.transaction() as db:
        await store.save_memory_state(db, state)
    read = await store.memory_state(game.id)
    assert (read.folded_through, read.chapter_index, read.beats_done) == (12, 1, ("arrival", "the keeper"))
    async with store.transaction() as db:
        await store.save_memory_state(db, read.model_copy(update={"version": 3}))
    assert (await store.memory_state(game.id)).version == 3


async def test_turn_notes_are_kept_by_entry_and_read_after_an_entry_in_order(store: Store):
    game = await store.create_game("chan", "lighthouse")
    lore = TurnNote(layer="lore", ref="lore:cave", text="The cave floods.")
    recall = TurnNote(layer="recall", ref="entry:3", text="GM: Wren lied.")
    made = [NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", content=f"Step {i}.") for i in range(3)]
    first, second, third = (entry.id for entry in await store.append(game.id, *made))
    await store.save_turn_notes(game.id, second, [lore])
    await store.save_turn_notes(game.id, third, [recall, lore])
    await store.save_turn_notes(game.id, first, [])
    assert await store.turn_notes(game.id, 0) == {first: [], second: [lore], third: [recall, lore]}
    assert await store.turn_notes(game.id, second) == {third: [recall, lore]}
    await store.save_turn_notes(game.id, third, [recall])
    assert await store.turn_notes(game.id, second) == {third: [recall]}, "saved again, an entry's notes are replaced"


async def test_a_jobs_failure_is_replaced_by_its_next_and_cleared_by_job_or_all_at_once(store: Store):
    game = await store.create_game("chan", "lighthouse")
    facts = JobFailure(game_id=game.id, job="facts", input="entry:4", failures=1, reason="not JSON")
    await store.save_job_failure(facts)
    await store.save_job_failure(facts.model_copy(update={"failures": 3, "parked_at_turn": 6}))
    await store.save_job_failure(JobFailure(game_id=game.id, job="summary", input="chunk:1", failures=1, reason="x"))
    failures = await store.job_failures(game.id)
    assert list(failures) == ["facts", "summary"]
    assert (failures["facts"].failures, failures["facts"].parked_at_turn) == (3, 6)
    await store.clear_job_failures(game.id, "facts")
    assert list(await store.job_failures(game.id)) == ["summary"]
    await store.clear_job_failures(game.id)
    assert await store.job_failures(game.id) == {}


async def test_traces_are_read_newest_first_up_to_the_limit_and_per_game(store: Store):
    game = await store.create_game("chan", "lighthouse")
    other = await store.create_game("other", "lighthouse")
    for turn in range(1, 5):
        await store.save_trace(game.id, turn, f"trace {turn}")
    await store.save_trace(other.id, 1, "elsewhere")
    assert await store.traces(game.id) == ["trace 4", "trace 3", "trace 2", "trace 1"]
    assert await store.traces(game.id, limit=2) == ["trace 4", "trace 3"]
    assert await store.traces(other.id) == ["elsewhere"]
