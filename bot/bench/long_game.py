"""A long game with clues planted early, for recall tests and ``bench recall``: 300 turns, lossy summaries,
distractors.

Ten clues are told by the GM in the first 40 turns. The summaries are lossy (they keep none of them), and
later turns reuse the clues' words in other senses (the groom in a wedding portrait, the key of a song), so
that a question asked in the clue's own words finds distractors too, and one asked in other words finds no
word of it. At turn 300 players ask about each clue in their own words.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

from bot.engine import Engine, ModelFailed
from bot.model.base import ChatMessage
from bot.model.scripted import ScriptedModel, found_nothing
from bot.worlds import World

# A world of its own, with nothing secret: the clues are the GM's, and nothing the guard would stop.
LONG_GAME_WORLD = World.model_validate(
    {
        "id": "gull-rock", "title": "The Lighthouse at Gull Rock", "pitch": "A keeper is missing.",
        "style": "Short and plain.", "rules": ["Keep replies short."],
        "setting": "A rock in a cold sea: a lighthouse, a keeper's cottage, a manor on the headland.",
        "chapters": [{"id": "search", "title": "The Search", "goal": "Find the keeper.",
                      "beats": [{"id": "found", "description": "Someone finds the keeper."}]}],
        "npcs": [{"id": "wren", "name": "Wren Tally", "description": "The boatman, nervous and chatty."}],
        "lore": [{"id": "gull-rock", "keys": ["Gull Rock"], "content": "Gull Rock is a granite stack off the coast."}],
        "opening": "The supply boat bumps against the landing stage. What do you do?",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Clue:
    turn: int
    text: str  # what the GM said
    question: str  # how a player asks about it 260 turns later, in other words


CLUES = (
    Clue(3, "Pip the groom swears he saw a rider leave the stables at midnight.",
         "Did the stable lad notice anyone riding off during the night?"),
    Clue(6, "Gorse grows thick along the cliff path, and a torn scrap of blue wool hangs on its thorns.",
         "What was snagged on the yellow flowering bushes by the clifftop?"),
    Clue(9, "Mrs Ashdown wears the cellar key on a chain around her neck, day and night.",
         "Which servant carries the key to the wine vault?"),
    Clue(12, "A silver heron is engraved inside the lid of the captain's pocket watch.",
         "What bird is etched in the old sailor's timepiece?"),
    Clue(16, "The ledger was bought from a merchant in Saltmere at the autumn fair.",
         "Where did the account book come from originally?"),
    Clue(20, "The lamp oil has been watered down; someone diluted it so the light would fail.",
         "Was the fuel for the beacon tampered with?"),
    Clue(24, "The lifeboat's oars were sawn halfway through, near the blades.",
         "Had anybody damaged the rowing paddles of the rescue vessel?"),
    Clue(28, "Doctor Penhale from Brightwater treated the captain's fever last winter.",
         "Which physician looked after the skipper when he was sick?"),
    Clue(32, "The old chart marks a smugglers' tunnel under the headland, passable only at low tide.",
         "Is there a hidden passage below the promontory?"),
    Clue(36, "Wren burned a letter in the kitchen stove before dawn; only the seal survived.",
         "Did the boatman destroy any correspondence in the fire?"),
)  # fmt: skip

# Later turns use the clues' words in other senses: a question in the clue's own words meets these too.
DISTRACTORS = (
    "A painting of a bride and groom hangs crooked in the hall, its varnish cracked.",
    "The stables' weathervane spins in the wind; its rider figure lost an arm years ago.",
    "The fiddler plays a tune in a minor key, and the cellar echoes it back.",
    "A chain of paper flowers is strung along the mantel for the midsummer feast.",
    "Someone has left a merchant's almanac open at the page for the autumn tides.",
    "The lamp in the kitchen gutters; its wick needs trimming, nothing more.",
    "A child's toy boat with painted oars sits on the windowsill.",
    "The parish notice asks for a doctor's signature on the new well.",
    "A chart of the stars is pinned above the bed, the north star circled.",
    "A letter from the bank confirms the cottage rent is paid until spring.",
)

# What the GM says on every other turn: the weather and the house, none of the clues' words or meanings.
FILLER = (
    "The wind rattles the shutters.", "Gulls wheel and cry above the rocks.", "Rain drums on the slate roof.",
    "The stairs creak under your weight.", "A draught stirs the curtains.", "The clock in the hall ticks on.",
    "Waves break white against the rocks below.", "The fire in the grate has burned low.",
    "Somewhere a door bangs in the wind.", "The floorboards are worn smooth by years of feet.",
    "Salt has crusted on the window glass.", "The hallway smells of damp wool and woodsmoke.",
    "Moss grows between the stones of the yard.", "A cat watches you from the top of the wall.",
    "The sky is the colour of pewter.", "Fog rolls in from the sea and thins again.",
    "Your breath mists in the cold air.", "The rope railing is slick with spray.",
    "Nets hang drying on the fence.", "A bell tolls faintly across the water.",
    "The kettle on the hob has gone cold.", "Dust lies thick on the picture frames.",
    "The shadows lengthen as the afternoon wears on.", "A shutter swings loose and knocks against the wall.",
    "The tide is turning; the beach narrows.", "Crows argue on the ridge of the barn.",
    "A candle gutters in a jar on the sill.", "The path is muddy and rutted.",
    "Your boots are soaked through.", "Far off, a ship's horn sounds once.",
)  # fmt: skip

# The key is moved by a character of the world: a sentence in which the GM decides what a seated player does
# ("Tom carried the key ...") is taken out of its reply (bot.engine.turn.shaping), and the move never reaches the
# memory.
LOCATION_EARLY = (5, "The brass key lies on the desk in the study, beside a dry inkwell.")
LOCATION_LATE = (150, "Wren Tally carried the brass key down to the cellar and left it on a barrel there.")
LOCATION_QUESTION = "Where is the little metal key kept these days?"


# Topical filler: the same people, places and objects as the clues, none of their facts. In a game whose every
# turn talks about the stables, the cellar or the captain's watch, a question finds its clue's turn only by what
# the clue says, not by what it is about (the topical game, and the GM's answers from memory).
TOPICAL_FILLER = (
    "Pip the groom is mucking out the stables, whistling off key.", "A horse stamps in its stall in the stables.",
    "The stable yard is churned to mud by hooves.", "The cliff path is steep, and the gorse scratches at your legs.",
    "Gorse rattles in the wind along the clifftop.", "Mrs Ashdown bustles past with a tray of tea.",
    "The cellar door is heavy oak, swollen with damp.", "Mrs Ashdown complains about the price of candles.",
    "The captain checks his pocket watch and frowns at the hour.", "The captain's watch ticks loudly in the quiet.",
    "The ledger on the desk is full of cramped figures.", "Saltmere's fishing boats are out past the point.",
    "The lamp room smells of oil and brass polish.", "The beacon's great lens is smeared with salt.",
    "The lifeboat sits in its cradle under a tarpaulin.", "Gulls perch along the lifeboat's gunwale.",
    "Doctor Penhale's gig rattles along the coast road toward Brightwater.", "The captain coughs into his sleeve.",
    "An old chart of the coast hangs framed in the hall.", "The headland is black against the sky.",
    "Wren Tally mends a net by the kitchen stove.", "Wren talks about the weather and the price of fish.",
    "The kitchen stove ticks as it cools.", "A brass lamp hangs from a hook in the cellar stair.",
)  # fmt: skip


def _filler(rng: random.Random, sentences: int) -> str:
    return " ".join(rng.sample(FILLER, sentences))


def topical_reply(turn: int, rng: random.Random) -> str:
    """A GM turn of the topical game: one or two short sentences, as a table's quick turns are; a planted turn
    says its clue after one sentence on the same subjects."""
    planted = {clue.turn: clue.text for clue in CLUES} | dict([LOCATION_EARLY, LOCATION_LATE])
    if turn in planted:
        return f"{rng.choice(TOPICAL_FILLER)} {planted[turn]}"
    return " ".join(rng.sample(TOPICAL_FILLER + FILLER[:6], rng.randint(1, 2)))


@dataclass(frozen=True)
class Question:
    """Something a player asks or does late in the game, whose answer the GM was told early."""

    kind: str  # "same words", "in part", "other words", "changed later", "pinned"
    player: str
    text: str
    answers: tuple[str, ...]  # a reply with any of these words says the answer
    evidence: tuple[str, ...]  # texts that carry it: one in the GM's prompt, memory delivered it


PIN = "The chapel candles are laced with arsenic: their smoke smells of bitter almonds."
PIN_TURN = 10
QUESTIONS = (
    Question("same words", "maya", "What did Pip the groom swear he saw at midnight?", ("rider", "riding"),
             (CLUES[0].text,)),
    Question("in part", "tom", "I check the thorns along the cliff path. Is anything caught on them?",
             ("wool", "scrap"), (CLUES[1].text,)),
    Question("other words", "maya", "Which servant carries the key to the wine vault?", ("Ashdown",),
             (CLUES[2].text,)),
    Question("other words", "tom", "What bird is etched in the old sailor's timepiece?", ("heron",),
             (CLUES[3].text,)),
    Question("in part", "maya", "Where was the ledger bought?", ("Saltmere",), (CLUES[4].text,)),
    Question("other words", "tom", "Was the fuel for the beacon tampered with?", ("water", "diluted", "watered"),
             (CLUES[5].text,)),
    Question("same words", "maya", "I look at the lifeboat's oars. What is wrong with them?", ("sawn", "sawed", "cut"),
             (CLUES[6].text,)),
    Question("other words", "tom", "Which physician looked after the skipper when he was sick?", ("Penhale",),
             (CLUES[7].text,)),
    Question("changed later", "maya", "Where is the brass key now?", ("cellar", "barrel"),
             (LOCATION_LATE[1], "brass key, location: in the cellar")),
    Question("pinned", "maya", "I lean close and sniff the chapel candles.", ("almond", "almonds", "arsenic",
             "poison", "poisoned"), (PIN,)),
)  # fmt: skip


def gm_reply(turn: int, rng: random.Random) -> str:
    planted = {clue.turn: clue.text for clue in CLUES} | dict([LOCATION_EARLY, LOCATION_LATE])
    if turn in planted:
        return f"{_filler(rng, 2)} {planted[turn]} {_filler(rng, 2)}"
    if turn > 60 and turn % 23 == 0:
        return f"{_filler(rng, 2)} {DISTRACTORS[(turn // 23) % len(DISTRACTORS)]} {_filler(rng, 2)}"
    return _filler(rng, rng.randint(5, 9))


def background(messages: list[ChatMessage]) -> str:
    """The background jobs: lossy summaries, facts recorded only for the key's whereabouts (perfectly)."""
    system, user = messages[0].content, messages[-1].content
    if system.startswith("You record the facts"):
        facts = []
        if "brass key lies on the desk" in user:
            facts.append({"kind": "item", "subject": "brass key", "attribute": "location", "value": "on the desk"})
        if "brass key down to the cellar" in user:
            facts.append({"kind": "item", "subject": "brass key", "attribute": "location", "value": "in the cellar"})
        return json.dumps({"facts": facts})
    if (quiet := found_nothing(messages)) is not None:
        return quiet
    if system.startswith("You keep the private memory"):
        return json.dumps({"summary": "The character walked about the island and saw little.", "facts": []})
    return "The players wandered the island for a while; the weather turned and nothing was settled."


class LongGameModel(ScriptedModel):
    """GM replies from :func:`gm_reply` (``topical``: :func:`topical_reply`) in turn order (a reply asked for
    again repeats), each followed by ``padding`` sentences of the scene; the rest lossy."""

    def __init__(self, seed: int = 5, *, topical: bool = False, padding: int = 0):
        super().__init__(default=background)
        self.rng = random.Random(seed)
        self.turn = 0
        self.reply = topical_reply if topical else gm_reply
        self.padding = padding

    def stream(
        self, messages, *, max_tokens: int, slot: str | None = None, stop=(), fresh: bool = False, min_tokens: int = 0
    ):
        reply = self.reply(self.turn, self.rng)
        self.enqueue(f"{reply} {_filler(self.rng, self.padding)}" if self.padding else reply)
        return super().stream(messages, max_tokens=max_tokens, slot=slot, stop=stop, fresh=fresh, min_tokens=min_tokens)


async def play_long_game(engine: Engine, model: LongGameModel, turns: int = 300, *, pin: bool = False) -> int:
    """Play ``turns`` turns of two players (``pin``: Maya pins :data:`PIN` at turn :data:`PIN_TURN`); returns the
    game's id."""
    game = (await engine.start_game("long", LONG_GAME_WORLD.id)).game
    for name in ("Maya", "Tom"):
        await engine.join(game.id, name.lower(), name)
    actions = ["I look around.", "I walk on.", "I listen to the sea.", "I wait and watch.", "I go on carefully."]
    for turn in range(1, turns + 1):
        model.turn = turn
        if pin and turn == PIN_TURN:
            await engine.pin(game.id, PIN, "Maya")
        await engine.act(game.id, ("maya", "tom")[turn % 2], actions[turn % len(actions)])
        await engine.settled(game.id)  # each turn searchable by meaning at the next, as between players' turns
    return game.id


@dataclass(frozen=True)
class Answer:
    question: Question
    reply: str
    answered: bool  # the reply says the answer
    placed: str  # where the prompt held the answer's text: "near" (the front or beside the question), "far", ""
    # (or "no reply": the GM wrote none the reply rules let through)
    prompt_tokens: int
    retried: bool = False  # the GM had nothing to say at first: the player pressed Retry

    @property
    def cause(self) -> str:
        """A miss's cause: the model's (told beside the question or in the front, and not said), the memory's
        (not in the prompt, or only far up it, in an older turn's notes beside another action)."""
        if self.answered:
            return ""
        return {
            "no reply": "model miss (the GM had nothing to say, and again after a Retry)",
            "near": "model miss (in the prompt, not said)",
            "far": "memory miss (only far up the prompt, in an older turn's notes)",
        }.get(self.placed, "memory miss (not in the prompt)")


def says(reply: str, words: tuple[str, ...]) -> bool:
    """Whether ``reply`` holds one of ``words`` (whole words, any case)."""
    said = {w.lower() for w in re.findall(r"[A-Za-z']+", reply)}
    return any(word.lower() in said for word in words)


async def ask(engine: Engine, game_id: int, questions: tuple[Question, ...] = QUESTIONS) -> list[Answer]:
    """Each question asked in turn, as its player would: what the GM answered, and whether its prompt held it."""
    answers = []
    for question in questions:
        retried = False
        try:
            result = await engine.act(game_id, question.player, question.text)
        except ModelFailed:  # "The GM had nothing to say; your action is saved. Try again.": as a player would
            retried = True
            try:
                result = await engine.retry(game_id)
            except ModelFailed as failed:
                answers.append(Answer(question, f"({failed})", False, "no reply", 0, retried))
                continue
        messages = result.context.messages
        near = prompt_text([messages[0], messages[-1]])  # the front, and the question with this turn's notes
        placed = next((where for where, text in (("near", near), ("far", prompt_text(messages)))
                       if any(evidence in text for evidence in question.evidence)), "")  # fmt: skip
        answers.append(
            Answer(question, result.text, says(result.text, question.answers), placed,
                   result.model.prompt_tokens if result.model else 0, retried)
        )  # fmt: skip
    return answers


def answers_table(answers: list[Answer]) -> str:
    lines = [f"{'kind':<14} {'answered':<9} {'prompt':>6}  question / reply / cause"]
    for a in answers:
        lines.append(f"{a.question.kind:<14} {'yes' if a.answered else 'NO':<9} {a.prompt_tokens:>6}  "
                     f"{a.question.text}")  # fmt: skip
        lines.append(f"{'':<31}GM{' (after a Retry)' if a.retried else ''}: {a.reply}")
        if a.cause:
            lines.append(f"{'':<31}{a.cause}")
    answered = sum(a.answered for a in answers)
    words = [len(a.reply.split()) for a in answers]
    lines.append(
        f"answered {answered} of {len(answers)}; misses: {sum(a.cause.startswith('memory') for a in answers)} of "
        f"memory, {sum(a.cause.startswith('model') for a in answers)} of the model; reply words: median "
        f"{sorted(words)[len(words) // 2]}, min {min(words)}, max {max(words)}"
    )
    return "\n".join(lines)


def prompt_text(messages: list[ChatMessage]) -> str:
    return "\n".join(m.content for m in messages)
