"""``bench start``: each turn timed from the action to its first text and to its whole reply, with what the model
read; the report's medians a case, beside a later turn's; and a model served elsewhere refused."""

from __future__ import annotations

import io

import pytest

from bot.bench.start import ACTIONS, PLAYERS, Timed, _act, _in_process, _report
from bot.engine import Engine
from bot.errors import UserError
from bot.model import ScriptedModel


async def test_a_turn_is_timed_to_its_first_text_and_its_whole_reply_with_the_tokens_read(
    engine: Engine, scripted: ScriptedModel
):
    game = (await engine.start_game("bench-start", "lighthouse")).game
    for name in PLAYERS:
        await engine.join(game.id, name.lower(), name)
    timed = await _act(engine, game.id, 1, "cold")
    assert timed.case == "cold" and timed.turn == 1
    assert ACTIONS[1] in scripted.last().messages[-1].content, "the second player's turn: the script's second action"
    assert 0 < timed.first_text <= timed.reply
    assert 0 < timed.read <= timed.prompt


def test_the_report_gives_each_cases_median_beside_a_later_turns_and_ends_with_the_figures():
    timed = [
        Timed("cold", 1, 2.0, 3.0, 900, 900, False), Timed("cold", 1, 4.0, 5.0, 900, 900, False),
        Timed("read ahead", 1, 0.6, 1.5, 900, 12, True), Timed("restart", 3, 0.8, 1.6, 950, 20, True),
        Timed("later", 2, 0.5, 1.2, 950, 30, False), Timed("later", 3, 0.3, 1.0, 980, 26, False),
    ]  # fmt: skip
    out = io.StringIO()
    figures = _report(timed, [1.5, 0.4, 0.2], out)
    assert figures == pytest.approx(
        {"first_text_cold": 3.0, "first_text_prefilled": 0.6, "first_text_restart": 0.8, "first_text_later": 0.4}
    )
    text = out.getvalue()
    assert "Tokens read: cold 900, read ahead 12, after a restart 20, later 28." in text
    assert "took 1.5 s while the players joined (from nothing; the next, of the same world, 0.3 s)" in text
    assert "cold 7.5x, read ahead 1.5x, after a restart 2.0x" in text
    assert "(state restored)" in next(line for line in text.splitlines() if line.startswith("read ahead"))
    assert text.splitlines()[-1] == (
        "first_text_cold=3.00 first_text_prefilled=0.60 first_text_restart=0.80 first_text_later=0.40"
    )


def test_a_model_not_run_in_this_process_is_refused():
    with pytest.raises(UserError, match="bench start measures a model run in this process, not scripted"):
        _in_process(ScriptedModel())
