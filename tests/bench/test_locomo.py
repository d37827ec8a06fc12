"""The LoCoMo harness: loading, the BM25 baseline, recall arithmetic and the printed figures."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.bench.locomo import (
    BM25,
    CATEGORIES,
    Conversation,
    Question,
    Retrieved,
    bm25_retrieve,
    bm25_retriever,
    cross_validate,
    evaluate,
    load_locomo,
    parse_evidence,
    print_results,
)


def words(text: str) -> int:
    return len(text.split())


def _turn(dia_id: str, speaker: str, text: str, **extra) -> dict:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


TINY = [
    {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            # Sessions out of order on purpose, with session 10 to check numeric ordering.
            "session_10_date_time": "9:00 am on 3 June, 2023",
            "session_10": [
                _turn("D10:1", "Ann", "I adopted a greyhound named Pixel."),
                _turn("D10:2", "Bob", "Lovely, how old is she?"),
            ],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Ann", "Hi Bob, how are you?"),
                _turn("D1:2", "Bob", "Fine, I went sailing on the lake."),
                _turn(
                    "D1:3",
                    "Ann",
                    "I painted a sunrise last week.",
                    blip_caption="a painting of a sunrise over a lake",
                    img_url=["http://example.invalid/x.jpg"],
                ),
            ],
            "session_11_date_time": "no turns for this one",
        },
        "qa": [
            {"question": "What did Ann paint?", "answer": "A sunrise", "evidence": ["D1:3"], "category": 4},
            {"question": "When did Ann paint?", "answer": 2023, "evidence": ["D1:03"], "category": 2},
            {
                "question": "What animals and hobbies?",
                "answer": "greyhound, sailing",
                "evidence": ["D1:3; D10:1", "D1:2", "D1:3"],
                "category": 1,
            },
            {"question": "Who is Pixel?", "answer": "a dog", "evidence": ["D:10:1", "D7:1"], "category": 3},
            {"question": "Nothing here?", "answer": "?", "evidence": ["D9:9", "D"], "category": 4},
            {"question": "What about cats?", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
        ],
        "observation": {},
        "session_summary": {},
        "event_summary": {},
    },
    {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Cy",
            "speaker_b": "Di",
            "session_1_date_time": "10:00 am on 1 May, 2023",
            "session_1": [
                _turn("D1:1", "Cy", "My violin teacher moved to Lisbon."),
                _turn("D1:2", "Di", "Oh no, will you find another one?"),
            ],
            "session_2_date_time": "10:00 am on 9 May, 2023",
            "session_2": [
                _turn("D2:1", "Cy", "I found a new teacher in Porto."),
                _turn("D2:2", "Di", "Great news!"),
            ],
        },
        "qa": [
            {"question": "Where did the violin teacher move?", "answer": "Lisbon", "evidence": ["D1:1"], "category": 4},
            {"question": "Where is the new teacher?", "answer": "Porto", "evidence": ["D2:1", "D1:1"], "category": 1},
            {"question": "Empty?", "answer": "", "evidence": [], "category": 3},
            {"question": "Adversarial", "answer": "", "evidence": ["D2:9"], "category": 5},
        ],
    },
]


@pytest.fixture
def data_path(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(TINY))
    return path


@pytest.fixture
def conversations(data_path: Path) -> list[Conversation]:
    return load_locomo(data_path)


def test_parse_evidence_normalizes_splits_dedupes_and_drops_unknown_ids():
    known = {"D1:3", "D2:1", "D1:2", "D11:26", "D30:5"}
    raw = ["D1:3; D2:1", "D:1:2", "D1:03", "D9:9", "D", "D:11:26", "D30:05,D2:1", "D1:2"]
    assert parse_evidence(raw, known) == ("D1:3", "D2:1", "D1:2", "D11:26", "D30:5")
    assert parse_evidence([], known) == ()
    assert parse_evidence(["D9:9", "nonsense"], known) == ()


def test_loader_orders_sessions_drops_category_5_and_counts_questions_without_evidence(conversations):
    a, b = conversations
    assert (a.id, a.speaker_a, a.speaker_b) == ("conv-a", "Ann", "Bob")
    assert [s.index for s in a.sessions] == [1, 10]
    assert a.sessions[0].date == "1:56 pm on 8 May, 2023"
    assert [t.dia_id for t in a.turns] == ["D1:1", "D1:2", "D1:3", "D10:1", "D10:2"]
    first = a.turns[3]
    assert (first.session, first.index, first.speaker) == (10, 0, "Ann")
    assert a.turns[2].text == "I painted a sunrise last week. [shares a photo: a painting of a sunrise over a lake]"
    assert a.turns[0].text == "Hi Bob, how are you?"

    assert all(q.category in CATEGORIES for c in conversations for q in c.questions)
    assert [(q.category, q.evidence) for q in a.questions] == [
        (4, ("D1:3",)),
        (2, ("D1:3",)),
        (1, ("D1:3", "D10:1", "D1:2")),
        (3, ("D10:1",)),
    ]
    assert a.questions[1].answer == "2023"
    assert a.no_evidence == 1 and b.no_evidence == 1
    assert [q.text for q in b.questions] == ["Where did the violin teacher move?", "Where is the new teacher?"]


def test_bm25_ranks_the_document_sharing_rare_words_first():
    index = BM25(["a cat sat on the mat", "the dog ran to the lake", "the cat and the dog", "the the the"])
    ranked = index.rank("where did the dog run to the lake")
    assert ranked[0][0] == 1
    assert 3 not in {i for i, _ in index.rank("cat")}  # zero score: left out
    assert index.rank("zebra") == []


def test_bm25_retrieve_puts_the_turn_sharing_rare_words_first(conversations):
    b = conversations[1]
    question = Question(text="Where did the violin teacher move?", answer="", category=4, evidence=("D1:1",))
    # Room for exactly one turn: "Cy: My violin teacher moved to Lisbon." is 7 words.
    retrieved = bm25_retrieve(b, question, 7, words)
    assert retrieved == Retrieved(dia_ids=frozenset({"D1:1"}), tokens=7)


def test_greedy_filling_never_exceeds_the_budget_and_skips_a_turn_that_does_not_fit(conversations):
    a = conversations[0]
    # Best match is D1:3 (20 words with its caption); D1:2 (8 words) also mentions the lake.
    question = Question(text="sunrise lake painting", answer="", category=4, evidence=("D1:3",))
    costs = {t.dia_id: words(f"{t.speaker}: {t.text}") for t in a.turns}
    assert costs["D1:3"] > 10 and costs["D1:2"] <= 10
    retrieved = bm25_retrieve(a, question, 10, words)
    assert retrieved.dia_ids == {"D1:2"} and retrieved.tokens == costs["D1:2"]
    for budget in (0, 1, 5, 10, 20, 30, 100):
        retrieved = bm25_retrieve(a, question, budget, words)
        assert retrieved.tokens <= budget
        assert retrieved.tokens == sum(costs[d] for d in retrieved.dia_ids)
    # A large budget takes every turn with a positive score, and only those.
    assert bm25_retrieve(a, question, 1000, words).dia_ids == {"D1:2", "D1:3"}


def test_evaluate_computes_recall_per_question_category_and_budget(conversations):
    # A fixed retriever: returns D1:3 and D1:1 from every conversation, 5 tokens at any budget.
    def fixed(conv, question, budget):
        return Retrieved(dia_ids=frozenset({"D1:3", "D1:1"}), tokens=5)

    def nothing(conv, question, budget):
        return Retrieved(dia_ids=frozenset(), tokens=0)

    results = evaluate(conversations, {"memory": fixed, "none": nothing}, [10, 20])
    assert results.questions == 6 and results.no_evidence == 2
    assert results.by_category == {1: 2, 2: 1, 3: 1, 4: 2}
    score = results.score("memory", 10)
    # conv-a: cat 4 -> 1, cat 2 -> 1, cat 1 -> 1/3, cat 3 -> 0; conv-b: cat 4 -> 1, cat 1 -> 1/2.
    assert score.recall == pytest.approx((1 + 1 + 1 / 3 + 0 + 1 + 1 / 2) / 6)
    assert score.by_category[1] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert score.by_category[2] == 1 and score.by_category[3] == 0 and score.by_category[4] == 1
    assert score.tokens == 5 and score.seconds >= 0
    assert results.score("none", 20).recall == 0


def test_a_setting_is_chosen_on_the_other_conversations_and_scored_on_the_one_left_out(conversations):
    """Two candidates: one finds every answer in conv-a and none in conv-b, the other the reverse. Chosen on the
    data it is scored on, either looks perfect on its own conversation; held out, each conversation gets the one
    the other conversation chose, and scores what that one finds there: nothing."""

    def only_in(conv_id):
        def retrieve(conv, question, budget):
            return Retrieved(dia_ids=frozenset(question.evidence) if conv.id == conv_id else frozenset(), tokens=1)

        return retrieve

    ids = [conv.id for conv in conversations]
    held = cross_validate(conversations, {"a": only_in(ids[0]), "b": only_in(ids[1])}, 1000)
    assert held.chosen == {ids[0]: "b", ids[1]: "a"}
    assert held.recall == 0
    assert held.in_sample > 0 and held.best in ("a", "b")


def test_print_results_ends_with_one_name_value_line(conversations):
    results = evaluate(conversations, {"memory": bm25_retriever(words), "bm25": bm25_retriever(words)}, [5, 50])
    out = io.StringIO()
    print_results(results, out, [5, 50])
    text = out.getvalue()
    for label in ("budget 5 tokens", "budget 50 tokens", "multi-hop", "temporal", "open-domain", "single-hop"):
        assert label in text
    assert "2 left out" in text
    last = text.strip().splitlines()[-1]
    pairs = dict(pair.split("=") for pair in last.split())
    assert list(pairs) == ["recall_5", "recall_50", "bm25_recall_5", "bm25_recall_50", "questions"]
    assert pairs["questions"] == "6"
    for key in ("recall_5", "recall_50", "bm25_recall_5", "bm25_recall_50"):
        assert len(pairs[key].split(".")[1]) == 3
        assert 0 <= float(pairs[key]) <= 1
    assert float(pairs["recall_50"]) >= float(pairs["recall_5"])
    assert pairs["recall_50"] == pairs["bm25_recall_50"]


def test_other_retrievers_get_their_name_as_prefix(conversations):
    def none(conv, question, budget):
        return Retrieved(dia_ids=frozenset(), tokens=0)

    results = evaluate(conversations, {"window": none, "memory": none}, [100])
    assert results.figures([100]) == {"recall_100": 0.0, "window_recall_100": 0.0, "questions": 6}
