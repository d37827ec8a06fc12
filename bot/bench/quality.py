"""``bench quality``: how often the GM's replies break rules a reader can check, with the reply rules off and on.

Scripted players play both shipped worlds (the actions of ``bench turns``)
with the configured model through the real engine and memory. Every reply
is scored by rules that need no judge:

- ``speaks_for_players``: a line of the reply is spoken for a seated player
  (``Maya: ...``, ``**Maya**: ...``) or for "User"/"Player";
- ``speaks_in_prose``: the narration has a seated player speak, act or
  feel (``Maya says``, ``Tom nods and``, ``Maya reaches for the cask``,
  ``You decide to leave`` to the acting player, ``"No," says Tom``)
  where the action said nothing of the kind (see
  :class:`bot.engine.turn.subjects.PlayerSubjects`);
- ``first_person``: a sentence of narration, outside quotes, in the first
  person as a player would write it (``I enter the study``);
- ``echo``: the reply opens by restating the action it answers (most of the
  opening sentence's content words are the action's);
- ``repeats``: a sentence the reply says twice, or one of the last three
  replies said;
- ``cut_off``: the reply ends mid-sentence;
- ``ungrounded``: the reply names nothing from the world (its names and key
  nouns: capitalised words of its public text, its characters, lore keys),
  the players' characters, or the action it answers;
- ``ignores_action``: none of the action's content words, nor a character
  the action refers to (``the housekeeper`` for Hester Crane), is in the reply;
- ``thin``: fewer than :data:`bot.engine.turn.answers.THIN_WORDS` content words
  that are not the action's own;
- ``artefacts``: transcript forms in the public text: brackets, doubled
  braces, a ``GM:`` label, a copied join or roll line, ``(private)``;
- ``engine_notes``: the engine's own notes copied into the reply (a
  correction note, a GM-only header, a placeholder);
- ``bad_asides``: an aside with nothing in it, to nobody seated, left open,
  or written in single brackets;
- ``placeholder``: a public action answered in public only by
  "(The GM answers privately.)" or "(The GM keeps that to themselves.)";
- ``empty``: nothing at all;
- ``copies_example``: a sentence holding four content words in a row of one of the prompt's example replies
  (the 1.5B model wrote "the cold air smells of earth and lamp oil" into games that never had a cellar).

Per background job (by its answer's schema), the share of structured calls
whose JSON validated at the first try, after the retry, or fell back. And a
private-clue scene: after Hollow Manor's script, a player does what earns a
beat's private clue; the clue must reach that player alone, by DM, and never
the channel.

The same script runs twice in one invocation with the same seed: with the
rules of :mod:`bot.engine.turn.shaping` switched off (what the model writes) and
on (what players read), side by side.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from bot.bench.turns import BENCH_SEED, SCRIPTS, WORLDS
from bot.engine import Engine, EngineConfig
from bot.engine.game import PRIVATE_ONLY, WITHHELD
from bot.engine.turn.answers import THIN_WORDS, ends_a_sentence, referents, restates
from bot.engine.turn.shaping import (
    ENGINE_NOTE,
    EXAMPLE_RUN,
    EXAMPLE_RUNS,
    GENERIC_SPEAKERS,
    OWN_NAMES,
    normal_form,
    speaker_line,
    spoken,
)  # fmt: skip
from bot.engine.turn.subjects import PlayerSubjects
from bot.model.base import LanguageModel
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import engine_config, load_model
from bot.store import Store
from bot.words import runs, sentences, stems
from bot.worlds import World, WorldLibrary

FAULTS = (
    "speaks_for_players", "speaks_in_prose", "first_person", "echo", "repeats", "cut_off", "ungrounded",
    "ignores_action", "thin", "artefacts", "engine_notes", "bad_asides", "placeholder", "empty", "copies_example",
)  # fmt: skip
EXAMPLES = 3
TURNS = 12  # a world; two worlds make 24 turns
JOBS_OUTCOMES = ("first", "retry", "fallback")
# The private-clue scene: after Hollow Manor's script, this player does what earns this beat's private clue.
CLUE_WORLD, CLUE_BEAT, CLUE_PLAYER = "hollow-manor", "locked-room", "Maya"
CLUE_ACTION = "I lean over the desk and sniff the brandy glass by Silas's hand."
CLUE_WORDS = 3  # the clue's own content words (not the action's) a message must hold to carry it

_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")
_SPEECH = (
    r"says|said|asks|asked|replies|replied|answers|answered|whispers|whispered|shouts|shouted|mutters|muttered|"
    r"nods|nodded|smiles|smiled|agrees|agreed|decides|decided|exclaims|exclaimed|admits|admitted|insists|insisted"
)
_SPOKE = re.compile(r"\b(?:ask|say|tell|shout|whisper|call|answer|reply|agree|nod|smile)\w*\b|[\"“]", re.IGNORECASE)
_FIRST_PERSON = re.compile(
    r"^\W*(?:(?:then|so|now|as|when|slowly|carefully)\b[^,]{0,30},\s*)?(?:I|I'm|I've|I'll|I'd|[Mm]y)\b"
)
_ASIDE = re.compile(r"\[\[(.*?)(?:\]\]|$)", re.DOTALL)
_ADDRESSED = re.compile(r"^\s*(?:to|for|private(?:ly)?(?:\s+to)?)\s+([^:\]\n]{1,40}?)\s*:\s*(.*)$", re.I | re.DOTALL)
_SINGLE_ASIDE = re.compile(r"(?<!\[)\[(?!\[)\s*(?:to|for)\s+[^:\]\n]{1,40}:", re.IGNORECASE)
_ROLL_LINE = re.compile(r"\brolls \d*d\d+\S*:", re.IGNORECASE)


@dataclass
class Reply:
    world: str
    turn: int
    action: str
    text: str
    faults: list[str] = field(default_factory=list)


@dataclass
class Clue:
    """How the private-clue scene went: who got the clue by DM, and whether the channel saw it."""

    to: list[str] = field(default_factory=list)
    in_public: bool = False
    public: str = ""
    private: list[str] = field(default_factory=list)  # every DM of the turn, "Name: text"

    @property
    def delivered(self) -> bool:
        return self.to == [CLUE_PLAYER] and not self.in_public


@dataclass
class Run:
    label: str
    replies: list[Reply] = field(default_factory=list)
    jobs: dict[str, Counter[str]] = field(default_factory=dict)  # schema -> first / retry / fallback
    clue: Clue | None = None
    regenerated: int = 0  # turns whose first draft the leak guard stopped

    def rate(self, fault: str) -> float:
        return sum(fault in r.faults for r in self.replies) / len(self.replies) if self.replies else 0.0

    @property
    def structured_calls(self) -> int:
        return sum(sum(outcomes.values()) for outcomes in self.jobs.values())

    @property
    def json_fallback(self) -> float:
        fallbacks = sum(outcomes["fallback"] for outcomes in self.jobs.values())
        return fallbacks / self.structured_calls if self.structured_calls else 0.0

    @property
    def worst_job_fallback(self) -> float:
        return max((o["fallback"] / sum(o.values()) for o in self.jobs.values() if sum(o.values())), default=0.0)


def world_names(world: World) -> frozenset[str]:
    """The stems of what a world names: its characters, lore keys, and capitalised words of its public text."""
    text = " ".join([world.title, world.pitch, world.setting, world.opening, *(c.title for c in world.chapters)])
    capitalised = re.findall(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}", text)
    names = [*capitalised, *(n.name for n in world.npcs), *(a for n in world.npcs for a in n.aliases)]
    names += [k for entry in world.lore for k in entry.keys]
    return stems(" ".join(names))


@dataclass(frozen=True)
class Turn:
    """What one reply is scored against."""

    action: str
    actor: str
    players: Sequence[str]
    recent: Sequence[str] = ()
    grounding: frozenset[str] = frozenset()
    referents: frozenset[str] = frozenset()


def score(text: str, turn: Turn, raw: str | None = None) -> list[str]:
    """The faults of one public reply (``raw``: what the model wrote, asides included), by the rules above."""
    text = text.strip()
    if not text:
        return ["empty"]
    if text in (PRIVATE_ONLY, WITHHELD):
        return ["placeholder"]
    faults = []
    if speaker_line([*turn.players, *GENERIC_SPEAKERS]).search(text):
        faults.append("speaks_for_players")
    narration = _QUOTED.sub(" ", text)
    if _speaks_in_prose(narration, turn) or _gives_a_player_a_line(text, turn):
        faults.append("speaks_in_prose")
    said = sentences(text)
    if any(_FIRST_PERSON.match(s) and not re.search(r"\byou\b|\broll", s, re.I) for s in sentences(narration)):
        faults.append("first_person")
    if said and restates(stems(spoken(said[0])), stems(turn.action)):
        faults.append("echo")
    before = {normal_form(s) for r in turn.recent[-3:] for s in sentences(r)}
    seen: set[str] = set()
    for sentence in map(normal_form, said):
        if sentence and (sentence in seen or sentence in before):
            faults.append("repeats")
            break
        seen.add(sentence)
    if not ends_a_sentence(text):
        faults.append("cut_off")
    written = stems(text)
    if not written & (turn.grounding | stems(turn.action) | stems(" ".join(turn.players))):
        faults.append("ungrounded")
    if not written & (stems(turn.action) | turn.referents):
        faults.append("ignores_action")
    if len(written - stems(turn.action)) < THIN_WORDS:
        faults.append("thin")
    if _artefacts(text):
        faults.append("artefacts")
    if any(ENGINE_NOTE.match(s) for s in said) or re.search(r"\bGM[ -]?(?:note|only)\b|\(\s*GM\s*:", text, re.I):
        faults.append("engine_notes")
    if _bad_asides(raw if raw is not None else text, turn.players) or "[[" in text or "]]" in text:
        faults.append("bad_asides")
    if any(runs(sentence, EXAMPLE_RUN) & EXAMPLE_RUNS for sentence in said):
        faults.append("copies_example")
    return faults


def _gives_a_player_a_line(text: str, turn: Turn) -> bool:
    """'"It was the brandy," says Tom.': a line given to a seated player after its quote."""
    subjects = PlayerSubjects(turn.players, [turn.action], [turn.actor])
    return any(subjects.gives_a_line(s) for s in sentences(text))


def _speaks_in_prose(narration: str, turn: Turn) -> bool:
    subjects = PlayerSubjects(turn.players, [turn.action], [turn.actor])
    if any(subjects.decides(s) for s in sentences(narration)):
        return True  # "Maya reaches for the cask.", "Tom and Maya nod in agreement."
    for name in turn.players:
        if name == turn.actor and _SPOKE.search(turn.action):
            continue  # the player said their character speaks: the GM may tell it
        if re.search(rf"\b{re.escape(name)}\b(?:\s+\w+){{0,2}}?\s+(?:{_SPEECH})\b", narration, re.IGNORECASE):
            return True
    return False


def _artefacts(text: str) -> bool:
    own = speaker_line(OWN_NAMES)
    single = re.sub(r"\[\[|\]\]", "", text)
    return bool(
        "[" in single or "]" in single or "{{" in text or "}}" in text or own.search(text)
        or "(private)" in text.lower() or "joins the game" in text or _ROLL_LINE.search(text)
    )  # fmt: skip


def _bad_asides(raw: str, players: Sequence[str]) -> bool:
    seated = {p.casefold() for p in players}
    if _SINGLE_ASIDE.search(raw) or raw.count("[[") != raw.count("]]"):
        return True
    for inner in _ASIDE.findall(raw):
        addressed = _ADDRESSED.match(inner)
        if not addressed or not addressed.group(2).strip():
            return True
        if " ".join(addressed.group(1).split()).casefold() not in seated:
            return True
    return False


async def play(model: LanguageModel, worlds_dir: Path, config: EngineConfig, turns: int, label: str) -> Run:
    run = Run(label)
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "bench.sqlite3")
        try:
            async with ModelWorker(model) as worker:
                engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
                for index, world_id in enumerate(WORLDS):
                    await _play_world(engine, index, world_id, turns, run)
                    await engine.settled()
                run.jobs = {schema: Counter(outcomes) for schema, outcomes in sorted(worker.structured.items())}
                await engine.close()
        finally:
            await store.close()
    return run


async def _play_world(engine: Engine, index: int, world_id: str, turns: int, run: Run) -> None:
    names, actions = SCRIPTS[world_id]
    started = await engine.start_game(f"bench-quality:{index}", world_id)
    game_id, world = started.game.id, started.world
    grounding = frozenset(world_names(world))
    for name in names:
        await engine.join(game_id, name.lower(), name)
    recent: list[str] = []
    for n in range(turns):
        action, actor = actions[n % len(actions)], names[n % len(names)]
        turn = Turn(action, actor, names, tuple(recent), grounding, frozenset(referents(world, action)))
        try:
            result = await engine.act(game_id, actor.lower(), action)
            text, raw = result.text, result.raw
            run.regenerated += result.draft is not None
        except Exception:  # an empty reply is a fault like the others; the turn's action waits for the next
            text, raw = "", ""
        run.replies.append(Reply(world_id, n + 1, action, text, score(text, turn, raw)))
        if text:
            recent.append(text)
    if world_id == CLUE_WORLD:
        run.clue = await _clue_scene(engine, game_id, world)


async def _clue_scene(engine: Engine, game_id: int, world: World) -> Clue:
    """A player does what earns the beat's private clue: does it reach them alone, and never the channel?"""
    beat = next(b for chapter in world.chapters for b in chapter.beats if b.id == CLUE_BEAT)
    clue_words = stems(beat.clue_text or "") - stems(CLUE_ACTION)

    def carries(text: str) -> bool:
        return len(stems(text) & clue_words) >= CLUE_WORDS

    try:
        result = await engine.act(game_id, CLUE_PLAYER.lower(), CLUE_ACTION)
    except Exception:
        return Clue()
    return Clue(
        to=[m.player.name for m in result.private if carries(m.entry.content)],
        in_public=carries(result.text),
        public=result.text,
        private=[f"{m.player.name}: {m.entry.content}" for m in result.private],
    )


def run(settings: ProcessSettings, turns: int, out: TextIO) -> dict[str, float]:
    if settings.seed is None:  # both runs sample alike: a difference between them is the rules'
        settings = settings.model_copy(update={"seed": BENCH_SEED})
    model = load_model(settings)
    runs = []
    for shape in (False, True):
        forget = getattr(model, "forget", None)
        if forget is not None:
            forget()
        config = engine_config(settings, shape_replies=shape)
        label = "rules on (what players read)" if shape else "rules off (what the model wrote)"
        runs.append(asyncio.run(play(model, settings.worlds_dir, config, turns, label)))
    return report(model.name, settings, runs, turns, out)


def report(name: str, settings: ProcessSettings, runs: list[Run], turns: int, out: TextIO) -> dict[str, float]:
    off, on = runs
    print(
        f"bench quality: {len(WORLDS)} worlds x {turns} turns ({', '.join(WORLDS)}); model {name}, "
        f"reply up to {settings.reply_tokens} tokens, temperature {settings.temperature}, seed {settings.seed}",
        file=out,
    )
    print(f"\n{'':<22}{off.label:>36}{on.label:>34}", file=out)
    for fault in FAULTS:
        print(f"{fault:<22}{off.rate(fault):>36.2f}{on.rate(fault):>34.2f}", file=out)
    print(
        f"{'regenerated (leaks)':<22}{_share(off.regenerated, off):>36.2f}{_share(on.regenerated, on):>34.2f}", file=out
    )
    print(
        f"{'json_fallback':<22}{off.json_fallback:>36.2f}{on.json_fallback:>34.2f}"
        f"   ({on.structured_calls} structured calls with the rules on)",
        file=out,
    )
    print("\nStructured background calls, rules on (valid at the first try / after the retry / fell back):", file=out)
    for schema, outcomes in on.jobs.items():
        total = sum(outcomes.values())
        shares = " / ".join(f"{outcomes[o] / total:.2f}" for o in JOBS_OUTCOMES)
        print(f"  {schema:<28}{total:>4} calls   {shares}", file=out)
    for run in runs:
        clue = run.clue or Clue()
        where = ", ".join(clue.to) or "nobody"
        print(
            f"\nPrivate clue ({CLUE_BEAT}), {run.label}: by DM to {where}; in the channel: "
            f"{'yes' if clue.in_public else 'no'}; {'delivered' if clue.delivered else 'NOT delivered'}",
            file=out,
        )
        for line in [f"channel: {clue.public}", *(f"DM to {dm}" for dm in clue.private)]:
            print(f"  {line[:300]!r}", file=out)
    for run in runs:
        print(f"\nExamples, {run.label}:", file=out)
        for fault in FAULTS:
            found = [r for r in run.replies if fault in r.faults][:EXAMPLES]
            for reply in found:
                shown = reply.text.replace("\n", " / ")
                shown = shown if len(shown) <= 240 else shown[:239] + "…"
                print(f"  [{fault}] {reply.world} turn {reply.turn} ({reply.action!r}): {shown!r}", file=out)
    figures: dict[str, float | int] = {fault: on.rate(fault) for fault in FAULTS}
    figures["json_fallback"] = on.json_fallback
    figures["worst_job_fallback"] = on.worst_job_fallback
    figures["regenerated"] = _share(on.regenerated, on)
    figures["clue_delivered"] = int(bool(on.clue and on.clue.delivered))
    figures.update({f"{fault}_off": off.rate(fault) for fault in FAULTS})
    figures["clue_delivered_off"] = int(bool(off.clue and off.clue.delivered))
    figures["replies"] = len(on.replies)
    print("\n" + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()), file=out)
    return figures


def _share(count: int, run: Run) -> float:
    return count / len(run.replies) if run.replies else 0.0
