"""``bench change`` end to end on a short game: the questions' prompts are judged, and the GM's replies with them,
a reply the GM could not write counted as one that does not say the latest value."""

from __future__ import annotations

import io

from bot.bench.change import play, report
from bot.bench.change_chains import CHAINS
from bot.model import ScriptedModel

PROMPTS: dict[str, str] = {}  # the last question in each reply's prompt -> that prompt


def _reply(messages) -> str:
    """Where the swan candlestick is, whatever is asked; the strongbox's combination made up; the ferryman's
    questions answered only with a player's line, on every try and after a Retry (the GM has nothing to say of its
    own)."""
    question = messages[-1].content
    PROMPTS[question.splitlines()[-1]] = "\n".join(m.content for m in messages)
    if "ferryman" in question or "boatman" in question:
        return "Maya: I look around."
    if "strongbox" in question:
        return "The strongbox's combination is now 1-2-3."
    return "The swan candlestick lies at the bottom of the old well."


async def test_the_change_bench_judges_each_questions_prompt_and_reply():
    run = await play(60, False, None, ScriptedModel(_reply))
    assert len(run.asked) == sum(len(chain.questions) for chain in CHAINS)
    by_question = {asked.question: asked for asked in run.asked}
    assert by_question["Where is the swan candlestick now?"].reply_says_latest
    # the well is not who has the lantern (asked in other words: no brief, so no note of the engine's answers it)
    assert not by_question["Whose hands is the hurricane lamp in?"].reply_says_latest
    ferryman = by_question["Who does the ferryman work for now?"]
    assert ferryman.reply == "(From earlier in the game: ferryman, allegiance now: Ashby.)", "the notes answer it"
    assert ferryman.reply_says_latest
    boatman = by_question["Whose side is the boatman on these days?"]  # in other words: no brief to answer with
    assert boatman.reply is not None and "nothing to say" in boatman.reply and not boatman.reply_says_latest
    iron_chest = next(prompt for question, prompt in PROMPTS.items() if "iron chest" in question)
    assert "1-2-3" not in iron_chest, "each question is asked of the game as it stood, not after the last answer"
    out = io.StringIO()
    figures = report([run], out)
    assert 0 < figures["reply_latest_60_none_tuned"] < 1, out.getvalue()
    assert "'Whose side is the boatman on these days?'" in out.getvalue()


def test_a_turn_of_the_change_game_tells_one_step_where_the_game_has_room_and_each_chain_in_its_order():
    """The writers' shares are round (.1, .3, .8): where they put them, one turn of 300 told fourteen changes, more
    than the facts job's answer holds."""
    from bot.bench.change import planted
    from bot.bench.change_chains import CHAINS

    steps = sum(len(chain.steps) for chain in CHAINS)
    for turns in (300, 1000):
        at = planted(turns, CHAINS)
        most = -(-steps // (turns - 1))  # one a turn where the game has room, else as few as fit
        assert all(len(told) <= most for told in at.values()) and max(at) < turns
        assert most == 1 or turns < steps + 1, "a game with room tells one a turn"
        for chain in CHAINS:
            told = [turn for step in chain.steps for turn, there in at.items() if any(s is step for s in there)]
            assert len(told) == len(chain.steps) and told == sorted(told), chain.name
    short = planted(60, CHAINS)
    assert sum(len(steps) for steps in short.values()) == sum(len(chain.steps) for chain in CHAINS)


def test_no_set_of_chains_is_told_at_the_games_end_for_coming_last():
    """Placed chain by chain, the held-out chains (listed last) found the turns near their shares taken and told
    every change in the last twenty turns of 300: a figure of recency, not of a long game's memory."""
    from bot.bench.change import planted
    from bot.bench.change_chains import CHAINS, HELD_OUT

    for turns in (300, 1000):
        at = planted(turns, CHAINS)
        turn_of = {id(step): turn for turn, steps in at.items() for step in steps}
        for chain in CHAINS:  # where its share ranks among all: near its share in every set alike
            for step in chain.steps:
                assert abs(turn_of[id(step)] - step.at * turns) <= 0.12 * turns, (
                    chain.name,
                    step.at,
                    turn_of[id(step)],
                )
        assert min(turn_of[id(chain.steps[0])] for chain in HELD_OUT) < turns / 10
