"""The prompt's layers: their order, budgets, and the trace of how full the prompt is."""

from __future__ import annotations

from bot.memory.layers import (
    AFTER_ACTION,
    FRONT,
    GM_ONLY_LAYERS,
    HEADERS,
    LAYERS,
    NEVER_DROPPED,
    NOTES,
    Budget,
    ContextTrace,
    LayerTrace,
)


def trace(hot_left_out: list[str] | None = None, **tokens: int) -> ContextTrace:
    layers = [LayerTrace(name=name, tokens=tokens.get(name, 0)) for name in LAYERS]
    layers[LAYERS.index("hot")].left_out = hot_left_out or []
    return ContextTrace(layers=layers, total_tokens=sum(tokens.values()), limit=1000, reply_tokens=200)


def test_the_layers_run_front_then_recent_turns_then_notes_then_the_action():
    assert LAYERS == (*FRONT, "hot", *NOTES, "action")
    assert len(set(LAYERS)) == len(LAYERS)
    assert NOTES[-len(AFTER_ACTION) :] == AFTER_ACTION, "what follows the action is told last"
    assert set(GM_ONLY_LAYERS) <= set(LAYERS) and set(NEVER_DROPPED) <= set(LAYERS)
    assert all(HEADERS[name].startswith("GM-only") for name in GM_ONLY_LAYERS)


def test_the_room_for_the_prompt_leaves_the_reply_and_a_retrys_reserve():
    assert Budget(n_ctx=4096, reply_tokens=256).limit == 3840
    assert Budget(n_ctx=4096, reply_tokens=256, reserve=100).limit == 3740


def test_the_fill_is_the_recent_turns_against_the_room_left_after_the_front_and_the_action():
    half = trace(frozen=300, story=100, action=100, hot=250)
    assert half.layer("frozen").tokens == 300
    assert half.fill == 250 / (1000 - 400 - 100)
    assert trace(["entry:1"], frozen=300, action=100, hot=10).fill == 1.0, "recent turns cut off: full"
    assert trace(frozen=900, action=100).fill == 1.0, "no room at all"
