"""Tests of bot.engine.turn.prompt: the prompt the narrator answers an action with, built from the game's memory
and its unsummarized log under the game's budget, where the engine holds the world's secrets (F39)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from bot.engine import Engine
from bot.engine.turn.prompt import told_alone
from bot.engine.turn.results import MODEL_FAILED, ModelFailed
from bot.model import ScriptedModel
from bot.model.base import ChatMessage, ModelUnavailable
from bot.store import EntryKind, Game, LogEntry, NewEntry, NewReveal, Player, Visibility

CLUE = "The last page names a ship that does not exist."
TRUTH = "The keeper is alive, hiding in the sea cave beneath the rock."


def _entry(kind: EntryKind, content: str, visibility: Visibility = Visibility.PUBLIC) -> LogEntry:
    return LogEntry(id=5, game_id=1, turn=2, kind=kind, author="GM to Maya", content=content, visibility=visibility,
                    visible_to=(1,), created_at=datetime.now(UTC))  # fmt: skip


def test_a_clue_the_engine_gave_one_player_shows_only_that_something_was_told():
    given = _entry(EntryKind.GM, CLUE, Visibility.PRIVATE)
    shown = told_alone(given, {CLUE})
    assert shown.content == "" and shown.author == "GM to Maya" and shown.visible_to == (1,)
    assert given.content == CLUE, "the log's entry is left as it is"


def test_what_the_narrator_wrote_itself_or_said_in_public_is_read_as_it_is():
    own_aside = _entry(EntryKind.GM, "You notice the lamp glass is cracked.", Visibility.PRIVATE)
    public = _entry(EntryKind.GM, CLUE)
    action = _entry(EntryKind.ACTION, CLUE, Visibility.PRIVATE)
    for entry in (own_aside, public, action):
        assert told_alone(entry, {CLUE}) is entry
    assert told_alone(_entry(EntryKind.GM, CLUE, Visibility.PRIVATE), set()).content == CLUE


async def _action(engine: Engine, text: str, channel: str = "chan") -> tuple[Game, Player, LogEntry]:
    game = (await engine.start_game(channel, "lighthouse")).game
    maya = await engine.join(game.id, "maya", "Maya")
    await engine.settled(game.id)
    game = await engine.store.game(game.id)
    (action,) = await engine.store.append(
        game.id, NewEntry(turn=game.turn + 1, kind=EntryKind.ACTION, author="Maya", player_id=maya.id, content=text)
    )
    return game, maya, action


def _text(messages: list[ChatMessage]) -> str:
    return "\n".join(m.content for m in messages)


async def test_the_prompt_holds_the_action_and_the_log_but_no_truth_until_an_action_uncovers_it(engine: Engine):
    game, maya, action = await _action(engine, "I climb down and search the sea cave.")
    held = await engine.prompts.build(game, action, remember=False)
    prompt = _text(held.messages)
    assert "I climb down and search the sea cave." in prompt and "Gull Rock stands dark" in prompt
    assert TRUTH not in prompt and CLUE not in prompt, "the engine holds the world's secrets"
    assert held.tokens > 0 and held.tokens <= engine.config.n_ctx

    uncovers = [NewReveal(ref="truth:keeper-alive", why="words: cave + search", player_id=maya.id)]
    told = await engine.prompts.build(game, action, remember=False, uncovers=uncovers)
    last = told.messages[-1].content
    assert TRUTH in last and "Maya's action uncovers this" in last, "told beside the action"


async def test_with_every_secret_in_the_prompt_the_narrator_reads_the_truths_from_the_start(engine: Engine):
    engine.config = dataclasses.replace(engine.config, secrets="prompt")
    game, _, action = await _action(engine, "I look around.")
    assert TRUTH in _text((await engine.prompts.build(game, action, remember=False)).messages)


async def test_a_clue_given_to_a_player_by_the_engine_is_never_in_the_narrators_prompt(engine: Engine):
    game, maya, action = await _action(engine, "I look around.")
    await engine.store.append(
        game.id,
        NewEntry(turn=action.turn, kind=EntryKind.GM, author="GM to Maya", content=CLUE,
                 visibility=Visibility.PRIVATE, visible_to=(maya.id,)),
    )  # fmt: skip
    context = await engine.prompts.build(game, action, remember=False)
    assert CLUE not in _text(context.messages)


async def test_a_prompt_before_an_entry_holds_the_log_through_it_in_its_recent_turns_and_nothing_after(
    engine: Engine,
):
    """As a retry asks it: the reply it replaces is deleted first, and the reply is written again from there."""
    game, _, action = await _action(engine, "I knock on the cottage door.")
    said = [NewEntry(turn=action.turn, kind=EntryKind.GM, author="GM", content=f"A {word} creaks open.")
            for word in ("FIRSTREPLY", "LATERREPLY")]  # fmt: skip
    first, later = await engine.store.append(game.id, *said)
    whole = await engine.prompts.build(game, action, remember=False)
    assert {f"entry:{first.id}", f"entry:{later.id}"} <= set(whole.trace.layer("hot").items)
    before = await engine.prompts.build(game, action, before_id=first.id, remember=False)
    hot = before.trace.layer("hot").items
    assert f"entry:{later.id}" not in hot and f"entry:{first.id}" in hot
    assert f"entry:{action.id}" not in hot, "the action is the prompt's last message, not one of its recent turns"
    assert before.messages[-1].content.endswith("Maya: I knock on the cottage door.")


async def test_a_turns_prompt_keeps_its_notes_with_the_action_and_a_preview_keeps_nothing(engine: Engine):
    game, _, action = await _action(engine, "I force the lock of the oil store in the cellar.")
    kept_before = await engine.store.turn_notes(game.id, 0)
    preview = await engine.prompts.build(game, action, remember=False)
    assert any(note.ref.endswith("oil-store") for note in preview.notes), "the lore the action names is a note"
    assert await engine.store.turn_notes(game.id, 0) == kept_before and action.id not in kept_before
    built = await engine.prompts.build(game, action)
    kept = (await engine.store.turn_notes(game.id, 0))[action.id]
    assert [n.ref for n in kept] == [n.ref for n in built.notes]
    again = await engine.prompts.build(game, action)
    assert [n.ref for n in again.notes] == [n.ref for n in built.notes]
    assert [n.ref for n in (await engine.store.turn_notes(game.id, 0))[action.id]] == [n.ref for n in kept]


async def test_a_turns_prompt_measures_what_it_shares_with_the_last_one_and_a_preview_does_not(engine: Engine):
    game, _, action = await _action(engine, "I look around.")
    first = await engine.prompts.build(game, action, remember=False)
    assert first.trace.prefix_reuse is None
    engine.sessions[game.id].last_prompt = [*first.messages, ChatMessage(role="assistant", content="Gulls cry.")]
    remembered = await engine.prompts.build(game, action)
    assert remembered.trace.prefix_reuse is not None and remembered.trace.prefix_reuse > 0.5
    assert (await engine.prompts.build(game, action, remember=False)).trace.prefix_reuse is None


async def test_a_tokenizer_that_fails_while_the_prompt_is_built_fails_the_turn_its_action_saved(
    engine: Engine, scripted: ScriptedModel, monkeypatch: pytest.MonkeyPatch
):
    game, _, action = await _action(engine, "I look around.")

    def down(text: str) -> int:
        raise ModelUnavailable("the model server's tokenizer is not answering")

    monkeypatch.setattr(scripted, "count_tokens", down)
    with pytest.raises(ModelFailed) as failed:
        await engine.prompts.build(game, action)
    assert str(failed.value) == MODEL_FAILED and failed.value.turn == action.turn
    assert await engine.store.entry(action.id) == action, "the action stays in the log"
