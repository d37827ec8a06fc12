"""``bench locomo``: evidence recall at a token budget on LoCoMo conversations.

LoCoMo (Maharana et al., ACL 2024) holds long two-person conversations split
into dated sessions, and questions about them whose ``evidence`` names the
turns (``D<session>:<turn>``) that hold the answer. A retriever gets a
conversation, a question and a budget in tokens, and returns the turns its
context would show; evidence recall is the share of a question's evidence
turns among them. That needs no large model, only a tokenizer.

The data is licensed CC BY-NC 4.0 and never lives in this repository: the
code takes the file's path. Category 5 (adversarial, no answer) is left out;
questions whose evidence names no turn are left out and counted.

The baseline is plain Okapi BM25 over single turns, greedily filling the
budget in score order.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TextIO

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D:?0*(\d+):0*(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_WORD = re.compile(r"[a-z0-9]+")


# --- data -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One utterance; ``index`` is its position in its session, from 0."""

    dia_id: str
    session: int
    index: int
    speaker: str
    text: str

    def render(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Session:
    index: int
    date: str
    turns: list[Turn]


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """A conversation and its questions of categories 1-4 with usable evidence.

    ``no_evidence`` counts its questions of categories 1-4 left out because no evidence id named a turn.
    """

    id: str
    speaker_a: str
    speaker_b: str
    sessions: list[Session]
    questions: list[Question]
    no_evidence: int = 0

    @cached_property
    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session.turns]


def _normalize_id(raw: str) -> str | None:
    match = _EVIDENCE_ID.fullmatch(raw)
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def parse_evidence(raw: Iterable[str], known: set[str]) -> tuple[str, ...]:
    """Evidence ids as ``D<s>:<t>``, in order, without duplicates or ids naming no turn in ``known``.

    Entries may hold several ids (``"D8:6; D9:17"``) and odd forms (``"D:11:26"``, ``"D30:05"``).
    """
    ids: dict[str, None] = {}
    for entry in raw:
        for piece in _EVIDENCE_SPLIT.split(str(entry)):
            dia_id = _normalize_id(piece)
            if dia_id is not None and dia_id in known:
                ids[dia_id] = None
    return tuple(ids)


def _turn(raw: dict, session: int, index: int) -> Turn:
    text = str(raw.get("text", ""))
    caption = raw.get("blip_caption")
    if caption:
        text = text + " [shares a photo: " + str(caption) + "]"
    dia_id = str(raw["dia_id"])
    return Turn(
        dia_id=_normalize_id(dia_id) or dia_id,
        session=session,
        index=index,
        speaker=str(raw.get("speaker", "")),
        text=text,
    )


def _conversation(raw: dict) -> Conversation:
    body = raw["conversation"]
    numbers = sorted(
        int(match.group(1))
        for key, value in body.items()
        if (match := _SESSION_KEY.fullmatch(key)) and isinstance(value, list)
    )
    sessions = [
        Session(
            index=n,
            date=str(body.get(f"session_{n}_date_time", "")),
            turns=[_turn(turn, n, i) for i, turn in enumerate(body[f"session_{n}"])],
        )
        for n in numbers
    ]
    known = {turn.dia_id for session in sessions for turn in session.turns}
    questions, no_evidence = [], 0
    for qa in raw.get("qa", []):
        category = int(qa["category"])
        if category not in CATEGORIES:
            continue
        evidence = parse_evidence(qa.get("evidence", []), known)
        if not evidence:
            no_evidence += 1
            continue
        questions.append(
            Question(text=str(qa["question"]), answer=str(qa.get("answer", "")), category=category, evidence=evidence)
        )
    return Conversation(
        id=str(raw.get("sample_id", "")),
        speaker_a=str(body.get("speaker_a", "")),
        speaker_b=str(body.get("speaker_b", "")),
        sessions=sessions,
        questions=questions,
        no_evidence=no_evidence,
    )


def load_locomo(path: Path) -> list[Conversation]:
    """The conversations of a LoCoMo file (a JSON list, as ``data/locomo10.json``)."""
    with open(path, encoding="utf-8") as file:
        return [_conversation(raw) for raw in json.load(file)]


# --- BM25 baseline ----------------------------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 over whole documents; idf is ``ln(1 + (N - n + .5) / (n + .5))``, never negative."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.size = len(documents)
        lengths = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, document in enumerate(documents):
            words = tokenize(document)
            lengths.append(len(words))
            for word, count in Counter(words).items():
                self.postings.setdefault(word, []).append((i, count))
        self.lengths = lengths
        self.average = (sum(lengths) / len(lengths)) if lengths else 0.0
        self.idf = {
            word: math.log(1 + (self.size - len(docs) + 0.5) / (len(docs) + 0.5))
            for word, docs in self.postings.items()
        }

    def scores(self, query: str) -> list[float]:
        """One score per document; each query word counts as often as it occurs."""
        scores = [0.0] * self.size
        average = self.average or 1.0
        for word in tokenize(query):
            idf = self.idf.get(word)
            if idf is None:
                continue
            for i, tf in self.postings[word]:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / average)
                scores[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return scores

    def rank(self, query: str) -> list[tuple[int, float]]:
        """Documents with a positive score, best first; ties in document order."""
        scored = [(i, s) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda pair: -pair[1])
        return scored


@dataclass(frozen=True)
class Retrieved:
    dia_ids: frozenset[str]
    tokens: int


Retriever = Callable[[Conversation, Question, int], Retrieved]

_INDEXES: OrderedDict[int, tuple[Conversation, BM25]] = OrderedDict()


def _index(conv: Conversation) -> BM25:
    """The BM25 index of a conversation's turns, kept for the last few conversations seen."""
    key = id(conv)
    cached = _INDEXES.get(key)
    if cached is not None and cached[0] is conv:
        _INDEXES.move_to_end(key)
        return cached[1]
    index = BM25([turn.render() for turn in conv.turns])
    _INDEXES[key] = (conv, index)
    while len(_INDEXES) > 16:
        _INDEXES.popitem(last=False)
    return index


def bm25_retrieve(conv: Conversation, question: Question, budget: int, count_tokens: Callable[[str], int]) -> Retrieved:
    """Turns by BM25 score against the question, each added if its tokens still fit in the budget."""
    turns = conv.turns
    chosen, used = [], 0
    for i, _score in _index(conv).rank(question.text):
        if used >= budget:
            break
        cost = count_tokens(turns[i].render())
        if used + cost <= budget:
            chosen.append(turns[i].dia_id)
            used += cost
    return Retrieved(dia_ids=frozenset(chosen), tokens=used)


def bm25_retriever(count_tokens: Callable[[str], int]) -> Retriever:
    """``bm25_retrieve`` as a Retriever, counting each distinct text's tokens once."""
    count = lru_cache(maxsize=200_000)(count_tokens)

    def retrieve(conv: Conversation, question: Question, budget: int) -> Retrieved:
        return bm25_retrieve(conv, question, budget, count)

    return retrieve


# --- evaluation -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    """One retriever at one budget: means over the questions."""

    retriever: str
    budget: int
    recall: float
    by_category: dict[int, float]
    tokens: float
    seconds: float


@dataclass(frozen=True)
class Results:
    questions: int
    by_category: dict[int, int]
    no_evidence: int
    scores: list[Score] = field(default_factory=list)

    def score(self, retriever: str, budget: int) -> Score:
        for score in self.scores:
            if score.retriever == retriever and score.budget == budget:
                return score
        raise KeyError((retriever, budget))

    def figures(self, budgets: Sequence[int] | None = None) -> dict[str, float]:
        """``recall_<b>`` for the retriever named "memory", ``<name>_recall_<b>`` for the others, ``questions``."""
        names = list(dict.fromkeys(score.retriever for score in self.scores))
        names.sort(key=lambda name: name != "memory")
        if budgets is None:
            budgets = list(dict.fromkeys(score.budget for score in self.scores))
        figures: dict[str, float] = {}
        for name in names:
            prefix = "" if name == "memory" else f"{name}_"
            for budget in budgets:
                figures[f"{prefix}recall_{budget}"] = round(self.score(name, budget).recall, 3)
        figures["questions"] = self.questions
        return figures


def recall(evidence: Sequence[str], retrieved: frozenset[str]) -> float:
    return sum(1 for dia_id in evidence if dia_id in retrieved) / len(evidence)


@dataclass(frozen=True)
class HeldOut:
    """Leave one conversation out: each conversation's questions answered by the candidate that did best on the
    other conversations' questions; ``chosen`` names it, per held-out conversation."""

    budget: int
    recall: float  # over every question, each scored by a candidate chosen without it
    in_sample: float  # the candidate that does best on all the questions, scored on them (chosen on what it scores)
    best: str
    chosen: dict[str, str]


def cross_validate(conversations: Sequence[Conversation], candidates: dict[str, Retriever], budget: int) -> HeldOut:
    """Choose among ``candidates`` (settings of one memory) by leave-one-conversation-out: a figure is never
    reported on the conversation whose questions chose it."""
    per: dict[str, dict[str, list[float]]] = {name: {} for name in candidates}
    for name, retrieve in candidates.items():
        for conv in conversations:
            per[name][conv.id] = [
                recall(question.evidence, retrieve(conv, question, budget).dia_ids) for question in conv.questions
            ]

    def mean(name: str, ids: Sequence[str]) -> float:
        values = [r for conv_id in ids for r in per[name][conv_id]]
        return statistics.fmean(values) if values else 0.0

    ids = [conv.id for conv in conversations]
    chosen, held = {}, []
    for conv_id in ids:
        rest = [other for other in ids if other != conv_id] or ids
        chosen[conv_id] = max(candidates, key=lambda name: (mean(name, rest), -list(candidates).index(name)))
        held += per[chosen[conv_id]][conv_id]
    best = max(candidates, key=lambda name: (mean(name, ids), -list(candidates).index(name)))
    return HeldOut(budget, statistics.fmean(held) if held else 0.0, mean(best, ids), best, chosen)


def evaluate(
    conversations: Sequence[Conversation], retrievers: dict[str, Retriever], budgets: Sequence[int]
) -> Results:
    """Evidence recall, tokens used and time per question for every retriever at every budget."""
    pairs = [(conv, question) for conv in conversations for question in conv.questions]
    counts = Counter(question.category for _, question in pairs)
    scores = []
    for name, retrieve in retrievers.items():
        for budget in budgets:
            recalls: dict[int, list[float]] = {category: [] for category in CATEGORIES}
            tokens, seconds = [], []
            for conv, question in pairs:
                started = time.perf_counter()
                retrieved = retrieve(conv, question, budget)
                seconds.append(time.perf_counter() - started)
                recalls[question.category].append(recall(question.evidence, retrieved.dia_ids))
                tokens.append(retrieved.tokens)
            every = [r for values in recalls.values() for r in values]
            scores.append(
                Score(
                    retriever=name,
                    budget=budget,
                    recall=statistics.fmean(every) if every else 0.0,
                    by_category={c: statistics.fmean(v) for c, v in recalls.items() if v},
                    tokens=statistics.fmean(tokens) if tokens else 0.0,
                    seconds=statistics.fmean(seconds) if seconds else 0.0,
                )
            )
    return Results(
        questions=len(pairs),
        by_category={category: counts[category] for category in CATEGORIES},
        no_evidence=sum(conv.no_evidence for conv in conversations),
        scores=scores,
    )


def print_results(results: Results, out: TextIO, budgets: Sequence[int], extra: dict[str, float] | None = None) -> None:
    """A block per budget with a row per retriever, then one line of ``name=value`` figures (``extra`` last)."""
    per_category = ", ".join(f"{CATEGORIES[c]} {n}" for c, n in results.by_category.items())
    out.write(
        f"bench locomo: evidence recall of {results.questions} questions ({per_category}); "
        f"{results.no_evidence} left out for naming no turn as evidence\n"
    )
    names = list(dict.fromkeys(score.retriever for score in results.scores))
    header = f"{'retriever':<16}{'recall':>8}" + "".join(f"{CATEGORIES[c]:>13}" for c in CATEGORIES)
    header += f"{'tokens':>9}{'ms/q':>9}"
    for budget in budgets:
        out.write(f"\nbudget {budget} tokens\n{header}\n")
        for name in names:
            score = results.score(name, budget)
            cells = "".join(
                f"{score.by_category[c]:>13.3f}" if c in score.by_category else f"{'-':>13}" for c in CATEGORIES
            )
            out.write(f"{name:<16}{score.recall:>8.3f}{cells}{score.tokens:>9.0f}{score.seconds * 1000:>9.2f}\n")
    figures = results.figures(budgets) | (extra or {})
    out.write("\n" + " ".join(f"{k}={v:.3f}" if k != "questions" else f"{k}={v}" for k, v in figures.items()) + "\n")
