"""Change found in play (F40): a thing moved, handed over, a code changed, a side switched, a thing destroyed.

The facts job (a model call in the background) records facts, and a fact with a new value supersedes the old
one; but a small model's extraction misses a move as often as not, and then the memory holds the old place
only. So the GM's public replies and the players' public actions are also read, as they are stored, for the
plain sentences that say a value changed, and each becomes a fact of the same kind, superseding what the
memory held of that subject and attribute, whatever the facts job finds later:

- a place: "Tom carries the brass key down to the cellar", "The candlestick now lies at the bottom of the
  well", "She hides the letter under the floorboard";
- a holder: "Maya hands the lantern to Pip", "Pip now has the lantern";
- a code: "The door code is now 882", "He changes the combination to 5-1-9";
- a side: "The ferryman now works for the Crown", "Wren switches sides to the smugglers";
- an end: "The letter is burned", "She smashes the lamp", "The rations are used up".

It reads sentences, not meaning: what it misses, the facts job may still catch, and what it finds is what the
text says in so many words. Subjects are matched to those the memory already holds ("the candlestick" to "swan
candlestick"), so the new value supersedes the old. Plain data in, plain data out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.memory.naming import (
    CODE_WORDS,
    LOCKISH,
    QUALIFIED,
    SEQUENCE_THINGS,
    antecedent,
    lock_named,
    same_subject,
)
from bot.memory.parsed import parsed_changes
from bot.memory.pointing import names_a_thing, says_a_place
from bot.words import content_words, sentences

# Attributes, as the facts job names them and as this module does: one name each, so values supersede.
ATTRIBUTE_NAMES = {
    "location": ("location", "place", "whereabouts", "position", "where", "kept", "hidden"),
    "holder": ("holder", "owner", "held by", "possessed by", "carried by", "who has it", "has", "keeper", "kept by"),
    "code": ("code", "combination", "password", "passcode", "number"),
    "allegiance": ("allegiance", "loyalty", "side", "employer", "works for", "serves", "master", "faction"),
    "state": ("state", "condition", "status", "existence"),
}
_ATTRIBUTE = {alias: name for name, aliases in ATTRIBUTE_NAMES.items() for alias in aliases}


def attribute_name(attribute: str) -> str:
    """One name for an attribute of many ("whereabouts", "place": "location")."""
    said = " ".join(attribute.casefold().split())
    return _ATTRIBUTE.get(said, said)


# What a question's first word can ask of a thing: "where" its place, its holder, or that it is gone; "who" its
# holder or its side. Other questions ("what", "which", "how", a look) may ask any of them.
_ASKS_FOR = {
    "where": frozenset({"location", "holder", "state"}),
    "who": frozenset({"holder", "allegiance"}),
}
_WHO = {"whom": "who", "whose": "who"}
_QUESTION_WORD = re.compile(r"\b(where|who|whom|whose|what|which|how|is|are|can|could|do|does|did)\b", re.I)
# "Which servant carries the key?" asks who, as "who" does.
_WHICH_ONE = re.compile(
    r"\b(?:which|what)\s+(?:\w+\s+)?(?:servant|person|man|woman|men|women|one|sailor|guard|girl|boy|lad|maid|member|"
    r"player|character|crew\s?man|fellow|folk|people|villager|soldier|smuggler|thief|stranger)s?\b",
    re.I,
)


# Words of a question that name what it asks of a thing, whatever its question word: "Which faction does the young
# clergyman serve?" asks a side, "What number opens the vault?" a code.
_NAMES_AN_ATTRIBUTE = {
    "location": ("whereabouts",),
    "holder": ("owner", "owns", "owned"),
    "code": ("code", "combination", "password", "passcode", "number", "watchword", "countersign", "passphrase"),
    "allegiance": ("allegiance", "loyalty", "loyal", "side", "employer", "faction", "serve", "serves", "obey", "obeys"),
}  # fmt: skip
_ATTRIBUTE_WORD = {word: name for name, words in _NAMES_AN_ATTRIBUTE.items() for word in words}


def asks_for(action: str) -> frozenset[str] | None:
    """The attributes a question can be asking about: those its first question word can ask ("Where would I find
    the bone needle?": a place, a holder or an end, never a side), narrowed to those its words name ("Which faction
    does he serve?": a side) where they agree ("Where is the side door key?" asks no side); None where any may be (a
    look, a "what" or "which" that names none)."""
    for sentence in sentences(action):
        if "?" not in sentence:
            continue
        words = re.findall(r"[a-z]+", sentence.casefold())
        named = frozenset(  # "Which numbers open it?": a word's plural names it too
            _ATTRIBUTE_WORD.get(word) or _ATTRIBUTE_WORD[word[:-1]]
            for word in words
            if word in _ATTRIBUTE_WORD or word.endswith("s") and word[:-1] in _ATTRIBUTE_WORD
        )
        found = _QUESTION_WORD.search(sentence)
        word = "who" if _WHICH_ONE.search(sentence) else found.group(1).casefold() if found else ""
        asked = _ASKS_FOR.get(_WHO.get(word, word))
        if asked is None:
            return named or None
        return named if named and named <= asked else asked
    return None


@dataclass(frozen=True)
class Change:
    kind: str  # "item" or "character"
    subject: str
    attribute: str  # one of ATTRIBUTE_NAMES
    value: str
    sentence: str


_DET = r"(?:the|a|an|his|her|their|its|my|your|our|this|that)\s+"
_NOT_A_NOUN = (
    r"(?!(?:from|to|into|onto|in|on|under|underneath|beneath|behind|inside|at|beside|near|among|atop|over|down|up|"
    r"back|away|out|off|with|against|across|through|and|or|but|is|was|are|were|has|have|had|been|being|now|then)\b)"
)
_WORD = rf"{_NOT_A_NOUN}[A-Za-z][\w'-]*"
# A thing, with what it is of: "the map of the caves", "the keg of Nantes brandy".
_THING = rf"(?P<thing>(?:{_WORD}\s+){{0,3}}?{_WORD}(?:\s+of\s+(?:the\s+)?(?:{_WORD}\s+)??{_WORD})?)"
_FROM = r"(?:\s+from\s+[^.;!?,]{1,60}?)?"  # "from under the mat": where it was, not where it goes
_PLACE_PREP = (
    r"(?:(?:deep|far|safely|quietly|carefully|high|low|well)\s+)?"
    r"(?P<prep>(?:back\s+)?(?:down\s+)?(?:into|onto|in|on|under|underneath|beneath|behind|inside|at|to|beside|near|"
    r"among|atop|up\s+to|over))"
)
_PLACE_WORDS = r"(?:in|on|under|at|inside|behind|into|onto|beneath|beside|to)"
# How a place is said as a value, whatever verb moved the thing there: "carries it down to the cellar": "in the
# cellar", as the facts job would say it.
_AS_PLACE = {"to": "in", "into": "in", "up to": "in", "onto": "on", "atop": "on", "underneath": "under"}
_VALUE = r"(?P<value>[^.;!?,]{2,80}?)"
# The value ends at the sentence's end, or where "and" starts another clause ("to the door and force it open"),
# not another place ("in the drawer and in the box", "to the mill and the bridge").
_NOT_A_CLAUSE = r"(?:(?:the|a|an|his|her|their|its|my|your|our|this|that|in|on|under|at|inside|behind|into|to)\b|\d)"
_END = rf"(?=\s*(?:[.;!?,]|\s+and\s+(?!{_NOT_A_CLAUSE})|$))"
_MOVE_VERBS = (
    r"puts?|placed?|places|moves?|moved|carries|carried|carry|takes?|took|hides?|hid|hidden|drops?|dropped|"
    r"leaves?|left|sets?|stashe[sd]|stash|throws?|threw|thrown|toss(?:es|ed)?|lowers?|lowered|buries|buried|bury|"
    r"slips?|slipped|tucks?|tucked|locks?|locked|stores?|stored|brings?|brought|returns?|returned|lays?|laid|"
    r"sinks?|sank|sunk|shoves?|shoved|pushe[sd]|push|rolls?|rolled|drags?|dragged|haul(?:s|ed)?|heaves?|heaved|"
    r"lugs?|lugged|ferr(?:y|ies|ied)|carts?|carted|smuggles?|smuggled|whisks?|whisked|shifts?|shifted|"
    r"transfers?|transferred|spirits?\s+away|spirited\s+away|squirrels?\s+away|squirrelled\s+away|rows?|rowed|"
    r"sails?|sailed|tows?|towed|hoists?|hoisted|slides?|slid"
)
# How a thing is said to be where it is: "sits on the mantelpiece", "hangs on a nail above the stove".
_STAYS = r"lies|lie|rests|sits|stands|hangs|waits|leans|stays|remains"
# How it is said to have been put there: "is drawn up on the slipway", "is stowed beneath the pews".
_PUT_AWAY = (
    r"drawn|hung|kept|stowed|laid|stored|stuck|tucked|locked|buried|stashed|hidden|wedged|placed|moored|tied|"
    r"chained|nailed|pinned|shelved|packed|sewn|sealed|propped|lodged|jammed|bolted"
)
# Verbs that put a thing somewhere, beyond the moves above: "wedges it behind a rock shelf", "sews it into a hem".
_STOW_VERBS = (
    r"wraps?|wrapped|stuffs?|stuffed|wedges?|wedged|sews?|sewed|sewn|jams?|jammed|crams?|crammed|stows?|stowed|"
    r"props?|propped|nails?|nailed|pins?|pinned|hangs?|hung|packs?|packed|seals?|sealed|chains?|chained|ties?|tied|"
    r"moors?|moored|wedges|posts?|posted|mails?|mailed"
)
_GIVE_VERBS = (
    r"gives?|gave|given|hands?|handed|pass(?:es|ed)?|sells?|sold|lends?|lent|entrusts?|entrusted|trades?|traded|"
    r"swaps?|swapped|loses?|lost|bequeaths?|bequeathed|wills?|willed|surrenders?|surrendered|delivers?|delivered|"
    r"sends?|sent|gambles?\s+away|gambled\s+away|passe[sd]\s+on|yields?|yielded"
)
# How a thing came to its new holder, said between it and the holder: "loses the telescope at cards to Orla".
_BY_WAY_OF = r"(?:\s+(?:at|in|over|during|after|by)\s+[^.;!?,]{1,30}?)?"
# What it was given for, said after the holder: "trades it to a tinker for a jug of rum".
_IN_EXCHANGE = re.compile(r"\s+(?:for|in\s+exchange|in\s+return|in\s+payment|as\s+payment|as\s+a)\b.*$", re.I)
# A thing whose value a new one replaces outright, said of any thing: "the signal for danger is changed to two
# short flashes".
_CHANGED_TO = (
    r"(?:is|was|has\s+been|have\s+been|are|were|gets|got)\s+(?:now\s+)?(?:changed|switched|altered|reset)\s+to"
)
_CODE_LIKE = r"code|combination|password|watchword|passphrase|countersign|signal|sign|knock|cipher|word|call"
_END_WORDS = (
    r"destroyed|burned|burnt|smashed|broken|shattered|crushed|drowned|dead|killed|sunk|eaten|drunk|spent|"
    r"used up|gone|melted|torn up|ripped up|ruined|dissolved|blown up|consumed|lost"
)
_END_VERBS = (
    r"burns?|burned|burnt|smash(?:es|ed)?|breaks?|broke|destroys?|destroyed|shatters?|shattered|tears? up|tore up|"
    r"rips? up|ripped up|drinks?|drank|eats?|ate|uses? up|used up|crush(?:es|ed)?|sinks?|sank|kills?|killed|"
    r"melts?|melted|blows? up|blew up|scuttles?|scuttled"
)
# Where or with what a thing came to its end, said after it: "burns the letter in the stove", "smashes the lamp
# with a poker". The thing is what ended, not the place.
_WHERE_OR_HOW = r"(?:\s+(?:in|into|on|onto|at|inside|under|with|against|over)\s+[^.;!?,]{1,60}?)?"
# What it was left as, said first: "smashes the boat to splinters on the rocks", "burns the map to ashes".
_LEFT_AS = (
    r"(?:\s+(?:to|into|in)\s+(?:splinters|pieces|bits|shreds|ashes|cinders|matchwood|shards|smithereens|fragments|"
    r"dust|rubble))?"
)
# When a holder keeps it, said after it: "Jory keeps the light now", "Nell has the chart these days".
_FROM_NOW = r"(?:\s+(?:now|these\s+days|for\s+now|from\s+now\s+on|for\s+good|tonight|at\s+night|by\s+night))?"
_SIDE = (
    r"(?:now\s+)?(?:works?|working)\s+for|(?:now\s+)?serves|sides?\s+with|has\s+joined|joins|joined|"
    r"switche[sd]\s+sides?\s+to|(?:is|are)\s+(?:now\s+)?loyal\s+to|swears?\s+(?:loyalty|allegiance)\s+to|"
    r"swore\s+(?:loyalty|allegiance)\s+to|(?:is|are)\s+(?:now\s+)?(?:in\s+the\s+pay\s+of|with)|"
    r"(?:has\s+)?gone\s+over\s+to|went\s+over\s+to|(?:is|are)\s+back\s+with|(?:is|are)\s+(?:now\s+)?on\s+"
    r"(?P<whose>[\w' -]{2,40}?)'s\s+side|swears?\s+(?:himself|herself|themselves|fealty)\s+to|"
    r"swore\s+(?:himself|herself|themselves|fealty)\s+to|throws?\s+in\s+(?:his|her|their)\s+lot\s+with|"
    r"threw\s+in\s+(?:his|her|their)\s+lot\s+with|(?:now\s+)?(?:takes|took)\s+(?:his|her|their)\s+orders\s+from|"
    r"(?:now\s+)?answers?\s+to|turns?\s+informer\s+for|(?:is|are)\s+(?:now\s+)?in\s+league\s+with|"
    r"(?:now\s+)?stands?\s+with|stood\s+with|sells?\s+(?:every|each|all|his|her|their)\s+(?:rumou?rs?|secrets?|"
    r"word|whispers?|news|information|tidbits?)\b[^.;!?]{0,30}?\s+to|(?:now\s+)?spies\s+for|(?:has\s+)?defected\s+to|defects\s+to|(?:has\s+)?sold\s+out\s+to|sells\s+out\s+to"
)

# A code said in words, not a number nor one word: "the all-clear signal is two blue lamps".
_SIGNAL_WORDS = r"signal|knock|whistle|call"

_PATTERNS: tuple[tuple[str, re.Pattern], ...] = (
    # "Tom carries the brass key down to the cellar", "She hides the letter under the floorboard"
    ("location", re.compile(
        rf"\b(?:{_MOVE_VERBS}|{_STOW_VERBS})\s+(?:it\s+|{_DET})?{_THING}{_FROM}\s+{_PLACE_PREP}\s+{_VALUE}{_END}",
        re.I)),
    # "The candlestick now lies at the bottom of the well", "the key is now in the cellar", "The compass sits on
    # the mantelpiece", "the chalice stands once more in the vestry": where a thing is, said of it, is its place
    ("location", re.compile(
        rf"\b(?:{_DET})?{_THING}\s+(?:(?:now|still|again)\s+)?(?:{_STAYS}|is\s+now|is\s+back|(?:is|are)\s+(?:now\s+)?"
        rf"(?:{_PUT_AWAY})(?:\s+(?:up|away|down|back|safely))?)(?:\s+(?:now|once\s+more|again|back))?\s+"
        rf"{_PLACE_PREP}\s+{_VALUE}{_END}", re.I)),
    # "Bram wraps the locket in a rag and stuffs it behind the loose brick": where "it" goes is the thing's place
    ("location", re.compile(
        rf"\b(?:{_MOVE_VERBS}|{_STOW_VERBS})\s+(?:{_DET}){_THING}\s+(?:in|into|on|with|under|inside|beneath|up|down|"
        rf"away|off|from|out)\b[^.;!?]{{0,60}}?\s+and\s+[a-z]+\s+it\s+"
        rf"{_PLACE_PREP}\s+{_VALUE}{_END}", re.I)),
    # "the key ends up in the well", "the lantern is left on the beach"
    ("location", re.compile(
        rf"\b(?:{_DET})?{_THING}\s+(?:ends?\s+(?:up|its\s+journey)|ended\s+(?:up|its\s+journey)|comes?\s+to\s+rest|"
        rf"came\s+to\s+rest|finds?\s+its\s+way(?:\s+back)?|found\s+its\s+way(?:\s+back)?|turns?\s+up|turned\s+up|"
        rf"winds?\s+up|wound\s+up|is\s+left|was\s+left|is\s+moved|was\s+moved|is\s+taken|"
        rf"was\s+taken|is\s+hidden|was\s+hidden|is\s+put|was\s+put)\s+{_PLACE_PREP}\s+{_VALUE}{_END}", re.I)),
    # "Maya hands the lantern to Pip", "The tinker loses the telescope at cards to Orla"
    ("holder", re.compile(
        rf"\b(?:{_GIVE_VERBS})\s+(?:{_DET})?{_THING}{_BY_WAY_OF}\s+(?:back\s+)?(?:over\s+)?to\s+{_VALUE}{_END}", re.I)),
    # "presses the ledger into the hands of Widow Polmear", "puts the key in Pip's hands"
    ("holder", re.compile(
        rf"\b(?:{_MOVE_VERBS}|{_GIVE_VERBS}|{_STOW_VERBS}|press(?:es|ed)?|thrusts?|slips?)\s+(?:{_DET})?{_THING}\s+"
        rf"(?:into|in)\s+(?:the\s+hands?\s+of\s+{_VALUE}|(?P<owner>[\w' -]{{2,40}}?)'s?\s+hands?){_END}", re.I)),
    # "The telescope belongs to Captain Hale", "the chart is now owned by Nell"
    ("holder", re.compile(
        rf"\b(?:{_DET})?{_THING}\s+(?:now\s+)?(?:(?:belongs|belonged|passe[sd])\s+(?:now\s+)?(?:(?:back|over)\s+)?"
        rf"(?:(?:across|over|along|through)\s+[^.;!?,]{{1,40}}?\s+)?to|"
        rf"(?:is|was)\s+(?:now\s+)?(?:owned|kept|held)\s+by)\s+{_VALUE}{_END}", re.I)),
    # "Pip now has the lantern", "Pip pockets the key"
    ("holder", re.compile(
        rf"\b(?P<value>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)(?:,\s+[^,.;!?]{{1,40}},)?\s+"
        rf"(?:now\s+(?:has|holds|carries|keeps|owns)|holds|pockets|"
        rf"takes\s+hold\s+of|keeps|owns|wins|won|inherits|inherited|buys|bought|seizes|seized|steals|stole|snatches|"
        rf"snatched|grabs|grabbed|receives|received|claims|claimed|confiscates|confiscated)\s+(?:{_DET}){_THING}"
        rf"{_FROM_NOW}(?:\s+(?:tucked|folded|hidden|wrapped|safe|close|in|inside|under|beneath|about|around)\b"
        rf"[^.;!?]{{0,60}}?)?{_END}")),
    # "It is the widow Penhallow who owns the snuffbox now"
    ("holder", re.compile(
        rf"\bit\s+is\s+(?P<value>[^.;!?,]{{2,60}}?)\s+who\s+(?:now\s+)?(?:owns|has|holds|keeps|carries)\s+"
        rf"(?:{_DET}){_THING}{_FROM_NOW}{_END}", re.I)),
    # "it rests once more with Obadiah", "the deed stays with the miller"
    ("holder", re.compile(
        rf"\b(?:{_DET})?{_THING}\s+(?:now\s+)?(?:rests|stays|remains|lies|is\s+back|is\s+now)\s+(?:once\s+more\s+|"
        rf"again\s+|now\s+|safely\s+)?with\s+(?P<value>(?:[A-Z][\w'-]*\s*)+){_END}")),
    # "The door code is now 882", "the combination was changed to 5-1-9"
    ("code", re.compile(
        rf"\b(?:{_DET})?(?P<thing>(?:[\w'-]+\s+){{0,3}}?(?:{CODE_WORDS}))\s+(?:is\s+now|is|was\s+changed\s+to|"
        rf"has\s+been\s+changed\s+to|changed\s+to|now\s+reads|reads|becomes|became)\s+[\x27\x22‘“]?(?P<value>[\w-]+(?:\s+[\w-]+)?)[\x27\x22’”]?"
        rf"{_END}", re.I)),
    # "The code of the cellar door is now 882"
    ("code", re.compile(
        rf"\b(?P<kind>{CODE_WORDS})\s+(?:of|for|to)\s+(?:{_DET})?(?P<thing>(?:[\w'-]+\s+){{0,3}}?"
        rf"[\w'-]+)\s+(?:is\s+now|is|was\s+changed\s+to|has\s+been\s+changed\s+to|now\s+reads|becomes|became)\s+"
        rf"[\x27\x22‘“]?(?P<value>[\w-]+(?:\s+[\w-]+)?)[\x27\x22’”]?{_END}", re.I)),
    # "'Brinewolf' is the sewer watchword now": the word said first
    ("code", re.compile(
        rf"[\x27\x22‘“](?P<value>[\w-]+)[\x27\x22’”]\s+is\s+(?:now\s+)?(?:{_DET})?(?P<thing>(?:[\w'-]+\s+){{0,3}}?"
        rf"(?:{CODE_WORDS}))\b", re.I)),
    # "the lock on the crypt opens to three sigils: owl, serpent, chalice", "the dials set to wolf, lily, crown"
    ("sequence", re.compile(
        rf"\b(?:{_DET})?(?P<thing>(?:[\w'-]+\s+){{0,2}}?(?:{SEQUENCE_THINGS}))\b[^.;!?]{{0,60}}?(?:\bto|\bas|:)\s+"
        rf"(?P<value>[a-z]+,\s+[a-z]+,?\s+(?:and\s+)?[a-z]+(?:,?\s+(?:and\s+)?[a-z]+)?){_END}", re.I)),
    # "He changes the cellar code to 882", "sets the combination to 5-1-9"
    ("code", re.compile(
        rf"\b(?:changes?|changed|resets?|sets?|alters?|altered)\s+(?:{_DET})?(?P<thing>(?:[\w'-]+\s+){{0,3}}?"
        rf"(?:{CODE_WORDS}))\s+to\s+[\x27\x22‘“]?(?P<value>[\w-]+(?:\s+[\w-]+)?)[\x27\x22’”]?{_END}", re.I)),
    # "breathes the new password into each ear: blackthorn", "must murmur the password, cormorant, or ..."
    ("code", re.compile(
        rf"\b(?:{_DET})?(?P<thing>(?:[\w'-]+\s+){{0,3}}?(?:{CODE_WORDS}))(?:\s+[^.;!?:,]{{1,60}}?)?(?::|,)\s+"
        rf"[\x27\x22‘“]?(?P<value>[\w-]+)[\x27\x22’”]?(?=\s*(?:[.;!?,]|$))", re.I)),
    # "the all-clear signal from the belfry is a single green lamp", "the signal changes: two blue lamps"
    ("code", re.compile(
        rf"\b(?:{_DET})?(?P<thing>(?:[\w'-]+\s+){{0,3}}?(?:{_SIGNAL_WORDS}))(?:\s+(?:from|of|for|at)\s+[^.;!?:,]{{1,40}}?)?"
        rf"\s+(?:is\s+now|is|becomes|became|will\s+be|changes\s*:|changes\s+to|is\s+changed\s+to)\s+"
        rf"(?P<value>(?:a|an|one|two|three|four|five|six|\d+|single|double|twin)\b[^.;!?,]{{2,60}}?){_END}", re.I)),
    # "The signal for danger is changed to two short flashes"
    ("changed", re.compile(
        rf"\b(?:{_DET})?{_THING}(?:\s+(?:for|of)\s+[\w'-]+)?\s+{_CHANGED_TO}\s+{_VALUE}{_END}", re.I)),
    # "The ferryman now works for the Crown", "Wren switches sides to the smugglers"
    ("allegiance", re.compile(
        rf"\b(?:{_DET})?(?P<thing>(?:{_WORD}\s+){{0,2}}?{_WORD})(?:,\s+[^,.;!?]{{1,40}},)?\s+(?:{_SIDE})\s*"
        rf"{_VALUE}?{_END}", re.I)),
    # "Fear drives the curate into the arms of the dragoons"
    ("allegiance", re.compile(
        rf"\b(?:drives?|drove|pushe[sd]|push|sends?|sent|forces?|forced)\s+(?:{_DET})?"
        rf"(?P<thing>(?:{_WORD}\s+){{0,3}}?{_WORD})\s+into\s+the\s+arms\s+of\s+{_VALUE}{_END}", re.I)),
    ("allegiance", re.compile(
        rf"\b(?:{_DET})?(?P<thing>(?:{_WORD}\s+){{0,2}}?{_WORD})\s+(?:runs?|ran|falls?|fell|goes|went)\s+into\s+the\s+"
        rf"arms\s+of\s+{_VALUE}{_END}", re.I)),
    # "The letter is burned", "the lamp was smashed"
    ("state", re.compile(
        rf"\b(?:{_DET})?{_THING}\s+(?:is|was|are|were|has\s+been|have\s+been|lies)\s+(?:now\s+)?(?P<value>{_END_WORDS})\b",
        re.I)),
    # "Nothing remains of the figurehead", "the boathouse goes up in flames"
    ("state", re.compile(rf"\bnothing\s+(?:is\s+left|remains)\s+of\s+(?:{_DET})?{_THING}{_END}", re.I)),
    ("state", re.compile(
        rf"\b(?:{_DET})?{_THING}\s+(?:goes|went|has\s+gone)\s+(?:up\s+in\s+(?:flames|smoke)|to\s+the\s+bottom|"
        rf"down\s+with\s+all\s+hands|down\s+(?:in|off|with)\b)", re.I)),
    # "feeds the map to the taproom fire"
    ("state", re.compile(
        rf"\b(?:feeds?|fed|throws?|threw|tosse[sd]|toss|consigns?|consigned)\s+(?:{_DET})?{_THING}\s+(?:in)?to\s+"
        rf"(?:{_DET})?(?:[\w'-]+\s+)?(?:fire|flames|stove|furnace|hearth|grate|brazier)\b", re.I)),
    # "She smashes the lamp", "Wren burns the letter", "Wren burns the captain's letter in the kitchen stove"
    ("state", re.compile(
        rf"\b(?P<verb>{_END_VERBS})\s+(?:{_DET}){_THING}{_LEFT_AS}{_WHERE_OR_HOW}(?:\s+to\s+[a-z]+\b[^.;!?,]{{0,40}}?)?"
        rf"{_END}", re.I)),
)  # fmt: skip

_PEOPLE_WORDS = {"he", "she", "they", "it", "you", "i", "we", "him", "her", "them", "someone", "everyone"}
# Words that name no thing: "nothing remains on the plinth but a puddle", "chunks off what is left".
_NO_THING = {"nothing", "something", "anything", "everything", "what", "whatever", "which", "none", "all", "each"}
_NOT_THINGS = {
    "way", "time", "moment", "look", "glance", "breath", "step", "steps", "turn", "hand", "hands", "eyes", "head",
    "seat", "place", "care", "note", "notice", "chance", "lead", "side", "back", "rest", "word", "words",
    # the body, put somewhere to do something ("we put our shoulders to the door", "I put my ear to the cask")
    "shoulder", "shoulders", "ear", "ears", "eye", "face", "cheek", "nose", "arm", "arms", "finger", "fingers",
    "foot", "feet", "knee", "knees", "palm", "palms", "weight", "mind", "attention", "voice",
    # a phrase of time or manner read where the thing stands ("the staff is laid once more in her hands")
    "more", "again", "last", "once", "twice", "instead", "anew", "afresh",
    # a time spent somewhere ("it spends the night in the annealing oven"), a cause joined
    "night", "nights", "day", "days", "hour", "hours", "evening", "morning", "afternoon", "week", "weeks", "winter",
    "summer", "season", "year", "years", "war",
}  # fmt: skip
# A place that is someone's keeping: "laid once more in Maelona's hands" tells who holds it, not where it is.
_IN_KEEPING = re.compile(
    r"^(?:in|into|inside)\s+(?P<who>[A-Z][\w' -]*?)(?:'s|’s|')\s+"
    r"(?:hands?|grip|grasp|keeping|custody|possession|care|fist|palm|pocket)$"
)


def changes_in(text: str, known: Iterable[str] = ()) -> list[Change]:
    """The changes ``text`` states, one per subject and attribute (the last said wins), each subject matched to
    one of ``known`` (the subjects the memory holds) where it names the same thing."""
    subjects = list(dict.fromkeys(known))
    found: dict[tuple[str, str], Change] = {}
    said = ""
    for sentence in sentences(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):  # a question changes nothing
            continue
        these = [
            change
            for attribute, pattern in _PATTERNS
            for match in pattern.finditer(sentence)
            if (change := _change(attribute, match, sentence, subjects)) is not None
        ]
        if not these:  # what the sentences above do not read, the sentence's grammar may (bot.memory.parsed)
            these = [
                Change(kind, same_subject(thing, subjects), attribute, value, sentence)
                for kind, thing, attribute, value in parsed_changes(sentence, subjects, said)
                if attribute in ("allegiance", "code") or _pointed(thing, sentence, subjects)
            ]
        for change in these:
            if change.attribute in ("location", "holder") and not _NAMED.search(_AT.sub("", change.value)):
                continue  # "changed the cage's numbers again, to 2-8-5": digits are no place, nor anyone
            if change.attribute == "location" and not says_a_place(change.value):
                continue
            found[(change.subject.casefold(), change.attribute)] = change
        said += " " + sentence
    return list(found.values())


_NAMED = re.compile(r"[^\W\d_]{2,}")


_AT = re.compile(rf"^{_PLACE_WORDS}\s+", re.I)


def _pointed(thing: str, sentence: str, subjects: Sequence[str]) -> bool:
    """A thing the memory holds, or one the sentence picks out (bot.memory.pointing); a side or a code is read only
    where a word says so ("serves", "password"), whoever's."""
    return same_subject(thing, subjects) in subjects or names_a_thing(thing, sentence)


def beyond_the_questions(changes: Sequence[Change], questions: Sequence[str]) -> list[Change]:
    """The ``changes`` a reply states that no question of its turn named: an answer that gives a question's own
    place, holder or code back ("Which servant carries the key to the wine vault?" answered "Wren Tally carries
    the key to the wine vault.") repeats the question's premise and moves nothing. Measured with Qwen2.5 1.5B as
    the GM of a 300-turn game: that answer, taken as a move, made the wine vault the brass key's place, and the
    GM told it when asked where the key was now."""
    asked = {stem for question in questions for stem, _ in content_words(question)}
    kept = []
    for change in changes:
        value = {stem for stem, _ in content_words(change.value)}
        if not (value and value <= asked):
            kept.append(change)
    return kept


def said_anew(changes: Sequence[Change], earlier: Sequence[str]) -> list[Change]:
    """The ``changes`` whose sentence none of the ``earlier`` replies said: a sentence said again moves nothing
    again. Measured with Qwen2.5 1.5B as the GM of a 300-turn game: asked what bird was etched in a watch, it
    repeated its last reply, "Wren Tally carries the key to the wine vault.", and the key moved there."""
    said = {_said(sentence) for text in earlier for sentence in sentences(text)}
    return [change for change in changes if _said(change.sentence) not in said]


def _said(sentence: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", sentence.casefold()))


_PREPOSITION = re.compile(
    r"\s+(?:against|with|into|onto|in|on|under|at|to|from|by|for|off|over|across|through|near|beside|behind|"
    r"down|up|out|away|inside)\b.*$",
    re.I,
)


# A time is no place: "a rider leaves the stables at midnight" moves nothing, and "left the lantern at the mill
# last night" leaves it at the mill. Said at a value's end, so that "the morning room" stays a place.
_TIME = (
    r"(?:(?:at|before|after|by|until|till|in|on|during|since)\s+)?(?:(?:the|this|that|last|next|every|each|one)\s+)?"
    r"(?:midnight|noon|midday|dawn|dusk|daybreak|sunrise|sunset|nightfall|first light|night|morning|evening|"
    r"afternoon|tonight|today|yesterday|tomorrow|\d{1,2}(?::\d\d)?\s*(?:am|pm|o'clock)|(?:an?|one|\w+)\s+hours?\s+ago|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)"
)
_ONLY_TIME = re.compile(rf"^{_TIME}$", re.I)
_TIME_AFTER = re.compile(rf"\s+{_TIME}$", re.I)
# A clause of when, said after the place: "locks the sealed orders in the wardroom safe before the boat dives".
_WHEN_AFTER = re.compile(r"\s+(?:before|after|until|till|while|whenever|when|once|as\s+soon\s+as)\s+\w.*$", re.I)


def _change(attribute: str, match: re.Match, sentence: str, subjects: Sequence[str]) -> Change | None:
    thing = _PREPOSITION.sub("", _trim(match.group("thing")))
    head, of, whose = thing.partition(" of ")  # "tonight the countersign": the countersign; "the map of the caves"
    thing = re.sub(rf"^.*\b{_DET}", "", head, flags=re.I) + of + whose
    if attribute == "code":  # "the new password": the password
        thing = re.sub(r"^(?:new|old|current|latest|present)\s+", "", thing, flags=re.I)
    if attribute == "code" and match.groupdict().get("kind"):  # "the code of the cellar door": "cellar door code"
        thing = f"{thing} {match.group('kind').casefold()}"
    sequence = attribute == "sequence"
    if sequence:  # of the lock the memory holds that the sentence names ("the lock's dials")
        thing = lock_named(sentence, subjects) or thing
        attribute = "code"
    elif attribute == "code" and re.fullmatch(CODE_WORDS, thing, re.I):
        # "resets the airlock; the new code is 5190": the airlock's, not the one code the memory held before;
        # "the new password for the sail-loft meetings": that password, whatever others the memory holds
        qualified = _CODE_OF.match(sentence, match.end("thing"))
        thing = lock_named(sentence, subjects) or (f"{thing} {qualified.group(1)}" if qualified else thing)
    if thing.casefold().endswith(" of it"):  # "half of it is gone": a part, not the thing
        return None
    if thing.casefold().split()[-1] == "it":  # "the miller buys back the deed, and it rests with him": the deed
        thing = antecedent(sentence[: match.start()], subjects)  # ("by the third act it is gone": an "it" too)
    if not thing or thing.casefold() in _PEOPLE_WORDS | _NO_THING or thing.casefold().split()[-1] in _NOT_THINGS:
        return None
    groups = match.groupdict()
    changed = attribute == "changed"
    if changed:  # a value replaced outright: a code's, a place's, or else the thing's state
        value = groups.get("value") or ""
        attribute = _replaced(thing, _trim(value, keep_articles=True))
    elif attribute == "state":
        value = groups.get("value") or _ended(groups.get("verb") or "")
    elif attribute == "allegiance":
        value = groups.get("whose") or groups.get("value") or ""
    else:
        value = groups.get("value") or groups.get("owner") or ""
    value = _trim(value, keep_articles=True)
    if attribute in ("location", "holder"):
        if _ONLY_TIME.match(value):
            return None
        value = _WHEN_AFTER.sub("", _TIME_AFTER.sub("", value))
    if attribute == "holder":
        value = _IN_EXCHANGE.sub("", value)
    signal = re.search(rf"\b(?:{_SIGNAL_WORDS})$", thing, re.I)
    if (
        attribute == "code"
        and not changed
        and not signal
        and not sequence
        and not re.search(r"\d", value)
        and not _word_for_a_password(thing, value)
    ):
        return None  # "the code is now .": no code said
    if attribute == "location" and groups.get("prep") and value:
        prep = " ".join(groups["prep"].casefold().split()[-2:]).removeprefix("down ").removeprefix("back ")
        value = f"{_AS_PLACE.get(prep, prep)} {value}"
    if attribute == "location" and (keeping := _IN_KEEPING.match(value)):
        attribute, value = "holder", keeping.group("who")
    if attribute in ("location", "holder"):
        # Two places at once ("in the drawer and in the box"): one current value, the last said.
        value = re.split(rf"\s+(?:and|or)\s+(?={_PLACE_WORDS}\b)", value)[-1]
        if attribute == "holder":
            value = re.sub(r"^to\s+", "", value)
    if not value or not content_words(value) and attribute != "code":
        return None
    if attribute not in ("allegiance", "code") and not _pointed(thing, sentence, subjects):
        return None
    if attribute == "allegiance" and re.search(rf"\b(?:{LOCKISH})$", thing, re.I):
        attribute = "code"  # "the ossuary gate now answers to thistle-and-ash": what opens it, not a side
    kind = "character" if attribute == "allegiance" else "item"
    return Change(kind, same_subject(thing, subjects), attribute, value, sentence)


# What a code is for, said right after it: "the new password for the sail-loft meetings into each ear".
_CODE_OF = re.compile(
    r"\s+((?:for|of)\s+(?:the\s+)?(?:[\w'-]+\s+){0,2}?[\w'-]+)(?=\s+(?:into|in|on|at|is|was)\b|[,:;.]|$)"
)


def _replaced(thing: str, value: str) -> str:
    """The attribute a value said to replace another outright is of: a code's ("the signal for danger is changed
    to two short flashes"), a place's ("switched to the old mill"), else the thing's state."""
    if re.search(rf"\b(?:{_CODE_LIKE})$", thing, re.I):
        return "code"
    return "location" if re.match(rf"{_PLACE_WORDS}\b", value, re.I) else "state"


# What a password is said to be that is no password: "the password is wrong".
_NOT_A_PASSWORD = frozenset(
    "wrong right correct incorrect secret unknown forgotten lost changed new old different same simple easy hard "
    "short long useless no not still".split()
)


def _word_for_a_password(thing: str, value: str) -> bool:
    """Whether ``value`` is a word that a password is ("The wreckers' password is gannet."): one word, no code's
    digits needed, not one that says what the password is like."""
    words = value.split()
    return (
        QUALIFIED.split(thing, maxsplit=1)[0].casefold().split()[-1] in ("password", "watchword", "passphrase",
                                                                          "countersign")
        and len(words) == 1 and words[0].casefold() not in _NOT_A_PASSWORD and bool(content_words(value))
    )  # fmt: skip


def _ended(verb: str) -> str:
    verb = verb.casefold()
    for stem, said in (("burn", "burned"), ("smash", "smashed"), ("brok", "broken"), ("break", "broken"),
                       ("destroy", "destroyed"), ("shatter", "shattered"), ("tear", "torn up"), ("tore", "torn up"),
                       ("rip", "torn up"), ("drink", "drunk"), ("drank", "drunk"), ("eat", "eaten"), ("ate", "eaten"),
                       ("use", "used up"), ("crush", "crushed"), ("sink", "sunk"), ("sank", "sunk"),
                       ("kill", "dead"), ("melt", "melted"), ("blow", "blown up"), ("blew", "blown up")):  # fmt: skip
        if verb.startswith(stem):
            return said
    return "destroyed"


def _trim(text: str, *, keep_articles: bool = False) -> str:
    text = " ".join(text.split()).strip(" ,:\"'“”‘’")
    if not keep_articles:
        text = re.sub(rf"^{_DET}", "", text, flags=re.I)
    text = re.sub(r"\s+(?:now|again|too|then|there|here|at last|for good|instead)$", "", text, flags=re.I)
    return text
