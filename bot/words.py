"""Words and sentences as the game reads them: content words with simple stems, runs of them, sentence ends.

The leak guard matches secrets by these words (see :mod:`bot.memory.leaks`), the reply rules cut replies at
these sentence ends, and a world file's key phrases are checked against them when it loads.
"""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each else even ever every few for
    from further had has have having he her here hers herself him himself his how i if in into is it its
    itself just let like may me might more most must my myself no nor not now of off on once only or other
    our ours ourselves out over own same shall she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up upon very was we were what
    when where which while who whom whose why will with would yet you your yours yourself yourselves
    s t d ll re ve m o y""".split()
)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+")


def _stem(word: str) -> str:
    """A lowercased word without its usual ending; ``content_words`` has taken off the possessive.

    A word of five letters in "-ed" loses it too: "waxed" is "wax" and "asked" "ask", and where the three left
    are consonant, vowel, consonant (not w, x or y) the word had an "e" of its own ("hated" is "hate", not
    "hat"), and one in "-ied" was a "-y" ("tried" is "try"). A doubled "e" is no ending ("bleed", "speed"), nor
    is one left without a vowel ("shred"). A plural in "-ves" of a word in "-f" or "-fe" is that word
    ("shelves" is "shelf": a search of the library shelves finds something on a shelf). A consonant doubled
    before "-ing" or "-ed" is one ("slipping" is "slip": a reply that has "a pale hand slipping back" copies the
    example's "a pale hand slip back"), but for l, s, f and z, which a word ends in doubled ("fall", "sniff")."""
    word = _F_PLURALS.get(word, word)
    if len(word) == 5 and word.endswith("ed") and word[2] != "e" and any(c in _VOWELS for c in word[:3]):
        base = word[:3]
        if base[2] == "i":
            return base[:2] + "y"  # "tried", "cried": "try", "cry"
        if base[0] not in _VOWELS and base[1] in _VOWELS and base[2] not in _VOWELS + "wxy":
            return base + "e"
        return base
    for suffix, keep in (("ing", 4), ("ed", 4), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep and not word.endswith("ss"):
            base = word[: -len(suffix)]
            if suffix != "s" and len(base) > 3 and base[-1] == base[-2] and base[-1] not in _VOWELS + "lsfz":
                return base[:-1]  # "slipping", "stopped": "slip", "stop" ("falling", "sniffed", "kissed" keep theirs)
            return base
    return word


_VOWELS = "aeiou"
# Not "leaves" nor "lives": as verbs they are "leave" and "live".
_F_PLURALS = {
    plural: single
    for single in "shelf knife wolf half thief wife loaf calf scarf hoof elf dwarf wharf sheaf".split()
    for plural in [single.removesuffix("e").removesuffix("f") + "ves"]
}


def stem(word: str) -> str:
    """One word without its usual ending, as texts are compared here ("asked": "ask", "forces": "forc")."""
    return _stem(word.casefold())


def content_words(text: str) -> list[tuple[str, str]]:
    """``(stem, surface)`` for each word of ``text`` that is not a stopword."""
    words = []
    for match in _WORD.finditer(text):
        surface = match.group(0)
        lower = re.sub(r"['’]s$", "", surface.lower()).replace("’", "'")
        if lower in STOPWORDS or lower.split("'")[0] in STOPWORDS:
            continue  # before stemming: "this" is not "thi"
        words.append((_stem(lower), surface))
    return words


def stems(text: str) -> frozenset[str]:
    """The stems of the content words of ``text``: what two texts are compared by, whatever their order."""
    return frozenset(stem for stem, _ in content_words(text))


def thing_stems(text: str) -> frozenset[str]:
    """The stems of the content words of ``text`` that end what they name: "timepiece" of "the old sailor's
    timepiece", not "old", which says which, nor "sailor's", whose it is; a word followed by a stopword or by
    punctuation ends its phrase ("glass" of "the brandy glass by the hand")."""
    found = []
    matches = list(_WORD.finditer(text))
    for i, match in enumerate(matches):
        lower = match.group(0).lower().replace("’", "'")
        if lower in STOPWORDS or lower.split("'")[0] in STOPWORDS or re.search(r"'s?$", lower):
            continue  # a stopword, or an owner ("sailor's", "smugglers'")
        following = matches[i + 1] if i + 1 < len(matches) else None
        if following is not None and not text[match.end() : following.start()].strip():
            after = following.group(0).lower().replace("’", "'")
            if after not in STOPWORDS and after.split("'")[0] not in STOPWORDS:
                continue  # a word that says which ("old" of "old chart", "brandy" of "brandy glass")
        found.append(_stem(lower))
    return frozenset(found)


def runs(text: str, n: int) -> set[tuple[str, ...]]:
    """Every run of ``n`` content words (all of them if fewer)."""
    stems = [stem for stem, _ in content_words(text)]
    if len(stems) <= n:
        found = {tuple(stems)} if len(stems) >= 2 else set()
    else:
        found = {tuple(stems[i : i + n]) for i in range(len(stems) - n + 1)}
    return found


# A period after these is not the end of a sentence ("Dr. Pike", "Mrs. Crane").
ABBREVIATIONS = frozenset("mr mrs ms mx dr st prof capt col gen lt sgt cpl rev fr sr jr mt no vs etc esq hon".split())
_WORD_BEFORE = re.compile(r"(\w+)$")


def boundaries(text: str) -> list[tuple[int, int]]:
    """Where sentences end in ``text``: (end of the sentence, start of the next)."""
    found = []
    for match in _SENTENCE.finditer(text):
        if text[match.start() - 1 : match.start()] == ".":
            before = _WORD_BEFORE.search(text[: match.start() - 1])
            if before and (before.group(1).lower() in ABBREVIATIONS or len(before.group(1)) == 1):
                continue
        found.append((match.start(), match.end()))
    return found


def sentences(text: str) -> list[str]:
    parts, start = [], 0
    for end, following in boundaries(text):
        parts.append(text[start:end])
        start = following
    parts.append(text[start:])
    return [s for s in parts if s.strip()]


def complete_sentences(text: str) -> tuple[str, str]:
    """``text`` cut after its last complete sentence: what can be checked now, and what must wait."""
    ends = boundaries(text)
    if not ends:
        return "", text
    cut = ends[-1][1]
    return text[:cut], text[cut:]
