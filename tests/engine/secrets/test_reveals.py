"""Tests of bot.engine.secrets.reveals: what a turn's actions uncover (F39), kept with the condition that opened
it, what the narrator is told of it, and how a game's admins read it with /recall."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import numpy as np

from bot.engine import Engine
from bot.engine.secrets.reveals import Reveals, reveal_notes, shown
from bot.store import EntryKind, Game, LogEntry, NewEntry, NewReveal, Player, RevealRecord, Visibility
from tests.conftest import FIXTURES

LIGHTHOUSE = (FIXTURES / "worlds" / "lighthouse.yaml").read_text()

# The test world with a beat finished by words, a truth waiting on that beat, one found by meaning, and a boatman
# who gives way when spoken to about the oil, or when his boat is searched by someone who rolled well.
COVE = (
    LIGHTHOUSE.replace(
        "        description: The players land on the rock.\n",
        "        description: The players land on the rock.\n"
        "        done_when:\n"
        '          - words: ["land|step", "rock|ashore"]\n',
    )
    .replace(
        "        description: The lamp burns again.\n",
        "        description: The lamp burns again.\n"
        "        done_when:\n"
        '          - words: ["lamp", "light|relight"]\n',
    )
    .replace(
        "    hides:\n      - He sold the keeper's oil to smugglers.\n",
        "    hides:\n"
        "      - text: He sold the keeper's oil to smugglers.\n"
        "        uncovered_by:\n"
        '          - to: wren\n            words: ["oil"]\n'
        "      - text: He keeps a pistol under the thwart of his boat.\n"
        "        uncovered_by:\n"
        '          - words: ["boat|thwart"]\n            roll: 15\n',
    )
    .replace(
        "lore:\n",
        "  - id: wreck\n"
        "    text: A wreck lies on the reef, its hold full of oil drums.\n"
        "    uncovered_by:\n"
        "      - after: [land]\n"
        "  - id: smugglers\n"
        "    text: The smugglers meet at the lighthouse on moonless nights.\n"
        "    uncovered_by:\n"
        "      - meaning: asks who comes to the rock at night\n"
        "lore:\n",
    )
)


async def _table(engine: Engine, world: str = "lighthouse", *names: str) -> tuple[Game, list[Player]]:
    if world == "cove":
        (engine.worlds.directory / "cove.yaml").write_text(COVE)
        engine.worlds.reload()
    game = (await engine.start_game("chan", world)).game
    players = [await engine.join(game.id, name.lower(), name) for name in names or ("Maya", "Tom")]
    return await engine.store.game(game.id), players


async def _entry(
    engine: Engine, game: Game, player: Player, text: str, *, kind: EntryKind = EntryKind.ACTION,
    private: bool = False,
) -> LogEntry:  # fmt: skip
    visibility, visible_to = (Visibility.PRIVATE, (player.id,)) if private else (Visibility.PUBLIC, ())
    (entry,) = await engine.store.append(
        game.id,
        NewEntry(turn=game.turn + 1, kind=kind, author=player.name, player_id=player.id, content=text,
                 visibility=visibility, visible_to=visible_to),
    )  # fmt: skip
    return entry


async def _turn(engine: Engine, game: Game, player: Player, text: str, **how) -> list[NewReveal]:
    """One action, judged by the engine as a turn with that action alone; the turn is then closed."""
    action = await _entry(engine, game, player, text, **how)
    found = await engine.reveals.for_turn(game, action, [action])
    await engine.store.append(game.id, NewEntry(turn=action.turn, kind=EntryKind.GM, author="GM", content="Hm."),
                              turn_done=action.turn)  # fmt: skip
    return found


async def test_an_action_meeting_a_truths_words_uncovers_it_for_good_and_says_which_words(engine: Engine):
    game, (maya, tom) = await _table(engine)
    found = await _turn(engine, game, maya, "I climb down and search the sea cave.")
    assert found == [NewReveal(ref="truth:keeper-alive", why="words: cave + search", lasts="game", player_id=maya.id)]
    (kept,) = await engine.store.reveals(game.id)
    assert (kept.ref, kept.player_id, kept.turn) == ("truth:keeper-alive", maya.id, 1)
    assert await engine.reveals.uncovered(game.id) == {"truth:keeper-alive"}

    game = await engine.store.game(game.id)
    assert await _turn(engine, game, tom, "I search the caves as well.") == [], "uncovered once, for good"
    assert len(await engine.store.reveals(game.id)) == 1


async def test_an_action_that_misses_a_word_group_uncovers_nothing(engine: Engine):
    game, (maya, _) = await _table(engine)
    assert await _turn(engine, game, maya, "I stare at the sea cave from the landing stage.") == []
    assert await _turn(engine, game, maya, "I search the cottage.") == []
    assert await engine.store.reveals(game.id) == []
    assert await engine.reveals.uncovered(game.id) == frozenset()


async def test_a_turn_answered_again_gets_what_it_uncovered_the_first_time_and_keeps_it_once(engine: Engine):
    game, (maya, _) = await _table(engine)
    action = await _entry(engine, game, maya, "I explore the cave under the tower.")
    first = await engine.reveals.for_turn(game, action, [action])
    again = await engine.reveals.for_turn(game, action, [action])
    assert again == first and [r.ref for r in first] == ["truth:keeper-alive"]
    assert len(await engine.store.reveals(game.id, action.id)) == 1


async def test_a_whispered_or_deleted_action_opens_nothing_for_the_table(engine: Engine):
    game, (maya, tom) = await _table(engine)
    assert await _turn(engine, game, maya, "I search the sea cave.", private=True) == []
    game = await engine.store.game(game.id)
    action = await _entry(engine, game, tom, "I search the sea cave.")
    await engine.store.delete_entry(action.id)
    deleted = await engine.store.entry(action.id)
    assert await engine.reveals.for_turn(game, deleted, [deleted]) == []
    assert await engine.store.reveals(game.id) == []


async def test_every_public_action_of_a_round_is_judged_and_the_reveals_kept_with_the_last(engine: Engine):
    game, (maya, tom) = await _table(engine)
    first = await _entry(engine, game, maya, "I read the last page of the log: which ship does it name?")
    last = await _entry(engine, game, tom, "I search the cave below.")
    found = await engine.reveals.for_turn(game, last, [first, last])
    assert [(r.ref, r.lasts, r.player_id) for r in found] == [
        ("clue:log-book", "player", maya.id),
        ("truth:keeper-alive", "game", tom.id),
    ]
    assert {r.entry_id for r in await engine.store.reveals(game.id)} == {last.id}
    assert found[0].why.startswith("words of the clue: ")


async def test_a_clue_goes_to_the_first_player_who_earns_it_and_to_no_one_after(engine: Engine):
    game, (maya, tom) = await _table(engine)
    (clue,) = await _turn(engine, game, maya, "I read the last page of the log book. What ship does it name?")
    assert (clue.ref, clue.lasts, clue.player_id) == ("clue:log-book", "player", maya.id)
    assert clue.why == "words of the clue: last + name + page + ship"
    game = await engine.store.game(game.id)
    assert await _turn(engine, game, tom, "I read the last page too and look for the ship it names.") == []
    assert await engine.reveals.uncovered(game.id) == frozenset(), "a clue is its player's, not uncovered for good"


async def test_finishing_a_beat_marks_it_done_and_opens_at_once_what_waits_on_it(engine: Engine):
    game, (maya,) = await _table(engine, "cove", "Maya")
    found = await _turn(engine, game, maya, "I step ashore onto the rock.")
    assert [(r.ref, r.why) for r in found] == [("beat:land", "words: step + rock"), ("truth:wreck", "after land")]
    assert (await engine.store.memory_state(game.id)).beats_done == ("land",)
    assert await engine.reveals.uncovered(game.id) == {"beat:land", "truth:wreck"}


async def test_a_beat_of_a_later_chapter_is_not_finished_while_its_chapter_waits(engine: Engine):
    game, (maya,) = await _table(engine, "cove", "Maya")
    assert await _turn(engine, game, maya, "I relight the lamp at the top of the tower.") == []
    assert (await engine.store.memory_state(game.id)).beats_done == ()


async def test_an_npc_gives_way_to_an_action_addressed_to_them_named_or_still_talked_to(engine: Engine):
    game, (maya, tom) = await _table(engine, "cove")
    assert await _turn(engine, game, maya, "I ask Wren about the weather.") == []
    game = await engine.store.game(game.id)
    assert await _turn(engine, game, tom, "I ask about the oil.") == [
        NewReveal(ref="npc:wren:hides:0", why="words: oil; to wren", lasts="game", player_id=tom.id)
    ], "Maya's last words were to Wren: Tom's question goes to him too"


async def test_an_action_said_to_no_npc_does_not_make_one_give_way(engine: Engine):
    game, (maya, _) = await _table(engine, "cove")
    assert await _turn(engine, game, maya, "I wonder aloud where the oil went.") == []


async def test_a_condition_on_a_roll_needs_the_acting_players_roll_this_turn(engine: Engine):
    game, (maya, tom) = await _table(engine, "cove")
    await _entry(engine, game, maya, "1d20 (9) = `9`", kind=EntryKind.ROLL)
    await _entry(engine, game, tom, "1d20 (18) = `18`", kind=EntryKind.ROLL)
    assert await _turn(engine, game, maya, "I search the boat.") == [], "Tom's good roll is not Maya's"
    game = await engine.store.game(game.id)
    await _entry(engine, game, maya, "1d20 (12) + 5 = `17`", kind=EntryKind.ROLL)
    (found,) = await _turn(engine, game, maya, "I search the boat again.")
    assert (found.ref, found.why) == ("npc:wren:hides:1", "words: boat; rolled 17 (needs 15)")


class _Meaning:
    """The meaning index as the reveals ask it: on, and how close each action is to each condition."""

    on = True

    def __init__(self, score: float | None):
        self.score = score
        self.asked: list[tuple[list[str], list[str]]] = []

    async def closeness(self, sentences, secrets):
        self.asked.append((list(sentences), list(secrets)))
        if self.score is None:
            raise RuntimeError("the embedding model went away")
        return np.full((len(sentences), len(secrets)), self.score)


async def test_an_action_close_enough_in_meaning_uncovers_what_waits_on_that_meaning(engine: Engine):
    game, (maya, _) = await _table(engine, "cove")
    meaning = _Meaning(0.9)
    reveals = Reveals(engine.store, engine.world_of, engine.memory.cast, meaning)
    action = await _entry(engine, game, maya, "Who visits this place after dark?")
    (found,) = await reveals.for_turn(game, action, [action])
    assert (found.ref, found.why) == ("truth:smugglers", "meaning 0.90: asks who comes to the rock at night")
    assert meaning.asked == [(["Who visits this place after dark?"], ["asks who comes to the rock at night"])]


async def test_an_action_far_in_meaning_or_a_failing_embedder_leaves_the_words_alone_to_judge(engine: Engine, caplog):
    game, (maya, tom) = await _table(engine, "cove")
    far = Reveals(engine.store, engine.world_of, engine.memory.cast, _Meaning(0.2))
    action = await _entry(engine, game, maya, "Who visits this place after dark?")
    assert await far.for_turn(game, action, [action]) == []
    failing = Reveals(engine.store, engine.world_of, engine.memory.cast, _Meaning(None))
    action = await _entry(engine, game, tom, "I step ashore onto the rock.")
    with caplog.at_level(logging.WARNING, logger="bot.engine.secrets.reveals"):
        found = await failing.for_turn(game, action, [action])
    assert {r.ref for r in found} == {"beat:land", "truth:wreck"}, "the words still hold"
    assert any("by its words alone this turn" in r.getMessage() for r in caplog.records)


async def test_uncovered_through_an_entry_counts_only_what_was_uncovered_by_then(engine: Engine):
    game, (maya, tom) = await _table(engine, "cove")
    first = await _entry(engine, game, maya, "I step ashore onto the rock.")
    await engine.reveals.for_turn(game, first, [first])
    second = await _entry(engine, game, tom, "Wren, what happened to the oil?")
    await engine.reveals.for_turn(game, second, [second])
    assert await engine.reveals.uncovered(game.id, first.id) == {"beat:land", "truth:wreck"}
    assert await engine.reveals.uncovered(game.id) == {"beat:land", "truth:wreck", "npc:wren:hides:0"}
    assert await engine.reveals.uncovered(game.id, first.id - 1) == frozenset()


def _player(player_id: int, name: str) -> Player:
    return Player(id=player_id, game_id=1, user_key=name.lower(), name=name, joined_at=datetime.now(UTC))


async def test_the_narrator_is_told_the_worlds_words_for_what_was_uncovered_and_only_that_a_clue_was_noticed(
    engine: Engine,
):
    await _table(engine, "cove")
    world = engine.worlds.get("cove")
    maya, tom = _player(1, "Maya"), _player(2, "Tom")
    reveals = [
        NewReveal(ref="truth:keeper-alive", why="w", player_id=1),
        NewReveal(ref="npc:wren:hides:0", why="w", player_id=2),
        NewReveal(ref="beat:land", why="w", player_id=1),
        NewReveal(ref="clue:log-book", why="w", lasts="player", player_id=2),
    ]
    notes = reveal_notes(world, reveals, [maya, tom])
    assert [n.ref for n in notes] == ["truth:keeper-alive", "npc:wren:hides:0", "beat:land", "clue:log-book"]
    truth, npc, beat, clue = (n.text for n in notes)
    assert truth == (
        "Maya's action uncovers this; the reply shows what they find, in the story's words: "
        "The keeper is alive, hiding in the sea cave beneath the rock."
    )
    assert npc == "Wren Tally gives way to Tom and may now say it: He sold the keeper's oil to smugglers."
    assert beat == "Play this out now as a scene, in your own words, the people there speaking: " + (
        "The players land on the rock."
    )
    assert clue.startswith("Tom notices something only they see;")
    assert "ship" not in clue, "the clue's words go to its player alone, never to the narrator"


async def test_a_reveal_the_world_no_longer_has_is_told_nothing_and_an_unknown_player_is_the_player(engine: Engine):
    world = engine.worlds.get("lighthouse")
    gone = [
        NewReveal(ref="truth:no-such", why="w"),
        NewReveal(ref="npc:wren:hides:5", why="w"),
        NewReveal(ref="npc:nobody:hides:0", why="w"),
        NewReveal(ref="beat:no-such", why="w"),
        NewReveal(ref="lore:gull-rock", why="w"),
    ]
    assert reveal_notes(world, gone, []) == []
    (note,) = reveal_notes(world, [NewReveal(ref="truth:keeper-alive", why="w", player_id=9)], [])
    assert note.text.startswith("The player's action uncovers this;")


def test_recall_shows_each_reveal_with_its_turn_scope_earner_and_why():
    now = datetime.now(UTC)
    records = [
        RevealRecord(id=1, game_id=1, turn=2, entry_id=5, ref="truth:keeper-alive", lasts="game", player_id=1,
                     why="words: cave + search", created_at=now),
        RevealRecord(id=2, game_id=1, turn=3, entry_id=8, ref="clue:log-book", lasts="player", player_id=2,
                     why="words of the clue: last + page + ship", created_at=now),
        RevealRecord(id=3, game_id=1, turn=4, entry_id=9, ref="truth:keeper-alive", lasts="reply", player_id=7,
                     why="words: cave", created_at=now),
        RevealRecord(id=4, game_id=1, turn=5, entry_id=11, ref="beat:land", lasts="later", why="w", created_at=now),
    ]  # fmt: skip
    assert shown(records, [_player(1, "Maya"), _player(2, "Tom")]) == [
        "turn 2: truth:keeper-alive (for good), by Maya's action: words: cave + search",
        "turn 3: clue:log-book (to Tom alone), by Tom's action: words of the clue: last + page + ship",
        "turn 4: truth:keeper-alive (for that reply), by someone's action: words: cave",
        "turn 5: beat:land (later), by someone's action: w",
    ]
    assert shown([], []) == []
