"""Plain-text renderings of the memory's reports, for the terminal and the log."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.engine.upkeep.chapters import ChapterReport
from bot.engine.upkeep.summaries import CompactionReport
from bot.memory.layers import ContextTrace, LayerTrace
from bot.reports import (
    bar,
    chapter_text,
    compaction_text,
    facts_text,
    private_memory_text,
    reveals_text,
    trace_text,
)
from bot.store.models import Fact, FactKind, PlayerMemory

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_bar_shows_tokens_against_the_budget_and_caps_at_full():
    assert bar(5, 10) == "[##########..........] 5/10"
    assert bar(30, 10, width=4) == "[####] 30/10"
    assert bar(1, 4, width=4, marks="=-", ends=("<", ">")) == "<=---> 1/4"
    assert bar(7, None) == "7 tokens" and bar(7, 0) == "7 tokens"


def test_the_trace_lists_each_layer_and_hides_the_gm_only_ones_from_players():
    trace = ContextTrace(
        layers=[
            LayerTrace(name="frozen", tokens=300),
            LayerTrace(name="secrets", tokens=50, budget=100, items=["truth:x"]),
            LayerTrace(name="recall", tokens=40, budget=80, items=["entry:3", "entry:4"], left_out=["entry:9"]),
        ],
        total_tokens=390,
        limit=1000,
        reply_tokens=200,
        overflow="recall cut",
        found_by={"entry:3": "meaning"},
    )
    admin = trace_text(trace)
    assert admin.splitlines()[0] == "The GM was given 390 of 1000 tokens (+200 for the reply)."
    assert "Over budget: recall cut" in admin
    assert "truth:x" in admin
    assert "in: entry:3 (meaning), entry:4  left out: entry:9" in admin
    player = trace_text(trace, show_secrets=False)
    assert "secrets" not in player and "truth:x" not in player and "recall" in player
    assert trace_text(None) == "No turn has been played yet."


def test_what_was_uncovered_is_listed_newest_last_and_cut_to_the_last_ones():
    assert reveals_text([]) == "Uncovered so far: nothing yet."
    assert reveals_text(["a", "b"]) == "Uncovered so far:\n  a\n  b"
    assert reveals_text(["a", "b", "c"], limit=2) == "Uncovered so far (the last 2 of 3):\n  b\n  c"


def test_compaction_and_chapter_reports_say_what_changed():
    assert compaction_text(CompactionReport()).startswith("Nothing to compact")
    folded = CompactionReport(
        chunks=2, messages_folded=12, turns=(3, 8), short_words_before=40, short_words_after=90,
        story_words_before=100, story_words_after=150,
    )  # fmt: skip
    assert compaction_text(folded) == (
        "Folded 12 messages (turns 3-8) in 2 chunk(s). Short-term summary 40 -> 90 words; "
        "story summary 100 -> 150 words."
    )
    report = ChapterReport(finished="One", recap="They met.", next=None, story_words_before=5, story_words_after=9)
    assert chapter_text(report) == (
        "Chapter finished: One. Recap: They met.\nThat was the last chapter. Story summary 5 -> 9 words."
    )
    assert "Next: Two." in chapter_text(report.model_copy(update={"next": "Two"}))


def test_facts_and_a_players_memory_are_listed_plainly():
    assert facts_text([]) == "No facts recorded yet."
    fact = Fact(
        id=1, game_id=1, kind=FactKind.ITEM, subject="brass key", attribute="where", value="in the cellar",
        sources=(4, 5), turn=3, created_at=NOW,
    )  # fmt: skip
    pin = fact.model_copy(update={"kind": FactKind.PINNED, "value": "The keeper lies.", "sources": ()})
    assert facts_text([fact, pin]) == (
        "- brass key, where: in the cellar (turn 3, from messages 4, 5)\n- The keeper lies. (turn 3, from messages -)"
    )
    assert private_memory_text("Maya", None).startswith("Maya remembers nothing yet")
    memory = PlayerMemory(
        id=1, game_id=1, player_id=1, summary="Maya saw the hall.", facts=("Tom is kind",), through_entry_id=3,
        created_at=NOW,
    )  # fmt: skip
    assert private_memory_text("Maya", memory, ["check the cellar"]) == (
        "What Maya knows: Maya saw the hall.\n- Tom is kind\nYour notes:\n1. check the cellar"
    )
