"""The memory through the engine, with a scripted model that summarizes by quoting."""

from __future__ import annotations

import dataclasses
import json

import pytest

from bot.engine import Engine
from bot.engine.turn.narration import room_for_notes
from bot.engine.upkeep.summaries import front_summaries
from bot.errors import UserError
from bot.memory.layers import HEADERS
from bot.model import ChatMessage, ScriptedModel
from bot.model.base import TEMPLATE_TOKENS_PER_MESSAGE
from bot.model.scripted import found_nothing
from bot.store import EntryKind, SummaryKind, Visibility


def scripted_memory(messages: list[ChatMessage]) -> str:
    """Answers like a model would, but traceably: summaries quote their material."""
    system, user = messages[0].content, messages[-1].content
    if (quiet := found_nothing(messages)) is not None:
        return quiet
    if system.startswith("You keep the private memory"):
        return scripted_private_memory(user)
    if system.startswith("You keep the memory") and "New events:" in user:
        events = user.split("New events:\n", 1)[1].splitlines()
        return "Events: " + " | ".join(events)
    if system.startswith("You keep the memory") and "What happened next:" in user:
        story, addition = user.removeprefix("Story so far:\n").split("\n\nWhat happened next:\n", 1)
        story = "" if story == "(nothing yet)" else story
        return " ".join((story + " " + addition).split()[-300:])
    if system.startswith("You keep the memory") and "Write its recap" in system:
        return "Recap: the chapter ended."
    if system.startswith("You keep the memory"):
        return "Story after the chapter."
    return f"The GM answers in {len(user.split())} words' time, while rain drums on the slate roof."


def scripted_private_memory(user: str) -> str:
    """A private memory that quotes what the player witnessed, so tests can see what it was built from."""
    seen = user.split(" witnessed since:\n", 1)[1].splitlines()
    summary = ("Knows: " + " | ".join(seen))[-690:]
    return json.dumps({"summary": summary, "facts": [line[:140] for line in seen[-10:]]})


async def start(engine: Engine, *names: str):
    started = await engine.start_game("chan", "lighthouse")
    for name in names or ("Maya",):
        await engine.join(started.game.id, name.lower(), name)
    return started.game


async def play(engine: Engine, game_id: int, turns: int, who: str = "maya", start: int = 1) -> None:
    for turn in range(start, start + turns):
        await engine.act(game_id, who, f"Action {turn}: I search the rock, step {turn}.")
        await engine.memory.idle(game_id)


async def test_a_300_turn_game_stays_in_budget_and_its_summaries_cover_every_folded_turn(
    engine: Engine, memory_model: ScriptedModel
):
    game = await start(engine)
    await play(engine, game.id, 10)
    tenth = await engine.last_action_of(game.id, "maya")
    await play(engine, game.id, 289, start=11)
    marker = (await engine.memory_status(game.id)).folded_through  # what the last prompt is built after
    await play(engine, game.id, 1, start=300)

    trace = await engine.last_trace(game.id)
    assert trace.total_tokens <= trace.limit == 2048 - 128 - room_for_notes(engine.worker.count_tokens)
    assert trace.overflow is None
    status = await engine.memory_status(game.id)
    assert status.turn == 300 and status.messages_summarized > 500

    # The chunk summaries tile the folded log: no gap, no overlap, nothing past the marker.
    log = await engine.store.log(game.id)
    chunks = await engine.store.summaries(game.id, SummaryKind.CHUNK)
    covered = [e.id for c in chunks for e in log if c.first_entry_id <= e.id <= c.last_entry_id]
    assert covered == [e.id for e in log if e.id <= status.folded_through]
    assert chunks[-1].last_entry_id == status.folded_through
    # A chunk closes at the trigger's messages, or earlier when recent turns are being cut off for lack of
    # room before one closed (this context is small): then everything but the protected tail is folded.
    sizes = [sum(1 for e in log if c.first_entry_id <= e.id <= c.last_entry_id) for c in chunks]
    assert max(sizes) == engine.config.memory.trigger_messages and min(sizes) > 0
    # The hot window is only what is not folded, and at least the protected tail.
    hot = trace.layer("hot").items
    assert hot and all(int(ref.split(":")[1]) > marker for ref in hot)
    assert len(hot) >= engine.config.memory.protected_tail - 1

    # Editing turn 10, long since summarized, rebuilds what covered it.
    assert tenth.turn == 10 and tenth.id <= status.folded_through
    await engine.edit_entry(game.id, tenth.id, "I hide the brass key under the mat.", user_key="maya")
    await engine.memory.idle(game.id)
    current = await engine.store.summaries(game.id)
    assert not any(s.stale for s in current)
    text = " ".join(s.content for s in current)
    assert "Action 10: I search the rock, step 10." not in text
    covering = [s for s in current if s.kind is SummaryKind.CHUNK and s.first_entry_id <= tenth.id <= s.last_entry_id]
    assert len(covering) == 1 and "brass key under the mat" in covering[0].content
    old_versions = await engine.store.summaries(game.id, current=False)
    assert any("Action 10: I search the rock" in s.content and s.replaced_by for s in old_versions), "kept, replaced"


async def test_each_prompt_begins_with_the_last_one_and_its_reply_between_compactions(
    engine: Engine, memory_model: ScriptedModel
):
    game = await start(engine, "Maya", "Tom")
    await play(engine, game.id, 6)
    previous, compared, changed, reuse = None, 0, 0, []
    for turn in range(7, 40):
        before = await engine.memory_status(game.id)
        who = "tom" if turn % 3 == 0 else "maya"
        if turn % 5 == 0:
            await engine.roll(game.id, who, "1d20")
        result = await engine.act(game.id, who, f"Action {turn}: I look for the brass key near the lamp.")
        await engine.memory.idle(game.id)
        messages, trace = result.context.messages, result.context.trace
        reply = ChatMessage(role="assistant", content=result.reply.content)
        if previous is not None:
            same_epoch = before.folded_through == previous[1] and trace.layer("hot").left_out == previous[2]
            if same_epoch:
                # The append-only rule: the whole last prompt, then the reply the model wrote to it.
                assert messages[: len(previous[0])] == previous[0]
                assert messages[len(previous[0])] == previous[3]
                # And only this turn is new: its action, and what it adds for the GM, each layer within its
                # budget (the action's best recalled matches may take the whole recall budget).
                count = engine.worker.count_tokens
                carried = sum(count(m.content) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages[: len(previous[0]) + 1])
                added = sum(trace.layer(name).budget for name in ("scene", "lore", "recall"))
                action = trace.layer("action").tokens + 2 * TEMPLATE_TOKENS_PER_MESSAGE
                assert trace.total_tokens - carried <= added + action, (trace.total_tokens, carried, added, action)
                reuse.append(trace.prefix_reuse)
                compared += 1
            else:
                changed += 1
        previous = (messages, before.folded_through, trace.layer("hot").left_out, reply)
    # Over a third of the 33 turns compared (the hot window is cut in blocks, each cut a new prefix; the prompt
    # leaves room for a retry's note: see room_for_notes).
    assert compared >= 12 and changed >= 1, (compared, changed)
    # A turn whose best recalled matches are new to the prompt reads them (about 16% of this small prompt, once
    # in a few turns); on average nine tenths of each prompt is read from the cache.
    assert sum(reuse) / len(reuse) > 0.9, reuse


async def test_a_failed_summary_keeps_the_old_state_and_is_retried(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    broken = {"on": True}

    def flaky(messages):
        if broken["on"] and messages[0].content.startswith("You keep the memory"):
            raise RuntimeError("out of memory")
        return scripted_memory(messages)

    memory_model.default = flaky
    await play(engine, game.id, 15)
    status = await engine.memory_status(game.id)
    assert status.folded_through == 0 and status.short_summary is None
    assert "out of memory" in status.last_error
    assert status.next_compaction.messages_to_go == 0, "the trigger is reached; only the model failed"
    # Failing again and again on the same chunk, compaction is parked rather than tried after every turn.
    assert [line.split(":")[0] for line in status.parked] == ["compaction"] and "out of memory" in status.parked[0]

    broken["on"] = False
    await play(engine, game.id, 1, start=16)
    assert (await engine.memory_status(game.id)).folded_through == 0, "parked: not tried after this turn"
    await engine.compact(game.id)  # an admin's /compact tries parked jobs again
    await engine.memory.idle(game.id)
    status = await engine.memory_status(game.id)
    assert status.folded_through > 0 and status.short_summary is not None and status.parked == []
    # Nothing was lost: the first chunk starts at the first message of the game.
    first = (await engine.store.summaries(game.id, SummaryKind.CHUNK))[0]
    assert first.first_entry_id == (await engine.store.log(game.id))[0].id


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


async def test_summaries_and_recaps_reach_the_next_prompt(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    await play(engine, game.id, 25)
    await engine.next_chapter(game.id)
    await engine.act(game.id, "maya", "I climb the tower.")
    prompt = next(c for c in reversed(memory_model.calls) if c.kind == "stream").messages[0].content
    assert "Chapters so far:\n- Recap: the chapter ended." in prompt
    assert "The story so far:" in prompt and "Most recently:\nEvents: " in prompt
    assert "Current chapter: The Lamp." in prompt


async def test_beats_judged_done_finish_the_chapter(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)

    def judge(messages):
        if messages[0].content.startswith("You track the progress"):
            return json.dumps({"done": ["land", "log-book"]})
        return scripted_memory(messages)

    memory_model.default = judge
    await play(engine, game.id, 1)
    status = await engine.memory_status(game.id)
    assert status.chapter_index == 1 and status.chapter_title == "The Lamp" and status.beats_done == []
    assert [r.text for r in status.chapter_recaps] == ["Recap: the chapter ended."]
    json_calls = [c for c in memory_model.calls if c.kind == "json" and "done" in c.schema["properties"]]
    assert json_calls and json_calls[0].schema["properties"]["done"]["items"]["enum"] == ["land", "log-book"]


async def test_a_broken_beat_judgement_changes_nothing(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)

    def judge(messages):
        if messages[0].content.startswith("You track the progress"):
            return '{"done": ["not-a-beat"]}'
        return scripted_memory(messages)

    memory_model.default = judge
    await play(engine, game.id, 2)
    status = await engine.memory_status(game.id)
    assert status.chapter_index == 0 and status.beats_done == []
    assert "beat judgement" in status.last_error


async def test_the_story_stays_about_flat_across_chapters(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    await play(engine, game.id, 40)
    before = (await engine.memory_status(game.id)).story_summary.words
    report = await engine.next_chapter(game.id)
    assert report.finished == "Arrival" and report.next == "The Lamp"
    assert report.story_words_after <= before
    last = await engine.next_chapter(game.id)
    assert last.finished == "The Lamp" and last.next is None
    with pytest.raises(UserError, match="already done"):
        await engine.next_chapter(game.id)
    await engine.act(game.id, "maya", "I look at the sea.")
    assert "Every chapter is done" in memory_model.last().messages[0].content


async def test_retry_replaces_the_last_reply(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    await engine.act(game.id, "maya", "I open the hatch.")
    await engine.memory.idle(game.id)
    better = "The hatch swings up on rusted hinges, and cold air smelling of tar and rope rises from the hold below."
    memory_model.enqueue(better)
    result = await engine.retry(game.id)
    assert result.turn == 1 and result.text == better
    replies = [e for e in await engine.store.log(game.id, include_deleted=True) if e.kind is EntryKind.GM and e.turn]
    assert [(r.content, r.deleted) for r in replies] == [
        (replies[0].content, True),
        (better, False),
    ]
    assert "Maya: I open the hatch." in memory_model.last().prompt_text
    assert replies[0].content.startswith("The GM answers")
    assert replies[0].content not in memory_model.last().prompt_text


async def test_retry_before_any_turn_is_refused(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    with pytest.raises(UserError, match="no GM reply to retry"):
        await engine.retry(game.id)


async def test_edits_and_deletes_reach_the_next_prompt_and_only_the_author_may(engine, memory_model):
    game = await start(engine, "Maya", "Tom")
    await engine.act(game.id, "maya", "I whistle a sea shanty.")
    mine = await engine.last_action_of(game.id, "maya")
    with pytest.raises(UserError, match="only change your own"):
        await engine.edit_entry(game.id, mine.id, "Tom was here.", user_key="tom")
    await engine.edit_entry(game.id, mine.id, "I hum quietly.", user_key="maya")
    await engine.act(game.id, "tom", "I listen.")
    prompt = memory_model.last().prompt_text
    assert "I hum quietly." in prompt and "sea shanty" not in prompt
    await engine.delete_entry(game.id, mine.id, user_key="maya")
    await engine.act(game.id, "tom", "I listen again.")
    assert "I hum quietly." not in memory_model.last().prompt_text


async def test_memory_status_and_recall_data(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    await play(engine, game.id, 12)
    status = await engine.memory_status(game.id)
    assert status.short_summary and status.short_summary.first_turn == 0
    assert status.folded_through and status.summaries_written >= 1
    assert [layer.name for layer in status.layers][:3] == ["frozen", "secrets", "chapters"]
    assert status.next_compaction.protected_tail == 4
    assert status.lore_entries == 3 and status.pin_cap == 20
    assert 0 < status.cache_reuse <= 1
    trace = await engine.last_trace(game.id)
    assert trace.layer("action").items == [f"entry:{(await engine.last_action_of(game.id, 'maya')).id}"]
    assert trace.layer("short").items == [f"summary:{status.short_summary.id}"]


async def test_per_game_settings_change_that_game_only(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    other = (await engine.start_game("elsewhere", "lighthouse")).game
    await engine.join(other.id, "tom", "Tom")
    await engine.set_setting(game.id, "trigger_messages", "6")
    await engine.set_setting(game.id, "reply_tokens", "64")
    await engine.set_setting(game.id, "budgets.secrets", "10")
    await play(engine, game.id, 5)
    for n in range(5):
        await engine.act(other.id, "tom", f"Other {n}.")
        await engine.memory.idle(other.id)
    mine, theirs = await engine.memory_status(game.id), await engine.memory_status(other.id)
    assert mine.folded_through > 0, "six messages make a chunk in this game"
    assert theirs.folded_through == 0, "the other game keeps the default of twenty"
    trace = await engine.last_trace(game.id)
    assert trace.reply_tokens == 64 and trace.layer("secrets").left_out
    mine_turns = [c for c in memory_model.calls if c.kind == "stream" and "Action 5:" in c.prompt_text]
    theirs_turns = [c for c in memory_model.calls if c.kind == "stream" and "Other 4." in c.prompt_text]
    assert mine_turns[-1].max_tokens == 64 and theirs_turns[-1].max_tokens == 128
    with pytest.raises(UserError, match="trigger_messages: Input should be greater than or equal to 2"):
        await engine.set_setting(game.id, "trigger_messages", "1")


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
