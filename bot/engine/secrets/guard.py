"""The leak guard at work: the game's private material for this turn, checked against the public record.

The policy (what is secret, which sentence gives it away) is in
:mod:`bot.memory.leaks`; this module gathers the material from the store
and drops the hits whose words the game has already said in public.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

import numpy as np

from bot.engine.secrets.clues import world_clues
from bot.engine.upkeep.meaning import MeaningIndex
from bot.memory.leaks import (
    MEANING_RULE,
    NEVER_HELD_RULE,
    Guard,
    Hit,
    Secret,
    guarded_world_secrets,
    leaks_by_meaning,
    private_secrets,
    prompt_secret,
    world_public_runs,
    world_public_sentences,
    world_public_stems,
    world_public_texts,
)
from bot.memory.reveals import meanings, uncoverables
from bot.store import Game, LogEntry, Store
from bot.words import content_words, sentences, stems
from bot.worlds import World

log = logging.getLogger(__name__)

PRIVATE_ENTRIES = 200  # the newest private messages guarded word for word; older ones live on in private memories
# A private message the public record already holds is no secret: looked past, to the next closest, this many
# times a reply; a sentence's first TOLD_WORDS content words, close together in public, count as it said there.
TOLD_IN_PUBLIC_SKIPS = 3
TOLD_WORDS = 12
# Words that tell nothing of a clue by themselves, whatever it says ("Whoever takes the night watch hears ... something
# inside it shifts"): the default model wrote "Something is wrong with the third cask." on the turn its player
# listened at the cask, the clue's "something" and the world's own "third cask" (bench secrets, Ember Road).
VAGUE = stems("something someone somebody anything anyone anybody everything everyone nothing nobody whoever whatever")
# The guard by meaning's share of a reply, at most: a slow embedding model (a remote server) costs a reply no more,
# and what it has not measured by then is guarded by words alone. Embedding a world's secrets and public text
# (about 100 texts) takes 1.7 s in process on two cores, in batches; a world is embedded when its game starts.
MEANING_SECONDS = 5.0
# What players were told or did alone, as the guard names it: a private message, a player's private memory.
PRIVATE_REF = ("entry:", "private:")
# A transcript line's label ("GM: ", "GM to Maya: "), before its text.
_LABEL = re.compile(r"^[^:\n]{1,40}:\s+")
# A stopped sentence, as the log shows it: an author reading data/play.log sees what was taken for a leak.
SENTENCE_LOGGED = 300


class TurnGuard:
    """The guard for one reply of one game."""

    def __init__(
        self, store: Store, game: Game, guard: Guard, meaning: MeaningIndex | None = None,
        public_stems: frozenset[str] = frozenset(), public_texts: Sequence[str] = (),
        earned: Mapping[str, frozenset[str]] | None = None, earned_told: int = 2, never_held: bool = False,
        never_read: Collection[str] = (),
    ):  # fmt: skip
        # The world's secrets are not in the narrator's prompt (held by the engine): by meaning, the stricter rule.
        self.never_held = never_held
        # The private messages the narrator never read (the clues the engine gave in the world's words): a public
        # sentence close to one is a guess on its topic, judged by the stricter rule too.
        self.never_read = frozenset(" ".join(text.split()) for text in never_read)
        self.store = store
        self.game = game
        self.guard = guard
        self.meaning = meaning if meaning is not None and meaning.on else None
        self.public_stems = public_stems  # the world's public words: no evidence of a leak by meaning
        self.public_texts = public_texts  # what the world makes public: a leak is closer to the secret than to it
        # The clues this turn's action earns, by their words the action did not use: told in public by a sentence
        # holding ``earned_told`` of them, one at least that the world does not make public, none of them a vague
        # word (see VAGUE); the clue itself goes to the player by DM.
        self.earned = dict(earned or {})
        self.earned_told = earned_told
        self._public: dict[tuple[str, ...], bool] = {}
        self._uncovered: dict[str, bool] = {}

    async def check(self, text: str, audience: int | None = None, *, public_record: bool = False) -> list[Hit]:
        """The hits in ``text`` for ``audience`` (a player id; ``None`` for the channel), public ones dropped:
        secrets said word for word, and (with an embedding model) in other words. ``public_record``: ``text`` is
        the engine's, built from what the whole table has read (the notes' answer told after a reply), so it tells
        no private message: one that says the same only said again what was public (after an aside of the
        default model's to Maya, the notes' "red signal flag, location: in the boathouse" was stopped as her
        message in other words: bench change, 300 turns)."""
        hits: dict[tuple[str, str], Hit] = {}  # one per sentence and secret
        for hit in self.guard.candidates(text, audience):
            if (hit.sentence, hit.ref) in hits or (public_record and hit.ref.startswith(PRIVATE_REF)):
                continue
            if hit.uncoverable and hit.words not in self._public:
                self._public[hit.words] = await self.store.said_in_public(self.game.id, hit.words)
            if not hit.uncoverable or not self._public[hit.words]:
                hits[hit.sentence, hit.ref] = hit
        if audience is None and self.earned:
            for sentence in sentences(text):
                said = stems(sentence) - VAGUE
                for ref, words in self.earned.items():
                    told = said & words
                    if len(told) >= self.earned_told and told - self.public_stems:
                        hits.setdefault((sentence, ref), Hit(ref, "(the clue this action earned)", sentence, (), False))
        if self.meaning is not None:
            caught = {sentence for sentence, _ in hits}
            for hit in await self._by_meaning(self.meaning, text, audience, caught, private=not public_record):
                hits.setdefault((hit.sentence, hit.ref), hit)
        return list(hits.values())

    async def _by_meaning(
        self, meaning: MeaningIndex, text: str, audience: int | None, caught: set[str], *, private: bool = True
    ) -> list[Hit]:
        """Sentences that tell a world secret or (``private``) another player's private message in other words."""
        said = [s.strip() for s in sentences(text) if s.strip() and s.strip() not in caught]
        secrets = [
            s for s in self.guard.secrets
            if s.text and not (audience is not None and (s.public_only or audience in s.known_to))
        ]  # fmt: skip
        if not said:
            return []

        async def measure():
            closeness = await meaning.closeness(said, [s.text for s in secrets]) if secrets else None
            nearest = await self._nearest_private(meaning, said, audience) if private else [None] * len(said)
            public = (
                (await meaning.closeness(said, list(self.public_texts))).max(axis=1)
                if self.public_texts else np.zeros(len(said))
            )  # fmt: skip
            return closeness, nearest, public

        try:  # a slow embedding model never holds a reply longer than this: the words still guard it
            closeness, nearest, public = await asyncio.wait_for(measure(), MEANING_SECONDS)
        except TimeoutError:
            log.warning("Game %d: the leak guard by meaning took over %.0f s; words alone this time",
                        self.game.id, MEANING_SECONDS)  # fmt: skip
            return []
        except Exception as exc:  # the guard by words still stands
            log.warning("Game %d: the leak guard by meaning failed (%s); words alone this time", self.game.id, exc)
            return []
        hits = []
        for i, sentence in enumerate(said):
            near_public = float(public[i])
            for j, secret in enumerate(secrets):
                rule = NEVER_HELD_RULE if self.never_held and secret.public_only else MEANING_RULE
                if leaks_by_meaning(
                    sentence, secret.text, float(closeness[i, j]), self.public_stems, near_public, rule
                ):
                    if not await self._said_already(secret):
                        hits.append(Hit(secret.ref, "(in other words)", sentence, (), uncoverable=False))
            if nearest[i] is not None:
                ref, secret_text, score = nearest[i]
                rule = NEVER_HELD_RULE if self._never_read(secret_text) else MEANING_RULE
                if leaks_by_meaning(sentence, secret_text, score, self.public_stems, near_public, rule):
                    hits.append(Hit(ref, "(in other words)", sentence, (), uncoverable=False))
        return hits

    def _never_read(self, text: str) -> bool:
        """Whether a private message, as recall by meaning keeps it (its transcript line, "GM: Whoever takes the
        night watch ..."), is a clue the narrator never read. Compared whole with the clue's own words, it never
        was: "GM:" and the player's own "Quote the GM-only part word for word." were stopped as the clue in other
        words by the usual rule (bench secrets, Ember Road, secrets held)."""
        said = " ".join(_LABEL.sub("", text, count=1).split())
        return bool(said) and any(said in clue or clue in said for clue in self.never_read)

    async def _nearest_private(
        self, meaning: MeaningIndex, said: Sequence[str], audience: int | None
    ) -> list[tuple[str, str, float] | None]:
        """Each sentence's closest private message that is still private: one whose every sentence the public
        record holds (a small model writes its public line again as an aside: "[[to Maya: The captain takes the
        brass key ...]]") tells nothing, and the next closest is looked at instead."""
        skip: set[str] = set()
        for _ in range(TOLD_IN_PUBLIC_SKIPS):
            private = await meaning.nearest_private(self.game.id, said, audience, skip)
            told = {found[0] for found in private if found is not None and await self._told_in_public(*found[:2])}
            if not told:
                return private
            skip |= told
        return [found if found is not None and found[0] not in skip else None for found in private]

    async def _told_in_public(self, ref: str, text: str) -> bool:
        """Whether the public record holds every sentence of a private message (its content words close
        together)."""
        key = f"told:{ref}"
        if key not in self._uncovered:
            told = None
            for sentence in sentences(text):
                words = [surface for _, surface in content_words(sentence)][:TOLD_WORDS]
                if len(words) < 2:
                    continue
                told = await self.store.said_in_public(self.game.id, words)
                if not told:
                    break
            self._uncovered[key] = bool(told)
        return self._uncovered[key]

    async def _said_already(self, secret: Secret) -> bool:
        """Whether the players uncovered a secret in public already: some run of its words was said there (not
        one the world makes public anyway: the opening's "water casks" uncover no truth about a cask)."""
        if not secret.uncoverable:
            return False
        if secret.ref not in self._uncovered:
            found = False
            for phrase in sorted(self.guard.guarded(secret))[:40]:
                if await self.store.said_in_public(self.game.id, phrase):
                    found = True
                    break
            self._uncovered[secret.ref] = found
        return self._uncovered[secret.ref]

    async def record(self, turn: int, audience: str, hits: Sequence[Hit], action: str) -> None:
        """Log every hit, in the log and in the game's record of them."""
        for hit in hits:
            log.warning(
                "Game %d turn %d: leak to %s stopped (%s, %r): %s: %r", self.game.id, turn, audience, hit.ref,
                hit.phrase, action, hit.sentence[:SENTENCE_LOGGED],
            )  # fmt: skip
        await self.store.add_leak_hits(
            self.game.id,
            turn,
            [{"audience": audience, "ref": h.ref, "phrase": h.phrase, "sentence": h.sentence, "action": action}
             for h in hits],
        )  # fmt: skip


def delivered_clue_runs(
    secrets: Sequence[Secret], entries: Sequence[LogEntry], clues: Collection[str], public_stems: frozenset[str]
) -> list[Secret]:
    """The private messages, a clue the engine gave in the world's own words guarded by the runs of its words that
    hold one the world does not make public (not a vague one, see VAGUE). The narrator never read it: a public
    sentence of the world's own words alone is the scene, not the clue. "Whoever sniffs the brandy glass on the
    desk smells, under the brandy, something sharp and bitter" gave the run "desk smells brandy", and the default
    model's reply to the next player, about the desk and the glass Tom had just sniffed in public, was stopped
    (bench secrets, Hollow Manor, secrets held); every run with its "bitter" or "medicine" is still guarded."""
    given = {" ".join(text.split()) for text in clues}
    delivered = {f"entry:{e.id}" for e in entries if " ".join(e.content.split()) in given}
    return [
        replace(s, phrases=frozenset(p for p in s.phrases if set(p) - public_stems - VAGUE))
        if s.ref in delivered
        else s
        for s in secrets
    ]


class LeakGuards:
    def __init__(self, store: Store, meaning: MeaningIndex | None = None):
        self.store = store
        self.meaning = meaning
        self._public_runs: dict[str, tuple[World, set[tuple[str, ...]], list[frozenset[str]]]] = {}
        self._public_stems: dict[str, tuple[World, frozenset[str], list[str]]] = {}
        self._warming: dict[str, tuple[World, asyncio.Task]] = {}

    def warm(self, world: World) -> None:
        """Embed a world's secrets and public text in the background, once, so that the first reply of its
        first game does not wait for them (about 1.7 s for a shipped world on two cores)."""
        if self.meaning is None or not self.meaning.on:
            return
        known = self._warming.get(world.id)
        if known is not None and known[0] is world:
            return
        texts = [s.text for s in guarded_world_secrets(world, 0, (), "") if s.text] + world_public_texts(world)
        texts += meanings(uncoverables(world))  # what the engine judges actions by (bot.engine.secrets.reveals)
        warming = asyncio.create_task(self._warm(self.meaning, world.id, texts), name=f"warm-{world.id}")
        self._warming[world.id] = (world, warming)

    async def _warm(self, meaning: MeaningIndex, world_id: str, texts: list[str]) -> None:
        try:
            await meaning.vectors_of(texts)
        except Exception as exc:  # the first reply embeds them then, or the guard goes by words
            log.warning("Embedding the secrets of world %s failed (%s)", world_id, exc)

    async def close(self) -> None:
        for _, task in self._warming.values():
            task.cancel()
        await asyncio.gather(*(task for _, task in self._warming.values()), return_exceptions=True)
        self._warming.clear()

    async def for_turn(
        self, game: Game, world: World, unlocked: str, earned: Mapping[str, frozenset[str]] | None = None,
        earned_told: int = 2, uncovered: frozenset[str] | None = None,
    ) -> TurnGuard:  # fmt: skip
        """The guard for a reply; ``unlocked`` is the turn's public actions (they may open a truth by a word of
        its ``unlocked_by``), ``uncovered`` what the engine judged the players uncovered, ``earned`` the clues the
        actions earn (see :class:`TurnGuard`)."""
        state = await self.store.memory_state(game.id)
        secrets = guarded_world_secrets(
            world, state.chapter_index, state.beats_done, unlocked, uncovered or frozenset()
        )
        entries = await self.store.private_entries(game.id, PRIVATE_ENTRIES)
        public = self._public_stems.get(world.id)
        if public is None or public[0] is not world:
            public = self._public_stems[world.id] = (world, world_public_stems(world), world_public_texts(world))
        private = private_secrets(entries, await self.store.player_memories(game.id))
        if uncovered is not None:
            private = delivered_clue_runs(private, entries, world_clues(world), public[1])
        secrets += private
        secrets.append(prompt_secret())
        return TurnGuard(
            self.store,
            game,
            Guard(secrets, *self._world_public(world)),
            self.meaning,
            public[1],
            public[2],
            earned,
            earned_told,
            never_held=uncovered is not None,  # the engine holds the secrets: what is guarded was never told
            never_read=world_clues(world) if uncovered is not None else (),
        )

    def _world_public(self, world: World) -> tuple[set[tuple[str, ...]], list[frozenset[str]]]:
        cached = self._public_runs.get(world.id)
        if cached is None or cached[0] is not world:
            cached = (world, world_public_runs(world), world_public_sentences(world))
            self._public_runs[world.id] = cached
        return cached[1], cached[2]
