"""Compaction: which of the log's oldest entries are folded into the story, when, and how long a summary may be."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.memory.compaction import (
    apply_ceiling,
    chunk_messages,
    eligible,
    fold_messages,
    in_batches,
    next_trigger,
    opens_scene,
    plan_compaction,
)
from bot.memory.config import MemoryConfig
from bot.store.models import EntryKind, LogEntry, Visibility
from tests.memory.test_properties import FAST, KINDS, log_entry

configs = st.builds(
    MemoryConfig,
    protected_tail=st.integers(0, 12),
    trigger_messages=st.integers(2, 30),
    trigger_tokens=st.integers(100, 2000),
    chunk_ends=st.sampled_from(["length", "scene"]),
)


@st.composite
def logs(draw, max_size: int = 80) -> tuple[list[LogEntry], list[int]]:
    """A log after some fold marker: entries with increasing ids, and each entry's token count."""
    first = draw(st.integers(1, 500))
    tokens = draw(st.lists(st.integers(0, 700), max_size=max_size))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=len(tokens), max_size=len(tokens)))
    entries = [log_entry(first + i, kind, f"entry {first + i}") for i, kind in enumerate(kinds)]
    return entries, tokens


@FAST
@given(logs(), configs, st.booleans())
def test_the_protected_tail_is_never_summarized(log, config, force):
    entries, tokens = log
    chunks = plan_compaction(entries, tokens, config, force=force)
    folded = [e.id for chunk in chunks for e in chunk.entries]
    tail = {e.id for e in entries[max(0, len(entries) - config.protected_tail) :]} if config.protected_tail else set()
    assert not tail & set(folded), f"the newest {config.protected_tail} messages were summarized"
    # Chunks are the log's oldest entries, in order, each folded once.
    assert folded == [e.id for e in entries[: len(folded)]]
    assert all(chunk.entries for chunk in chunks)
    if force:
        # /compact folds everything but the protected tail.
        assert len(folded) == max(0, len(entries) - config.protected_tail)


@FAST
@given(logs(), configs)
def test_next_trigger_is_zero_exactly_when_a_chunk_is_waiting(log, config):
    entries, tokens = log
    trigger = next_trigger(entries, tokens, config)
    waiting = bool(plan_compaction(entries, tokens, config))
    assert trigger.unsummarized_messages == len(entries)
    assert trigger.unsummarized_tokens == sum(tokens)
    if waiting:
        assert trigger.messages_to_go == 0 and trigger.tokens_to_go == 0
    else:
        assert trigger.messages_to_go > 0 and trigger.tokens_to_go > 0, "no chunk waits, so one is still to come"


def _check_closed(chunk, token_of: dict[int, int], config: MemoryConfig, after: LogEntry | None = None) -> None:
    """``chunk`` was closed by a trigger, at the first entry that reached it; or, with chunks ending at scenes,
    before ``after``, the entry that opens the next scene, once half as long as the message trigger."""
    counts = [token_of[e.id] for e in chunk.entries]
    assert len(chunk.entries) <= config.trigger_messages
    # never later than the first entry that reached a trigger
    assert len(counts) - 1 < config.trigger_messages and sum(counts[:-1]) < config.trigger_tokens
    if config.chunk_ends == "scene" and after is not None and opens_scene(after):
        if len(counts) >= max(1, config.trigger_messages // 2):
            return  # the scene ended here
    assert len(counts) == config.trigger_messages or sum(counts) >= config.trigger_tokens, "closed by a trigger"
    if config.chunk_ends == "scene":  # nor after the opening of a scene once half as long
        half = max(1, config.trigger_messages // 2)
        assert not any(opens_scene(e) for e in chunk.entries[half:]), "a scene opened and the chunk went on"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(max_size=120), configs, st.lists(st.integers(1, 15), min_size=1, max_size=60))
def test_folding_in_any_batches_reaches_the_same_marker(log, config, batches):
    entries, tokens = log
    token_of = {e.id: t for e, t in zip(entries, tokens, strict=True)}
    next_entry = {a.id: b for a, b in zip(entries, entries[1:], strict=False)}
    marker = entries[0].id - 1 if entries else 0
    start = marker
    arrived = 0
    sizes = iter(batches)
    while arrived < len(entries):
        arrived = min(len(entries), arrived + next(sizes, len(entries)))
        hot = [e for e in entries[:arrived] if e.id > marker]
        chunks = plan_compaction(hot, [token_of[e.id] for e in hot], config)
        previous = marker
        for chunk in chunks:
            _check_closed(chunk, token_of, config, next_entry.get(chunk.last_id))
            assert chunk.first_id == previous + 1, "chunks follow the marker without gaps"
            previous = chunk.last_id
        if chunks:
            marker = chunks[-1].last_id
        # the protected tail of what has arrived so far stays hot
        assert marker <= start + max(0, arrived - config.protected_tail)

    whole = plan_compaction(entries, tokens, config)
    for chunk in whole:
        _check_closed(chunk, token_of, config, next_entry.get(chunk.last_id))
    assert marker == (whole[-1].last_id if whole else start)


@FAST
@given(
    text=st.lists(
        st.tuples(
            st.sampled_from(["the", "keeper", "is", "alive.", "Wren?", "lies!", "oil", "(aside)", "end.)", "wait…"]),
            st.sampled_from([" ", "  ", "\n", "\t", " \n "]),
        ),
        max_size=120,
    ).map(lambda pairs: "".join(w + sep for w, sep in pairs)),
    ceiling=st.integers(1, 300),
    slack=st.floats(1.0, 3.0),
)
def test_the_soft_ceiling_bounds_summaries_and_keeps_short_ones(text, ceiling, slack):
    normalized = " ".join(text.split())
    limit = int(ceiling * slack)
    result = apply_ceiling(text, ceiling, slack=slack)
    assert len(result.split()) <= limit
    if len(normalized.split()) <= limit:
        assert result == normalized, "a summary within the ceiling stands as written"
    else:
        body = result.removesuffix("…")
        assert normalized.startswith(body), "a cut summary is a beginning of the original, nothing invented"
        assert body, "a cut never leaves an empty summary"
        assert re.search(r"[.!?…][\"')\]]?$", result), "cut at a sentence end, or marked as cut"


def test_a_chunks_summary_request_reads_the_public_entries_and_the_bridge_as_context():
    public = log_entry(2, EntryKind.ACTION, "I open the door.")
    aside = log_entry(3, EntryKind.GM, "SECRETX only Maya sees this.").model_copy(
        update={"visibility": Visibility.PRIVATE, "visible_to": (1,)}
    )
    bridge = log_entry(1, EntryKind.GM, "The storm rises.")
    system, user = chunk_messages("The Lighthouse", [public, aside], bridge, 120)
    assert system.role == "system" and '"The Lighthouse"' in system.content and "at most 120 words" in system.content
    assert user.content == (
        "Just before (already summarized, for context only):\nGM: The storm rises.\n\n"
        "New events:\nAna: I open the door."
    )
    assert "SECRETX" not in user.content, "what one player was told alone stays out of the summary"
    only_aside = chunk_messages("The Lighthouse", [aside], None, 120)[1].content
    assert only_aside == "New events:\n(nothing public)"


def test_a_fold_request_rewrites_the_whole_story_with_the_addition():
    system, user = fold_messages("The Lighthouse", None, "Maya found the key.", 200)
    assert "Rewrite the whole, never just append" in system.content and "at most 200 words" in system.content
    assert user.content == "Story so far:\n(nothing yet)\n\nWhat happened next:\nMaya found the key."
    assert fold_messages("T", "They arrived.", "More.", 50)[1].content.startswith("Story so far:\nThey arrived.")


def test_a_summary_over_the_ceiling_is_cut_at_its_last_sentence_end_or_marked_as_cut():
    assert apply_ceiling("One two.  Three\nfour.", 10) == "One two. Three four."
    assert apply_ceiling("One two. Three four five six.", 2) == "One two."
    assert apply_ceiling("one two three four five", 2) == "one two three…"


def test_backlog_is_read_in_batches_that_fit_and_a_big_item_alone():
    assert in_batches(["a", "b", "c", "d"], [500, 600, 200, 100], limit=1200) == [["a", "b"], ["c", "d"]]
    assert in_batches(["big", "small"], [5000, 10], limit=1200) == [["big"], ["small"]]
    assert in_batches([], []) == []


def test_the_protected_tail_is_not_eligible():
    entries = [log_entry(i, EntryKind.GM, f"entry {i}") for i in range(1, 6)]
    assert [e.id for e in eligible(entries, MemoryConfig(protected_tail=2))] == [1, 2, 3]
    assert eligible(entries, MemoryConfig(protected_tail=9)) == []
    chunk = plan_compaction(entries, [1] * 5, MemoryConfig(protected_tail=0, trigger_messages=5))[0]
    assert (chunk.first_id, chunk.last_id, chunk.turns) == (1, 5, (1, 5))


def _entry(i: int, kind: EntryKind, content: str) -> LogEntry:
    return log_entry(i, kind, content)


def test_a_scene_opens_at_a_line_of_the_game_a_player_setting_off_or_a_reply_that_skips_time_or_arrives():
    opening = [
        (EntryKind.SYSTEM, "Tom joins the game."),
        (EntryKind.ACTION, "I head down to the cellar."),
        (EntryKind.ACTION, "We set off for the lighthouse at once."),
        (EntryKind.GM, "Later that night, the wind rises."),
        (EntryKind.GM, "It is the next morning. Fog lies on the water."),
        (EntryKind.GM, "Hours later, the storm breaks."),
        (EntryKind.GM, "You arrive at the harbour as the tide turns."),
        (EntryKind.GM, "Maya and Tom reach the lighthouse."),
    ]
    going_on = [
        (EntryKind.ACTION, "I look around."),
        (EntryKind.ACTION, "I ask Hester where she went later."),
        (EntryKind.GM, "Hester says you will regret it later."),  # a time word, not a time skip
        (EntryKind.GM, "The candle gutters. Later you sleep."),  # only the first sentence counts
        (EntryKind.GM, "Laterally, the beam has cracked."),
        (EntryKind.GM, "You look at the door; it does not open."),
        (EntryKind.ROLL, "Maya rolls 1d20: 14"),
    ]
    for i, (kind, text) in enumerate(opening):
        assert opens_scene(_entry(i + 1, kind, text)), text
    for i, (kind, text) in enumerate(going_on):
        assert not opens_scene(_entry(i + 1, kind, text)), text


def test_with_chunks_ending_at_scenes_a_chunk_closes_before_a_scene_opens_once_half_as_long():
    entries = [_entry(i, EntryKind.ACTION if i % 2 else EntryKind.GM, "The rain goes on.") for i in range(1, 41)]
    entries[3] = _entry(4, EntryKind.GM, "Later that night, the wind rises.")  # too soon: the chunk goes on
    entries[13] = _entry(14, EntryKind.GM, "The next morning is grey.")
    tokens = [10] * len(entries)
    scenes = MemoryConfig(protected_tail=4, trigger_messages=20, chunk_ends="scene")
    chunks = plan_compaction(entries, tokens, scenes)
    assert [(c.first_id, c.last_id) for c in chunks] == [(1, 13), (14, 33)]
    by_length = plan_compaction(entries, tokens, scenes.model_copy(update={"chunk_ends": "length"}))
    assert [(c.first_id, c.last_id) for c in by_length] == [(1, 20)]
    # An opening still in the protected tail closes nothing yet: the border depends on the log alone.
    assert [(c.first_id, c.last_id) for c in plan_compaction(entries[:17], tokens[:17], scenes)] == []
