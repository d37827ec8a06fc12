"""Tests of bot.engine.turn.drafting: a turn's reply made ready to store. A public reply that gives a secret away
is written once more with a warning and what still leaks is cut; a secret action's answer goes whole to its
player; a private aside loses what is private to other players."""

from __future__ import annotations

from bot.engine import Engine
from bot.engine.secrets.guard import TurnGuard
from bot.engine.turn.drafting import WITHHELD, Drafted, Drafts, guard_note
from bot.engine.turn.narration import REGENERATE, Narration, Narrator, Request, Shaping
from bot.memory.private import PrivateNote
from bot.model import ScriptedModel
from bot.store import EntryKind, Game, NewEntry, Player, Visibility

SECRET = "The keeper is alive, hiding in the sea cave beneath the rock."
TOMS = "The brass compass in your pocket points always toward the drowned chapel bell."
CALM = "Gulls wheel over the landing stage while the tide slaps at the stones below the tower."


async def _turn(
    engine: Engine, text: str = "I look around.", channel: str = "chan"
) -> tuple[Game, list[Player], Request, TurnGuard]:
    """A game with Maya and Tom, Maya's action, the request for its reply and the guard it passes."""
    game = (await engine.start_game(channel, "lighthouse")).game
    maya = await engine.join(game.id, "maya", "Maya")
    tom = await engine.join(game.id, "tom", "Tom")
    await engine.settled(game.id)
    game = await engine.store.game(game.id)
    (action,) = await engine.store.append(
        game.id,
        NewEntry(turn=game.turn + 1, kind=EntryKind.ACTION, author="Maya", player_id=maya.id, content=text),
    )
    context = await engine.prompts.build(game, action, remember=False)
    shaping = Shaping(["Maya", "Tom"], [text], [], enabled=False)
    request = Request(game.id, action.turn, context, 128, shaping)
    guard = await engine.guards.for_turn(game, engine.world_of(game), "")
    return game, [maya, tom], request, guard


def _drafts(engine: Engine) -> Drafts:
    return Drafts(Narrator(engine.worker, engine.sessions))


async def test_a_reply_that_keeps_the_secrets_is_ready_as_written_with_its_asides_apart(
    engine: Engine, scripted: ScriptedModel
):
    game, _, request, guard = await _turn(engine)
    written = f"{CALM} [[to Tom: You notice a crack in the lamp glass.]]"
    scripted.enqueue(written)
    streamed: list[str] = []
    calls = len(scripted.calls)
    drafted = await _drafts(engine).public(request, streamed.append, guard)
    assert isinstance(drafted, Drafted)
    assert drafted.public == CALM
    assert drafted.notes == [PrivateNote("Tom", "You notice a crack in the lamp glass.")]
    assert drafted.draft is None and drafted.clues == ()
    assert drafted.raw == written and drafted.narration.text == written
    assert "".join(streamed).strip() == CALM, "the channel sees the public part only"
    assert [c.kind for c in scripted.calls[calls:]] == ["stream"], "asked once"
    assert await engine.store.leak_hits(game.id) == []


async def test_a_reply_that_gives_a_secret_away_is_written_again_with_a_warning_and_the_leak_recorded(
    engine: Engine, scripted: ScriptedModel
):
    game, _, request, guard = await _turn(engine)
    scripted.enqueue(f"{CALM} {SECRET}")
    scripted.enqueue(CALM)
    calls = len(scripted.calls)
    drafted = await _drafts(engine).public(request, None, guard)
    assert drafted.public == CALM and drafted.raw == CALM
    assert drafted.draft == f"{CALM} {SECRET}", "the stopped draft is kept for the admins"
    assert drafted.narration.text == f"{CALM} {SECRET}", "the narration is the first call's"
    first, again = [c for c in scripted.calls[calls:] if c.kind == "stream"]
    assert REGENERATE not in first.prompt_text and again.messages[-1].content.endswith(REGENERATE)
    hits = await engine.store.leak_hits(game.id)
    assert hits and {h.action for h in hits} == {"regenerated"} and {h.ref for h in hits} == {"truth:keeper-alive"}


async def test_a_secret_that_leaks_again_is_cut_and_a_reply_left_empty_says_the_gm_keeps_it(
    engine: Engine, scripted: ScriptedModel
):
    game, _, request, guard = await _turn(engine)
    scripted.enqueue(f"{CALM} {SECRET}")
    scripted.enqueue(f"{SECRET} {CALM}")
    drafted = await _drafts(engine).public(request, None, guard)
    assert drafted.public == CALM, "the sentence that leaks is cut, the rest kept"
    assert drafted.raw == f"{SECRET} {CALM}", "the model's cache holds what it wrote"
    assert {h.action for h in await engine.store.leak_hits(game.id)} == {"regenerated", "removed"}

    game, _, request, guard = await _turn(engine, "I ask where the keeper is.", "other")
    scripted.enqueue(SECRET)
    scripted.enqueue(SECRET)
    drafted = await _drafts(engine).public(request, None, guard)
    assert drafted.public == WITHHELD == "(The GM keeps that to themselves.)"


async def test_a_secret_actions_answer_goes_whole_to_its_player_with_only_their_own_asides(
    engine: Engine, scripted: ScriptedModel
):
    _, (maya, _), request, _ = await _turn(engine, "I hide the key in my boot.")
    scripted.enqueue("Nobody sees you. [[to Maya: The key is warm.]] [[to Tom: You hear a boot scrape.]]")
    drafted = await _drafts(engine).secret(request, maya)
    assert drafted.public == "" and drafted.draft is None
    assert drafted.notes == [PrivateNote("Maya", "Nobody sees you. The key is warm.")]
    assert drafted.raw == drafted.narration.text and "Tom" in drafted.raw


async def test_an_aside_that_keeps_the_secrets_is_sent_as_it_is(engine: Engine):
    game, (maya, _), request, guard = await _turn(engine)
    note = PrivateNote("Maya", "You notice a crack in the lamp glass.")
    assert await guard_note(guard, request.turn, maya, note) is note
    assert await engine.store.leak_hits(game.id) == []


async def test_an_aside_loses_what_is_private_to_another_player_and_one_left_empty_is_not_sent_unless_it_answers(
    engine: Engine,
):
    game, (maya, tom), request, _ = await _turn(engine)
    await engine.store.append(
        game.id,
        NewEntry(turn=0, kind=EntryKind.GM, author="GM to Tom", content=TOMS, visibility=Visibility.PRIVATE,
                 visible_to=(tom.id,)),
    )  # fmt: skip
    guard = await engine.guards.for_turn(game, engine.world_of(game), "")
    assert await guard_note(guard, request.turn, tom, PrivateNote("Tom", TOMS)) == PrivateNote("Tom", TOMS)
    assert await engine.store.leak_hits(game.id) == [], "Tom may be told again what he was told"
    partly = PrivateNote("Maya", f"You notice a crack in the lamp glass. {TOMS}")
    assert await guard_note(guard, request.turn, maya, partly) == PrivateNote(
        "Maya", "You notice a crack in the lamp glass."
    )
    hits = await engine.store.leak_hits(game.id)
    assert hits and {h.action for h in hits} == {"removed"}
    assert all(h.audience == "DM to Maya" for h in hits)
    only = PrivateNote("Maya", TOMS)
    assert await guard_note(guard, request.turn, maya, only) is None, "a DM saying only that the GM keeps back"
    assert await guard_note(guard, request.turn, maya, only, answer=True) == PrivateNote("Maya", WITHHELD)


async def test_a_private_clue_told_in_public_is_named_once_for_the_engine_to_give_its_player_instead(
    engine: Engine, scripted: ScriptedModel
):
    _, _, request, guard = await _turn(engine, "I read the log book.")
    clue = "The last page of the log names a ship that does not exist."
    scripted.enqueue(f"{CALM} {clue}")
    scripted.enqueue(f"{clue} {CALM}")
    drafted = await _drafts(engine).public(request, None, guard)
    assert drafted.clues == ("log-book",)
    assert drafted.public == CALM


class _Told:
    """A narrator whose reply said nothing of the brief twice: the notes' answer told after it (see
    Narrator._told_from_notes), or, ``told=False``, the same words written by the model."""

    def __init__(self, said: str, note: str, *, told: bool = True):
        self.said, self.note, self.told = said, note, told

    async def narrate(self, request, on_text=None, *, guard=None) -> Narration:
        text = f"{self.said}\n\n{self.note}"
        return Narration(text, 0.0, None, told_from_notes=self.note if self.told else "")


async def test_the_notes_answer_told_after_a_reply_is_not_taken_for_a_private_message_that_says_it_too(
    engine: Engine,
):
    """bench change, the default GM: its aside to Maya said where the red signal flag was, and the notes' answer
    told after the next reply, built from what the whole table had read, was stopped as her message. The model's
    own words saying the same are still stopped."""
    game, (maya, _), request, guard = await _turn(engine, "Where is the red signal flag?")
    aside = "The red signal flag hangs torn on the boathouse door, its pole snapped."
    await engine.store.append(game.id, NewEntry(
        turn=request.turn, kind=EntryKind.GM, author="GM", content=aside, visibility=Visibility.PRIVATE,
        visible_to=(maya.id,),
    ))  # fmt: skip
    guard = await engine.guards.for_turn(game, engine.world_of(game), "")
    note = "(From earlier in the game: red signal flag, location: torn on the boathouse door.)"
    drafted = await Drafts(_Told(CALM, note)).public(request, None, guard)  # type: ignore[arg-type]
    assert drafted.draft is None and drafted.public == f"{CALM}\n\n{note}"
    assert await engine.store.leak_hits(game.id) == []
    drafted = await Drafts(_Told(CALM, note, told=False)).public(request, None, guard)  # type: ignore[arg-type]
    assert drafted.public == CALM, "written by the model, it tells Maya's message to the channel"
