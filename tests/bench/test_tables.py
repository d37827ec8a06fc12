"""``bench tables``' measure of a reply written beside another game's reading, on a scripted model."""

import time

from bot.bench.tables import FIRST_SENTENCE, measure_beside
from bot.model.scripted import ScriptedModel

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
