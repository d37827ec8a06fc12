"""Which recalled fragments a turn is offered, and in which order."""

from __future__ import annotations

import dataclasses

from bot.memory.context import BEST_MATCHES
from bot.memory.recall import MEANING_LEADS, fragments, leads, meaning_leads
from bot.store.models import RecallHit


def hit(n: int, text: str = "") -> RecallHit:
    return RecallHit(ref=f"entry:{n}", text=text or f"GM: line {n}.", turn=n, score=0.0)


def test_a_text_told_again_at_another_turn_is_offered_once():
    mucking, clue = "GM: Pip is mucking out the stables.", "GM: Pip swears he saw a rider at midnight."
    hits = [hit(174, mucking), hit(141, mucking), hit(3, clue), hit(102, mucking)]
    items = fragments(hits, set(), {"entry"})
    assert [item.ref for item in items] == ["entry:174", "entry:3"]


def test_what_a_turn_shows_of_itself_is_offered_once_whatever_was_cut():
    """A line the GM says every few turns, shown alone from a longer turn (cut to the sentence nearest the
    question), took a third place beside two turns that said only it."""
    lens = "The beacon's great lens is smeared with salt."
    longer = f"GM: {lens} Wren carried the brass key down to the cellar and left it on a barrel there, day and night."
    clue = "GM: The lamp oil has been watered down; someone diluted it so the light would fail."
    hits = [hit(150, longer), hit(13, f"GM: {lens}"), hit(20, clue), hit(262, f"GM: The gulls cry. {lens}")]
    items = fragments(hits, set(), {"entry"}, terms=["beacon", "lens"], words=10)
    assert items[0].text.startswith("[turn 150] GM: The beacon's great lens is smeared with salt. …"), items[0]
    assert [item.ref for item in items] == ["entry:150", "entry:20"], [item.text for item in items]


def test_the_first_fragment_recall_by_meaning_ranked_gets_a_place_among_the_best_matches():
    fused = [hit(n) for n in (110, 304, 10, 106, 44, 12, 143)]
    by_meaning = [hit(999), hit(12), hit(110)]  # its first is one the turn may not see, its second the clue
    order = [h.turn for h in meaning_leads(fused, by_meaning)]
    assert order[:BEST_MATCHES] == [110, 304, 12] and sorted(order) == sorted(h.turn for h in fused)
    assert order[BEST_MATCHES:] == [10, 106, 44, 143], "the rest keep their fused order"

    already = [h.turn for h in meaning_leads(fused, [hit(304)])]
    assert already == [h.turn for h in fused], "one that is among the best already stays where it is"
    assert [h.turn for h in meaning_leads(fused, [])] == [h.turn for h in fused]


def test_the_first_fragments_by_meaning_the_turn_may_see_lead_wherever_the_fusion_put_them():
    fused = [hit(n) for n in (110, 304, 10, 106, 44, 12, 143)]
    by_meaning = [hit(999), hit(12), hit(143), hit(110)]  # its first is one the turn may not see
    assert MEANING_LEADS == 2 and leads(fused, by_meaning) == {"entry:12", "entry:143"}
    assert leads(fused, []) == set()


def test_a_ranking_keeps_what_was_found_at_its_best_place_only():
    from bot.memory.recall import distinct

    lens = "The beacon's great lens is smeared with salt."
    ranking = [
        RecallHit(ref="entry:1", text=f"GM: Gulls wheel and cry above the rocks. {lens}", turn=1, score=0.9, part=2),
        RecallHit(ref="entry:2", text=f"GM: {lens} The stairs creak under your weight.", turn=2, score=0.8, part=1),
        RecallHit(ref="entry:3", text="GM: The lamp oil has been watered down.", turn=3, score=0.7),
        RecallHit(ref="entry:4", text="GM: The lamp oil has been watered down.", turn=4, score=0.6),
        RecallHit(ref="entry:5", text=f"GM: {lens} Tom left the key in the cellar.", turn=5, score=0.5),
    ]
    assert [hit.turn for hit in distinct(ranking)] == [1, 3, 5], "a fragment found by its whole is its own"

    # A turn of that one sentence is found by its whole, speaker and all: it says nothing the first did not.
    alone = RecallHit(ref="entry:6", text=f"GM: {lens}", turn=6, score=0.85)
    assert [hit.turn for hit in distinct([ranking[0], alone, *ranking[2:]])] == [1, 3, 5]
    assert [hit.turn for hit in distinct([alone, *ranking])] == [6, 3, 5]


def test_a_clause_is_embedded_on_its_own_and_an_excerpt_cut_around_it_keeps_its_whole_sentence():
    """A clue told in one clause of a long sentence is found by that clause (bench recall's topical game: the
    beacon's clue ranked 19th by its sentence), and what the prompt shows of it is still the whole sentence."""
    from bot.memory.recall import excerpt, passages, sentence_of

    clue = "The lamp oil has been watered down; someone diluted it so the light would fail."
    reply = f"GM: The cellar door is heavy oak, swollen with damp. {clue} Gulls cry, and the tide turns below."
    parts = passages(reply)
    assert parts[:4] == [reply, "GM: The cellar door is heavy oak, swollen with damp.", clue,
                         "Gulls cry, and the tide turns below."]  # fmt: skip
    assert parts[4:] == ["The lamp oil has been watered down;", "someone diluted it so the light would fail."]
    assert "Gulls cry," not in parts[4:], "a clause of fewer than four words is not embedded on its own"
    assert [sentence_of(reply, part) for part in range(len(parts))] == [0, 1, 2, 3, 2, 2]
    assert excerpt(reply, part=5, words=10) == f"… {clue} …"
    assert passages(reply, clauses=False) == parts[:4]
    assert sentence_of(reply, 9) == 0, "a part the text has not (an older split's vectors): no sentence"


def test_the_brief_tells_beside_the_action_what_the_notes_say_of_what_it_asks_about():
    from bot.memory.layers import NEWER, MemoryItem
    from bot.memory.recall import memory_brief

    pin = MemoryItem("pin:1", "The chapel candles are laced with arsenic.")
    clue = MemoryItem(
        "entry:3", "[turn 3] GM: Pip the groom swears he saw a rider at midnight.", found_by="both", score=0.2
    )
    other = MemoryItem("entry:90", "[turn 90] GM: The stables are quiet.", found_by="words", score=0.1)
    assert memory_brief("I sniff the chapel candles.", [pin], []) == [pin], "a pin the action names"
    assert memory_brief("I sniff the candles.", [pin], []) == [], "one word is not enough"
    assert memory_brief("What did Pip the groom see?", [pin], [clue, other]) == [clue], "clearly first"
    assert memory_brief("I walk to the stables.", [], [clue, other]) == [], "the action asks nothing"
    close = MemoryItem("entry:91", "[turn 91] GM: A rider passed.", found_by="words", score=0.19)
    assert memory_brief("What did Pip see?", [], [clue, close]) == [], "no clear first: the recall layer tells both"
    now = MemoryItem("fact:2", "[fact, now] brass key, location: in the cellar", found_by=NEWER)
    assert memory_brief("Where is the brass key?", [], [clue, now]) == [now], "a fact's value that holds now"
    assert memory_brief("Is there another way into the cellar?", [], [now]) == [], "its value's words are not it"
    flag = MemoryItem("fact:4", "[fact, now] red signal flag, location: in the boathouse", found_by=NEWER)
    assert memory_brief("What is the danger signal?", [], [flag]) == [], "a word of its name, not the thing"
    assert memory_brief("Where did the red flag go?", [], [flag]) == [flag], "the thing, named short"
    found = MemoryItem("fact:5", "[fact, now] ferryman, allegiance: Ashby (before: the Crown until turn 52)",
                       found_by="words", score=0.2)  # fmt: skip
    assert memory_brief("Who does the ferryman work for now?", [], [clue, found]) == [found], "recall found it"
    boat = MemoryItem("fact:7", "[fact, now] lifeboat, location: in its cradle under a tarpaulin", found_by=NEWER)
    oars = MemoryItem("entry:24", "[turn 24] GM: The lifeboat's oars were sawn halfway through.", found_by="both",
                      score=0.4)  # fmt: skip
    asked = "I look at the lifeboat's oars. What is wrong with them?"
    assert memory_brief(asked, [], [boat, oars, other]) == [oars], "the oars are asked about, not their boat"
    nearest = dataclasses.replace(boat, lead=True)  # the thing followed nearest the question by meaning
    assert memory_brief(asked, [], [nearest, oars, other]) == [oars], "nor the boat found by meaning (seed 23)"
    chest = MemoryItem("fact:8", "[fact, now] iron-bound sea chest, location: under the palm", found_by=NEWER)
    assert memory_brief("Which numbers open the iron chest?", [], [chest]) == [], "a code is asked, not a place"
    assert memory_brief("Where is the iron chest?", [], [chest]) == [chest]
    gate = MemoryItem("fact:6", "[fact, now] key to the gate, holder: Pip", found_by=NEWER)
    assert memory_brief("Who has the key?", [], [gate]) == [gate], "the thing's name before what follows it"
    gulls = MemoryItem(
        "entry:110", "[turn 110] … Gulls perch along the lifeboat's gunwale.", found_by="both", lead=True, score=0.33
    )  # found by "old" in the turn's other sentence, and by meaning
    chart = MemoryItem("entry:143", "[turn 143] … An old chart hangs in the hall.", found_by="both", score=0.3)
    asked = "What bird is etched in the old sailor's timepiece?"
    assert memory_brief(asked, [], [gulls, chart]) == [], "what it shows shares no word with the question"
    lens = MemoryItem("entry:150", "[turn 150] GM: The beacon's great lens is smeared with salt. …",
                      found_by="both", lead=True, score=0.3)  # fmt: skip
    assert memory_brief("Was the fuel for the beacon tampered with?", [], [lens]) == [], "one word in common"
    wren = MemoryItem("entry:36", "[turn 36] GM: Wren burned a letter in the stove.", found_by="both", score=0.3)
    assert memory_brief("Where is Wren?", [], [wren, other]) == [wren], "a question of one word: that one"
    candles = MemoryItem(
        "entry:8", "[turn 8] … Mrs Ashdown complains about the price of candles.", found_by="both", score=0.4
    )
    assert memory_brief("What do the chapel candles smell of?", [pin], [candles, other]) == [pin], "one answer"
    altar = MemoryItem(
        "entry:12", "[turn 12, since changed] GM: Ines sets the swan candlestick on the chapel altar.",
        found_by="both", score=0.4,
    )  # fmt: skip
    well = MemoryItem("fact:9", "[fact, now] swan candlestick, location: in the old well", found_by=NEWER)
    asked = "What stands on the chapel altar these days?"
    assert memory_brief(asked, [], [altar, well, other]) == [well], "what holds now, not the old turn"
    assert memory_brief(asked, [], [altar, other]) == [], "an old value alone is never told as the answer"
    blessed = MemoryItem("entry:13", "[turn 13, since changed] … Elias Wren blesses the smugglers' boats. …",
                         found_by="both", score=0.4)  # fmt: skip
    code = MemoryItem("fact:11", "[fact, now] cellar door code, code: 882 (before: 419 until turn 40)", found_by=NEWER)
    assert memory_brief("Whose side is Elias Wren on now?", [], [blessed, code, other]) == [], "changed by another"
    hid = MemoryItem("entry:5", "[turn 5] Maya: I hide the brass key under the mat.", found_by="both", score=0.4)
    assert memory_brief("Where did I hide the brass key?", [], [hid, other]) == [hid], "a player's line answers"
    searched = MemoryItem("entry:4", "[turn 4] Maya: I search the rock for a way down.", found_by="both", score=0.4)
    assert memory_brief("I search the rock again.", [], [searched, other]) == [], "a search is answered by the GM"
    heron = MemoryItem("entry:12", "[turn 12] … A silver heron is engraved inside the lid of the captain's watch.",
                       found_by="meaning", lead=True, clear=True, score=0.1)  # fmt: skip
    asked = "What bird is etched in the old sailor's timepiece?"
    assert memory_brief(asked, [], [gulls, chart, heron]) == [heron], "first by meaning by far: in other words"
    assert memory_brief("I walk to the lighthouse.", [], [heron]) == [], "the action asks nothing"
    close = MemoryItem("entry:2", "[turn 2] … What do you do?", found_by="meaning", lead=True, clear=True, score=0.1)
    assert memory_brief("I look around.", [], [close, other]) == [], "a question answers nothing"


def test_a_fragment_is_clearly_first_by_meaning_only_where_no_other_comes_near_it_each_counted_by_its_rarity():
    from bot.memory.recall import clear_by_meaning

    def hit(turn: int, text: str, score: float, part: int = 0) -> RecallHit:
        return RecallHit(ref=f"entry:{turn}", text=f"GM: {text}", turn=turn, score=score, part=part)

    heron = hit(12, "A silver heron is engraved inside the lid of the captain's pocket watch.", 0.65)
    chart = hit(110, "An old chart of the coast hangs framed in the hall.", 0.456)
    assert clear_by_meaning([heron, chart]) == "entry:12"
    assert clear_by_meaning([heron, hit(110, "The captain's watch ticks loudly.", 0.55)]) is None, "no clear first"
    assert clear_by_meaning([heron]) is None, "nothing to stand out from"
    assert clear_by_meaning([heron, hit(5, "Nothing alike.", -0.1)]) is None, "nothing near it at all"
    # A line the GM says every few turns is furniture: the clue said once stands out from it (1.26 by cosine alone).
    doctor = hit(28, "The watch ticks. Doctor Penhale from Brightwater treated the captain's fever.", 0.674, 2)
    cough = [hit(turn, "Rain drums on the roof. The captain coughs into his sleeve.", 0.533 - (turn - 60) / 1000, 2)
             for turn in range(60, 70)]  # fmt: skip
    assert clear_by_meaning([doctor, *cough]) == "entry:28"
    assert clear_by_meaning([doctor, cough[0]]) is None, "said once, the cough is as much news as the doctor"
    # The lens, said in twenty turns, ranks below the once-said lamp oil; but the letter's clause comes as near.
    lens = [hit(turn, "Gulls perch. The beacon's great lens is smeared with salt.", 0.649 - (turn - 100) / 1000, 2)
            for turn in range(100, 120)]  # fmt: skip
    oil = hit(20, "The lamp oil has been watered down; someone diluted it so the light would fail.", 0.445, 2)
    letter = hit(36, "Wren burned a letter in the kitchen stove before dawn; only the seal survived.", 0.435, 3)
    assert clear_by_meaning([*lens[:3], oil]) == "entry:20"
    assert clear_by_meaning([*lens, oil, letter]) is None, "the oil and the letter are as near"


def test_a_question_none_answers_clearly_is_briefed_with_the_first_two_by_meaning_unless_the_recent_turns_are_nearer():
    """ "Which servant carries the key to the wine vault?" found Wren carrying the brass key to the cellar (.54) and
    Mrs Ashdown wearing the cellar key (.51): neither clearly first, both are told, and the model tells which
    answers. A line said in every few turns counts as furniture, the recent turns' too; what a recent turn the
    prompt shows comes nearer to, it answers."""
    from bot.memory.recall import candidates_by_meaning

    def hit(turn: int, text: str, score: float, part: int = 0) -> RecallHit:
        return RecallHit(ref=f"entry:{turn}", text=f"GM: {text}", turn=turn, score=score, part=part)

    wren = hit(303, "Wren Tally carried the brass key down to the cellar and left it on a barrel there.", 0.539)
    ashdown = hit(21, "Mrs Ashdown wears the cellar key on a chain around her neck, day and night.", 0.514)
    fact = RecallHit(ref="fact:3", text="brass key, location: in the cellar", turn=150, score=0.665)
    action = hit(600, "Which servant carries the key to the wine vault?", 1.0)
    assert candidates_by_meaning([action, fact, wren, ashdown], {"entry:600"}, set()) == ["entry:303", "entry:21"]
    recent = hit(598, "Mrs Ashdown hangs the cellar key back on its chain.", 0.6)
    found = [action, fact, recent, wren, ashdown]
    assert candidates_by_meaning(found, {"entry:600", "entry:598"}, {"entry:598"}) == [], "a recent turn is nearer"
    heron = hit(12, "A silver heron is engraved inside the lid of the captain's pocket watch.", 0.65)
    chart = hit(110, "An old chart of the coast hangs framed in the hall.", 0.456)
    assert candidates_by_meaning([heron, chart], set(), set()) == [], "one is clearly first: it is the answer"
    # The lens is said in twenty turns, the last of them recent: it is furniture there too.
    said = "Gulls perch. The beacon's great lens is smeared with salt."
    lens = [hit(turn, said, 0.649, 2) for turn in range(100, 120)]
    oil = hit(20, "The lamp oil has been watered down; someone diluted it so the light would fail.", 0.445, 2)
    letter = hit(36, "Wren burned a letter in the kitchen stove before dawn; only the seal survived.", 0.435, 3)
    shown = {"entry:119"}
    assert candidates_by_meaning([*lens, oil, letter], shown, shown) == ["entry:20", "entry:36"]


def test_the_brief_tells_both_candidates_for_a_question_and_none_for_an_action_that_only_looks():
    from bot.memory.layers import MemoryItem
    from bot.memory.recall import memory_brief

    wren = MemoryItem("entry:303", "[turn 150] … Wren Tally carried the brass key down to the cellar.",
                      found_by="both", lead=True, meant=1, score=0.33)  # fmt: skip
    ashdown = MemoryItem("entry:21", "[turn 9] … Mrs Ashdown wears the cellar key on a chain around her neck.",
                         found_by="meaning", meant=2, score=0.2)  # fmt: skip
    other = MemoryItem("entry:25", "[turn 11] GM: Pip the groom is whistling off key.", found_by="words", score=0.3)
    asked = "Which servant carries the key to the wine vault?"
    assert memory_brief(asked, [], [wren, other, ashdown]) == [wren, ashdown], "first fused, but meaning is unsure"
    assert memory_brief("I look for the cellar key.", [], [wren, other, ashdown]) == [], "not a question"
    plain = [dataclasses.replace(wren, meant=0), other, dataclasses.replace(ashdown, meant=0)]
    assert memory_brief(asked, [], plain) == [plain[0]], "meaning unsure of nothing: first fused and by meaning"
