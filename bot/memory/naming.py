"""How the memory names a thing: which subject it already holds a phrase names ("the candlestick" is the swan
candlestick, "Agnes" is Sister Agnes Pruett), which lock a code is of, and what an "it" stands for."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.memory.pointing import last_said
from bot.words import content_words

CODE_WORDS = r"code|combination|password|watchword|passphrase|countersign"
# What opens to a sequence of words: the lock, its dials, the sequence itself.
SEQUENCE_THINGS = r"lock|locks|dials?|sequence|combination|code|sigils|symbols|runes|glyphs"


def antecedent(before: str, subjects: Sequence[str]) -> str:
    """The subject the memory holds that the words before an "it" name last, or nothing; of two that share a head
    ("brass key", "cellar key"), the one named in full ("carried the brass key down to the cellar and left it")."""
    said = before.casefold()
    found = [
        (last_said(said, head_of(subject)), said.rfind(subject.casefold()) >= 0, subject)
        for subject in subjects
        if head_of(subject)
    ]
    place, _, subject = max(found, default=(-1, False, ""))
    return subject if place >= 0 else ""


def lock_named(sentence: str, subjects: Sequence[str]) -> str:
    """The thing with a code the memory holds that the sentence names most fully: by the words that make it that
    one ("Someone has tampered with the Ravensworth lock …, and the crypt door yields": the Ravensworth crypt lock,
    not the studio door), else by what it is ("the Ravensworth lock": the clockwork lock) where the sentence says
    it of no other ("the crypt door" is no studio door). Nothing where it names none: "the new password for the
    sail-loft meetings" is not the studio door's password, the one code the memory held before."""
    said = {stem for stem, _ in content_words(sentence)}
    heads = _heads_said(sentence)
    best, most = "", 0
    for subject in subjects:
        if not re.search(rf"\b(?:{LOCKISH})\b", subject, re.I):
            continue
        words = {stem for stem, surface in content_words(subject) if not re.fullmatch(LOCKISH, surface, re.I)}
        head = head_of(subject)
        by_kind = not re.fullmatch(CODE_WORDS, head, re.I) and any(
            modifier <= words | _ANY_OF_A_KIND for modifier in heads.get(head, ())
        )
        score = 2 * len(words & said) + by_kind
        if score and score >= most:
            best, most = subject, score
    return best


# What opens to a code, by what it is.
LOCKISH = rf"{SEQUENCE_THINGS}|{CODE_WORDS}|door|doors|gate|gates|chest|vault|safe|grate|hatch|airlock|cage|box"
# Words said of a lock that make it no other one.
_ANY_OF_A_KIND = frozenset(
    stem for stem, _ in content_words("new old current latest present same heavy great big small little main front "
                                      "back iron steel brass oak wooden")
)  # fmt: skip


def _heads_said(sentence: str) -> dict[str, list[set[str]]]:
    """Each word the sentence says, with the words said right before it that are no name: "the crypt door" says a
    door of the crypt; "the Ravensworth lock" a lock, by its name."""
    heads: dict[str, list[set[str]]] = {}
    words = re.findall(r"[\w'-]+", sentence)
    for i, word in enumerate(words):
        stems = [stem for stem, _ in content_words(word)]
        if not stems:
            continue
        before = words[i - 1] if i else ""
        modifier = {stem for stem, _ in content_words(before)} if before[:1].islower() else set()
        heads.setdefault(stems[-1], []).append(modifier)
    return heads


def same_subject(thing: str, known: Sequence[str]) -> str:
    """The subject the memory already holds that ``thing`` names ("candlestick" for "swan candlestick", or the
    other way round), else ``thing`` itself; of several it may name ("the compass" of the whalebone compass and of
    the lapis compass), the one the memory came to hold last, the thing of the story's latest thread."""
    mine = {stem for stem, _ in content_words(thing)}
    if not mine:
        return thing
    best = None
    for subject in known:
        theirs = {stem for stem, _ in content_words(subject)}
        if not theirs:
            continue
        if mine == theirs:
            return subject
        if mine <= theirs or theirs <= mine:
            # The head noun (the last word) must be the same thing: "key" and "brass key", not "key" and "key ring".
            if head_of(thing) == head_of(subject) or _a_name(thing) and _a_name(subject) or _within(thing, subject):
                best = subject
    return best or thing


# What a thing is said to be of, or where: "the map of the caves" is a map, "the skep at the end of Long Meadow" a skep.
QUALIFIED = re.compile(r"\s(?:of|at|in|on|from|near|beside|under|over|by|for|to)\s", re.I)


def _within(one: str, other: str) -> bool:
    """Whether the shorter of two names, of two words or more, is said whole in the longer: "sealed orders" and
    "sealed orders envelope" are one thing, though not "key" and "key ring"."""
    short, long = sorted((" ".join(one.casefold().split()), " ".join(other.casefold().split())), key=len)
    return len(content_words(short)) >= 2 and re.search(rf"(?<![\w-]){re.escape(short)}(?![\w-])", long) is not None


def head_of(phrase: str) -> str:
    words = [stem for stem, _ in content_words(QUALIFIED.split(phrase, maxsplit=1)[0])]
    words = words or [stem for stem, _ in content_words(phrase)]
    return words[-1] if words else ""


def _a_name(phrase: str) -> bool:
    """Whether ``phrase`` is someone's name, every word but a joining one capitalised ("Agnes", "Sister Agnes
    Pruett of Ward Nine"): a name and a longer one that holds it are one person whatever their last words."""
    words = [w for w in phrase.split() if w.casefold() not in ("of", "the", "de", "van", "von")]
    owned = any(re.search(r"['’]s?$", w) for w in words)  # "Tom's Boat" is Tom's, not Tom
    return bool(words) and not owned and all(w[:1].isupper() for w in words)
