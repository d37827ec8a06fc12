"""The game's summaries through the engine: compaction, and what the prompt's front shows of them."""

from __future__ import annotations

import dataclasses

import pytest

from bot.engine import Engine
from bot.engine.upkeep.summaries import front_summaries
from bot.memory.layers import HEADERS
from bot.model import ScriptedModel
from bot.store import Visibility
from tests.engine.upkeep.test_memory import play, start


async def test_compact_now_folds_all_but_the_tail_and_reports(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    await play(engine, game.id, 5)  # 12 messages: below the trigger
    assert (await engine.memory_status(game.id)).folded_through == 0
    report = await engine.compact(game.id)
    assert report.chunks == 1 and report.messages_folded == 12 - engine.config.memory.protected_tail
    assert report.short_words_before == 0 and report.short_words_after > 0
    status = await engine.memory_status(game.id)
    assert status.messages - status.messages_summarized == engine.config.memory.protected_tail
    assert status.last_compaction_at is not None
    second = await engine.compact(game.id)
    assert second.chunks == 0 and second.short_words_after == report.short_words_after


@pytest.mark.parametrize(("fill", "growth", "folds"), [(0.85, 0.2, True), (0.85, 0.05, False), (0.92, 0.0, True)])
async def test_with_no_chunk_closed_the_recent_turns_fold_once_the_next_turn_would_not_fit(
    store, worker, worlds_dir, memory_model: ScriptedModel, monkeypatch, fill, growth, folds
):
    """bench context at 4k: no chunk closes before the recent turns' room fills (turns of a fifth of the room),
    and the fold came only once a turn had pushed the oldest recent turns out of the prompt unsummarized; the front
    then changed the turn after, costing the prompt cache twice. The fold now comes once the next turn, as large
    as the last, would not fit (or the room is 90% full, as before)."""
    from bot.engine import EngineConfig
    from bot.engine.upkeep.summaries import Summaries
    from bot.memory.config import MemoryConfig
    from bot.worlds import WorldLibrary

    never_closes = MemoryConfig(trigger_messages=2000, trigger_tokens=100_000)
    config = EngineConfig(n_ctx=2048, reply_tokens=128, memory=never_closes)
    engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
    try:
        game = await start(engine, "Maya")
        await play(engine, game.id, 6)

        async def room(self, game_id: int) -> tuple[float, float]:
            return fill, growth

        monkeypatch.setattr(Summaries, "room", room)
        report = await engine.memory.summaries.compact(game.id)
        assert (report.messages_folded > 0) is folds
    finally:
        await engine.close()


async def _turn(engine: Engine, game_id: int, who: str, text: str) -> str:
    """Play one turn, let the memory's jobs finish, and return the system message the GM was given."""
    result = await engine.act(game_id, who, text)
    await engine.memory.idle(game_id)
    return result.context.messages[0].content


def _private_start(system: str) -> int:
    """Where the front's players' private memories begin, or would: before the story and the summaries."""
    starts = [system.index(f"\n\n{HEADERS[name]}") for name in ("private", "story", "short") if HEADERS[name] in system]
    return min(starts)


async def test_a_fold_adds_its_summary_at_the_front_s_end_until_the_summaries_pass_their_budget(
    engine: Engine, memory_model: ScriptedModel
):
    """bench context at 4k: each fold rewrote the story, and the prompt after it was read again from the story's
    start (64% of it reused, against 95% between folds). A fold now leaves the story shown as it was and appends
    its chunk summary after the others; once they would pass the short-term budget, the front shows the story as
    rewritten and the newest chunk summary alone. Either way the summaries shown cover the whole folded log."""
    game = await start(engine, "Maya", "Tom")
    count = engine.worker.count_tokens
    system, story, shown, folded_through, kept, advanced = "", None, [], 0, 0, 0
    for turn in range(1, 61):
        before, story_before, shown_before = system, story, shown
        state = await engine.store.memory_state(game.id)  # what this turn's prompt is built from
        story, shown = await front_summaries(engine.store, state)
        system = await _turn(engine, game.id, "tom" if turn % 3 else "maya", f"Action {turn}: I climb step {turn}.")
        if state.folded_through == folded_through:
            continue
        folded_through = state.folded_through
        assert shown[-1].id == state.short_id
        # What the front shows covers the folded log without a gap: the story, then each chunk after it.
        log = [e.id for e in await engine.store.log(game.id) if e.id <= state.folded_through]
        covered = [i for i in log if story and i <= story.last_entry_id]
        covered += [i for c in shown for i in log if c.first_entry_id <= i <= c.last_entry_id]
        assert covered == log
        assert "Most recently:\n" + "\n\n".join(c.content for c in shown) in system
        if shown_before and story == story_before:
            kept += 1
            # Nothing before the new summaries changed: not the glossary, (nothing private was folded) not the
            # players' private memories, not the story, not the summaries before them. The summaries end the front.
            assert shown[: len(shown_before)] == shown_before and len(shown) > len(shown_before)
            assert system == before + "\n\n" + "\n\n".join(c.content for c in shown[len(shown_before) :])
        else:
            advanced += 1
            assert story == await engine.store.summary(state.story_id) and len(shown) == 1
            if story_before is not None or shown_before:  # the summaries since the story shown passed their budget
                since = await engine.store.chunks_after(
                    game.id, story_before.last_entry_id if story_before else 0, state.folded_through
                )
                assert sum(count(c.content) for c in since) > engine.config.memory.budgets.short
                assert f"The story so far:\n{story.content}" in system
    assert kept >= 3 and advanced >= 3, (kept, advanced)

    # An edit rewrites the summaries that covered it: the front then shows the story as replayed, and the newest
    # chunk summary alone.
    first = next(e for e in await engine.store.log(game.id) if e.content.startswith("Action 2:"))
    await engine.edit_entry(game.id, first.id, "Action 2: I climb the rope instead.", user_key="tom")
    await engine.memory.idle(game.id)
    state = await engine.store.memory_state(game.id)
    story, shown = await front_summaries(engine.store, state)
    assert story is not None and story.id == state.story_id and [c.id for c in shown] == [state.short_id]
    system = await _turn(engine, game.id, "tom", "Action 61: I wait.")
    assert f"The story so far:\n{story.content}\n\nMost recently:\n{shown[0].content}" in system


async def test_a_fold_of_a_whisper_brings_the_private_memories_up_to_date(engine: Engine, memory_model: ScriptedModel):
    """A fold that keeps the story shown keeps the players' private memories as shown too, unless it folds
    something private: a whisper is told in no summary, only in the private memory of the player it was for. The
    front shows the private memories where the narrator holds every secret, as before the engine held them (where
    the engine holds them, it shows none: answering Tom needs nothing of Maya's)."""
    engine.config = dataclasses.replace(engine.config, secrets="prompt")
    game = await start(engine, "Maya", "Tom")
    await play(engine, game.id, 3)
    await engine.compact(game.id)
    before = await _turn(engine, game.id, "maya", "Action 4: I look at the sea.")
    memory_model.enqueue(
        "Fog rolls in over the black water, and the lamp's beam fades to a grey smear above the breakers. "
        "[[to Maya: A rowboat is tied under the pier.]]"
    )
    await _turn(engine, game.id, "maya", "Action 5: I look down at the water.")
    whisper = (await engine.store.log(game.id))[-1]
    assert whisper.visibility is Visibility.PRIVATE and "rowboat" in whisper.content
    await play(engine, game.id, 2, start=6)  # the whisper leaves the protected tail
    await engine.compact(game.id)
    maya = next(p for p in await engine.store.players(game.id) if p.name == "Maya")
    memory = await engine.store.player_memory(game.id, maya.id)
    assert memory is not None and memory.through_entry_id > whisper.id
    system = await _turn(engine, game.id, "maya", "Action 8: I walk on.")
    _, shown = await front_summaries(engine.store, await engine.store.memory_state(game.id))
    assert len(shown) == 2, "the story shown was kept"
    private = _private_start(before)
    assert system[:private] == before[:private], "the front is the same up to the private memories"
    told = f"Only Maya knows: {memory.summary}"
    assert told in system[private:] and told not in before
    assert system.endswith(f"Most recently:\n{shown[0].content}\n\n{shown[1].content}")

    # The next fold has nothing private in it: the private memories stay where the prompt cache holds them, and
    # only the new summary is added, at the front's end.
    await play(engine, game.id, 2, start=9)
    before = await _turn(engine, game.id, "tom", "Action 11: I wait.")
    await engine.compact(game.id)
    after = await _turn(engine, game.id, "tom", "Action 12: I wait again.")
    _, shown = await front_summaries(engine.store, await engine.store.memory_state(game.id))
    assert len(shown) == 3 and told in before
    assert after == f"{before}\n\n{shown[2].content}"
