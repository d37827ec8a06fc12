"""Whether prose names a thing or a place, or only strings words together: the change finder
(:mod:`bot.memory.changes`) reads a move only of a thing the sentence picks out, to a place it picks out.

Read without these, the scripted prose of ``bench context`` ("Knife beneath map storm cellar. Old stair above
storm window.") filled a 150-turn game's memory with 22 moves of things no one had said, each marking older the
notes that told the last, and its prompts repeated less of the one before (at 4k, .880 of each prompt against .909
without them).
"""

from __future__ import annotations

import re

_PICKING = r"the|a|an|his|her|their|its|my|your|our|this|that|these|those|one"
# A word before a thing that picks it out: "the key", "a lantern", "every barrel", "Maya's flask".
_PICKED_BEFORE = re.compile(rf"(?:\b(?:{_PICKING}|every|each|some|no)|['’]s?)\s+$", re.I)
_OWNED = re.compile(r"[\w-]+['’]s?\s")  # "Zebedee's map of the caves"
_PLACE_PICKED = re.compile(rf"\b(?:{_PICKING})\b|['’]s?\b|\b[A-Z]")
_PREPOSITION = re.compile(r"^(?:in|on|under|at|inside|behind|into|onto|beneath|beside|to)\s+", re.I)


def names_a_thing(thing: str, sentence: str) -> bool:
    """Whether ``sentence`` names ``thing`` as prose names one: by a name ("the Kittiwake", "Old Tamsin's whistle"),
    as someone's ("Zebedee's map"), or with a word that picks it out ("the key", "a lantern"). A thing said in other
    words than the sentence's (a pattern's own: "cellar door code") counts as named."""
    at = sentence.casefold().find(thing.casefold())
    if at < 0:
        return True
    words = thing.split()
    if all(word[:1].isupper() for word in words) and (at > 0 or len(words) > 1):
        return True  # a name: capitals that do not only start the sentence
    return bool(_OWNED.match(thing) or _PICKED_BEFORE.search(sentence[:at]))


# A way to face or lean, not a place: "the old pear tree leans slightly to the east".
_DIRECTION = re.compile(
    r"^(?:the\s+|one\s+|its\s+)?(?:(?:north|south)(?:-?(?:east|west))?|east|west|left|right|side|windward|leeward)$",
    re.I,
)


def says_a_place(value: str) -> bool:
    """Whether ``value`` is said as prose says a place: picked out ("in the cellar", "under Maya's bed"), named ("in
    Lisbon"), or one word ("at home", "on deck"); "beneath glass marsh old candle" is words strung together, and
    "to the east" a way, not a place."""
    place = _PREPOSITION.sub("", value)
    if _DIRECTION.match(place.strip()):
        return False
    return len(place.split()) <= 1 or bool(_PLACE_PICKED.search(place))


def last_said(text: str, word: str) -> int:
    """Where ``text`` last says ``word`` (a word or its stem, with at most a short ending: "key", "keys"), or -1:
    "nightfall" says no "night"."""
    found = [m.start() for m in re.finditer(rf"(?<![\w-]){re.escape(word)}\w{{0,3}}(?![\w-])", text, re.I)]
    return found[-1] if found else -1
