"""What a GM reply may not do, caught as it streams (F26): speak for a player, echo the action, repeat itself,
stop mid-sentence.

Small models, and larger ones with weak chat templates, drift out of the GM's
part: they write the next player's line (``Maya: I open the door``), restate
the action they answer, say one sentence again and again until the token
limit, and end mid-word. All of it is taken out here, a sentence at a time,
before anyone sees it; a reply that speaks for a player is ended here too (the
engine stops reading the model, which stops it), rather than by stop sequences
given to the model, so that the engine knows what was taken out:

- a line that speaks for a seated player (or for "User"/"Player") ends the
  reply; at the very start, where the model opens in the transcript's
  ``Maya: ...`` form, the label goes and the rest is judged as an opening;
- a leading "GM:" or "Narrator:" of the model's own is taken off, and so is
  an opening line about the reply rather than the story ("Here's a
  continuation of the game:", "Sure! Here is the next part:");
- a sentence at the start that restates the action answered (most of its
  content words are the action's) is dropped, unless it is all the reply has;
- a sentence the reply already said, or one of the last replies said, ends
  the reply (at its very start, that sentence alone is dropped);
- a reply cut by the token limit loses its unfinished last sentence (unless
  that sentence is all it has);
- the engine's own notes copied into the reply (a correction it was given,
  "GM-only ..." headers, "(The GM answers privately.)", its bookkeeping: "End
  of turn 12 ...") end it, and at its start are dropped;
- transcript artefacts go: a lone "[" the reply opens with, a whole sentence
  in single brackets (a copied "[Maya joins the game.]"), a stray "]".

:class:`ReplyShaper` holds back at most one unfinished sentence, so streaming
goes on a sentence at a time. Private asides (``[[to Maya: ...]]``) pass
through untouched; one written in single brackets (``[To Maya: ...]``) is
made a real aside, one to a character nobody plays (``[[to Meg: ...]]``)
is taken out whole, as are doubled braces around asides (``{{[to Julian
Ashby: ...}}``), and an empty aside is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.engine.turn.answers import ECHO_MIN_WORDS, ends_a_sentence, restates
from bot.engine.turn.subjects import PlayerSubjects
from bot.memory.brief import EXAMPLE_REPLIES
from bot.memory.context import EXAMPLE_REPLY
from bot.memory.layers import HEADERS
from bot.memory.transcript import RECENT_REPLIES
from bot.words import boundaries, content_words, runs, sentences

GENERIC_SPEAKERS = ("User", "Player", "Human", "You")
OWN_NAMES = ("GM", "Game Master", "Narrator", "Assistant", "DM")
# A sentence holding this many content words in a row of one of the prompt's example replies copies it: taken out.
# Its private asides count too: Qwen2.5 1.5B, stuck for an answer, wrote an example's aside into its public reply
# ("sees a pale hand slip back under water").
EXAMPLE_RUN = 4
EXAMPLE_RUNS = frozenset(
    run
    for reply in EXAMPLE_REPLIES
    for s in sentences(re.sub(r"\[\[to [^:\]]*:\s*(.*?)\]\]", r" \1 ", reply))
    for run in runs(s, EXAMPLE_RUN)
)
# An opening line that talks about the reply, not the story: a chat model's preamble, ending in a colon.
PREAMBLE_MAX = 140  # characters: a longer opening line is the story
_PREAMBLE_START = re.compile(r"^\s*(?:sure|okay|ok|certainly|of course|here(?:'s| is| are| comes)|continu\w*)\b", re.I)
# A sentence that is the engine talking, not the story: its correction notes, its headers, its placeholders.
ENGINE_NOTE = re.compile(
    r"^\s*\(\s*(?:gm|dm|game master|narrator)\s*[:,]|"  # "(GM: keep to what ...)": a note in its own words
    r"^\W*(?:gm[ -]?note\b|note to (?:the gm|self)\b|ooc\b|correction\b|gm-only\b|private\)|"
    r"keep to what the players (?:have )?found\b|write (?:the reply|what happens next)\b|"
    r"your (?:last |next )?(?:reply|draft|turn|response) (?:only|gave|had|said|repeated|should|must|did|does|was)\b|"
    r"answer \w+ privately\b|"
    r"end of (?:the )?(?:turn|round|reply|response)\b|(?:turn|round) \d+ (?:ends|is over)\b|"
    r"lore that applies\b|from earlier in the game\b|characters know only\b|"
    r"the gm (?:answers privately|keeps that to)\b|"
    # a line of the notes, label and all: "[fact] telephone line, state: dead", "fact, now] brass key, location: ..."
    r"fact(?:, now)?\]?\s+[^,.:\n]{1,60},\s*[a-z][a-z ]{1,20}:|"
    # a fact's line without its label, a followed attribute named: "A brass key, location: in the cellar (before:
    # on the desk until turn 150) is found." (the memory test, sampling seed 7)
    r"(?:an? |the )?[^,.:\n\[\]]{1,60},\s*(?:location|holder|code|allegiance|state)\s*:|"
    # a line's label with its bracket left open: "[turn 263 Maya: I go on ...", "- [fact, now the oil is ..."
    r"(?<=\[)(?:turn \d+|fact\b))",
    re.IGNORECASE,
)
# The engine's own words to the narrator (bot/engine/secrets/reveals.py), copied into a reply wherever they stand in the
# sentence ("Maya notices something only they see; the bot tells them privately."): a note, taken out.
ENGINE_WORDS = re.compile(
    r"\bsomething only (?:they|he|she) sees?\b|\bthe bot (?:tells|told|will tell) (?:them|him|her|me|us|you)\b|"
    r"\bin public, say only\b|"
    r"\band nothing of what\b|\bgives way to \w+ and may now say\b|\bplay this out now\b|"
    r"\bshows what they find, in the story's words\b|\bthe people there speaking\b|\banswer with (?:it|that)\b|"
    r"\(before: [^)]*\buntil turn \d+|"  # a changed value's history, as the notes write it (bot.memory.facts)
    # what an NPC entering witnessed, as the notes write it (bot.memory.brief): "Wren Tally witnesses turns 203-205,
    # 212-214, ... and knows nothing else" (the memory test, sampling seed 23)
    r"\bwitness(?:es|ed)? turns? \d+|\bknows? nothing else that happened\b",
    re.IGNORECASE,
)
# The memory's brief opens with its heading (bot.memory.layers): copied before what the notes say ("The notes from
# earlier in the game say: Doctor Penhale treated the captain's fever."), the heading goes and the story stays.
BRIEF_HEADING = re.compile(rf"^(\s*){re.escape(HEADERS['brief'])}\s*", re.IGNORECASE)
_CLOSING = re.compile(r"[\"'”’)\]]*")
_LONE_CLOSE = re.compile(r"(?<!\])\](?!\])")
_WHOLLY_BRACKETED = re.compile(r"^\s*\[(?!\[)[^\[\]]*\]\s*$")
_ASIDE_TO = re.compile(r"\[\[\s*(?:to|for|private(?:ly)?(?:\s+to)?)\s+([^:\]\n]{1,40}?)\s*:", re.IGNORECASE)
_BRACES = re.compile(r"\{\{|\}\}")
_NAMED = r"[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,3}"  # a name, capitalised: "Julian Ashby", "Dr. Pike"
_EMPTY_ASIDE = re.compile(r"\[\[\s*(?:to|for)\s+[^:\]\n]{1,40}:\s*\]\]", re.IGNORECASE)
# Narration written as a player writes ("I look at the desk."): outside quotes, a sentence that opens in the first
# person and speaks to no one ("I hand you the key" is a character talking). The model wrote the player's part.
_FIRST_PERSON = re.compile(
    r"^\s*(?:(?:then|so|now|as|when|slowly|carefully)\b[^,]{0,30},\s*)?(?:I|I'm|I've|I'll|I'd)\b(?!\.\.\.|…)"
)
_QUOTE_MARKS = re.compile(r"[\"“”]")
# What a sentence quotes: each closed quotation, and one left open at its end (the line goes on in the next).
_QUOTED = re.compile(r"[\"“]([^\"“”]+)(?:[\"”]|$)")
# A quotation says an action back when this many of its content words, and this share of them, are the action's,
# one at least of what it does (see deeds): "I count the water casks, Rook," for "I help Old Marrow count the water
# casks ...", and not "Hester keeps the key to the study," for "I ask Meg Wren who keeps the key to the study."
QUOTE_ECHO_WORDS = 3
QUOTE_ECHO_SHARE = 0.8
# Where an action starts asking: what it asks a character may come back in their answer ("I keep the key to the
# study." for "I ask Meg Wren who keeps the key to the study."); the asking verb itself is the player's deed.
_ASKING_AT = re.compile(
    r"\b(?:(ask|asks|asking|question|questions|inquire|inquires|wonder|wonders)|who|whom|whose|what|where|when|"
    r"which|why|how|whether|if)\b",
    re.I,
)


def deeds(action: str) -> set[str]:
    """The content words (stemmed) of what an action does, not of what it asks: each sentence up to its asking word
    (an asking verb included), and nothing of a question ("Is there another way in?")."""
    done = []
    for sentence in sentences(action):
        if sentence.rstrip().endswith("?"):
            continue
        asking = _ASKING_AT.search(sentence)
        done.append(sentence if asking is None else sentence[: asking.end() if asking.group(1) else asking.start()])
    return set(normal_form(" ".join(done)).split())


_SCRIPT_LINE = re.compile(r"^\s*[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3}\s*:\s")
_PREAMBLE = re.compile(
    r"^\s*(?:(?:sure|okay|ok|certainly|of course)\b[^\n]{0,40}?[!.,]\s*)?"
    r"(?:here(?:'s| is| are| comes)|continu\w*)\b[^\n]{0,80}:[ \t]*\n",
    re.I,
)


def speaker_line(names: Sequence[str]) -> re.Pattern[str]:
    """A line spoken for one of ``names``: ``Maya:``, ``- Maya:``, ``**Maya**:``."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?:^|\n)[ \t]*(?:[-*>][ \t]*)?(?:\*\*)?(?:{alternatives})(?:\*\*)?[ \t]*:", re.IGNORECASE)


def spoken(sentence: str) -> str:
    """A sentence without its script form's speaker label (``Meg Wren: "I keep the key."``): the label says who
    talks, not what is said, so a character's answer sharing the question's words is not the question said again."""
    return _SCRIPT_LINE.sub("", sentence, count=1)


def normal_form(sentence: str) -> str:
    """A sentence's content words, stemmed: two sentences saying the same thing compare equal."""
    return " ".join(stem for stem, _ in content_words(sentence))


@dataclass
class Shaped:
    """What the shaper did to one reply, for the quality figures and the log."""

    speaks_for_players: bool = False
    echo: bool = False
    first_person: bool = False
    decides_for_players: bool = False
    repeats: bool = False
    cut_off: bool = False
    engine_notes: bool = False
    artefacts: bool = False
    dropped: list[str] = field(default_factory=list)


class ReplyShaper:
    """Feed it the model's pieces; it returns the text that may be shown, and says when the reply must end."""

    def __init__(
        self,
        players: Sequence[str],
        actions: Sequence[str] = (),
        recent: Sequence[str] = (),
        *,
        enabled: bool = True,
        actors: Sequence[str] = (),
    ):
        self.enabled = enabled
        self.done = False  # the reply must end here: stop reading the model
        self.shaped = Shaped()
        self._players = speaker_line([*players, *GENERIC_SPEAKERS])
        # A seated player's line run on after a sentence of the reply ("... by Silas's hand. Tom: I lean over the
        # desk ..."): the transcript's next line as much as one on a line of its own (bench secrets, the default
        # model, Hollow Manor).
        names = "|".join(re.escape(n) for n in sorted((p for p in players if p.strip()), key=len, reverse=True))
        self._run_on = re.compile(rf"[ \t]*(?:\*\*)?(?:{names})(?:\*\*)?[ \t]*:[ \t]", re.I) if names else None
        # An aside in single brackets: "[To Maya: ...]", "[to Julian Ashby: ...]" (to nobody seated: it goes nowhere).
        someone = rf"(?:{names}|{_NAMED})" if names else _NAMED
        self._single_aside = re.compile(rf"(?<!\[)\[(?!\[)(\s*(?i:to|for)\s+{someone}\s*:)")
        self._single_open = False  # such an aside is open: its "]" closes it
        self._seated = {p.casefold() for p in players if p.strip()}
        self._to_nobody = False  # an aside to a name nobody plays is open: taken out up to its "]]"
        self._next_turn = speaker_line(OWN_NAMES)  # a new "GM:" line further on: the transcript's next turn
        self._own = re.compile(rf"^\s*(?:\*\*)?(?:{'|'.join(map(re.escape, OWN_NAMES))})(?:\*\*)?\s*:\s*", re.I)
        self._actions = [set(normal_form(a).split()) for a in actions if a.strip()]
        self._name_words = set(normal_form(" ".join(players)).split())
        self._deeds = [deeds(a) for a in actions if a.strip()]
        self._verbatim = {_letters(a) for a in actions if _letters(a)}  # an action said again word for word
        self._for_players = PlayerSubjects(players, actions, actors)
        self._said = {normal_form(s) for reply in [*recent[-RECENT_REPLIES:], EXAMPLE_REPLY] for s in sentences(reply)}
        self._said -= {""}  # the prompt's example reply is never said again
        self._pending = ""
        self._started = False  # some text has been let through
        self._in_aside = False  # an aside is open: what follows is in it until its "]]" (as split_reply reads it)
        self._line_start = False  # what was let through ended a line
        self._gap = ""  # the space after the last sentence let through, given with the next one
        self._echoed: list[str] = []  # opening sentences dropped as an echo or a repeat: given back if none else
        self._quoted = False  # inside a quotation that a sentence before opened
        self._script = False  # this paragraph voices a character in the script form ("Meg Wren: ..."): "I" is theirs
        self._paragraph_start = False  # what was let through ended a paragraph (a blank line after it)

    def feed(self, piece: str) -> str:
        if not self.enabled:
            return piece
        if self.done:
            return ""
        self._pending += piece
        out = []
        while not self.done:
            if not self._started and self._own.match(self._pending):
                self._pending = self._own.sub("", self._pending, count=1)
            if not self._started and (preamble := _PREAMBLE.match(self._pending)):
                self.shaped.dropped.append(preamble.group(0).strip())
                self._pending = self._pending[preamble.end() :]
                continue
            if not self._started and _PREAMBLE_START.match(self._pending) and "\n" not in self._pending[:PREAMBLE_MAX]:
                if len(self._pending) < PREAMBLE_MAX:
                    break  # it may be a preamble: wait for the end of its line
            line = self._players.match(self._pending) if not self._started or self._line_start else None
            if line is not None and not self._started:
                # It opens in the transcript's "Name: ..." form: the label goes; what follows is judged like
                # any opening (an echo of the action is dropped, narration is kept).
                self.shaped.speaks_for_players = True
                self.shaped.dropped.append(line.group(0).strip())
                self._pending = self._pending[line.end() :].lstrip()
                continue
            speaker = (
                line
                or self._players.search(self._pending, 1)
                or self._next_turn.search(self._pending, 1)
                or (self._run_on.match(self._pending) if self._run_on and self._started else None)
            )
            if speaker is not None:
                before = self._pending[: speaker.start()]
                self.shaped.speaks_for_players = True
                self.shaped.dropped.append(self._pending[speaker.start() :].strip())
                self._pending = ""
                out.append(self._take(before, final=True).rstrip())  # the space left where asides were goes too
                self.done = True
                break
            ends = boundaries(self._pending)
            if not ends:
                break
            end, following = ends[0]
            closing = _CLOSING.match(self._pending, end)
            assert closing is not None  # it matches the empty string too
            end += len(closing.group(0))  # a closing quote or bracket ends the sentence
            sentence, gap = self._pending[:end], self._pending[end:following]
            self._pending = self._pending[following:]
            out.append(self._take(sentence, gap=gap))
            # What follows starts a line whether or not the sentence was let through: a player's line after an
            # aside taken out is still a player's line ("[[to Julian Ashby: ...]]\n\nMaya: I knock again").
            self._line_start = "\n" in gap
            self._paragraph_start = gap.count("\n") >= 2
        return "".join(out)

    @property
    def said_nothing_new(self) -> bool:
        """Once finished: all the reply had was an echo or a repeat (given back, for want of anything else)."""
        return self.done and not self._started and bool(self._echoed)

    def finish(self, *, cut_by_length: bool) -> str:
        """The rest of the reply once the model stopped; ``cut_by_length`` when it ran out of tokens."""
        if not self.enabled or self.done:
            return ""
        rest, self._pending = self._pending, ""
        self.done = True
        if not rest.strip():
            text = ""
        elif cut_by_length and not ends_a_sentence(rest) and (self._started or self._echoed):
            self.shaped.cut_off = True
            self.shaped.dropped.append(rest.strip())
            text = ""
        else:
            text = self._take(rest, final=True)
        if not self._started and self._echoed:  # a reply that only restated something is better than none
            return " ".join(self._echoed)
        return text

    def _take(self, sentence: str, *, gap: str = "", final: bool = False) -> str:
        """One sentence, after the space that came before it; nothing if it must go.

        The space after a sentence is held until the next one is let through, so a reply never ends in it.
        """
        if not sentence.strip():
            return ""
        sentence = self._asides(sentence)
        if not sentence.strip():
            if self._started and "\n" in gap:
                self._gap = gap  # a paragraph that held only asides taken out still ends its paragraph
            return ""
        inside_aside = "[[" in sentence or self._in_aside
        kept = self._without_artefacts(sentence, inside_aside)
        if kept is None:
            return ""
        sentence = kept
        self._in_aside = _aside_open_after(sentence, self._in_aside)
        normal = normal_form(sentence)
        echoed = _letters(sentence) in self._verbatim or self._restates_action(normal_form(spoken(sentence)))
        if not self._started and not inside_aside and echoed:
            self.shaped.echo = True
            return self._dropped(sentence)
        if not inside_aside and self._says_an_action_back(sentence):
            self.shaped.echo = True
            return self._dropped(sentence)
        # "Meg Wren: ...": spoken, to the end of its paragraph (its next line may go on with the speech). A paragraph
        # after it with no name is narration again: "Meg Wren: "I don't know." ...\n\nYou turn to Julian Ashby
        # again." decided what a player did (bench quality).
        self._script = bool(_SCRIPT_LINE.match(sentence)) or (self._script and not self._paragraph_start)
        quoted, self._quoted = self._quoted, (self._quoted + len(_QUOTE_MARKS.findall(sentence))) % 2 == 1
        talking = self._script or re.search(r"\byou\b", sentence, re.I)
        if not inside_aside and not quoted and _FIRST_PERSON.match(sentence) and not talking:
            # the player's part, written for them: dropped; a reply that had nothing else is asked for again
            self.shaped.first_person = True
            return self._dropped(sentence, given_back=False)
        if not inside_aside and not quoted and self._for_players.decides(sentence, to_you=not self._script):
            self.shaped.decides_for_players = True
            return self._dropped(sentence, given_back=False)
        if normal and normal in self._said and not inside_aside:
            self.shaped.repeats = True
            if self._started:  # a loop has begun: nothing after it is worth reading
                self.shaped.dropped.append(sentence.strip())
                self.done = True
                self._pending = ""
                return ""
            return self._dropped(sentence)
        if not inside_aside and runs(sentence, EXAMPLE_RUN) & EXAMPLE_RUNS:
            # the prompt's example reply, copied in part ("the cold air smells of earth and lamp oil")
            return self._dropped(sentence, given_back=False)
        if normal:
            self._said.add(normal)
        self._started = True
        self._line_start = "\n" in gap
        self._paragraph_start = gap.count("\n") >= 2
        before, self._gap = self._gap, "" if final else gap
        return before + sentence

    def _dropped(self, sentence: str, *, given_back: bool = True) -> str:
        """Leave ``sentence`` out (nothing of it is shown); a reply that began with it alone is asked for again.

        ``given_back``: an echo or a repeat, given back if nothing else came; never a player's part written for
        them nor the example reply copied, which would post what the rules exist to keep out.
        """
        self.shaped.dropped.append(sentence.strip())
        if not self._started and given_back:
            self._echoed.append(sentence)
        return ""

    def _without_artefacts(self, sentence: str, inside_aside: bool) -> str | None:
        """``sentence`` without the transcript's brackets; None where it is the engine's note or wholly bracketed
        (after a note, the rest of the reply is more of it)."""
        if not inside_aside and BRIEF_HEADING.match(sentence):
            self.shaped.engine_notes = True
            sentence = BRIEF_HEADING.sub(r"\1", sentence, count=1)
        note = ENGINE_NOTE.match(sentence) or ENGINE_WORDS.search(sentence)
        if not inside_aside and (note or _WHOLLY_BRACKETED.match(sentence)):
            if note:
                self.shaped.engine_notes = True
            else:
                self.shaped.artefacts = True
            self.shaped.dropped.append(sentence.strip())
            if self._started and self.shaped.engine_notes:  # what follows a note is more of it
                self.done = True
                self._pending = ""
            return None
        if not self._started and not inside_aside and re.match(r"\s*\[(?!\[)", sentence):
            self.shaped.artefacts = True  # "[I see a door ...": the transcript's bracket, copied
            sentence = re.sub(r"^(\s*)\[", r"\1", sentence, count=1)
        if not inside_aside and "]" in sentence.replace("]]", ""):
            self.shaped.artefacts = True
            sentence = _LONE_CLOSE.sub("", sentence)
        return sentence

    def _asides(self, sentence: str) -> str:
        """Single-bracket asides made real ones; empty asides and the doubled braces some replies wrap them in
        ("{{[to Julian Ashby: ...}}", then copied by the next replies) taken out."""
        if _BRACES.search(sentence):
            self.shaped.artefacts = True
            sentence = _BRACES.sub("", sentence)
        start = 0
        if not self._single_open and (opened := self._single_aside.search(sentence)):
            sentence = sentence[: opened.start()] + "[[" + sentence[opened.start() + 1 :]
            self._single_open = True
            self.shaped.artefacts = True
            start = opened.start() + 2
        if self._single_open and (closed := _LONE_CLOSE.search(sentence, start)):
            sentence = sentence[: closed.start()] + "]]" + sentence[closed.end() :]
            self._single_open = False
        if _EMPTY_ASIDE.search(sentence):
            self.shaped.artefacts = True
            self.shaped.dropped.append(sentence.strip())
            sentence = _EMPTY_ASIDE.sub("", sentence)
        return self._without_asides_to_nobody(sentence)

    def _without_asides_to_nobody(self, sentence: str) -> str:
        """``sentence`` without asides to a name nobody plays ("[[to Meg: ...]]" where Meg is the world's): they
        reach no one, and the default model wrote one to every character in the scene."""
        kept, at = [], 0
        while at < len(sentence):
            if self._to_nobody:
                end = sentence.find("]]", at)
                self.shaped.dropped.append(sentence[at : end + 2 if end >= 0 else len(sentence)].strip())
                if end < 0:
                    break
                self._to_nobody, at = False, end + 2
                continue
            opened = _ASIDE_TO.search(sentence, at)
            if opened is None or " ".join(opened.group(1).split()).casefold() in self._seated:
                kept.append(sentence[at:] if opened is None else sentence[at : opened.end()])
                at = len(sentence) if opened is None else opened.end()
                continue
            kept.append(sentence[at : opened.start()])
            self.shaped.artefacts = self._to_nobody = True
            at = opened.start()
        return "".join(kept)

    def _says_an_action_back(self, sentence: str) -> bool:
        """Whether someone in ``sentence`` says an action back: its quoted words (the players' names aside) are
        nearly all an action's, :data:`QUOTE_ECHO_WORDS` of them at least, and one of what it does (see
        :func:`deeds`). The default model answered "I help Old
        Marrow count the water casks and ask about the red wax one." with 'Old Marrow smiles down at you. "I count
        the water casks, Rook," she says with a laugh. "And I ask about the red wax one."' (bench quality, Ember
        Road): the action, in a character's mouth, and nothing of what happens."""
        quoted = " ".join(_QUOTED.findall(sentence))
        if not quoted:
            return False
        words = set(normal_form(quoted).split()) - self._name_words
        for action, done in zip(self._actions, self._deeds, strict=True):
            shared = words & action
            if len(shared) >= QUOTE_ECHO_WORDS and len(shared) >= QUOTE_ECHO_SHARE * len(words) and shared & done:
                return True
        return False

    def _restates_action(self, normal: str) -> bool:
        words = set(normal.split())
        if len(words) < ECHO_MIN_WORDS:
            return False
        return any(restates(words, action) for action in self._actions)


def _letters(text: str) -> str:
    """``text``'s words alone, lower case: a short question said again word for word ("Was the fuel for the beacon
    tampered with?", three content words, too few to be judged as restating) is an echo all the same."""
    return " ".join(re.findall(r"[\w']+", text.casefold()))


def _aside_open_after(text: str, open_now: bool) -> bool:
    """Whether an aside is open after ``text``, one being open before it: an aside runs from its "[[" to the first
    "]]", a "[[" inside it opening nothing (as :func:`bot.memory.private.split_reply` reads it)."""
    at = 0
    while True:
        mark = text.find("]]" if open_now else "[[", at)
        if mark < 0:
            return open_now
        open_now, at = not open_now, mark + 2
