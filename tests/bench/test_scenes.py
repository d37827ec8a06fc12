"""``bench scenes`` end to end on a short game: chunk summaries written by a stand-in writer, each change step
judged from the summary that covers it, and the scene openings the finder saw counted."""

from __future__ import annotations

import io

import pytest

from bot.bench.change_chains import CHAINS
from bot.bench.scenes import SCENES_HELD_OUT, SCENES_TUNED, judge, play, report, scene_turns
from bot.model import ScriptedModel


def _copies_the_events(messages) -> str:
    """A writer that keeps every event of its chunk: each change it reads, it carries."""
    return messages[-1].content.split("New events:", 1)[1]


def _forgets_the_candlestick(messages) -> str:
    return " ".join(line for line in _copies_the_events(messages).splitlines() if "candlestick" not in line)


async def test_the_scenes_bench_judges_each_step_from_its_chunk_summary():
    length = await play(80, "length", ScriptedModel(_copies_the_events))
    scene = await play(80, "scene", ScriptedModel(_forgets_the_candlestick))
    assert len(scene.chunks) > len(length.chunks), "scenes end chunks sooner"
    assert max(n for n, _ in length.chunks) == 20 and min(n for n, _ in scene.chunks) >= 10
    folded = [c for c in length.carried if c.summary is not None]
    assert folded and all(c.says_new and not c.says_old for c in folded)
    candlestick = [c for c in scene.carried if c.summary is not None and "candlestick" in c.step.said]
    assert candlestick and not any(c.says_new for c in candlestick)
    out = io.StringIO()
    figures = report([length, scene], out)
    assert figures["carried_length"] == 1.0 and figures["carried_scene"] < 1.0, out.getvalue()
    assert "Wren drops the swan candlestick into the old well." in out.getvalue() or "not carried" in out.getvalue()
    assert 0 < figures["scenes_seen_tuned"] <= 1


def test_a_summary_that_tells_an_older_value_without_the_new_carries_the_old_as_current():
    chain = CHAINS[0]  # the swan candlestick, moved four times
    last = chain.steps[-1]
    stale = judge(chain, last, "The swan candlestick stood in the bell tower all evening.")
    assert not stale.says_new and stale.says_old == ["bell tower"]
    moved = judge(chain, last, "Wren took the candlestick from the bell tower and dropped it into the old well.")
    assert moved.says_new and not moved.says_old
    assert not judge(chain, last, None).says_new


def test_scenes_open_every_few_turns_from_both_sets():
    at = scene_turns(300)
    gaps = [b - a for a, b in zip(sorted(at), sorted(at)[1:], strict=False)]
    assert all(6 <= g <= 14 for g in gaps)
    used = {scene for scene, _ in at.values()}
    assert used == set(SCENES_TUNED) | set(SCENES_HELD_OUT)


def test_the_arms_are_where_chunks_end_and_a_control_of_their_length():
    from bot.bench.scenes import memory_config

    assert memory_config("scene").chunk_ends == "scene"
    control = memory_config("length:17")
    assert (control.chunk_ends, control.trigger_messages) == ("length", 17)
    for bad in ("scenes", "length:", "length:1", "length:x"):
        with pytest.raises(ValueError):
            memory_config(bad)
