"""The layered context builder (F16): what the GM is given each turn, in which order, and what is left out."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from bot.memory.context import (
    GAME_BEGINS,
    HEADERS,
    LAYERS,
    Budget,
    MemoryItem,
    MemoryView,
    build_context,
    shared_prefix_share,
)
from bot.memory.npcs import NpcScene
from bot.model.base import TEMPLATE_TOKENS_PER_MESSAGE
from bot.store.models import EntryKind, LogEntry, Player, TurnNote, Visibility
from bot.worlds import load_world
from tests.conftest import FIXTURES

WORLD = load_world(FIXTURES / "worlds" / "lighthouse.yaml")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
ROOMY = Budget(n_ctx=100_000, reply_tokens=512)
MAYA = Player(id=1, game_id=1, user_key="u1", name="Maya", description="a diver", joined_at=NOW)
TOM = Player(id=2, game_id=1, user_key="u2", name="Tom", joined_at=NOW)


def words(text: str) -> int:
    return len(text.split())


def entry(i: int, kind: EntryKind, content: str, author: str = "Maya", **extra) -> LogEntry:
    return LogEntry(id=i, game_id=1, turn=i, kind=kind, author=author, content=content, created_at=NOW, **extra)


def gm(i: int, content: str) -> LogEntry:
    return entry(i, EntryKind.GM, content, author="GM")


def act(i: int, content: str, author: str = "Maya") -> LogEntry:
    return entry(i, EntryKind.ACTION, content, author=author)


def filler(tag: str, n: int) -> str:
    """``n`` words, the first one naming the text so a test can find it."""
    return " ".join([tag] + ["word"] * (n - 1))


def prompt_tokens(messages) -> int:
    return sum(words(m.content) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)


def everything(messages) -> str:
    return "\n".join(m.content for m in messages)


def full_view(**overrides) -> MemoryView:
    fields = dict(
        players=[MAYA, TOM],
        chapters=[MemoryItem("summary:1", "CHAPTERRECAP The players landed and found the log book.")],
        story=MemoryItem("summary:5", "STORYSUMMARY Maya and Tom crossed to Gull Rock with Wren."),
        pins=[MemoryItem("pin:1", "PINFACT Tom owes Wren ten shillings.")],
        glossary=[MemoryItem("glossary:1", "GLOSSTERM Skerry: a small rocky island.")],
        short=[MemoryItem("summary:9", "SHORTSUMMARY They forced the cottage door.")],
        hot=[
            gm(10, "HOTGM The cottage is cold and the lamp is out."),
            act(11, "HOTMAYA I search the desk."),
            act(12, "HOTTOM I watch the door.", author="Tom"),
        ],
        lore=[MemoryItem("lore:oil-store", "LOREOIL The oil store is a cellar under the cottage.", 70)],
        recall=[MemoryItem("fact:3", "RECALLFACT Wren flinched when the oil was mentioned.")],
    )
    fields.update(overrides)
    return MemoryView(**fields)


# Order and placement


def test_layers_are_traced_in_order_and_placed_where_the_cache_can_reuse_them():
    action = act(13, "ACTIONTEXT I go down to the cellar.")
    context = build_context(WORLD, full_view(), action, ROOMY, words)
    trace = context.trace

    assert [layer.name for layer in trace.layers] == list(LAYERS)
    assert trace.overflow is None

    system = context.messages[0]
    assert system.role == "system"
    markers = [
        'You are the game master (GM) of "The Lighthouse at Gull Rock"',  # frozen
        "Players: Maya (a diver); Tom.",  # frozen
        HEADERS["secrets"],
        "The keeper is alive",
        HEADERS["chapters"],
        "CHAPTERRECAP",
        HEADERS["pins"],
        "PINFACT",
        HEADERS["glossary"],
        "GLOSSTERM",
        HEADERS["story"],
        "STORYSUMMARY",
        HEADERS["short"],
        "SHORTSUMMARY",
    ]
    positions = [system.content.find(marker) for marker in markers]
    assert -1 not in positions, dict(zip(markers, positions, strict=True))
    assert positions == sorted(positions), "the system message keeps the layer order"

    # Hot turns are chat messages after the system message, never inside it.
    for marker in ("HOTGM", "HOTMAYA", "HOTTOM", "LOREOIL", "RECALLFACT", "ACTIONTEXT"):
        assert marker not in system.content
    assert [m.role for m in context.messages] == ["system", "user", "assistant", "user"]
    assert context.messages[1].content == GAME_BEGINS
    assert context.messages[2].content == "HOTGM The cottage is cold and the lamp is out."

    # The last user message: the newest hot turns, then lore, then recall, then the action, last.
    final = context.messages[-1].content
    order = ["HOTMAYA", "HOTTOM", HEADERS["lore"], "LOREOIL", HEADERS["recall"], "RECALLFACT", "ACTIONTEXT"]
    final_positions = [final.find(marker) for marker in order]
    assert -1 not in final_positions
    assert final_positions == sorted(final_positions)
    assert final.endswith("Maya: ACTIONTEXT I go down to the cellar.")

    assert trace.layer("hot").items == ["entry:10", "entry:11", "entry:12"]
    assert trace.layer("action").items == ["entry:13"]
    assert trace.layer("lore").items == ["lore:oil-store"]
    assert trace.layer("recall").items == ["fact:3"]
    assert trace.layer("pins").items == ["pin:1"]
    assert trace.layer("story").items == ["summary:5"]
    assert trace.layer("short").items == ["summary:9"]
    assert trace.layer("chapters").items == ["summary:1"]
    assert trace.layer("frozen").items == ["world"]
    assert all(not layer.left_out for layer in trace.layers)
    assert trace.total_tokens == prompt_tokens(context.messages)
    assert trace.limit == ROOMY.limit and trace.reply_tokens == ROOMY.reply_tokens


def test_empty_layers_leave_no_headers_behind():
    context = build_context(WORLD, MemoryView(), act(1, "I look around."), ROOMY, words)
    text = everything(context.messages)
    for name in ("chapters", "story", "pins", "glossary", "short", "lore", "recall"):
        assert HEADERS[name] not in text
        assert context.trace.layer(name).tokens == 0
    assert [m.role for m in context.messages] == ["system", "user"]
    assert context.messages[-1].content == "Maya: I look around."


# Capped layers


def test_capped_layers_keep_what_fits_and_record_the_rest():
    glossary = [MemoryItem(f"glossary:{i}", filler(f"GLOSS{i}", 10)) for i in range(3)]
    lore = [
        MemoryItem("lore:low", filler("LORELOW", 10), priority=10),
        MemoryItem("lore:high", filler("LOREHIGH", 10), priority=90),
        MemoryItem("lore:mid", filler("LOREMID", 10), priority=50),
    ]
    recall = [MemoryItem(f"fact:{i}", filler(f"RECALL{i}", 10)) for i in range(3)]
    truth = WORLD.truths[0].text
    budget = Budget(
        n_ctx=100_000,
        reply_tokens=512,
        glossary=words(HEADERS["glossary"]) + 2 * (10 + 2),
        lore=words(HEADERS["lore"]) + 2 * (10 + 2),
        recall=words(HEADERS["recall"]) + 2 * (10 + 2),
        secrets=words(HEADERS["secrets"]) + words(truth) + 2,
    )
    view = MemoryView(glossary=glossary, lore=lore, recall=recall)
    context = build_context(WORLD, view, act(1, "I open the cellar."), budget, words)
    trace = context.trace
    text = everything(context.messages)

    assert trace.layer("glossary").items == ["glossary:0", "glossary:1"]
    assert trace.layer("glossary").left_out == ["glossary:2"]
    assert "GLOSS2" not in text and "GLOSS1" in text

    # Lore: the highest priority first; the lowest is the one left out.
    assert trace.layer("lore").items == ["lore:high", "lore:mid"]
    assert trace.layer("lore").left_out == ["lore:low"]
    assert "LORELOW" not in text
    assert text.index("LOREHIGH") < text.index("LOREMID")

    # Recall: most relevant first, the least relevant left out.
    assert trace.layer("recall").items == ["fact:0", "fact:1"]
    assert trace.layer("recall").left_out == ["fact:2"]
    assert "RECALL2" not in text

    # Secrets: the truth is kept; the chapter's private clue did not fit. (What the NPCs hide and know comes
    # with an NPC's note when it enters the scene, not in this layer.)
    assert trace.layer("secrets").items == ["truth:keeper-alive"]
    assert trace.layer("secrets").left_out == ["clue:log-book"]
    assert truth in context.messages[0].content
    assert "sold the keeper's oil" not in text

    for name in ("glossary", "lore", "recall", "secrets"):
        layer = trace.layer(name)
        assert layer.budget == getattr(budget, name)
        assert 0 < layer.tokens <= layer.budget, name


def test_the_front_carries_truths_and_clues_and_an_entering_npc_brings_what_it_hides_and_knows():
    context = build_context(WORLD, MemoryView(), act(1, "Hello."), ROOMY, words)
    system = context.messages[0].content
    assert context.trace.layer("secrets").items == ["truth:keeper-alive", "clue:log-book"]
    assert "only for the one player whose character earns it, in [[to Name: ...]]" in system
    assert "Wren Tally hides" not in system, "an NPC's secrets come when it is in the scene"

    wren = NpcScene("wren", "Wren Tally", turns=(0, 1), seen=("GM: Wren mends a net.",))
    context = build_context(WORLD, MemoryView(scene=[wren]), act(2, "I greet Wren."), ROOMY, words)
    final = context.messages[-1].content
    assert final.index(HEADERS["scene"]) < final.index("Wren Tally is here.") < final.index("Maya: I greet Wren.")
    assert "Wren Tally hides: He sold the keeper's oil to smugglers." in final
    assert "Wren Tally knows: The keeper quarrelled with the supply company." in final
    assert [n.ref for n in context.notes] == ["scene:wren:2", "npc:wren:hides:0", "npc:wren:knows:0"]

    # Once her note is in the prompt and she stays, a later turn adds nothing for her.
    held = {2: list(context.notes)}
    hot = [act(2, "I greet Wren."), gm(3, "Wren nods.")]
    later = MemoryView(scene=[NpcScene("wren", "Wren Tally", turns=(0, 1, 2, 3))], hot=hot, notes=held)
    again = build_context(WORLD, later, act(4, "I ask about the oil."), ROOMY, words)
    assert again.notes == ()
    assert again.messages[-3].content == final, "her note stays where it was given"
    assert again.messages[-1].content == "Maya: I ask about the oil."


# The question at hand (F31): earlier turns' notes never starve this turn's best matches


def _notes_filling_recall(hot: list[LogEntry], per_note: int = 80) -> dict[int, list[TurnNote]]:
    """Earlier actions' recall notes, together past the recall budget (400 in ``ROOMY``'s defaults)."""
    return {
        e.id: [TurnNote(layer="recall", ref=f"entry:{900 + e.id}", text=filler(f"OLDNOTE{e.id}", per_note))]
        for e in hot
        if e.kind is EntryKind.ACTION
    }


def test_the_actions_best_matches_get_in_however_full_earlier_notes_left_the_recall_layer():
    hot = [gm(i, f"HOT{i} the lamp flickers.") if i % 2 else act(i, f"HOT{i} I wait.") for i in range(1, 13)]
    recall = [MemoryItem(f"entry:{100 + i}", filler(f"MATCH{i}", 30), found_by="meaning") for i in range(5)]
    context = build_context(WORLD, MemoryView(hot=hot, recall=recall, notes=_notes_filling_recall(hot)),
                            act(13, "Where did the groom go?"), ROOMY, words)  # fmt: skip
    recall_layer = context.trace.layer("recall")
    last = context.messages[-1].content

    assert all(f"OLDNOTE{i}" in everything(context.messages) for i in range(2, 13, 2)), "earlier notes stay put"
    for i in range(3):  # the three best, though the layer's budget is spent
        assert f"entry:{100 + i}" in recall_layer.items and f"MATCH{i}" in last
    assert "entry:104" in recall_layer.left_out and "MATCH4" not in last, "past the three, the budget rules"


def test_a_fact_that_supersedes_one_shown_gets_in_and_takes_none_of_the_actions_places():
    hot = [gm(i, f"HOT{i} the lamp flickers.") if i % 2 else act(i, f"HOT{i} I wait.") for i in range(1, 13)]
    notes = _notes_filling_recall(hot)
    notes[2].append(TurnNote(layer="recall", ref="fact:1", text="brass key, location: on the desk"))
    newer = [MemoryItem(f"fact:{10 + i}", f"[fact, now] NEWFACT{i} brass key, location: in the cellar",
                        found_by="newer") for i in range(3)]  # fmt: skip
    matches = [MemoryItem(f"entry:{100 + i}", filler(f"MATCH{i}", 30), found_by="words") for i in range(3)]
    context = build_context(WORLD, MemoryView(hot=hot, recall=[*newer, *matches], notes=notes),
                            act(13, "Where is the brass key now?"), ROOMY, words)  # fmt: skip
    items = context.trace.layer("recall").items
    text = everything(context.messages)

    added = items[7:]  # after the six earlier notes and the older fact, which stay where they were
    assert set(items[:7]) == {f"entry:{900 + i}" for i in range(2, 13, 2)} | {"fact:1"}
    assert added == [f"fact:{10 + i}" for i in range(3)] + [f"entry:{100 + i}" for i in range(3)]
    assert text.index("location: on the desk") < text.index("NEWFACT0 brass key, location: in the cellar")


def test_a_best_match_held_by_a_turn_that_is_cut_off_comes_back_with_this_turn():
    hot = [gm(i, filler(f"HOT{i}", 60)) if i % 2 else act(i, filler(f"HOT{i}", 60)) for i in range(1, 9)]
    notes = {2: [TurnNote(layer="recall", ref="entry:100", text="GROOMCLUE the groom rode north at dawn.")]}
    recall = [MemoryItem("entry:100", "GROOMCLUE the groom rode north at dawn.", found_by="meaning")]
    view = MemoryView(hot=hot, recall=recall, notes=notes)
    action = act(9, "Which way did the stable lad ride?")
    everything_fits = build_context(WORLD, view, action, ROOMY, words)
    assert "entry:100" not in everything_fits.trace.layer("recall").left_out
    assert everything(everything_fits.messages).count("GROOMCLUE") == 1, "turn 2's note holds it: shown once"

    budget = Budget(n_ctx=everything_fits.trace.total_tokens - 150 + 100, reply_tokens=100)
    context = build_context(WORLD, view, action, budget, words)

    assert "entry:2" in context.trace.layer("hot").left_out, "turn 2 and its note are cut"
    assert "entry:100" in context.trace.layer("recall").items
    assert everything(context.messages).count("GROOMCLUE") == 1, "back once, with this turn"
    assert "GROOMCLUE" in context.messages[-1].content


def test_a_fragment_an_earlier_turns_note_holds_is_not_said_again():
    """A turn is shown once in a prompt (F40): the same older value told twice, as plainly as the newer, outweighed
    it. What a small model needs beside the question is the brief's (bot.memory.recall.memory_brief)."""
    hot = [gm(i, f"HOT{i} the lamp flickers.") if i % 2 else act(i, f"HOT{i} I wait.") for i in range(1, 12)]
    clue, other = "GROOMCLUE the groom rode north at dawn.", "OATHCLUE the groom swore it on his mother's grave."
    third, lead = "HORSECLUE a grey mare.", "VAULTCLUE the housekeeper wears the cellar key."
    notes = {2: [TurnNote(layer="recall", ref="entry:100", text=clue)],
             10: [TurnNote(layer="recall", ref="entry:101", text=other)]}  # fmt: skip
    recall = [MemoryItem("entry:100", clue, found_by="meaning"), MemoryItem("entry:101", other, found_by="words"),
              MemoryItem("entry:102", third, found_by="words"),
              MemoryItem("entry:105", lead, found_by="meaning", lead=True)]  # fmt: skip
    context = build_context(WORLD, MemoryView(hot=hot, recall=recall, notes=notes),
                            act(12, "Which way did the groom ride?"), ROOMY, words)  # fmt: skip
    last = context.messages[-1].content
    for shown in ("GROOMCLUE", "OATHCLUE"):
        assert shown not in last and everything(context.messages).count(shown) == 1, shown
    assert "HORSECLUE" in last and "VAULTCLUE" in last, "what no note holds yet is told with this turn"


# Over the total budget


def _over_budget_view() -> MemoryView:
    hot = []
    for i in range(1, 7):
        maker = gm if i % 2 else act
        hot.append(maker(i, filler(f"HOT{i}", 30)))
    return MemoryView(
        hot=hot,
        lore=[
            MemoryItem("lore:a", filler("LOREA", 5), priority=50),
            MemoryItem("lore:b", filler("LOREB", 5), priority=90),
            MemoryItem("lore:c", filler("LOREC", 5), priority=10),
        ],
        recall=[MemoryItem(f"fact:{i}", filler(f"RECALL{i}", 5)) for i in range(3)],
    )


def test_over_budget_the_oldest_hot_turns_go_first():
    view = _over_budget_view()
    action = act(7, "I climb.")
    everything_fits = build_context(WORLD, view, action, ROOMY, words).trace.total_tokens
    budget = Budget(n_ctx=everything_fits - 50 + 100, reply_tokens=100)  # about two hot turns short
    context = build_context(WORLD, view, action, budget, words)
    trace = context.trace
    hot = trace.layer("hot")
    text = everything(context.messages)

    assert trace.overflow is None
    assert trace.total_tokens <= budget.limit
    assert 0 < len(hot.items) < 6
    kept = len(hot.items)
    assert hot.items == [f"entry:{i}" for i in range(7 - kept, 7)], "the newest turns stay"
    assert hot.left_out == [f"entry:{i}" for i in range(1, 7 - kept)], "the oldest are recorded as left out"
    for i in range(1, 7 - kept):
        assert f"HOT{i} " not in text
    # Lore and recall are untouched while hot turns can still go.
    assert trace.layer("lore").left_out == [] and trace.layer("recall").left_out == []
    assert text.rstrip().endswith("Maya: I climb.")


def test_over_budget_recall_goes_after_the_hot_turns_then_lore_by_priority():
    view = _over_budget_view()
    action = act(7, "I climb.")
    top = build_context(WORLD, view, action, ROOMY, words).trace.total_tokens
    stages = set()
    for limit in range(top, 0, -1):
        budget = Budget(n_ctx=limit + 100, reply_tokens=100)
        trace = build_context(WORLD, view, action, budget, words).trace
        hot, lore, recall = trace.layer("hot"), trace.layer("lore"), trace.layer("recall")

        # Nothing disappears silently.
        assert hot.left_out + hot.items == [f"entry:{i}" for i in range(1, 7)]
        assert sorted(lore.items + lore.left_out) == ["lore:a", "lore:b", "lore:c"]
        assert sorted(recall.items + recall.left_out) == ["fact:0", "fact:1", "fact:2"]
        if trace.overflow is None:
            assert trace.total_tokens <= budget.limit

        if hot.left_out:
            stages.add("hot")
        if recall.left_out:
            stages.add("recall")
            assert hot.items == [], f"at {limit}: a recalled fragment went while a hot turn stayed"
            # the least relevant (last in the list) goes first
            assert recall.items == ["fact:0", "fact:1", "fact:2"][: len(recall.items)]
            assert recall.left_out == ["fact:2", "fact:1", "fact:0"][: len(recall.left_out)]
        if lore.left_out:
            stages.add("lore")
            assert hot.items == [] and recall.items == [], f"at {limit}: lore went before recall"
            # lowest priority first
            assert lore.left_out == ["lore:c", "lore:a", "lore:b"][: len(lore.left_out)]
            assert lore.items == ["lore:b", "lore:a", "lore:c"][: len(lore.items)]
        if trace.overflow:
            break
    assert stages == {"hot", "recall", "lore"}, "the sweep went through every stage of trimming"


def test_a_frozen_part_that_alone_overflows_is_reported_not_raised():
    budget = Budget(n_ctx=2048, reply_tokens=128)
    hot = [gm(1, "The boat lands."), act(2, "I step ashore.")]
    lore = [MemoryItem("lore:oil", "The oil store is a cellar.", 70)]
    recall = [MemoryItem("fact:1", "Wren flinched.")]
    huge_story = MemoryItem("summary:7", filler("HUGESTORY", 3000))
    many_pins = [MemoryItem(f"pin:{i}", filler(f"PIN{i}", 12)) for i in range(200)]
    for view in (
        MemoryView(story=huge_story, hot=hot, lore=lore, recall=recall),
        MemoryView(pins=many_pins, hot=hot, lore=lore, recall=recall),
    ):
        action = act(3, "ACTIONTEXT I knock on the tower door.")
        context = build_context(WORLD, view, action, budget, words)
        trace = context.trace
        assert isinstance(trace.overflow, str)
        assert len(trace.overflow.split()) >= 5, "a sentence an admin can read"
        assert str(budget.limit) in trace.overflow
        # Never dropped: the story or the pins are all there.
        if view.story:
            assert trace.layer("story").items == ["summary:7"]
            assert huge_story.text in context.messages[0].content
        else:
            assert trace.layer("pins").items == [p.ref for p in many_pins]
            assert all(p.text in context.messages[0].content for p in many_pins)
        # What can go, went, and it is recorded.
        assert trace.layer("hot").items == [] and trace.layer("hot").left_out == ["entry:1", "entry:2"]
        assert trace.layer("lore").left_out == ["lore:oil"]
        assert trace.layer("recall").left_out == ["fact:1"]
        # The turn still has its action, last.
        assert context.messages[-1].role == "user"
        assert context.messages[-1].content.endswith("Maya: ACTIONTEXT I knock on the tower door.")
        assert trace.total_tokens == prompt_tokens(context.messages) > budget.limit


# Prefix stability (llama.cpp reuses the cached prompt)


def test_between_compactions_the_prompt_only_grows_at_its_end():
    budget = Budget(n_ctx=4096, reply_tokens=256)
    memory = dict(
        players=[MAYA, TOM],
        chapters=[MemoryItem("summary:1", "The players landed and found the log book.")],
        story=MemoryItem("summary:5", "Maya and Tom crossed to Gull Rock with Wren, who talked all the way."),
        pins=[MemoryItem("pin:1", "Tom owes Wren ten shillings.")],
        glossary=[MemoryItem("glossary:1", "Skerry: a small rocky island.")],
        short=[MemoryItem("summary:9", "They forced the cottage door and found it empty.")],
    )
    hot1 = [
        gm(20, "The cottage is cold. A log book lies open on the desk, its last page torn."),
        act(21, "I read what is left of the last page."),
        entry(22, EntryKind.ROLL, "1d20: 14"),
        gm(23, "The ink is smudged, but you make out a ship's name: the Grey Heron."),
        act(24, "I ask Wren if he knows the Grey Heron.", author="Tom"),
    ]
    action1 = act(25, "I check the oil store under the cottage.")
    first = build_context(
        WORLD,
        MemoryView(
            **memory,
            hot=hot1,
            lore=[MemoryItem("lore:oil-store", "The oil store is a cellar under the cottage; its lock is new.", 70)],
            recall=[MemoryItem("fact:4", "Wren said the keeper quarrelled with the supply company.")],
        ),
        action1,
        budget,
        words,
    )
    reply1 = gm(26, "Wren goes pale. 'Never heard of her,' he says, too fast. The cellar lock is shiny and new.")
    hot2 = [*hot1, action1, reply1, act(27, "I keep an eye on Wren.", author="Tom")]
    action2 = act(28, "I pick the lock.")
    second = build_context(
        WORLD,
        MemoryView(
            **memory,
            hot=hot2,
            lore=[MemoryItem("lore:weather", "A storm is coming from the north-east.", 10)],
            recall=[MemoryItem("fact:7", "The keeper kept a spare key in the lamp room.")],
        ),
        action2,
        budget,
        words,
    )
    assert first.trace.overflow is None and second.trace.overflow is None
    assert second.trace.layer("hot").left_out == []

    assert second.messages[0].content.encode() == first.messages[0].content.encode()
    assert second.messages[: len(first.messages) - 1] == first.messages[:-1]
    # The only new things are at the end.
    assert "A storm is coming" in second.messages[-1].content
    assert "A storm is coming" not in everything(second.messages[:-1])
    share = shared_prefix_share(first.messages, second.messages, words)
    assert 0.8 < share <= 1.0


def test_a_changed_summary_breaks_the_shared_prefix():
    budget = Budget(n_ctx=4096, reply_tokens=256)
    hot = [gm(1, "The boat lands."), act(2, "I step ashore.")]
    before = build_context(
        WORLD, MemoryView(hot=hot, short=[MemoryItem("summary:1", "Old.")]), act(3, "Hi."), budget, words
    )
    after = build_context(
        WORLD, MemoryView(hot=hot, short=[MemoryItem("summary:2", "New.")]), act(3, "Hi."), budget, words
    )
    assert before.messages[0] != after.messages[0]
    assert shared_prefix_share(before.messages, after.messages, words) < 1.0
    assert shared_prefix_share(before.messages, before.messages, words) == 1.0
    assert shared_prefix_share([], before.messages, words) == 0.0


# Entries as chat


def test_entries_render_as_a_chat_the_model_can_follow():
    """Joins and rolls are plain sentences: in brackets before an action, a model copies the brackets."""
    hot = [
        gm(1, "The boat bumps against the landing stage."),
        act(2, "I jump ashore."),
        entry(3, EntryKind.ROLL, "1d20: 12"),
        act(4, "I tie up the boat.", author="Tom"),
        gm(5, "The rope is frayed."),
        entry(6, EntryKind.SYSTEM, "Tom left the game", author="system"),
        entry(7, EntryKind.ACTION, "I pocket the key.", visibility=Visibility.PRIVATE, visible_to=(1,)),
    ]
    context = build_context(WORLD, MemoryView(hot=hot), act(8, "I walk to the tower."), ROOMY, words)
    chat = [(m.role, m.content) for m in context.messages[1:]]
    assert chat == [
        ("user", GAME_BEGINS),
        ("assistant", "The boat bumps against the landing stage."),
        ("user", "Maya: I jump ashore.\nMaya rolls 1d20: 12.\nTom: I tie up the boat."),
        ("assistant", "The rope is frayed."),
        (
            "user",
            "Tom left the game.\n(private) Maya: I pocket the key.\n"
            "(Answer Maya privately: your whole reply goes to them alone.)\nMaya: I walk to the tower.",
        ),
    ]


def test_a_small_model_reads_the_prompt_it_was_measured_with():
    """The short guide (a model under 1B): joins and rolls in brackets, one scene note per NPC, the short clue
    wording. The 135M bundled model copied the newer forms into its replies (bench quality)."""
    hot = [gm(1, "The boat bumps."), entry(2, EntryKind.ROLL, "1d20: 12"), entry(3, EntryKind.SYSTEM, "Tom joined")]
    scene = [
        NpcScene("wren", "Wren Tally", turns=(0, 1), seen=("GM: Wren mends a net.",)),
        NpcScene("keeper", "Old Keeper", turns=(0, 1), seen=("GM: Wren mends a net.",)),
    ]
    view = MemoryView(hot=hot, scene=scene)
    small = build_context(WORLD, view, act(4, "I greet them."), ROOMY, words, full_guide=False)
    final = small.messages[-1].content
    assert "[Maya rolls 1d20: 12]" in final and "[Tom joined]" in final
    assert "Wren Tally is here." in final and "Old Keeper is here." in final
    assert "When log-book happens, tell one player alone" in small.messages[0].content
    full = build_context(WORLD, view, act(4, "I greet them."), ROOMY, words)
    final = full.messages[-1].content
    assert "Maya rolls 1d20: 12." in final and "[" not in final.replace("[[to", "")
    assert "Wren Tally and Old Keeper are here. Each witnessed turns 0-1" in final
    assert final.count("Wren mends a net") == 1, "what they saw together is said once"


def test_no_opener_when_the_history_starts_with_a_player_and_roles_alternate():
    hot = [act(1, "I wake up."), act(2, "Me too.", author="Tom"), gm(3, "Gulls cry."), gm(4, "The tide turns.")]
    context = build_context(WORLD, MemoryView(hot=hot), act(5, "I stand."), ROOMY, words)
    roles = [m.role for m in context.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert GAME_BEGINS not in everything(context.messages)
    assert context.messages[1].content == "Maya: I wake up.\nTom: Me too."
    assert context.messages[2].content == "Gulls cry.\nThe tide turns."


def test_a_new_game_of_the_world_with_other_players_shares_its_whole_frozen_layer():
    """Its first turn then starts from the first game's model state: the world's rules and text are not read
    again, only what follows its players."""
    budget = Budget(n_ctx=4096, reply_tokens=256)
    first = build_context(WORLD, MemoryView(players=[MAYA, TOM]), act(1, "I climb the stair."), budget, words)
    other = Player(id=9, game_id=2, user_key="u9", name="Rook", description="a smuggler", joined_at=NOW)
    second = build_context(WORLD, MemoryView(players=[other]), act(1, "I light a match.", "Rook"), budget, words)
    a, b = first.messages[0].content, second.messages[0].content
    shared = len(os.path.commonprefix([a, b]))
    assert a[shared:].startswith("Maya") and b[shared:].startswith("Rook")
    assert a[:shared].rstrip().endswith("Players:"), "the world's rules and text all come before the players"
    assert "Characters you voice:" in a[:shared]
