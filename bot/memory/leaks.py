"""The leak guard's policy: what counts as private material, and which sentences give it away.

Every secret is reduced to phrases: runs of content words (stopwords
dropped, simple endings stripped, so "poisoned the brandy" and "poison in
his brandy" meet). A truth's phrases are its author's key phrases and every
run of four content words of its text; a private message's are its runs
of three; a player's private memory's, the runs of four of its key facts.
A sentence leaks when its content words hold one of those runs (in order,
with up to two words between), unless the run is already public: in the
world's public text, or (checked by the engine against the game's public
record) said in the channel before, by a player or the GM. That is how a
truth the players uncovered stops being guarded; a truth also opens when a
beat in its ``revealed_by`` is done, and for one reply when a player's public
action names one of its ``unlocked_by`` words.

Audiences: a public reply is checked against everything; a private
message to one player against what is private to others only. World
truths, clues and NPC secrets may be told privately: that is how one
player learns what another does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bot.store.models import EntryKind, LogEntry, PlayerMemory
from bot.words import content_words, runs, sentences, stems
from bot.worlds import World


@dataclass(frozen=True)
class Secret:
    """Something that must not reach an audience that does not already know it."""

    ref: str  # "truth:ashby-killed", "entry:41", "private:3", "npc:pike:hides:0", "clue:blotter", "prompt"
    phrases: frozenset[tuple[str, ...]]
    known_to: frozenset[int] = frozenset()  # players who may hear it privately
    public_only: bool = False  # guarded in public only (world secrets: the GM may tell them privately)
    uncoverable: bool = True  # no longer secret once said in public (the prompt's headings never are)
    keys: frozenset[tuple[str, ...]] = frozenset()  # the author's key phrases: also caught across two sentences
    text: str = ""  # the secret in full, for the guard by meaning (world secrets; private messages are searched)


@dataclass(frozen=True)
class Hit:
    ref: str
    phrase: str  # the secret's words, as they appeared in the sentence
    sentence: str
    words: tuple[str, ...]  # the sentence's surface words that matched, for the public-record check
    uncoverable: bool = True  # whether the public record can make it no leak


@dataclass
class Guard:
    """The private material of one game at one turn, and what is public anyway."""

    secrets: list[Secret]
    public: set[tuple[str, ...]] = field(default_factory=set)  # runs of the world's public text
    # The words of each sentence of the world's public text: a run of a secret's words (not an author's key
    # phrase) that one of them holds whole, in any order, gives nothing away ("the red-waxed third cask", beside
    # the lore's "The third cask is sealed with red wax").
    public_sentences: Sequence[frozenset[str]] = ()

    def __post_init__(self) -> None:
        # Each phrase under its first word, so a sentence is checked against the phrases it could hold only.
        self._phrases = _by_first_word(self.secrets, "phrases", self.public, self.public_sentences)
        self._keys = _by_first_word(self.secrets, "keys", self.public)
        self._guarded: dict[str, set[tuple[str, ...]]] = {}
        for entries in self._phrases.values():
            for number, phrase in entries:
                self._guarded.setdefault(self.secrets[number].ref, set()).add(phrase)

    def guarded(self, secret: Secret) -> set[tuple[str, ...]]:
        """The runs of a secret's words that the guard looks for (not those the world makes public)."""
        return self._guarded.get(secret.ref, set())

    def candidates(self, text: str, audience: int | None = None) -> list[Hit]:
        """Every secret run, in every sentence of ``text``, that the audience (``None``: everyone) may not hear.

        The engine still drops the hits whose words the game's public record holds.
        """
        split = [(sentence.strip(), content_words(sentence)) for sentence in sentences(text)]
        hits = []
        for sentence, words in split:
            for secret, positions in self._find(self._phrases, words, audience):
                surface = tuple(words[i][1] for i in positions)
                hits.append(Hit(secret.ref, " ".join(surface), sentence, surface, secret.uncoverable))
        # A key phrase cut in two by a sentence end ("The keeper? He is alive.") is caught too.
        for (first, first_words), (second, second_words) in zip(split, split[1:], strict=False):
            words = first_words + second_words
            for secret, positions in self._find(self._keys, words, audience):
                if positions[0] < len(first_words) <= positions[-1]:
                    surface = tuple(words[i][1] for i in positions)
                    hits.append(Hit(secret.ref, " ".join(surface), f"{first} {second}", surface, secret.uncoverable))
        return hits

    def _find(
        self, index: dict[str, list[tuple[int, tuple[str, ...]]]], words: list[tuple[str, str]], audience: int | None
    ) -> list[tuple[Secret, tuple[int, ...]]]:
        at: dict[str, list[int]] = {}
        for i, (stem, _) in enumerate(words):
            at.setdefault(stem, []).append(i)
        found = []
        for number, phrase in sorted({c for stem in at for c in index.get(stem, ())}):
            secret = self.secrets[number]
            if audience is not None and (secret.public_only or audience in secret.known_to):
                continue
            positions = _place(phrase, at)
            if positions is not None:
                found.append((secret, positions))
        return found


SLACK = 2  # extra words a phrase may be spread over ("whole bottle of drops" in "whole bottle of sleeping drops")


def _by_first_word(
    secrets: Sequence[Secret], attribute: str, public: set[tuple[str, ...]],
    public_sentences: Sequence[frozenset[str]] = (),
) -> dict[str, list[tuple[int, tuple[str, ...]]]]:  # fmt: skip
    holding: dict[str, list[frozenset[str]]] = {}  # each word's public sentences
    for words in public_sentences:
        for word in words:
            holding.setdefault(word, []).append(words)
    index: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    for number, secret in enumerate(secrets):
        for phrase in getattr(secret, attribute):
            if not phrase or phrase in public:
                continue
            if phrase not in secret.keys and any(set(phrase) <= words for words in holding.get(phrase[0], ())):
                continue  # a public sentence says all of its words
            index.setdefault(phrase[0], []).append((number, phrase))
    return index


def _place(phrase: tuple[str, ...], at: dict[str, list[int]]) -> tuple[int, ...] | None:
    """Where ``phrase`` is in a sentence (``at``: each word's places), in order and within its length plus ``SLACK``."""
    if any(word not in at for word in phrase):
        return None
    for first in at[phrase[0]]:
        positions = [first]
        for word in phrase[1:]:
            following = next((i for i in at[word] if i > positions[-1]), None)
            if following is None:
                break
            positions.append(following)
        if len(positions) == len(phrase) and positions[-1] - first < len(phrase) + SLACK:
            return tuple(positions)
    return None


def strip(text: str, hits: Iterable[Hit]) -> str:
    """``text`` without the sentences that leaked."""
    leaking = [hit.sentence for hit in hits]  # one sentence, or two a key phrase ran across
    kept = [s.strip() for s in sentences(text) if not any(s.strip() in leak for leak in leaking)]
    return " ".join(kept).strip()


PROMPT_MARKERS = (
    "GM-only knowledge", "GM-only, this scene", "game master (GM) of", "never say it in the public reply",
    "GM-only, for this reply", "what you may show of what they have not",
)  # fmt: skip


def world_public_texts(world: World) -> list[str]:
    """What the world makes public: its title, pitch, setting, opening, its characters as the players meet
    them, and its lore (an entry marked secret reaches the GM only, but its text is no truth)."""
    return [
        world.title, world.pitch, world.setting, world.opening,
        *(f"{n.name}: {n.description}" for n in world.npcs), *(e.content for e in world.lore),
    ]  # fmt: skip


def world_public_sentences(world: World) -> list[frozenset[str]]:
    """The content words of each sentence the world makes public (see :attr:`Guard.public_sentences`)."""
    found = []
    for text in world_public_texts(world):
        for sentence in sentences(text):
            if words := stems(sentence):
                found.append(words)
    return found


def world_public_runs(world: World) -> set[tuple[str, ...]]:
    """Runs of two to four content words of what the world makes public: nothing there is a secret."""
    found: set[tuple[str, ...]] = set()
    for paragraph in "\n".join(world_public_texts(world)).split("\n"):
        for n in (2, 3, 4):
            found |= runs(paragraph, n)
    return found


def guarded_world_secrets(
    world: World, chapter_index: int, beats_done: Sequence[str], unlocked: str,
    uncovered: frozenset[str] = frozenset(),
) -> list[Secret]:  # fmt: skip
    """Truths not yet revealed, clues of beats still to come, what NPCs hide; none of what the players'
    actions uncovered (``uncovered``: refs the engine opened, for good or for this reply, see
    :mod:`bot.memory.reveals`)."""
    done = set(beats_done) | {b.id for c in world.chapters[:chapter_index] for b in c.beats}
    secrets = []
    for truth in world.truths:
        if done & set(truth.revealed_by) or f"truth:{truth.id}" in uncovered:
            continue
        if any(re.search(rf"(?<!\w){re.escape(key)}(?!\w)", unlocked, re.IGNORECASE) for key in truth.unlocked_by):
            continue
        keys = frozenset(k for k in (tuple(s for s, _ in content_words(p)) for p in truth.key_phrases) if k)
        phrases = keys | runs(truth.text, 4)
        secrets.append(Secret(f"truth:{truth.id}", frozenset(phrases), public_only=True, keys=keys, text=truth.text))
    for chapter in world.chapters[chapter_index:]:
        for beat in chapter.beats:
            clue = beat.clue_text
            if clue and beat.id not in done:
                secrets.append(Secret(f"clue:{beat.id}", frozenset(runs(clue, 4)), public_only=True, text=clue))
    for npc in world.npcs:
        for i, hidden in enumerate(npc.secrets):
            ref = f"npc:{npc.id}:hides:{i}"
            if ref not in uncovered:
                secrets.append(Secret(ref, frozenset(runs(hidden.text, 4)), public_only=True, text=hidden.text))
    return secrets


def private_secrets(entries: Sequence[LogEntry], memories: Sequence[PlayerMemory]) -> list[Secret]:
    """What the GM told players alone, their secret actions, and their private memories."""
    secrets = [
        Secret(f"entry:{e.id}", frozenset(runs(e.content, 3)), known_to=frozenset(e.visible_to))
        for e in entries
        if e.kind is not EntryKind.ROLL and not e.deleted
    ]
    for memory in memories:
        # Their key facts, not their summary: the summary retells public events in its own words.
        phrases = set().union(set(), *(runs(fact, 4) for fact in memory.facts))
        secrets.append(
            Secret(f"private:{memory.player_id}", frozenset(phrases), known_to=frozenset({memory.player_id}))
        )
    return secrets


def prompt_secret() -> Secret:
    """The prompt's own markers: a reply that repeats them is repeating the GM's instructions."""
    phrases = {tuple(s for s, _ in content_words(m)) for m in PROMPT_MARKERS}
    return Secret("prompt", frozenset(p for p in phrases if len(p) >= 2), uncoverable=False)


# The guard by meaning (F31): a sentence that says a secret in other words. Its closeness to the secret (cosine)
# alone cannot tell a leak from a sentence on the same topic that reveals nothing (the brandy glass on the desk,
# beside the truth that the brandy was poisoned): with the bundled model on bench leaks' sentences, a threshold
# that stops four in five paraphrased leaks also stops one clean sentence in six. Two things tell them apart
# better. A sentence on a secret's topic that reveals nothing is about as close to what the world makes public
# (the study, the brandy, the characters as the players meet them) as to the secret; one that tells the secret
# is closer to the secret. And a sentence that tells it tends to use some of the secret's own words that the
# world's public text does not hold. So a sentence leaks by meaning when it is much closer to the secret than to
# anything public, or when it is close and closer to the secret than to the public text, and either very close
# or sharing two of those words. Measured with bench leaks (with the guard by words): on Hollow Manor, whose
# sentences the thresholds were set on, 70% of the paraphrases stopped and no clean sentence of 47 (before the
# contrast with the public text: 70% and 1); on Ember Road's, written before anything was measured on them, 42%
# and 1 of 30.
@dataclass(frozen=True)
class MeaningRule:
    """The thresholds of :func:`leaks_by_meaning` (cosines, and a count of words)."""

    close: float = 0.45
    very_close: float = 0.65
    shared_words: int = 2
    ahead: float = 0.02  # closer to the secret than to the public text by at least this, to count at all
    # Much closer to the secret than to the public text: closeness - public_weight * public >= margin.
    public_weight: float = 0.75
    margin: float = 0.28


MEANING_RULE = MeaningRule()
# A world secret the narrator never held (F39: the engine keeps it until the players uncover it) can reach a
# reply only by chance, in a guess: what is merely close to it is a sentence on its topic, not a paraphrase of a
# text the model never read. Such a sentence counts only when it is close to the secret and uses two of its own
# words the world's public text does not hold. bench secrets, Qwen2.5 1.5B with the secrets held, the guard by
# meaning at its usual thresholds: 4 of Hollow Manor's 14 replies stopped, every hit "in other words", none a
# truth told.
NEVER_HELD_RULE = MeaningRule(close=0.65, very_close=2.0, shared_words=2, ahead=0.05, margin=2.0)


def world_public_stems(world: World) -> frozenset[str]:
    """Every content word the world makes public: not evidence that a sentence tells a secret."""
    return stems(" ".join(world_public_texts(world)))


def leaks_by_meaning(
    sentence: str, secret_text: str, closeness: float, public_stems: frozenset[str], public: float = 0.0,
    rule: MeaningRule = MEANING_RULE,
) -> bool:  # fmt: skip
    """Whether ``sentence``, ``closeness`` (cosine) from ``secret_text`` and ``public`` from the closest part
    of what the world makes public, tells the secret in other words."""
    return rule_says_leak(rule, closeness, public, len(secret_own_stems(secret_text, public_stems) & stems(sentence)))


def secret_own_stems(secret_text: str, public_stems: frozenset[str]) -> frozenset[str]:
    """A secret's words that the world's public text does not hold: a sentence using them may be telling it."""
    return frozenset(stems(secret_text) - public_stems)


def rule_says_leak(rule: MeaningRule, closeness, public, shared):
    """:func:`leaks_by_meaning`'s test on its measures (numbers, or numpy arrays of them, compared elementwise):
    ``shared`` is how many of the secret's own words (:func:`secret_own_stems`) the sentence uses."""
    much_closer = closeness - rule.public_weight * public >= rule.margin
    counts = (closeness >= rule.close) & (closeness - public >= rule.ahead)
    return much_closer | (counts & ((closeness >= rule.very_close) | (shared >= rule.shared_words)))
