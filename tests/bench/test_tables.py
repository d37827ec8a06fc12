"""``bench tables``: its measure of a reply written beside another game's reading, on a scripted model, and its
report."""

import io
import time

from bot.bench.tables import FIRST_SENTENCE, Result, measure_beside, report
from bot.bench.turns import Run, Turn
from bot.model.scripted import ScriptedModel
from bot.settings import ProcessSettings

READING_SECONDS = 1.5
REPLY = "The cellar door gives with a groan, and the cold air smells of earth and lamp oil. " * 3


def _answer(messages):
    if messages[-1].content.endswith("Retell this."):  # a first prompt, read: it takes a while
        time.sleep(READING_SECONDS)
        return "The"
    return REPLY


def test_the_reply_is_written_in_its_own_slot_while_the_other_slot_reads_a_new_prompt():
    model = ScriptedModel(_answer, chunk_chars=4)
    beside = measure_beside(model, rounds=2)

    readings = [c for c in model.calls if c.slot == "bench:reader"]
    replies = [c for c in model.calls if c.slot == "bench:writer"]
    assert len(readings) == 4 and len(replies) == 6, "each round: the reply twice alone, once beside; two readings"
    first_lines = [c.messages[0].content[:12] for c in readings]
    assert len(set(first_lines)) == 4, "every reading is of a prompt its slot never held"
    assert beside.read_tokens > 500, "a first prompt's worth of tokens, read from nothing"
    # The reply beside began while the reading was under way, and so ended before it.
    assert beside.reply_beside < beside.reading_beside
    assert beside.reading_alone >= READING_SECONDS and beside.reading_beside >= READING_SECONDS
    assert beside.reply_tokens == -(-len(REPLY) // 4) > FIRST_SENTENCE, "every piece of the reply counted"
    assert 0 < beside.sentence_alone <= beside.reply_alone
    assert 0 < beside.sentence_beside <= beside.reply_beside


def _run(first_turns: float, later_turns: float, wall: float) -> Run:
    """Four games of four turns: every first turn's first text after ``first_turns`` s, each later one after
    ``later_turns`` s and its game's and turn's numbers more (3 s to 8 s more)."""
    run = Run("bench", wall=wall)
    for game in range(1, 5):
        for turn in range(1, 5):
            first = first_turns if turn == 1 else later_turns + game + turn
            run.turns.append(Turn(game, turn, first, first + 5, prompt=1000, reused=900, evaluated=100, written=80,
                                  model_time=first + 5))  # fmt: skip
    return run


def test_the_report_sets_the_later_turns_p95_beside_the_p95_of_all_turns():
    results = [
        Result("in process", 4, None, _run(first_turns=80.0, later_turns=20.0, wall=160.0)),
        Result("llama-server", 4, 4, _run(first_turns=60.0, later_turns=5.0, wall=120.0)),
    ]
    out = io.StringIO()
    figures = report("tiny", ProcessSettings(), results, turns=4, pause=1.0, out=out)

    lines = out.getvalue().splitlines()
    served = next(line for line in lines if line.startswith("llama-server"))
    # p95 of all 16 turns: the first turns (60 s); of the 12 later ones (8 s to 13 s): 12.45 s.
    assert served.split()[-3:] == ["60.00s", "12.45s", "90.0%"]
    side_by_side = lines[lines.index(next(line for line in lines if "side by side" in line)) + 2]
    assert side_by_side.split() == ["4", "1.33x", "0.75x", f"{12.45 / 27.45:.2f}x"]
    assert lines[-1] == "replies_ratio_4=1.333 p95_ratio_4=0.75 reuse_4_slots=0.9"
    assert figures == {"replies_ratio_4": 1.333, "p95_ratio_4": 0.75, "reuse_4_slots": 0.9}
