"""Hidden information through the engine: private memories, NPC witnesses, rebuilds after edits."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import shutil
from pathlib import Path

import pytest

from bot.engine import Engine, EngineConfig
from bot.errors import UserError
from bot.model import ScriptedModel
from bot.model.base import ChatMessage
from bot.store import EntryKind, Visibility
from tests.engine.upkeep.test_memory import scripted_memory, start

PROJECT = Path(__file__).parent.parent.parent


def private_memory_calls(model: ScriptedModel) -> list[tuple[str, str]]:
    """(player name, prompt) of every private-memory update the model was asked for."""
    found = []
    for call in model.calls:
        system = call.messages[0].content
        match = re.match(r"You keep the private memory of (\w+)", system)
        if call.kind == "json" and match:
            found.append((match.group(1), call.prompt_text))
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_each_update_reads_only_what_that_player_witnessed(engine: Engine, memory_model, seed):
    """Random streams of public and private events; every marker in an update was witnessed by its player."""
    rng = random.Random(seed)
    game = (await engine.start_game(f"chan{seed}", "lighthouse")).game
    names = ["Maya", "Tom", "Ada"]
    seated = set()
    for name in names[:2]:
        await engine.join(game.id, name.lower(), name)
        seated.add(name)
    for step in range(1, 25):
        choice = rng.random()
        if choice < 0.1:  # someone leaves or (re)joins
            name = rng.choice(names)
            if name in seated and len(seated) > 1:
                await engine.leave(game.id, name.lower())
                seated.discard(name)
            elif name not in seated:
                await engine.join(game.id, name.lower(), f"{name}{step}" if step > 1 else name)
                seated.add(name)
            continue
        actor = rng.choice(sorted(seated))
        if choice < 0.35:
            memory_model.enqueue(f"REPLY{step}W only for {actor}.")
            await engine.whisper(game.id, actor.lower(), f"ACTION{step}W secretly")
        elif choice < 0.45:
            await engine.roll(game.id, actor.lower(), "1d20", secret=True)
        else:
            target = rng.choice(sorted(seated))
            public = f"REPLY{step}P in public: the lamp gutters, gulls wheel past the gallery and the surf booms below."
            memory_model.enqueue(f"{public} [[to {target}: ASIDE{step}X for {target}]]")
            await engine.act(game.id, actor.lower(), f"ACTION{step}P openly")
        await engine.memory.idle(game.id)

    log = await engine.store.log(game.id, include_deleted=True)
    players = {p.id: p for p in await engine.store.players(game.id, include_left=True)}
    by_marker = {}
    for entry in log:
        for marker in re.findall(r"(?:ACTION|REPLY|ASIDE)\d+[WPX]", entry.content):
            by_marker[marker] = entry
    calls = private_memory_calls(memory_model)
    assert calls, "private memories were updated"
    ids = {p.name: p.id for p in players.values()}
    for name, prompt in calls:
        for marker in re.findall(r"(?:ACTION|REPLY|ASIDE)\d+[WPX]", prompt):
            entry = by_marker[marker]
            assert ids[name] in entry.visible_to, f"{name}'s update read {marker}, which they did not witness"
    # And the private things did reach the memory of the one they were for.
    for entry in log:
        if entry.visibility is Visibility.PRIVATE and entry.kind is EntryKind.GM:
            owner = players[entry.visible_to[0]].name
            marker = re.search(r"(?:REPLY|ASIDE)\d+[WX]", entry.content).group(0)
            assert any(marker in prompt for name, prompt in calls if name == owner)


async def test_a_private_memory_is_bounded_and_shown_to_the_gm_as_gm_only(engine: Engine, memory_model):
    game = await start(engine, "Maya", "Tom")

    def wordy(messages: list[ChatMessage]) -> str:
        if messages[0].content.startswith("You keep the private memory of Maya"):
            facts = [f"Maya fact {i}" for i in range(10)]
            return json.dumps({"summary": "One. Two. Three. Four. Five. Six.", "facts": facts})
        return scripted_memory(messages)

    memory_model.default = wordy
    memory_model.enqueue(
        "The wind howls around the gallery and rattles every pane as you climb, and the iron stair shudders underfoot. "
        "[[to Maya: The lamp glass is cracked.]]"
    )
    await engine.act(game.id, "maya", "I climb the tower.")
    await engine.memory.idle(game.id)
    player, memory = await engine.private_memory(game.id, "maya")
    assert memory.summary == "One. Two. Three. Four. Five." and len(memory.facts) == 10
    _, toms = await engine.private_memory(game.id, "tom")
    assert "cracked" not in toms.summary + " ".join(toms.facts)

    # With every secret in the narrator's prompt, the front holds each player's memory as it stood at the last
    # compaction: after one, the GM has Maya's.
    engine.config = dataclasses.replace(engine.config, secrets="prompt")
    await engine.compact(game.id)
    await engine.act(game.id, "tom", "I wait below.")
    front = memory_model.last().messages[0].content
    assert "GM-only, what each player's character knows: never say it in the public reply" in front
    assert "- Only Maya knows: One. Two. Three. Four. Five. Their key facts: Maya fact 0;" in front
    assert "cracked" not in front.split("Only Tom knows")[-1].split("- Only")[0]
    trace = await engine.last_trace(game.id)
    assert f"private:{player.id}" in trace.layer("private").items

    # Where the engine holds the secrets (the default, F39) the narrator holds what the scene has earned: answering
    # Tom needs nothing of what Maya alone knows.
    engine.config = dataclasses.replace(engine.config, secrets="held")
    await engine.act(game.id, "tom", "I wait some more.")
    prompt = "\n".join(m.content for m in memory_model.last().messages)
    assert "Only Maya knows" not in prompt and "Maya fact" not in prompt
    assert not (await engine.last_trace(game.id)).layer("private").items


async def test_an_edit_rebuilds_the_memories_that_read_it(engine: Engine, memory_model):
    game = await start(engine, "Maya", "Tom")
    memory_model.enqueue("Nobody saw.")
    result = await engine.whisper(game.id, "maya", "I hide the ORIGINALKEY in my boot.")
    await engine.memory.idle(game.id)
    _, memory = await engine.private_memory(game.id, "maya")
    assert "ORIGINALKEY" in memory.summary

    memory_model.block.clear()  # hold the rebuild at its model call
    await engine.edit_entry(game.id, result.action.id, "I hide the EDITEDKEY in my coat.", user_key="maya")
    # Until the rebuild, the GM is given the memory as it was before that message.
    context = await engine.preview(game.id, "Tom", "I look around.")
    gm_only = context.messages[-1].content.split("GM-only, this scene")[-1]
    assert "ORIGINALKEY" not in gm_only
    _, memory = await engine.private_memory(game.id, "maya")
    assert memory is None or "ORIGINALKEY" not in memory.summary
    memory_model.block.set()
    await engine.memory.idle(game.id)
    _, memory = await engine.private_memory(game.id, "maya")
    assert "EDITEDKEY" in memory.summary and "ORIGINALKEY" not in memory.summary
    _, toms = await engine.private_memory(game.id, "tom")
    assert "KEY" not in toms.summary


async def test_npcs_witness_public_scenes_they_are_in_and_the_gm_is_told(engine: Engine, memory_model, worlds_dir):
    shutil.copy(PROJECT / "worlds" / "hollow-manor.yaml", worlds_dir)
    engine.worlds.reload()
    engine.config = EngineConfig(n_ctx=8192, reply_tokens=128)  # room for the manor's whole GM-only material
    game = (await engine.start_game("chan", "hollow-manor")).game
    await engine.join(game.id, "maya", "Maya")
    memory_model.enqueue(
        "Mrs. Crane unlocks the study and gasps. Lamplight spills across the hall carpet while forty clocks tick on "
        "behind you."
    )
    await engine.act(game.id, "maya", "I ask the housekeeper to open the study.")
    memory_model.enqueue("Nobody sees you.")
    await engine.whisper(game.id, "maya", "I pocket the key while Mrs. Crane weeps.")
    await engine.memory.idle(game.id)
    log = await engine.store.log(game.id)
    opening, action, reply, secret, answer = log[0], *log[-4:]
    assert {"hester-crane", "meg-wren"} <= set(opening.npcs), "the opening scene's NPCs witness it"
    assert "tobias-crane" not in opening.npcs
    assert "hester-crane" in action.npcs and "hester-crane" in reply.npcs
    assert secret.npcs == () and answer.npcs == (), "no NPC witnesses a private exchange"

    memory_model.enqueue(
        "Mrs. Crane folds her hands and says she was in the kitchen, setting bread to rise; Tobias stares at the floor "
        "and says nothing."
    )
    await engine.act(game.id, "maya", "I ask Mrs. Crane and Tobias where they were.")
    # Hester missed the secret turn, so she gets a new note; Tobias enters. Both go into this turn's message.
    prompt = memory_model.last().messages[-1].content
    assert "Tobias Crane is here. Tobias Crane witnessed turns 3, and knows nothing else" in prompt
    # NPCs who witnessed the same turns share one note: what they saw is said once.
    hester = next(line for line in prompt.splitlines() if "Hester Crane" in line and " are here." in line)
    assert (
        hester.startswith("- Meg Wren, Hester Crane and ")
        and "witnessed turns 0-1, 3, and knows nothing else" in hester
    )
    assert "pocket the key" not in hester and "Mrs. Crane unlocks the study" in hester, "she saw only the public scene"
    assert prompt.count("Mrs. Crane unlocks the study") == 1
    trace = await engine.last_trace(game.id)
    scene = set(trace.layer("scene").items)
    assert "scene:tobias-crane:3" in scene and any(ref.startswith("scene:meg-wren,hester-crane,") for ref in scene)


async def test_a_rebuild_from_far_back_reads_everything_since_in_several_calls(engine: Engine, memory_model):
    game = await start(engine, "Maya")
    first = None
    for i in range(1, 26):  # 25 turns of long replies: more than one call reads (calls are bounded in tokens)
        tide = "and the tide runs cold " * 12
        memory_model.enqueue(f"REPLY{i}Z {tide}while the gulls huddle on the gallery rail. [[to Maya: ASIDE{i}Z]]")
        result = await engine.act(game.id, "maya", f"ACTION{i}Z")
        first = first or result.action
        await engine.memory.idle(game.id)
    calls = len(private_memory_calls(memory_model))
    await engine.edit_entry(game.id, first.id, "EDITED1Z", user_key="maya")
    await engine.memory.idle(game.id)
    rebuild = private_memory_calls(memory_model)[calls:]
    assert len(rebuild) >= 2, "the rebuild catches up in several calls"
    read = " ".join(prompt for _, prompt in rebuild)
    assert "EDITED1Z" in read and "ACTION1Z" not in read
    assert all(f"ASIDE{i}Z" in read for i in range(1, 26)), "no aside is lost"


async def test_retry_after_a_whisper_answers_that_player_alone_and_only_they_may_ask(engine: Engine, memory_model):
    game = await start(engine, "Maya", "Tom")
    memory_model.enqueue("Nobody sees you.")
    await engine.whisper(game.id, "maya", "I sneak to the grotto SECRETWORD.")
    await engine.memory.idle(game.id)
    with pytest.raises(UserError, match="only they can retry"):
        await engine.retry(game.id, user_key="tom")
    memory_model.enqueue("Publicly: Maya sneaks to the grotto.")
    result = await engine.retry(game.id, user_key="maya")
    assert not result.public and [p.player.name for p in result.private] == ["Maya"]
    turn = [e for e in await engine.store.log(game.id) if e.turn == result.turn and e.kind is not EntryKind.SYSTEM]
    assert turn and all(e.visibility is Visibility.PRIVATE for e in turn), "nothing of the secret turn is public"
    assert "Answer Maya privately" in memory_model.last().messages[-1].content


async def test_retry_takes_the_old_asides_with_the_old_reply(engine: Engine, memory_model):
    game = await start(engine, "Maya")
    memory_model.enqueue(
        "The door creaks open onto the lamp-room stair, and cold salt air pours down from the gallery above. "
        "[[to Maya: OLDASIDE]]"
    )
    await engine.act(game.id, "maya", "I open the door.")
    await engine.memory.idle(game.id)
    sticks = (
        "The door sticks fast in its swollen frame; you shoulder it twice before it shudders open onto the dark stair."
    )
    memory_model.enqueue(f"{sticks} [[to Maya: NEWASIDE]]")
    result = await engine.retry(game.id)
    live = [e.content for e in await engine.store.log(game.id) if e.turn == result.turn and e.kind is EntryKind.GM]
    assert live == [sticks, "NEWASIDE"]


async def test_a_recap_reads_public_messages_only(engine: Engine, memory_model):
    game = await start(engine, "Maya")
    memory_model.enqueue(
        "The rock is cold and slick with weed, and the surf sucks at your boots as the boat pulls away."
    )
    await engine.act(game.id, "maya", "I land on the rock.")
    memory_model.enqueue("Nobody sees you.")
    await engine.whisper(game.id, "maya", "I hide the WHISPERED log book.")
    await engine.memory.idle(game.id)
    await engine.next_chapter(game.id)
    recap_prompts = [c.prompt_text for c in memory_model.calls if "recap" in c.messages[0].content.lower()]
    assert recap_prompts and not any("WHISPERED" in p for p in recap_prompts)
    assert any("I land on the rock." in p for p in recap_prompts)
    beat_prompts = [c.prompt_text for c in memory_model.calls if c.messages[0].content.startswith("You track")]
    assert beat_prompts and not any("WHISPERED" in p for p in beat_prompts)


async def test_a_correction_note_is_on_the_one_call_that_needs_it_and_never_read_again(engine: Engine, memory_model):
    """A model given a note to write a reply again copies it into later replies if later prompts show it."""
    from bot.engine.turn.drafting import REGENERATE

    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.join(game.id, "maya", "Maya")
    memory_model.enqueue(
        # a leak: written again
        "The gulls only scream back at you, and the lamp gutters. Between us, the keeper is alive and hiding below. "
        "What now?",
        "The lamp gutters and the wind moans through the tower; the gulls wheel off into the dark without a cry. "
        "What now?",
    )
    first = await engine.act(game.id, "maya", "I ask the gulls where the keeper went.")
    await engine.memory.idle(game.id)
    assert first.draft is not None and any(REGENERATE in c.messages[-1].content for c in memory_model.calls)
    memory_model.enqueue(
        # nothing new: asked once more
        "The lamp gutters and the wind moans through the tower; the gulls wheel off into the dark without a cry.",
        "Rain streaks the window glass while the tide climbs the black rocks. Now?",
    )
    second = await engine.act(game.id, "maya", "I wait by the window.")
    await engine.memory.idle(game.id)
    new = "(Your last reply only repeated Maya's action or an earlier reply, or told the table nothing. Write what "
    new += "happens when they do it (wait, window)"
    assert any(new in c.messages[-1].content for c in memory_model.calls)

    memory_model.enqueue("Gulls scream overhead as a rowing boat noses out of the fog toward the landing. Well?")
    third = await engine.act(game.id, "maya", "I go down to the landing.")
    [call] = [c for c in memory_model.calls if c.messages[-1].content.endswith("I go down to the landing.")]
    read = "\n".join(m.content for m in call.messages)
    for note in (REGENERATE, new, "Your last reply", "GM note"):
        assert note not in read, f"{note!r} is in a later prompt"
    assert third.context.messages == call.messages
    stored = [e.content for e in await engine.store.log(game.id)]
    assert not any("GM note" in text or "Your last reply" in text for text in stored)
    assert second.text.startswith("Rain streaks")
