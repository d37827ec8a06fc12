"""The memory through the engine, with a scripted model that summarizes by quoting."""

from __future__ import annotations

import json

from bot.engine import Engine
from bot.engine.turn.narration import room_for_notes
from bot.model import ChatMessage, ScriptedModel
from bot.model.base import TEMPLATE_TOKENS_PER_MESSAGE
from bot.model.scripted import found_nothing
from bot.store import SummaryKind


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


async def test_summaries_and_recaps_reach_the_next_prompt(engine: Engine, memory_model: ScriptedModel):
    game = await start(engine)
    await play(engine, game.id, 25)
    await engine.next_chapter(game.id)
    await engine.act(game.id, "maya", "I climb the tower.")
    prompt = next(c for c in reversed(memory_model.calls) if c.kind == "stream").messages[0].content
    assert "Chapters so far:\n- Recap: the chapter ended." in prompt
    assert "The story so far:" in prompt and "Most recently:\nEvents: " in prompt
    assert "Current chapter: The Lamp." in prompt
