"""Properties of the prompt that must hold for every log, config and budget (F16); the folds' (F8, F9) are in
tests/memory/test_compaction.py."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.memory.context import Budget, MemoryItem, MemoryView, build_context, entry_message
from bot.memory.npcs import NpcScene
from bot.model.base import TEMPLATE_TOKENS_PER_MESSAGE
from bot.store.models import EntryKind, LogEntry, Player
from bot.worlds import load_world
from tests.conftest import FIXTURES

WORLD = load_world(FIXTURES / "worlds" / "lighthouse.yaml")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KINDS = [EntryKind.GM, EntryKind.ACTION, EntryKind.ROLL, EntryKind.SYSTEM]


def words(text: str) -> int:
    return len(text.split())


def chars(text: str) -> int:
    """The spec's fallback where no tokenizer exists: characters / 4."""
    return math.ceil(len(text) / 4)


def log_entry(i: int, kind: EntryKind, content: str) -> LogEntry:
    author = "GM" if kind is EntryKind.GM else ("Maya", "Tom", "Ana")[i % 3]
    return LogEntry(id=i, game_id=1, turn=i, kind=kind, author=author, content=content, created_at=NOW)


def filler(tag: str, n: int) -> str:
    return " ".join([tag] + ["word"] * (n - 1)) if n else ""


# The context builder (F16)

PLAYERS = [
    Player(id=1, game_id=1, user_key="u1", name="Maya", description="a diver", joined_at=NOW),
    Player(id=2, game_id=1, user_key="u2", name="Tom", joined_at=NOW),
]


def items(prefix: str, sizes: list[int], priorities: list[int] | None = None) -> list[MemoryItem]:
    return [
        MemoryItem(f"{prefix}:{i}", filler(f"{prefix.upper()}{i}X", n), (priorities or [0] * len(sizes))[i])
        for i, n in enumerate(sizes)
    ]


sizes = st.lists(st.integers(1, 60), max_size=8)


@st.composite
def scenarios(draw):
    hot_sizes = draw(st.lists(st.integers(0, 80), max_size=60))
    hot_kinds = draw(st.lists(st.sampled_from(KINDS), min_size=len(hot_sizes), max_size=len(hot_sizes)))
    hot = [
        log_entry(i + 1, kind, filler(f"HOT{i + 1}X", n))
        for i, (kind, n) in enumerate(zip(hot_kinds, hot_sizes, strict=True))
    ]
    action = log_entry(len(hot) + 1, EntryKind.ACTION, filler("ACTIONX", draw(st.integers(1, 60))))
    lore_sizes = draw(sizes)
    story = draw(st.integers(0, 400))
    shorts = draw(st.lists(st.integers(1, 150), max_size=2))  # the chunk summaries since the story shown
    view = MemoryView(
        players=draw(st.sampled_from([(), PLAYERS])),
        chapter_index=draw(st.integers(0, 2)),
        chapters=items("chapter", draw(st.lists(st.integers(1, 60), max_size=4))),
        story=MemoryItem("summary:100", filler("STORYX", story)) if story else None,
        pins=items("pin", draw(sizes)),
        glossary=items("glossary", draw(sizes)),
        short=[MemoryItem(f"summary:{200 + i}", filler(f"SHORT{i}X", size)) for i, size in enumerate(shorts)],
        hot=hot,
        lore=items("lore", lore_sizes, draw(st.lists(st.integers(0, 100), min_size=len(lore_sizes),
                                                     max_size=len(lore_sizes)))),
        recall=items("recall", draw(sizes)),
    )  # fmt: skip
    layer = st.integers(0, 800)
    caps = dict(glossary=draw(layer), secrets=draw(layer), lore=draw(layer), recall=draw(layer))
    counter = draw(st.sampled_from([words, chars]))
    reply = draw(st.integers(0, 512))
    # A limit around what everything would take, so every stage of trimming gets exercised.
    everything = build_context(WORLD, view, action, Budget(n_ctx=10**7, reply_tokens=0, **caps), counter)
    limit = int(everything.trace.total_tokens * draw(st.floats(0.5, 1.1)))
    budget = Budget(n_ctx=limit + reply, reply_tokens=reply, **caps)
    return view, action, budget, counter


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_prompt_never_exceeds_the_budget(scenario):
    view, action, budget, count = scenario
    context = build_context(WORLD, view, action, budget, count)
    trace = context.trace
    recount = sum(count(m.content) + TEMPLATE_TOKENS_PER_MESSAGE for m in context.messages)
    assert trace.total_tokens == recount, "the trace reports the prompt's real size"
    if trace.overflow is None:
        assert trace.total_tokens <= budget.limit
        assert recount <= budget.limit, "room is left for the reply"
    else:
        for name in ("hot", "lore", "recall"):
            assert trace.layer(name).items == [], f"{name} cannot go in when the never-dropped layers overflow"
    # Whatever the budget, a chat template can take it: system, then user/assistant turns ending on the user.
    roles = [m.role for m in context.messages]
    assert roles[0] == "system" and roles[1] == "user" and roles[-1] == "user"
    assert all(a != b for a, b in zip(roles[1:], roles[2:], strict=False)), roles


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(0, 300))
def test_the_frozen_layer_summaries_pins_and_action_are_never_dropped(scenario, n_ctx):
    view, action, budget, count = scenario
    # Also squeeze the budget so hard that these alone overflow.
    for b in (budget, Budget(n_ctx=n_ctx, reply_tokens=0)):
        context = build_context(WORLD, view, action, b, count)
        trace = context.trace
        system = context.messages[0].content
        assert trace.layer("frozen").items == ["world"]
        assert 'You are the game master (GM) of "The Lighthouse at Gull Rock"' in system
        assert trace.layer("chapters").items == [c.ref for c in view.chapters]
        assert trace.layer("pins").items == [p.ref for p in view.pins]
        assert trace.layer("story").items == ([view.story.ref] if view.story else [])
        assert trace.layer("short").items == [s.ref for s in view.short]
        kept = [
            *view.chapters,
            *view.pins,
            *([view.story] if view.story else []),
            *view.short,
        ]
        for item in kept:
            assert item.text in system, item.ref
        for name in ("frozen", "chapters", "story", "pins", "short", "action"):
            assert trace.layer(name).left_out == []
        assert trace.layer("action").items == [f"entry:{action.id}"]
        assert context.messages[-1].content.endswith(entry_message(action).content)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_oldest_hot_turns_go_first(scenario):
    view, action, budget, count = scenario
    context = build_context(WORLD, view, action, budget, count)
    hot = context.trace.layer("hot")
    ids = [f"entry:{e.id}" for e in view.hot]
    kept = len(hot.items)
    assert hot.items == ids[len(ids) - kept :], "the kept turns are the newest, without gaps"
    assert hot.left_out == ids[: len(ids) - kept], "every dropped turn is recorded, oldest first"
    chat = "\n".join(m.content for m in context.messages[1:])
    for e in view.hot:
        if e.content:
            assert (f"HOT{e.id}X" in chat) == (f"entry:{e.id}" in hot.items), e.id
    # Lore and recall: nothing silently lost either.
    for name, candidates in (("lore", view.lore), ("recall", view.recall), ("glossary", view.glossary)):
        layer = context.trace.layer(name)
        assert sorted(layer.items + layer.left_out) == sorted(c.ref for c in candidates)


# The append-only rule (F16): between compactions, each prompt begins with the last one and its reply

LORE_POOL = [MemoryItem(f"lore:l{i}", filler(f"LORE{i}", 12 + 3 * i), priority=10 * i) for i in range(6)]
RECALL_POOL = [MemoryItem(f"entry:{900 + i}", filler(f"RECALL{i}", 8 + 5 * i)) for i in range(10)]
NPCS = [("wren", "Wren Tally")]


@st.composite
def turn_sequences(draw):
    steps = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["Maya", "Tom"]),  # who acts
                st.integers(1, 30),  # action words
                st.integers(5, 80),  # reply words
                st.booleans(),  # a roll first
                st.lists(st.sampled_from(LORE_POOL), max_size=3, unique_by=lambda i: i.ref),
                st.lists(st.sampled_from(RECALL_POOL), max_size=4, unique_by=lambda i: i.ref),
                st.booleans(),  # Wren is in the scene
            ),
            min_size=2,
            max_size=14,
        )
    )
    n_ctx = draw(st.sampled_from([1200, 2000, 100_000]))
    return steps, Budget(n_ctx=n_ctx, reply_tokens=100, lore=120, recall=150, private=150)


@FAST
@given(turn_sequences())
def test_each_prompt_begins_with_the_last_prompt_and_its_reply(sequence):
    steps, budget = sequence
    log: list[LogEntry] = []
    notes: dict[int, list] = {}
    present: list[int] = []  # turns Wren witnessed
    previous, compared = None, 0
    for turn, (who, action_words, reply_words, roll, lore, recall, wren_here) in enumerate(steps, 1):
        if roll:
            log.append(LogEntry(id=len(log) + 1, game_id=1, turn=turn, kind=EntryKind.ROLL, author=who,
                                content="1d20: 12", created_at=NOW))  # fmt: skip
        action = LogEntry(id=len(log) + 1, game_id=1, turn=turn, kind=EntryKind.ACTION, author=who,
                          content=filler(f"ACT{turn}", action_words), created_at=NOW)  # fmt: skip
        if wren_here:
            present.append(turn)
        scene = [NpcScene("wren", "Wren Tally", turns=tuple(present))] if wren_here else []
        view = MemoryView(hot=list(log), lore=lore, recall=recall, scene=scene, notes=notes)
        context = build_context(WORLD, view, action, budget, words)
        trace = context.trace
        assert trace.total_tokens <= budget.limit or trace.overflow
        if previous is not None and trace.layer("hot").left_out == previous[1]:
            before = previous[0]
            assert context.messages[: len(before)] == before, f"turn {turn}: the last prompt is not its beginning"
            assert context.messages[len(before)].content.startswith(previous[2])
            compared += 1
        notes[action.id] = list(context.notes)
        reply = filler(f"GM{turn}", reply_words)
        log += [action, LogEntry(id=len(log) + 2, game_id=1, turn=turn, kind=EntryKind.GM, author="GM",
                                 content=reply, created_at=NOW)]  # fmt: skip
        previous = (context.messages, trace.layer("hot").left_out, reply)
    if budget.n_ctx == 100_000:  # nothing is ever cut: every turn is checked
        assert compared == len(steps) - 1
