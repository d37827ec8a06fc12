"""Who a reply's sentences of narration are about (F26): a seated player's character made to do, say, think or
feel what their player never wrote is the GM taking their part; what happens to them is the GM's to tell. Read by
the reply rules (:mod:`bot.engine.turn.shaping`) a sentence at a time, and by bench quality."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.words import sentences, stems, thing_stems

# What happens to a player's character, which the GM tells ("Maya notices a smell", "Tom finds the key", "Maya
# is soaked"): any other verb after a player's name decides for them, unless their action said it.
TOLD_VERBS = frozenset(
    "notices noticed sees saw hears heard finds found spots spotted smells smelt smelled catches caught gets got "
    "receives received rolls rolled is was has had can cannot could should would may might must will "
    "recognises recognizes recognised recognized learns learned senses sensed".split()
)
# What a character thinks, wants or sets out to do: the player's to say, never their action told back, whatever it
# names. The default model answered "Where was the ledger bought?" with "Maya realizes that this ledger is related
# to her father's business dealings, and she starts to question if her father is involved in smuggling." (memory
# test, sampling seed 42), let through as Maya's question told back because it named the ledger; seed 7 "Tom feels a
# thrill of excitement and admiration as he realizes that this is the mark of an important timepiece." for "What
# bird is etched in the old sailor's timepiece?".
MIND_VERBS = frozenset(
    "realizes realises realized realised decides decided wonders wondered thinks thought believes believed "
    "suspects suspected understands understood remembers remembered fears feared hopes hoped wants wanted "
    "starts started begins began questions questioned worries worried concludes concluded guesses guessed "
    "figures figured assumes assumed agrees agreed refuses refused chooses chose resolves resolved vows vowed "
    "doubts doubted trusts trusted feels felt".split()
)
# The same, said to "you": what happens to the players ("You see a shadow", "You feel a draught", "You can't").
TOLD_TO_YOU = frozenset(
    "notice see hear find spot smell catch get receive roll are were have had can cannot can't could couldn't "
    "should would may might must will won't do don't did didn't recognise recognize learn sense feel know realise "
    "realize remember need glimpse overhear discover taste understand".split()
)


_FIRST_PERSON = re.compile(r"\b(?:I|[Ww]e)\b")


class PlayerSubjects:
    """Sentences of narration whose subject is a seated player's character ("Maya reaches for the cask", "Tom and
    Maya nod"): the GM deciding what they do, say or feel, unless an action of the turn said it ("Maya forces the
    lock" for "I force the lock"), or it tells an acting player's own action on what they acted on ("Maya lifts
    the glass" for "I sniff the brandy glass"; ``actors``: the turn's acting players). What happens to them (they
    notice, see, hear, find; they are, they have) is the GM's to tell: :data:`TOLD_VERBS`.

    Narration told to "you" is told to the turn's acting players: "You decide to leave." decides for them, "You
    look at the desk" for "I look at the body" tells their action, "You see a shadow" what happens to them. A
    sentence that opens with a quotation mark is someone's line, not narration.

    A "she", "he" or "they" right after a sentence whose subject was one seated player, naming nobody else, is
    that player ("Maya looks at the glass. She goes to the window."): :meth:`decides` reads a reply's sentences
    in order."""

    def __init__(self, players: Sequence[str], actions: Sequence[str], actors: Sequence[str] = ()):
        self._names = {n.casefold() for n in players if n.strip()}
        names = "|".join(re.escape(n) for n in sorted((p for p in players if p.strip()), key=len, reverse=True))
        subjects = rf"(?:{names})(?:\s*(?:,|\band\b)\s*(?:{names}))*"  # "Maya", "Tom and Maya", "Tom, Ines and Maya"
        self._subject = (
            re.compile(rf"^\W*(?P<who>{subjects})\s+(?:[a-z]+ly\s+)?(?P<verb>[a-z][a-z'-]+)\b") if names else None
        )  # fmt: skip
        # What the players said they do: not a question's words ("Which servant carries the key to the wine
        # vault?" answered "Tom carries the brass key to the wine vault.", memory test, sampling seed 42).
        # A question of what they may do is what they do: "Can I look at the map?".
        done = [
            part for a in actions for part in sentences(a)
            if not part.rstrip(" \"'”’)").endswith("?") or _FIRST_PERSON.search(part)
        ]  # fmt: skip
        self._acted = set().union(*(stems(part) for part in done)) if done else set()
        asked = [part for a in actions for part in sentences(a) if part not in done]
        self._asked = set().union(*(stems(part) for part in asked)) - self._acted if asked else set()
        self._things = set().union(*(thing_stems(a) for a in actions)) if actions else set()
        self._actors = {a.casefold() for a in actors}
        # A line given to a seated player after it ('"It was natural causes," says Maya.'): theirs to say, unless
        # their own action said it ("I ask Meg, 'Where were you?'"), the GM telling it back.
        # The name before the tag as well: '"The tunnel is passable only at low tide," Tom says.' (the default
        # model's answer to Tom's question about the beacon's fuel, in the memory test) gave Tom a line he never wrote.
        self._tagged = (
            re.compile(
                rf"[\"”’']\s*(?:(?:{_SPEECH_TAGS})\s+(?P<who>{names})\b|(?P<named>{names})\s+(?:{_SPEECH_TAGS})\b)",
                re.I,
            )
            if names
            else None
        )
        self._spoke = any(_SPEAKING.search(a) for a in actions)
        self._last: str | None = None  # the one seated player the last sentence was about, naming nobody else

    def gives_a_line(self, sentence: str) -> bool:
        """Whether ``sentence`` gives a seated player a line after its quote ('"No," says Maya.', or '"No," she
        says.' after a sentence about Maya) that their own action did not say."""
        tagged = self._tagged.search(sentence) if self._tagged else None
        who = (tagged.group("who") or tagged.group("named")).casefold() if tagged is not None else None
        if who is None and self._last is not None and _PRONOUN_LINE.search(sentence):
            who = self._last
        return who is not None and not (self._spoke and who in self._actors)

    def decides(self, sentence: str, *, to_you: bool = True) -> bool:
        """``to_you``: whether a sentence told to "you" is narration (not in a reply that voices characters in the
        script form, "Meg Wren: You killed him.")."""
        if sentence.lstrip().startswith("["):
            return False  # "[Maya joins the game.]": the transcript's line, copied (an artefact, not the story)
        last, self._last = self._last, None
        if _QUOTE_OPENS.match(sentence):
            self._last = last  # a line said leaves the narration's subject as it was
        if self.gives_a_line(sentence):
            return True
        found = self._subject.match(sentence) if self._subject else None
        if found is not None:
            who = found.group("who").casefold()
            self._last = who if who in self._names and not self._names_another(sentence, who) else None
        elif last is not None and (pronoun := _PRONOUN.match(sentence)) is not None:
            found, self._last = pronoun, last
        if found is None and to_you:
            found = _TO_YOU.match(sentence)
        if found is None:
            return False
        verb = found.group("verb").casefold()
        if verb in TOLD_VERBS or verb in TOLD_TO_YOU or verb in ("and", "or", "but", "of", "all", "both"):
            return False
        said = stems(verb)  # "forces" is "forc", "force" is "force": one is the other's start
        if any(v[:4] == a[:4] and (v.startswith(a) or a.startswith(v)) for v in said for a in self._acted):
            return False
        if any(v[:4] == a[:4] and (v.startswith(a) or a.startswith(v)) for v in said for a in self._asked):
            return True  # a player made the answer to a question: "Tom carries the brass key" for "Who carries it?"
        if found.group("who").casefold() == "you":
            who = set(self._actors)
        elif found.re is _PRONOUN:
            who = {last} if last is not None else set()
        else:
            who = {w.casefold() for w in re.split(r"\s*(?:,|\band\b)\s*", found.group("who")) if w.strip()}
        if who and who <= self._actors and verb not in MIND_VERBS:
            # The thing their action named: their action, told. A name the action said is not its thing: "Who
            # killed Silas Wren?" answered "Maya leans over the desk and smells the brandy glass by Silas's hand."
            # Nor is a word that only says which, or whose: "What bird is etched in the old sailor's timepiece?"
            # answered "Tom looks up at the old chart." (the memory test, sampling seed 23).
            rest = stems(re.sub(r"\b[A-Z][\w'’-]*", " ", sentence[found.end() :])) - stems(" ".join(self._names))
            return not rest & self._things
        return True

    @staticmethod
    def _names_another(sentence: str, who: str) -> bool:
        """Whether ``sentence`` names someone besides ``who`` (a capitalised word past its first, not a
        possessive): then a "she" after it may be either."""
        words = re.findall(r"\b([A-Z][a-z]+)\b(?!['’]s)", sentence)[1:]
        return any(w.casefold() != who for w in words)


_SPEECH_TAGS = (
    "says|said|asks|asked|replies|replied|answers|answered|whispers|whispered|shouts|shouted|mutters|muttered|"
    "adds|added|exclaims|exclaimed|admits|admitted|insists|insisted|cries|cried|calls|called|continues|continued"
)
# A sentence of narration whose subject is a pronoun, and a line tagged with one ('"I can't," she says'): the
# default model's "Maya looks down at the brandy glass. ... She goes to the window and locks it." (make play).
_PRONOUN = re.compile(r"^\W*(?P<who>She|He|They)\s+(?:[a-z]+ly\s+)?(?P<verb>[a-z][a-z'-]+)\b")
_PRONOUN_LINE = re.compile(rf"[\"”’']\s*(?:she|he|they)\s+(?:{_SPEECH_TAGS})\b", re.I)
_QUOTE_OPENS = re.compile(r"^\s*[\"“‘']")
_SPEAKING = re.compile(r"\b(?:ask|say|tell|shout|whisper|call|answer|reply|cry|add|insist)\w*\b|[\"“]", re.I)
# Narration told to the players, at a sentence's very start (no quotation mark before it): "You decide to leave."
_TO_YOU = re.compile(r"^\s*(?:\*+\s*)?(?P<who>You)\s+(?:[a-z]+ly\s+)?(?P<verb>[a-z][a-z'-]+)\b")
