"""Whether a GM reply answers what it was asked to (F26): it says enough to stand, something of its action and of
what the notes' brief told beside it, and not only the action again in other words.

The reply rules (:mod:`bot.engine.turn.shaping`) take sentences out as a reply streams; these judge the reply whole,
and the narrator asks for it again where one fails (:mod:`bot.engine.turn.narration`). bench quality counts the same
faults with the same measures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from bot.memory.changes import attribute_name, changes_in
from bot.memory.recall import asks
from bot.words import sentences, stems

if TYPE_CHECKING:
    from bot.worlds import World

ECHO_SHARE = 0.7  # a sentence whose content words are mostly the action's,
ECHO_COVER = 0.8  # and that holds nearly all of the action's, restates it
ECHO_MIN_WORDS = 4
# A whole reply that adds at most LOOSE_NEW content words to its action's (another verb, say) and holds this share
# of the action's content words (of at least LOOSE_MIN_WORDS) restates it in other words: asked for again (see
# only_restates).
LOOSE_COVER = 0.6
LOOSE_MIN_WORDS = 3
LOOSE_NEW = 1
# Words that report an action rather than answer it ("Tom asks about Meg's whereabouts at a quarter to eleven."
# for "Meg, where were you at a quarter to eleven?"): not counted among a reply's own words.
REPORTING = frozenset(
    stems("ask asks asked wonder wonders inquire inquires question questions examine examines inspect inspects "
          "carefully closely intently decide decides try tries attempt attempts want wants")
)  # fmt: skip
# A public reply with fewer content words than this that are not its actions' own says too little to stand as a
# GM's answer ('Dessa: "Rook, you're late."'): it is asked for once more. bench quality counts such a reply thin.
THIN_WORDS = 6
# An action with this many content words, or one naming a character, is specific enough that a reply answering it
# says one of them ("I knock on the front door and wait under the porch."); one saying none is asked for again.
SPECIFIC_ACTION = 3


def restates(sentence: AbstractSet[str], action: AbstractSet[str]) -> bool:
    """A sentence restates an action when it says nearly all of the action and little else (both of some
    length: "You light the lamp." after "I light the lamp." is left alone, and so is "The key slides under the
    loose board." after "I hide the key under a loose board.", which answers it)."""
    if len(sentence) < ECHO_MIN_WORDS or len(action) < ECHO_MIN_WORDS:
        return False
    shared = len(sentence & action)
    return shared >= ECHO_COVER * len(action) and shared >= ECHO_SHARE * len(sentence)


def only_restates(text: str, actions: Sequence[str], names: Sequence[str] = ()) -> bool:
    """Whether a whole reply only says an action again in other words ("Maya leans close and smells the
    candles." for "I lean close and sniff the candles."): it adds at most one word of its own to the action's
    and holds most of them, the players' names left aside. Such a reply is asked for again, as an echo is; a short
    reply that answers ("The door is locked." for "I try the door.", "The log book is soaked. Tom shivers." for
    "I read the log book.") stands."""
    if says_enough(text, actions):
        return False
    named = set().union(*(stems(name) for name in names)) if names else set()
    said = stems(text) - named
    new = said - set().union(*(stems(action) for action in actions)) - REPORTING
    if len(new) > LOOSE_NEW:  # "The log book is soaked. Tom shivers.": short, but it answers
        return False
    for action in actions:
        words = stems(action) - named
        if len(words) >= LOOSE_MIN_WORDS and len(said & words) >= LOOSE_COVER * len(words):
            return True
    return False


def referents(world: World, action: str) -> set[str]:
    """The stems of the names of the characters ``action`` refers to by a word of their name, aliases or
    description ("the housekeeper" for Hester Crane)."""
    said = stems(action)
    found: set[str] = set()
    for npc in world.npcs:
        names = stems(" ".join([npc.name, *npc.aliases]))
        if said & (names | stems(npc.description)):
            found |= names
    return found


def touches(text: str, actions: Sequence[str], named: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether a reply says anything of what it answers: a content word of an action, or a name of a character an
    action refers to (``named``, see :func:`referents`). A reply that says none of it ("Dessa stops chewing and
    looks at Duchess." for "I take the first watch and keep the fire low.") answers something else. An action of
    fewer than :data:`SPECIFIC_ACTION` content words that names no character is answered by any reply."""
    said = stems(text)
    if said & named:
        return True
    words = [stems(action) for action in actions]
    if not named and all(len(w) < SPECIFIC_ACTION for w in words):
        return True  # "I wait.", "I look around.", "Who did it?": answered without a word of them
    return any(said & w for w in words)


# What a brief's line says, without what labels it: "[fact, now] brass key, location: in the cellar (before: on
# the desk until turn 150)" says "in the cellar"; "[turn 6] … GM: Gorse grows thick." says "Gorse grows thick.".
_BRIEF_LABEL = re.compile(r"^\[[^\]]*\]\s*(?:…\s*)?(?:GM:\s*)?")
_FACT_VALUE = re.compile(r"^[^,]*,[^:]*:\s*(.*?)\s*(?:\((?:before|was)\b[^)]*\))?$")


def carries(text: str, brief: Sequence[str], actions: Sequence[str] = (), scene: Sequence[str] = ()) -> bool:
    """Whether a reply says what the brief beside its action told (see :func:`bot.memory.recall.memory_brief`):
    for a fact, its current value (see :func:`_says_value`); for a line that names someone or somewhere the action
    did not, a name (see :func:`names`: "Ashdown" for "Which servant carries the key to the wine vault?"); for any
    other, :data:`BRIEF_NEWS_WORDS` words of its news in one sentence ("silver heron" for "What bird is etched in
    the old sailor's timepiece?"), all of them for a line of fewer. Its news: its content words that neither the
    action nor the ``scene`` (the last replies) said, or that the action did not, where the scene said them all ("The
    captain checks the watch again." told nothing of "A silver heron is engraved inside the lid of the captain's
    pocket watch." in a game whose every turn spoke of the captain's watch). A reply that says none of it answered
    from elsewhere ("The captain takes the key from the barrel."). With no brief, any reply does."""
    if not brief:
        return True
    said = stems(text)
    asked = frozenset().union(*(stems(action) for action in actions))
    known = asked | frozenset().union(*(stems(line) for line in scene))
    for line in brief:
        bare = _BRIEF_LABEL.sub("", line.strip())
        value = _FACT_VALUE.match(bare) if line.startswith("[fact") else None
        if value and (_says_value(text, value.group(1)) or (not _asks_about(actions, bare) and _changes(text, bare))):
            return True
        if value:
            continue
        named = names(bare) - asked
        if named:
            if said & named:
                return True
            continue
        news = stems(bare) - known or stems(bare) - asked
        if any(len(stems(sentence) & news) >= min(BRIEF_NEWS_WORDS, len(news)) for sentence in sentences(text)):
            return True
    return False


# The words of a brief line's news a reply must say to carry it (all of them, for a line of fewer): one was a word of
# the place it looked at, not of what is there ("He looks at the etched mark on the lid." for a heron engraved
# inside the lid of the captain's watch; memory test, seed 7). In one sentence: a long reply says many words, and
# one about the ship's captain and another about a cottage "Inside, they find nothing" said nothing of the heron
# "inside the lid of the captain's pocket watch" (memory test, seed 23).
BRIEF_NEWS_WORDS = 2


# Words that stand before a name ("Doctor Penhale", "Mrs Ashdown"): capitalised there, and no name themselves.
TITLES = frozenset("mr mrs ms miss dr doctor captain lady lord sir father mother sister brother saint st".split())
_NAME = re.compile(r"[^\W\d_][\w'’-]*")


def names(text: str) -> frozenset[str]:
    """The stems of the names ``text`` says: its capitalised words past each sentence's first, titles aside.

    Where a brief's line names someone or somewhere the action did not, that name is what a reply that carries it
    says ("Which physician looked after the skipper?" briefed "Doctor Penhale from Brightwater treated the
    captain's fever last winter.", and answered "The doctor looks over the skipper": a doctor, not which one)."""
    found: set[str] = set()
    for sentence in sentences(text):
        for word in _NAME.findall(sentence)[1:]:
            if word[0].isupper() and word.lower() not in TITLES and word != "I":
                found |= stems(word)
    return frozenset(found)


def _says_value(text: str, value: str) -> bool:
    """Whether ``text`` says a fact's value: its digits in their order, for a code ("5-5-0", "the code is 550"),
    else its last content word, the thing itself ("boot" of "inside his boot": "a noise from inside" is not it)."""
    digits = re.sub(r"\D", "", value)
    if digits:
        return digits in re.sub(r"\D", "", text)
    words = [word for word in re.findall(r"[\w'’-]+", value) if stems(word)]
    return bool(words) and bool(stems(words[-1]) & stems(text))


def _asks_about(actions: Sequence[str], fact: str) -> bool:
    """Whether an action asks after the fact's thing: a question, or a look that names it. Its answer is the value
    the notes hold, not a new one: asked "Where is the brass key now?", the default model wrote "The brass key now
    rests in the chapel bell.", the place it held before the notes' "inside his boot", word for word from an older
    turn (bench change, 300 turns)."""
    subject = stems(fact.partition(",")[0])
    return any(asks(action) and ("?" in action or subject & stems(action)) for action in actions)


def _changes(text: str, fact: str) -> bool:
    """Whether ``text`` says that the fact's subject has a new value of its attribute (see
    :func:`bot.memory.changes.changes_in`): it told the thing's news, and the fact's value is the one it replaced
    (not in answer to an action that asks after it: see :func:`_asks_about`).
    In bench change, "Mrs Ashdown puts the red signal flag back in the boathouse." had the flag's place before it,
    "in the sea", told after it from the notes, and that turn then came back when asked where the flag was now."""
    subject, _, rest = fact.partition(",")
    attribute = attribute_name(rest.partition(":")[0])
    return any(
        change.subject.casefold() == subject.strip().casefold() and change.attribute == attribute
        for change in changes_in(text, [subject.strip()])
    )


def notes_answer(brief: Sequence[str]) -> str:
    """What the brief beside an action told, in plain words, for the channel: each line without its label, a fact
    as its subject and current value ("brass key, location: in the cellar"), a turn as the sentence it showed."""
    answers = []
    for line in brief:
        bare = _BRIEF_LABEL.sub("", line.strip())
        value = _FACT_VALUE.match(bare) if line.startswith("[fact") else None
        if value:
            # a value that changed is told as the one that holds now: after a reply that gave its older one ("The
            # brass key now lies on the desk"), "brass key, location: in the cellar" read as where it had been
            changed = re.search(r"\((?:before|was)\b", bare) is not None
            bare = f"{bare[: bare.index(':')]}{' now' if changed else ''}: {value.group(1)}"
        bare = bare.strip().rstrip("…").strip().rstrip(".")
        if bare:
            answers.append(bare)
    return "; ".join(answers)


def says_enough(text: str, actions: Sequence[str] = ()) -> bool:
    """Whether a public reply says enough to stand as the GM's answer: :data:`THIN_WORDS` content words, or more,
    that are not the actions' own."""
    said = stems(text)
    for action in actions:
        said -= stems(action)
    return len(said) >= THIN_WORDS


def ends_a_sentence(text: str) -> bool:
    return bool(re.search(r"[.!?…][\"'”’)\]*]*\s*$", text)) or text.rstrip().endswith("]]")
