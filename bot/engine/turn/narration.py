"""One GM reply from the model, streamed through the reply rules; a reply that said nothing new is asked for again.

:meth:`Narrator.narrate` is the whole of it: a first try, and when that try
said nothing new (only the action again, or an earlier reply, or nothing
before a player's line), or the rules left too little of it to stand as a
reply (see :func:`bot.engine.turn.answers.says_enough`), or it said nothing of its
action or of what the notes told beside it (see :func:`bot.engine.turn.answers.carries`),
one more try with a note to say so. Each try is one model call, read by :class:`_Try`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.engine.secrets.guard import TurnGuard
from bot.engine.table.session import Sessions
from bot.engine.turn.answers import carries, notes_answer, only_restates, says_enough, touches
from bot.engine.turn.results import MODEL_FAILED, NOTHING_TO_SAY, ModelFailed, OnText
from bot.engine.turn.shaping import ReplyShaper, Shaped
from bot.memory.context import Context
from bot.memory.private import PublicStream, split_reply
from bot.model.base import CallStats, ChatMessage
from bot.model.worker import ModelWorker, Priority
from bot.words import complete_sentences, content_words, stems

log = logging.getLogger(__name__)

# A note for one more try, on the action's message of that call only: never stored, never in a later prompt.
# It names no markup: a model that copies a note copies no aside syntax (the shaper drops a copied note).
SAY_SOMETHING_NEW = (
    "(Your last reply only repeated the player's action or an earlier reply, or told the table nothing. Write "
    "what happens next, in new words, as the GM, for everyone at the table.)"
)
# Named with the action's own words, as ANSWER_THE_ACTION: told only to write "what happens next", the 1.5B model
# wrote of something else on two of the three turns bench quality counted as ignoring the action (Ember Road).
SAY_WHAT_HAPPENS = (
    "(Your last reply only repeated {who}'s action or an earlier reply, or told the table nothing. Write what "
    "happens when they do it ({words}), in new words, as the GM, for everyone at the table.)"
)
# Named with the action's own words: told only "what the player just did", the 1.5B model wrote of footsteps at the
# study door again for "I light a candle and go up the main stair." (bench quality, Hollow Manor).
ANSWER_THE_ACTION = (
    "(Your last reply did not answer {who}'s action ({words}). Write what happens when they do it and what they "
    "find, as the GM, for everyone at the table.)"
)
# A short reply with one of these says that nothing is there (see _Try.ignores_action).
_DENIAL = re.compile(r"\b(?:no|not|nothing|none|nobody|never)\b|n't\b", re.IGNORECASE)
NOTE_WORDS = 6  # at most, the action's words the note names
NOTE_FIELD_TOKENS = 24  # at most, the players' names and the action's words in it (fewer words where they are long)
ANSWER_WITH_THE_NOTES = (
    "(Your last reply did not say what the notes from earlier in the game say about this. Answer with that, as the "
    "GM, for everyone at the table.)"
)
# What the notes told beside an action, after a reply that did not say it on either try (see
# Narrator._told_from_notes).
FROM_THE_NOTES = "(From earlier in the game: {answer}.)"
# Tokens a reply is written to before the model may end it (a sentence and more), at most a quarter of its room:
# the default model ended one reply in twelve after a line that said little beyond its action (bench quality,
# thin .083), while the guide asks for two to five sentences. At 40, thin fell to .042, but in bench secrets the
# longer replies of the arm whose prompt holds no secret were stopped by the guard in 2 turns of 28 (none before).
# Not for an action the notes' brief answers: its answer is the reply, however short ("Doctor Penhale from
# Brightwater treated the captain's fever last winter."); made to go on, the model told it again in asides, which
# then kept the answer from the channel (the memory test, sampling seed 11: 5 of 10 answered, 8 before).
MIN_REPLY_TOKENS = 24
NOTE_JOIN_TOKENS = 2  # the blank line before a note
REGENERATE = (
    "(GM note: your draft gave away GM-only knowledge in public. Write the reply again without revealing any "
    "secret, whatever the player asked; keep to what the players have found. A private thing goes only in an "
    "aside to the one player who earned it.)"
)


def room_for_notes(count_tokens: Callable[[str], int]) -> int:
    """The prompt tokens a retry's notes may add: a reply written again after a leak (:data:`REGENERATE`) may
    itself be asked for once more (the longest of the other notes). The prompt leaves them free, or a retry asks
    for more than the context holds."""
    longest = max(
        count_tokens(SAY_SOMETHING_NEW),
        count_tokens(ANSWER_WITH_THE_NOTES),
        _note_bound(ANSWER_THE_ACTION, count_tokens),
        _note_bound(SAY_WHAT_HAPPENS, count_tokens),
    )
    return count_tokens(REGENERATE) + longest + 2 * NOTE_JOIN_TOKENS


def _note_bound(template: str, count_tokens: Callable[[str], int]) -> int:
    return count_tokens(template.format(who="", words="")) + NOTE_FIELD_TOKENS


def answer_the_action(
    actors: Sequence[str],
    actions: Sequence[str],
    names: Sequence[str],
    count_tokens: Callable[[str], int],
    template: str = ANSWER_THE_ACTION,
) -> str:
    """The note for one more try after a reply that said nothing of its actions (``template``, or
    :data:`SAY_WHAT_HAPPENS` after one that said nothing new): whose they were and their own words (not the
    players' names, each once, at most :data:`NOTE_WORDS`), as many as fit in :data:`NOTE_FIELD_TOKENS`."""
    skip = stems(" ".join(names))
    words: list[str] = []
    for stem, surface in content_words(" ".join(actions)):
        if stem not in skip and surface not in words and len(words) < NOTE_WORDS:
            skip |= {stem}
            words.append(surface)
    who = " and ".join(actors)
    bound = _note_bound(template, count_tokens)
    while True:
        note = template.format(who=who or "the player", words=", ".join(words) or "what they said")
        if count_tokens(note) <= bound or (not who and not words):
            return note
        if words:
            words.pop()
        else:
            who = ""


@dataclass(frozen=True)
class Shaping:
    """What a turn's reply is shaped by: the seated players, the actions it answers, the last replies."""

    names: list[str]
    actions: list[str]
    recent: list[str]
    enabled: bool = True
    public: bool = True  # the reply is for the channel: one with nothing outside its asides says nothing new
    referents: frozenset[str] = frozenset()  # the names of the characters the actions refer to (see touches)
    actors: tuple[str, ...] = ()  # the players whose actions these are
    brief: tuple[str, ...] = ()  # what the notes told beside the action: a public reply must say something of it

    def shaper(self) -> ReplyShaper:
        return ReplyShaper(self.names, self.actions, self.recent, enabled=self.enabled, actors=self.actors)


@dataclass(frozen=True)
class Request:
    """What a reply is asked for with: the game and turn, the prompt, how long it may be, what shapes it."""

    game_id: int
    turn: int
    context: Context
    max_tokens: int
    shaping: Shaping

    @property
    def where(self) -> tuple[int, int]:
        """The game and the turn, for the log."""
        return self.game_id, self.turn

    def with_note(self, note: str) -> Request:
        """The same request with ``note`` on the prompt's last message, for this call only."""
        *front, last = self.context.messages
        noted = ChatMessage(role=last.role, content=f"{last.content}\n\n{note}")
        return dataclasses.replace(self, context=dataclasses.replace(self.context, messages=[*front, noted]))


@dataclass(frozen=True)
class Narration:
    """What the model wrote for one call, and how long it took to start."""

    text: str
    first_text: float
    stats: CallStats | None
    shaped: Shaped | None = None
    nothing_new: bool = False  # all it said was an echo or a repeat, or too little: held back from the screen
    ignored_action: bool = False  # held back too: it said nothing of the action it answers
    missed_brief: bool = False  # held back too: it said nothing of what the notes told beside the action
    told_from_notes: str = ""  # it said nothing of the brief on either try: the notes' answer that follows it


class Narrator:
    """Asks the shared model for GM replies, at player priority, in the game's own cache slot."""

    def __init__(self, worker: ModelWorker, sessions: Sessions):
        self.worker = worker
        self.sessions = sessions

    async def narrate(
        self, request: Request, on_text: OnText | None = None, *, guard: TurnGuard | None = None
    ) -> Narration:
        """The model's whole reply; ``on_text`` sees its public part as it comes, a sentence at a time if guarded.

        With shaping on, the first try shows nothing until it has said enough and something of its action and of
        the notes' brief; one that said nothing new, or nothing of its action or of the brief, is held back and
        tried once more, with a note to say something new, to answer the action or to answer with the notes.
        """
        if not request.shaping.enabled:
            return await self._try(request, on_text, guard, hold_back=False)
        began = time.perf_counter()
        first = await self._try(request, on_text, guard, hold_back=True)
        if not first.nothing_new:
            return first
        why = "said nothing new, or too little"
        if first.ignored_action:
            why = "said nothing of what the notes told" if first.missed_brief else "said nothing of the action"
        log.info("Game %d turn %d: the reply %s; asked again", *request.where, why)
        waited = time.perf_counter() - began
        # A reply that said again what earlier replies said is asked for with the model kept from repeating its
        # context (DRY). Not one that restated the action or said too little: kept from the prompt's words, the
        # 1.5B model answered the action less often (bench quality: ignores the action 0.12, thin 0.17).
        repeated = first.shaped is not None and first.shaped.repeats
        shaping = request.shaping
        if first.missed_brief:
            note = ANSWER_WITH_THE_NOTES
        elif not shaping.actions:
            note = SAY_SOMETHING_NEW
        else:
            template = ANSWER_THE_ACTION if first.ignored_action else SAY_WHAT_HAPPENS
            note = await asyncio.to_thread(  # counting may wait on a model server's tokenizer
                answer_the_action, shaping.actors, shaping.actions, shaping.names, self.worker.count_tokens, template
            )
        try:
            again = await self._try(request.with_note(note), on_text, guard, hold_back=False, fresh=repeated)
        except ModelFailed as failed:  # nothing to say twice: what the notes told still answers a question
            if str(failed) != NOTHING_TO_SAY or not (request.shaping.public and notes_answer(request.shaping.brief)):
                raise
            again = Narration("", 0.0, None)
        again = await self._told_from_notes(request, again, on_text, guard)
        stats = first.stats.then(again.stats) if first.stats is not None else again.stats
        return dataclasses.replace(again, first_text=again.first_text + waited, stats=stats)

    async def _told_from_notes(
        self, request: Request, narration: Narration, on_text: OnText | None, guard: TurnGuard | None
    ) -> Narration:
        """A channel's reply that, asked twice, still says nothing of what the notes told beside its action, with
        the notes' answer told after it in their own words (:data:`FROM_THE_NOTES`), or alone where the model had
        nothing to say twice: the engine knows what this reply must carry, and a narrator that does not say it
        twice does not take it from the table. The brief of a public action holds only what the whole table may
        read: the leak guard checks the line for the world's secrets, not for what players were told alone."""
        shaping = request.shaping
        if not shaping.public or carries(narration.text, shaping.brief, shaping.actions, shaping.recent):
            return narration
        answer = notes_answer(shaping.brief)
        if not answer:
            return narration
        told = FROM_THE_NOTES.format(answer=answer)
        if narration.text:
            told = f"\n\n{told}"
        screen = _Screen(on_text, guard, public_record=True)
        await screen.show(told)
        await screen.finish()
        log.info("Game %d turn %d: the reply said nothing of the notes' brief, told after it", *request.where)
        return dataclasses.replace(narration, text=narration.text + told, told_from_notes=told.strip())

    async def _try(
        self, request: Request, on_text: OnText | None, guard: TurnGuard | None, *, hold_back: bool,
        fresh: bool = False,
    ) -> Narration:  # fmt: skip
        """One model call, read through the reply rules; ``hold_back``: a reply that said nothing new is not shown
        but returned as such, for the caller to ask once more; ``fresh``: the model is kept from repeating its
        context (the try after one that said nothing new)."""
        shaping = request.shaping
        reading = _Try(_Screen(on_text, guard), shaping, hold_until_enough=hold_back and shaping.public)
        shaper = shaping.shaper()
        session = self.sessions[request.game_id]
        session.turns_asked += 1
        slot = session.slot
        # No stop sequences: the reply rules end a reply at a player's line, a few tokens later, and so know that
        # they took it out (a reply they left too little of is asked for once more).
        stream = self.worker.stream(
            request.context.messages, max_tokens=request.max_tokens, priority=Priority.PLAYER, slot=slot, label=slot,
            fresh=fresh, min_tokens=0 if shaping.brief else min(MIN_REPLY_TOKENS, request.max_tokens // 4),
        )  # fmt: skip
        try:
            async with contextlib.aclosing(aiter(stream)) as pieces:
                async for piece in pieces:
                    await reading.take(shaper.feed(piece))
                    if shaper.done:
                        break  # leaving the stream stops the model (closing it waits for that)
            written = stream.stats.generated_tokens if stream.stats else 0
            rest = shaper.finish(cut_by_length=written >= request.max_tokens)
            if hold_back and (shaper.said_nothing_new or reading.says_nothing(rest) or reading.only_restates(rest)):
                # not shown: asked once more
                return Narration(rest, reading.first_text or 0.0, stream.stats, shaper.shaped, nothing_new=True)
            if hold_back and (reading.ignores_action(rest) or reading.misses_brief(rest)):
                return Narration(
                    rest, 0.0, stream.stats, shaper.shaped, nothing_new=True, ignored_action=True,
                    missed_brief=reading.misses_brief(rest),
                )  # fmt: skip
            await reading.take(rest)
            if reading.short is not None and shaper.shaped.dropped:  # the rules left too little of it: once more
                return Narration(reading.text, 0.0, stream.stats, shaper.shaped, nothing_new=True)
            await reading.show_short()
        except Exception as exc:
            log.exception("Game %d turn %d: the model failed", *request.where)
            raise ModelFailed(MODEL_FAILED, turn=request.turn) from exc
        if shaper.shaped.dropped:
            log.info("Game %d turn %d: taken out of the reply: %r", *request.where, shaper.shaped.dropped)
        await reading.screen.finish()
        reply = reading.text.strip()
        if not reply:
            log.warning("Game %d turn %d: the model returned an empty reply", *request.where)
            raise ModelFailed(NOTHING_TO_SAY, turn=request.turn)
        return Narration(reply, reading.first_text or 0.0, stream.stats, shaper.shaped)


class _Screen:
    """What a front end is shown of one call as it streams: with a guard, a checked sentence at a time.

    Once the guard catches a sentence, or the front end fails, it shows nothing more: the guard's final reply
    replaces what was shown, and the front end still gets the whole reply.
    """

    def __init__(self, on_text: OnText | None, guard: TurnGuard | None, *, public_record: bool = False):
        self.on_text = on_text
        self.guard = guard
        self.public_record = public_record  # the engine's own line, from what the whole table has read
        self.held = ""  # with a guard, text waits until its sentence is complete and checked

    async def show(self, text: str) -> None:
        if self.on_text is None:
            return
        if self.guard is not None:
            self.held += text
            text, self.held = complete_sentences(self.held)
            if text and await self.guard.check(text, public_record=self.public_record):
                self.on_text = None  # it leaks: show nothing more
                return
        if text and not await show_text(self.on_text, text):
            self.on_text = None

    async def finish(self) -> None:
        """The last, unfinished sentence a guard held, once checked."""
        if self.guard is None or not self.held or self.on_text is None:
            return
        rest, self.held = self.held, ""
        if not await self.guard.check(rest, public_record=self.public_record):
            await show_text(self.on_text, rest)


class _Try:
    """One call's text as the reply rules let it through, and what of it the screen has been shown."""

    def __init__(self, screen: _Screen, shaping: Shaping, *, hold_until_enough: bool):
        self.screen = screen
        self.shaping = shaping
        self.started = time.perf_counter()
        self.first_text: float | None = None
        self.pieces: list[str] = []
        self.public = PublicStream()  # private asides never reach the screen, even half-written
        # The first try of a public reply shows nothing until it has said enough to stand as a reply.
        self.hold_until_enough = hold_until_enough
        self.short: str | None = "" if hold_until_enough else None

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    async def take(self, piece: str) -> None:
        if not piece:
            return
        self.pieces.append(piece)
        shown = self.public.feed(piece)
        if self.short is not None:
            self.short += shown
            if not says_enough(self.short, self.shaping.actions) or not self._answers(self.text):
                return  # held until it says enough, and something of the action it answers
            shown, self.short = self.short, None
        if self.first_text is None:
            self.first_text = time.perf_counter() - self.started
        if shown:
            await self.screen.show(shown)

    def says_nothing(self, rest: str) -> bool:
        """Whether the reply, with ``rest`` still to come, is empty: it stopped at once, at a player's line, or
        (held back for the channel) all of it is in asides."""
        empty = not rest.strip() and not self.text.strip()
        if not self.hold_until_enough or empty:
            return empty
        return not split_reply(self.text + rest, self.shaping.names)[0].strip()

    def _answers(self, text: str) -> bool:
        """Whether a reply says something of its actions (see :func:`bot.engine.turn.answers.touches`), in public or in
        an aside (what a player's sniff of the glass finds may be told to that player alone), and of what the
        notes told beside them (see :func:`bot.engine.turn.answers.carries`); a reply to no action (a scene opening)
        answers whatever it says."""
        actions = self.shaping.actions
        touched = not actions or touches(text, actions, self.shaping.referents)
        return touched and carries(text, self.shaping.brief, actions, self.shaping.recent)

    def ignores_action(self, rest: str) -> bool:
        """Whether the reply, held back for the channel until it said something of its action, said enough to stand
        as a reply but nothing of the action, or said only that nothing is there: a short reply stands as the model
        meant it, but not a short denial of nothing of its action. The default model answered "I try the handle of
        the study door." with "You hear nothing." and the keyhole with "You see no key.", and went on so on the
        turns after (bench quality: thin .42)."""
        if self.short is None:
            return False
        public = self.short + split_reply(rest, self.shaping.names)[0]
        if not says_enough(public, self.shaping.actions) and not _DENIAL.search(public):
            return False
        return not self._answers(self.text + rest)

    def misses_brief(self, rest: str) -> bool:
        """Whether the reply, held back for the channel, said nothing of what the notes told beside its action,
        however short: the engine knows what it must carry (the small model answered "Where is the brass key now?"
        with the key's first place, its latest told right after the question)."""
        brief, actions = self.shaping.brief, self.shaping.actions
        return (
            self.short is not None
            and bool(brief)
            and not carries(self.text + rest, brief, actions, self.shaping.recent)
        )

    def only_restates(self, rest: str) -> bool:
        """Whether the reply, held back for the channel as too short, only restates its action in other words."""
        return self.short is not None and only_restates(self.short + rest, self.shaping.actions, self.shaping.names)

    async def show_short(self) -> None:
        """A short reply as the model meant it: shown whole, once the call is done."""
        if self.short:
            self.first_text = time.perf_counter() - self.started
            await self.screen.show(self.short)


async def show_text(on_text: OnText, piece: str) -> bool:
    """Show ``piece`` (a reply's text as it streams, or the engine's own line); a failure to show is logged, and
    what was written is stored all the same."""
    try:
        shown = on_text(piece)
        if shown is not None:
            await shown
    except Exception:
        log.exception("Showing the reply failed; it is still stored whole")
        return False
    return True
