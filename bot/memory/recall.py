"""Recall policy: what to search for before the GM writes, and which fragments to offer.

The index (SQLite FTS5 with BM25 by default) finds candidates; this module
turns the scene into search terms, fuses the rankings of several indexes,
leaves out what the prompt already holds, and labels each fragment with
its turn.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence, Set

from bot.memory.changes import asks_for, attribute_name
from bot.memory.config import MemoryConfig
from bot.memory.context import BEST_MATCHES
from bot.memory.layers import FOLLOWING, NEWER, MemoryItem
from bot.store.models import RecallHit

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your yours
    yourself yourselves also get got go going gone let lets like make made many much one ones really said
    say says see seen tell told thing things think try way well went yes yeah oh ok okay gm""".split()
)

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
MAX_TERMS = 32


def query_terms(action: str, scene: Sequence[str] = ()) -> list[str]:
    """Search terms: the action's words first, then the scene's, without stopwords or repeats."""
    terms: dict[str, None] = {}
    for text in (action, *reversed(scene)):
        for word in _WORD.findall(text.lower()):
            word = word.split("'")[0]
            if word in STOPWORDS or (len(word) < 3 and not word.isdigit()):
                continue
            terms.setdefault(word)
            if len(terms) >= MAX_TERMS:
                return list(terms)
    return list(terms)


# The memory's brief (F39): what the notes say about what the action asks about, told right after it, where a
# small model answers from. A pin the action names (this many of its content words), the current value of a fact
# it names, and the recalled turn that ranks clearly first (its fused score this much above the next one's, or
# first by words and by meaning alike) for an action that asks or looks into something.
BRIEF_PIN_WORDS = 2
BRIEF_LEAD = 1.25
BRIEF_ITEMS = 2
# The words of the question a recalled turn's shown sentence must share to be told as its answer (all of them, for
# a question of fewer). Set on the memory test's ten questions (one shared word briefed two wrong turns, two briefed
# one, every right brief kept); on the long game's six other questions, held out, one word briefed two wrong turns
# ("Gorse rattles in the wind along the clifftop." for "What was snagged on the yellow flowering bushes by the
# clifftop?"), two none, and neither a right one.
BRIEF_TURN_WORDS = 2
_ASKING = frozenset(
    "ask check examine inspect look search sniff smell listen read study remember recall where what who which "
    "when how why whose find".split()
)


def memory_brief(action: str, pins: Sequence[MemoryItem], recall: Sequence[MemoryItem]) -> list[MemoryItem]:
    """What the notes say about the action, for the brief told beside it (at most :data:`BRIEF_ITEMS`)."""
    wanted = set(query_terms(action))
    brief: list[MemoryItem | None] = []
    for pin in pins:
        if len(wanted & set(query_terms(pin.text))) >= BRIEF_PIN_WORDS:
            brief.append(pin)
    # A fact's newest value, for an action that names its subject ("where is the brass key?"), not one that only
    # shares a word of its value ("this study" with "the key, location: in the study"), nor a word of its subject
    # but not the thing itself ("What is the danger signal?" names no flag of "red signal flag"; told after the
    # reply as the notes' answer, bench change). A fact the engine found the action asks about by meaning (see
    # bot.engine.upkeep.memory) is marked as a lead.
    # A fact recall found itself that has older values ("[fact, now] ferryman, allegiance: Ashby (before: …)") is
    # its newest value too, where the action names it.
    # A thing named as another's owner is not what the action asks about: "I look at the lifeboat's oars" asks
    # of the oars, and the lifeboat's place, told as the notes' answer, kept the default GM from the sawn oars
    # (found by its words, and again, seeds 11 and 23, as the thing nearest the question by meaning).
    # A fact of what the question does not ask is no answer to it: "Which numbers open the iron chest?" was told
    # where the iron-bound sea chest lies.
    owners = {word.split("'")[0] for word in _OWNER.findall(action.lower())}
    things = wanted - owners
    fits = asks_for(action)
    newer = [
        item for item in recall
        if (item.found_by == NEWER and item.lead and not set(_subject(item.text).casefold().split()) <= owners)
        or ((item.found_by == NEWER or item.text.startswith("[fact, now]")) and _names_thing(things, item.text)
            and (fits is None or _attribute(item.text) in fits))
    ]  # fmt: skip
    brief += newer[:1]
    asking = asks(action)
    ranked = [item for item in recall if item.found_by not in (FOLLOWING, NEWER)]
    if asking and ranked and not brief:  # one answer: a pin or a fact's newest value the action names, else a turn
        first = ranked[0]
        second = ranked[1].score if len(ranked) > 1 else 0.0
        # First fused and among the first by meaning is not clear where meaning found none clearly first: then
        # the first by meaning are told, for the model to choose (see CANDIDATES).
        unsure = any(item.meant for item in ranked)
        clear = first.score >= BRIEF_LEAD * second or (first.lead and first.found_by == "both" and not unsure)
        if clear and first.score > 0 and _shares_words(wanted, _unlabelled(first.text)) and _answers(first, action):
            brief.append(_now(first, recall))
        else:  # in other words: the turn recall by meaning put first by far, wherever the fusion put it
            meant = next((item for item in ranked if item.clear), None)
            if meant is not None and _answers(meant, action):
                brief.append(_now(meant, recall))
            elif "?" in action:  # a question none answers clearly: the first by meaning, for the model to choose
                near = sorted((item for item in ranked if item.meant), key=lambda item: item.meant)
                brief += [_now(item, recall) for item in near if _answers(item, action)]
    return list(dict.fromkeys(item for item in brief if item is not None))[:BRIEF_ITEMS]


def _answers(item: MemoryItem, action: str) -> bool:
    """Whether a recalled fragment may be told as the answer: a player's line answers a question, not a look or a
    search (see :data:`_PLAYERS_LINE`); a question answers nothing ("What do you do?", the close of a GM's turn, was
    told as what the notes say for "I look around." in the memory test's long game)."""
    if _unlabelled(item.text).strip(" …").endswith("?"):
        return False
    return "?" in action or not _PLAYERS_LINE.match(_unlabelled(item.text))


# A fragment recall by meaning put first by far is told as the answer to a question though it shares no word with
# it (of the fragments the prompt does not hold, as recall: the action itself is indexed by meaning as soon as it is
# logged, and came first). Each distinct sentence counts by its cosine over one plus the log of the turns it was
# found in, as words count by their rarity: a line the GM says every few turns ("The beacon's great lens is smeared
# with salt." in twenty, "The captain coughs into his sleeve." in ten) is the scene's furniture, not a clue that
# stands out, and a clue said once is the news. "What bird is etched in the old sailor's timepiece?" found "A silver
# heron is engraved inside the lid of the captain's pocket watch." first by meaning (0.65 against 0.46 with MiniLM,
# centred; see bot.memory.vectors) and fifth fused, among turns about the same watch and the same old chart;
# unbriefed, Qwen2.5 1.5B answered it with the chart (sampling seed 7) or with Tom looking at the timepiece (seed
# 11). Set on the memory test's ten questions (tests/engine/test_instruct_model.py): the right first fragments lead
# by 1.39 to 3.29 so counted, the wrong ones by 1.23 and below (counted by cosine alone, without the turns, the
# physician's clue led by 1.26, unbriefed, and seed 42 missed it); on the long game's six other questions, held
# out, 1.35 tells three right fragments (1.46 to 1.55; two by cosine alone) and no wrong one (1.27 and 1.12).
MEANING_CLEAR = 1.35


def meaning_order(
    by_meaning: Sequence[RecallHit], among: Sequence[RecallHit] | None = None, found: Mapping[str, str] | None = None
) -> list[tuple[float, str]]:
    """The distinct sentences ``by_meaning`` found, best first, each as its cosine over one plus the log of the
    fragments of ``among`` (``by_meaning`` itself by default) found by it, with the ref of the first fragment found
    by it (see :data:`MEANING_CLEAR`); ``found``: each hit's sentence by ref, where already known."""
    sentence = found or {hit.ref: found_sentence(hit) for hit in (*by_meaning, *(among or ()))}
    said: dict[str, int] = {}
    for hit in by_meaning if among is None else among:
        said[sentence[hit.ref]] = said.get(sentence[hit.ref], 0) + 1
    best: dict[str, tuple[float, str]] = {}
    for hit in by_meaning:
        if sentence[hit.ref] not in best:  # its first place is its best
            best[sentence[hit.ref]] = (hit.score / (1 + math.log(max(1, said.get(sentence[hit.ref], 1)))), hit.ref)
    return sorted(best.values(), key=lambda scored: -scored[0])


def clear_by_meaning(by_meaning: Sequence[RecallHit], found: Mapping[str, str] | None = None) -> str | None:
    """The ref of the fragment ``by_meaning`` ranked first by a clear margin (:data:`MEANING_CLEAR`) over the next
    distinct sentence, ``by_meaning`` being every fragment found, each by its closest part, and each sentence
    counted by its cosine over one plus the log of the fragments found by it (see :data:`MEANING_CLEAR`)."""
    ranked = meaning_order(by_meaning, found=found)
    if len(ranked) < 2:
        return None
    (first, ref), (second, _) = ranked[0], ranked[1]
    return ref if second > 0 and first >= MEANING_CLEAR * second else None


# Where no fragment is clearly first, a question is briefed with the first two turns by meaning (counted as above),
# and the model, which reads them beside the question, tells what they say of it (see BRIEF_CHOICE): "Which servant
# carries the key to the wine vault?" found "Wren Tally carried the brass key down to the cellar" (.54) and "Mrs
# Ashdown wears the cellar key on a chain" (.51), and the first, also first fused, was told as the answer; Qwen2.5
# 1.5B named Ashdown in none of four replies (sampling seeds 7, 11, 23 and 42), in four briefed with both (alone in
# three). Only where the notes hold something nearer the question than any of the recent turns the prompt shows:
# what the recent turns answer, they answer.
CANDIDATES = 2


def candidates_by_meaning(by_meaning: Sequence[RecallHit], exclude: Set[str], shown: Set[str]) -> list[str]:
    """The refs of the first :data:`CANDIDATES` distinct sentences of turns ``by_meaning`` found (every fragment,
    each by its closest part) that the prompt does not hold (``exclude``), where none is clearly first and the first
    comes nearer the question than any of the recent turns the prompt holds (``shown``); none otherwise. Each
    sentence counts by its rarity among all the fragments found, the recent turns' too (see :data:`MEANING_CLEAR`):
    a line said every few turns is furniture, wherever it is said."""
    found = {hit.ref: found_sentence(hit) for hit in by_meaning}
    outside = [hit for hit in by_meaning if hit.ref not in exclude]
    turns = [hit for hit in outside if hit.ref.startswith("entry:")]  # a fact's value has its own brief
    ranked = meaning_order(turns, by_meaning, found)
    if len(ranked) < 2 or clear_by_meaning(outside, found) is not None or ranked[1][0] <= 0:
        return []
    nearest = meaning_order([hit for hit in by_meaning if hit.ref in shown], by_meaning, found)
    if nearest and nearest[0][0] >= ranked[0][0]:
        return []
    return [ref for _, ref in ranked[:CANDIDATES]]


def asks(action: str) -> bool:
    """Whether an action asks or looks into something: a question, or a word of asking ("I check the thorns")."""
    return "?" in action or bool({w for w in _WORD.findall(action.lower())} & _ASKING)


# A recalled player's line ("Maya: I search the rock."): the answer to a question ("Where did I put the key?"), not
# to a look or a search, whose answer is what the GM said then.
# A name of at most three words, then a colon, at the very start (a cut GM turn starts with "…").
_PLAYERS_LINE = re.compile(r"^(?!GM\b)[^\s:….!?]+(?: [^\s:….!?]+){0,2}:\s")


def _now(item: MemoryItem, recall: Sequence[MemoryItem]) -> MemoryItem | None:
    """A recalled turn as the answer, or, where what it told has since changed ("[turn 12, since changed] Ines sets
    the swan candlestick on the chapel altar."), the value that holds now, which recall puts right after it: the
    old turn told as the answer had the reply say where the candlestick was, not where it is."""
    if not re.match(r"^\[turn \d+, since changed\]", item.text):
        return item
    # Of the values that hold now, which recall puts right after it, the one of a thing its shown words name: a
    # turn of several sentences may have changed since by another ("… Elias Wren swears himself to Lord Tremaine …"
    # was followed by the cellar door code's new value, and that was told as the clergyman's side; bench change).
    after = recall[recall.index(item) + 1 :]
    follows = list(itertools.takewhile(lambda newer: newer.found_by == NEWER, after))
    shown = set(query_terms(_unlabelled(item.text)))
    return next((newer for newer in follows if _names_thing(shown, newer.text)), None)


def _shares_words(wanted: Set[str], text: str) -> bool:
    """Whether ``text`` holds :data:`BRIEF_TURN_WORDS` of the ``wanted`` terms, or all of them if fewer (by their
    first five letters: "carries", "carried").

    A turn that leads by meaning or by a word of another sentence is not told as the answer unless what it shows
    shares words with the question: "What bird is etched in the old sailor's timepiece?" led with a turn whose
    shown sentence was "Gulls perch along the lifeboat's gunwale." (found by "old" in the one before it), and
    the brief told it as what the notes say; "Was the fuel for the beacon tampered with?" with "The beacon's great
    lens is smeared with salt.", one word in common."""
    asked = {term[:5] for term in wanted}
    said = {term[:5] for term in query_terms(text)}
    return len(asked & said) >= min(BRIEF_TURN_WORDS, len(asked))


def _unlabelled(text: str) -> str:
    """A recalled item's text without its label ("[turn 6] … ")."""
    return re.sub(r"^\[[^\]]*\]\s*", "", text)


_OWNER = re.compile(r"\b[a-z][\w-]*'s?(?=\s+[a-z])")  # "lifeboat's" of "the lifeboat's oars", "smugglers'"


def _names_thing(wanted: Set[str], fact: str) -> bool:
    """Whether the search terms ``wanted`` name a recalled fact's thing: the head of its name, its last word before
    any phrase that follows it ("key" of "brass key to the cellar")."""
    terms = query_terms(re.split(r"\s+(?:of|to|for|from|in|on|at|with|by)\s+", _subject(fact), maxsplit=1)[0])
    return bool(terms) and terms[-1] in wanted


def _attribute(text: str) -> str:
    """A recalled fact's attribute, by its one name: "location" of "[fact] brass key, whereabouts: the cellar"."""
    rest = re.sub(r"^\[[^\]]*\]\s*", "", text).split(",", 1)
    return attribute_name(rest[1].split(":", 1)[0]) if len(rest) == 2 else ""


def _subject(text: str) -> str:
    """A recalled fact's subject: "brass key" of "[fact] brass key, location: in the cellar"."""
    return re.sub(r"^\[[^\]]*\]\s*", "", text).split(",", 1)[0]


# Reciprocal rank fusion's constant: small, so an index's first hits count for much more than its hundredth.
# Measured on LoCoMo's dev split at 1,000 tokens (bench locomo): the usual 60 let a fragment that every word
# ranking found weakly outrank the one the embedding index put first.
RANK_CONSTANT = 10


def fuse(rankings: Sequence[Sequence[RecallHit]], k: int = RANK_CONSTANT) -> list[RecallHit]:
    """Reciprocal rank fusion: one ranking from several indexes, each counted by rank, not by raw score."""
    scores: dict[str, float] = {}
    best: dict[str, RecallHit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking):
            scores[hit.ref] = scores.get(hit.ref, 0.0) + 1.0 / (k + rank + 1)
            if hit.ref not in best or hit.part and not best[hit.ref].part:  # the index that knows its sentence
                best[hit.ref] = hit
    order = sorted(scores, key=lambda ref: -scores[ref])
    return [best[ref].model_copy(update={"score": scores[ref]}) for ref in order]


def found_by(named: Mapping[str, Sequence[RecallHit]]) -> dict[str, str]:
    """Which index found each fragment: ``words``, ``meaning`` or ``both`` (an index named ``meaning`` finds by
    meaning; every other one by words)."""
    kinds: dict[str, set[str]] = {}
    for name, ranking in named.items():
        for hit in ranking:
            kinds.setdefault(hit.ref, set()).add("meaning" if name == "meaning" else "words")
    return {ref: "both" if len(found) == 2 else next(iter(found)) for ref, found in kinds.items()}


def fragments(
    hits: Sequence[RecallHit],
    exclude: set[str],
    allowed_kinds: set[str],
    following: dict[int, RecallHit] | None = None,
    sources: Mapping[str, str] | None = None,
    terms: Sequence[str] = (),
    words: int | None = None,
) -> list[MemoryItem]:
    """Recalled fragments in rank order, labelled with their turn, leaving out what the prompt holds.

    A recalled turn brings the turn after it (``following``, by entry id): what was said is most
    often answered, or completed, by the next message. ``sources`` says which index found each hit
    (an item brought along as the next turn is marked ``next``). A fragment longer than ``words`` is cut to
    its passage nearest the question (see :func:`excerpt`; ``terms``: the question's search terms).
    """
    items: list[MemoryItem] = []
    taken = set(exclude)
    # A text told again at another turn ("The captain coughs.") is offered once, and so is what a turn shows of
    # itself: "The beacon's great lens is smeared with salt." cut from a longer turn was shown a third time beside
    # two turns that said only that, for a question about the beacon's fuel whose clue came after them.
    said: set[str] = set()

    def offer(item: MemoryItem, text: str) -> None:
        shown = _as_shown(item.text)
        if text not in said and shown not in said:
            said.update((text, shown))
            items.append(item)

    for hit in hits:
        kind = hit.ref.split(":", 1)[0]
        if hit.ref in taken or kind not in allowed_kinds:
            continue
        taken.add(hit.ref)
        offer(_item(hit, kind, (sources or {}).get(hit.ref, ""), terms, words), hit.text)
        after = (following or {}).get(_entry_id(hit.ref)) if kind == "entry" else None
        if after is not None and after.ref not in taken:
            taken.add(after.ref)
            offer(_item(after, "entry", FOLLOWING, words=words), after.text)
    return items


def _as_shown(text: str) -> str:
    """What a recalled item says, whatever its turn and its cuts: "[turn 150] GM: The lens is smeared. …" and
    "[turn 13] … The lens is smeared." say the same."""
    said = _SPEAKER.sub("", _unlabelled(text).strip(" …"), count=1)
    return " ".join(said.strip(" …").split()).lower()


def _item(
    hit: RecallHit, kind: str, source: str = "", terms: Sequence[str] = (), words: int | None = None
) -> MemoryItem:
    label = "fact" if kind == "fact" else f"turn {hit.turn}"
    text = f"[{label}] {excerpt(hit.text, terms, hit.part, words)}"
    return MemoryItem(hit.ref, text, found_by=source, score=hit.score or 0.0)


# A recalled fragment longer than this many words is cut to the sentences nearest the question: the default of
# the memory's ``excerpt_words`` setting (bot/memory/config.py says how it was chosen).
EXCERPT_WORDS: int = MemoryConfig.model_fields["excerpt_words"].default


def excerpt(text: str, terms: Sequence[str] = (), part: int = 0, words: int | None = None) -> str:
    """``text``, or for one longer than ``words`` the sentence nearest the question, whole, with its neighbours
    while they fit within ``words``, marked "…" where cut. The sentence is the one recall by meaning found nearest
    (that ``part`` of the fragment's passages is or is of), else the one holding most of the question's ``terms``,
    else the first."""
    words = EXCERPT_WORDS if words is None else words
    if len(text.split()) <= words:
        return text
    sentences = _sentences(text)
    if len(sentences) < 2:
        return text
    center = sentence_of(text, part) - 1
    if center < 0:
        wanted = {term[:5] for term in terms}
        overlap = [len({w[:5] for w in _WORD.findall(s.lower())} & wanted) for s in sentences]
        center = max(range(len(sentences)), key=lambda i: (overlap[i], -i)) if any(overlap) else 0
    start = end = center
    used = len(sentences[center].split())
    while True:  # the neighbours, the next one first, while they fit
        grown = False
        for side in (end + 1, start - 1):
            if 0 <= side < len(sentences) and used + len(sentences[side].split()) <= words:
                used += len(sentences[side].split())
                start, end = min(start, side), max(end, side)
                grown = True
        if not grown:
            break
    cut = " ".join(sentences[start : end + 1])
    return f"{'… ' if start else ''}{cut}{' …' if end < len(sentences) - 1 else ''}"


def _entry_id(ref: str) -> int:
    return int(ref.split(":", 1)[1])


# A sentence runs to . ! ? or an ellipsis followed by a space (with any closing quote or bracket between), or to
# a line break: 1.5 and e.g. stay whole.
_SENTENCE = re.compile(
    r"(?:[^\n.!?\u2026]|[.!?\u2026](?=[^\s.!?\u2026\"'\u201d\u2019)\]]))+(?:[.!?\u2026]+[\"'\u201d\u2019)\]]*)?"
)
SHORT_SENTENCE = 4  # words: a shorter sentence ("He nods.") is read with the next one
MAX_PASSAGES = 24  # sentences embedded of one fragment; past it, neighbours are read together


# A clause of a sentence: after a semicolon, or before ", and" (but, so, while, where, though).
_CLAUSE = re.compile(r"(?<=;)\s+|,\s+(?=(?:and|but|so|while|where|though)\s)")
SHORT_CLAUSE = 4  # words: a shorter piece is not embedded on its own


def _sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for piece in _SENTENCE.findall(text):
        piece = piece.strip()
        if not piece:
            continue
        if sentences and len(sentences[-1].split()) < SHORT_SENTENCE:
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    if len(sentences) > 1 and len(sentences[-1].split()) < SHORT_SENTENCE:
        sentences[-2:] = [f"{sentences[-2]} {sentences[-1]}"]
    if len(sentences) > MAX_PASSAGES:
        size = -(-len(sentences) // MAX_PASSAGES)
        sentences = [" ".join(sentences[i : i + size]) for i in range(0, len(sentences), size)]
    return sentences


def _parts(text: str, clauses: bool) -> tuple[list[str], list[int]]:
    """A fragment's parts (see ``passages``), with the sentence each is of, counted from 0 (-1 for the whole)."""
    sentences = _sentences(text)
    parts, of = [text], [-1]
    if len(sentences) > 1:
        parts += sentences
        of += range(len(sentences))
    if clauses:
        extra = []
        for n, sentence in enumerate(sentences):
            pieces = [p for p in _CLAUSE.split(sentence) if len(p.split()) >= SHORT_CLAUSE]
            if len(pieces) > 1:
                extra += [(piece, n) for piece in pieces]
        parts += [piece for piece, _ in extra[:MAX_PASSAGES]]
        of += [n for _, n in extra[:MAX_PASSAGES]]
    return parts, of


def passages(text: str, clauses: bool = True) -> list[str]:
    """What of a fragment is embedded: the whole, then each of its sentences when it has several, then each
    clause of a sentence of several (``clauses``; see ``_CLAUSE``). A fragment is found by its closest part.

    Measured on a 300-turn game with the bundled model: a clue told in one sentence of a six-sentence reply,
    asked about in other words, was ranked 0 to 2 of 300 turns by its best sentence, and from 0 to 161 by
    the whole reply, whose other sentences drown it. A clue told in one clause is drowned the same way: in bench
    recall's topical game, where the filler talks of the same beacon and lamp, MiniLM ranked "The lamp oil has
    been watered down; someone diluted it so the light would fail." behind 19 turns for "Was the fuel for the
    beacon tampered with?" by its sentence, and behind 3 by its clauses.
    """
    return _parts(text, clauses)[0]


def sentence_of(text: str, part: int) -> int:
    """The sentence, counted from 1, that part ``part`` of ``text``'s passages is or is of; 0 for the whole, or
    for a part it has not (vectors of an older split)."""
    of = _parts(text, True)[1]
    return of[part] + 1 if 0 <= part < len(of) else 0


_SPEAKER = re.compile(r"^[^:\n]{1,40}:\s*")  # a fragment's "GM: " before its first sentence


def found_sentence(hit: RecallHit) -> str:
    """What ``hit`` was found by: for a hit by meaning, its closest part (a sentence, or a clause of one); else,
    and for a turn of one sentence found by its whole, its text without its speaker."""
    found = hit.text
    if hit.part > 0:  # only a hit by meaning names its sentence: split the text for it alone
        parts = passages(hit.text)
        found = parts[hit.part] if hit.part < len(parts) else hit.text
    return _SPEAKER.sub("", found, count=1)


def distinct(ranking: Sequence[RecallHit]) -> list[RecallHit]:
    """A ranking with what was found told again at another turn kept at its best place only (for a hit by
    meaning, the sentence it was found by): a line the GM says every few turns ("The beacon's great lens is
    smeared with salt.") took the first six places by meaning for a question about the beacon, and the clue that
    answered it was pushed past them."""
    seen: set[str] = set()
    kept = []
    for hit in ranking:
        found = found_sentence(hit)
        if found not in seen:
            seen.add(found)
            kept.append(hit)
    return kept


def recent_places(
    fused: Sequence[RecallHit], exclude: set[str], recent: Set[str], kinds: set[str],
    sources: Mapping[str, str], terms: Sequence[str], words: int,
) -> list[tuple[str, MemoryItem]]:  # fmt: skip
    """The fragments of the ``recent`` turns in ``fused``, each with the ref of the first fragment recall offers
    (one not in ``exclude``) that ranks after it, "" where none does."""
    mine = [hit for hit in fused if hit.ref in recent]
    if not mine:
        return []
    items = {item.ref: item for item in fragments(mine, set(), kinds, sources=sources, terms=terms, words=words)}
    placed, waiting = [], []
    for hit in fused:
        if hit.ref in recent:
            waiting.append(hit.ref)
        elif hit.ref not in exclude and waiting:
            placed += [(hit.ref, items[ref]) for ref in waiting if ref in items]
            waiting = []
    return placed + [("", items[ref]) for ref in waiting if ref in items]


def meaning_leads(hits: list[RecallHit], by_meaning: Sequence[RecallHit]) -> list[RecallHit]:
    """``hits`` with the first of them recall by meaning ranked first moved up among the best matches (those that
    always get room; see BEST_MATCHES), behind the fused ones before it.

    Words count for more in the fusion, so a question asked in other words lost the one fragment that meant what
    it asked to fragments that shared its words: in a 300-turn game whose every turn talks of the same people
    and things, recall by meaning put the clue about the captain's watch first, and it came fourteenth fused."""
    where = {hit.ref: n for n, hit in enumerate(hits)}
    at = next((where[hit.ref] for hit in by_meaning if hit.ref in where), None)
    place = BEST_MATCHES - 1
    if at is None or at <= place:
        return hits
    return [*hits[:place], hits[at], *hits[place:at], *hits[at + 1 :]]


# The first fragments recall by meaning ranked, among what the turn may see, are best matches wherever the fusion
# put them (said beside the question, never left out for room). Measured with Qwen2.5 1.5B as the GM of a 300-turn
# game asked about its first turns (tests/engine/test_instruct_model.py): the clue for "Which servant carries the
# key to the wine vault?" was second by meaning, behind the brass key carried to the cellar, and not among the
# three best fused once the scene's words counted; the model answered with the brass key. Leading them in the fused
# order instead (the first two, not one, moved up) cost bench locomo 0.003 at 1,000 tokens; this keeps the order.
MEANING_LEADS = 2


def leads(hits: Sequence[RecallHit], by_meaning: Sequence[RecallHit]) -> set[str]:
    """The refs of the first :data:`MEANING_LEADS` fragments ``by_meaning`` ranked among ``hits``."""
    allowed = {hit.ref for hit in hits}
    return set([hit.ref for hit in by_meaning if hit.ref in allowed][:MEANING_LEADS])
