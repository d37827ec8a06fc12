"""Tests of bot.engine.turn.results: what the engine hands a front end (a turn's result, a failed turn) and the
sentence members read when a command outside a turn finds the model unavailable."""

from __future__ import annotations

import logging

import pytest

from bot.engine import Engine
from bot.engine.turn.results import (
    MODEL_FAILED,
    MODEL_UNAVAILABLE,
    NOTHING_TO_SAY,
    ModelDown,
    ModelFailed,
    TurnResult,
    asks_the_model,
)
from bot.errors import UserError
from bot.model import ScriptedModel
from bot.model.base import ModelUnavailable
from bot.store import EntryKind, Visibility


def test_a_failed_turn_tells_the_player_their_action_is_saved_and_which_turn_a_retry_answers():
    failed = ModelFailed(turn=4)
    assert isinstance(failed, UserError)
    assert str(failed) == MODEL_FAILED == "The GM could not answer just now; your action is saved. Try again."
    assert failed.turn == 4
    said_nothing = ModelFailed(NOTHING_TO_SAY, turn=2)
    assert str(said_nothing) == "The GM had nothing to say; your action is saved. Try again." and said_nothing.turn == 2


def test_a_model_down_outside_a_turn_says_only_that_it_is_unavailable():
    down = ModelDown()
    assert isinstance(down, UserError)
    assert (
        str(down) == MODEL_UNAVAILABLE == "The model is unavailable just now; nothing is lost. Try again in a minute."
    )
    assert str(ModelDown("Compaction could not run.")) == "Compaction could not run."


async def test_a_model_unavailable_during_a_command_becomes_model_down_and_the_cause_goes_to_the_log(caplog):
    with caplog.at_level(logging.WARNING, logger="bot.engine.turn.results"):
        with pytest.raises(ModelDown) as down:
            async with asks_the_model(7, "compaction"):
                raise ModelUnavailable("http://10.0.0.5:8080 refused the connection")
    assert str(down.value) == MODEL_UNAVAILABLE, "members never read where the model runs"
    assert "10.0.0.5" not in str(down.value)
    assert isinstance(down.value.__cause__, ModelUnavailable)
    (record,) = [r for r in caplog.records if r.name == "bot.engine.turn.results"]
    assert record.getMessage() == (
        "Game 7: compaction failed, the model is unavailable: http://10.0.0.5:8080 refused the connection"
    )


async def test_a_model_unavailable_wrapped_by_the_memorys_upkeep_is_found_under_its_wrapper(caplog):
    class UpkeepFailed(Exception):
        pass

    with caplog.at_level(logging.WARNING, logger="bot.engine.turn.results"):
        with pytest.raises(ModelDown) as down:
            async with asks_the_model(3, "the chapter's end"):
                try:
                    raise ModelUnavailable("the tokenizer failed")
                except ModelUnavailable as exc:
                    raise UpkeepFailed("the summary could not be written") from exc
    assert isinstance(down.value.__cause__, UpkeepFailed)
    assert any("Game 3: the chapter's end failed" in r.getMessage() and "tokenizer" in r.getMessage()
               for r in caplog.records)  # fmt: skip


async def test_any_other_failure_of_a_command_goes_through_unchanged():
    with pytest.raises(UserError, match="Nothing to compact yet.") as raised:
        async with asks_the_model(1, "compaction"):
            raise UserError("Nothing to compact yet.")
    assert type(raised.value) is UserError
    with pytest.raises(ValueError, match="a bug"):
        async with asks_the_model(1, "compaction"):
            raise ValueError("a bug")


async def test_a_command_that_succeeds_under_asks_the_model_returns_normally():
    done = []
    async with asks_the_model(1, "compaction"):
        done.append("compacted")
    assert done == ["compacted"]


async def test_a_public_turns_result_is_the_channels_reply_and_a_secret_actions_goes_to_its_player(
    engine: Engine, scripted: ScriptedModel
):
    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.join(game.id, "maya", "Maya")
    scripted.enqueue("The door groans open onto a stair of wet stone, and water drips somewhere far below you.")
    result = await engine.act(game.id, "maya", "I open the door.")
    assert isinstance(result, TurnResult)
    assert result.text == result.reply.content and "wet stone" in result.text
    assert result.public and result.reply.kind is EntryKind.GM and result.turn == result.action.turn == 1
    assert result.action.content == "I open the door." and result.private == () and result.draft is None

    await engine.settled(game.id)  # the first turn's upkeep asks the model too
    scripted.enqueue("Nobody sees you slip the key into your boot.")
    secret = await engine.whisper(game.id, "maya", "I hide the key in my boot.")
    assert not secret.public and secret.reply.visibility is Visibility.PRIVATE
    assert secret.text == secret.reply.content and "boot" in secret.text
