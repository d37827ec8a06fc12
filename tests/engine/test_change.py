"""Memory that follows change (F40): a value moved in play is current in the prompt, older ones marked older,
whether or not the facts job catches the move; an edit or a retry takes the change back."""

from __future__ import annotations

from bot.engine import Engine
from bot.model import ScriptedModel
from bot.model.scripted import found_nothing

# What the GM says once the queue is spent: enough to stand as a reply.
WIND = "The wind rises and moans around the lantern gallery; somewhere below, a loose shutter bangs. What do you do?"


def _gm(scripted: ScriptedModel, *replies: str) -> None:
    """The GM says these, in order; the background jobs find nothing (no fact from the facts job)."""
    queue = list(replies)

    def answer(messages):
        system = messages[0].content
        if (quiet := found_nothing(messages)) is not None:
            return quiet
        if system.startswith("You keep the private memory"):
            return '{"summary": "They look around.", "facts": []}'
        if system.startswith("You keep the memory"):
            return "The players looked around; nothing was settled."
        return queue.pop(0) if queue else WIND

    scripted.default = answer


async def _start(engine: Engine):
    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.join(game.id, "maya", "Maya")
    await engine.warmups.idle()  # its read-ahead done, each reply below answers its own action
    return game


async def test_a_move_found_in_play_is_current_and_the_old_place_is_marked_older(engine: Engine, scripted):
    game = await _start(engine)
    _gm(scripted, "The gulls wheel overhead, crying, as Maya kneels on the wet step; the doormat is heavy with salt "
        "spray, and nobody sees the key go. What now?",
        "The gulls cry and quarrel over a fish head on the rocks below, their voices thin against the surf.",
        "Tom carries the brass key down to the cellar. The door creaks shut behind him, and his lamplight fades on "
        "the stairs.")  # fmt: skip
    await engine.act(game.id, "maya", "I hide the brass key under the doormat.")
    await engine.act(game.id, "maya", "I listen to the gulls.")
    await engine.act(game.id, "maya", "I watch Tom.")
    await engine.memory.idle(game.id)
    [fact] = [f for f in await engine.facts(game.id) if f.subject == "brass key"]
    assert fact.value == "in the cellar", "found in play: the facts job found nothing"
    asked = await engine.preview(game.id, "Maya", "Where is the brass key now?")
    prompt = "\n".join(m.content for m in asked.messages)
    assert "[fact, now] brass key, location: in the cellar (before: under the doormat until turn 3)" in prompt
    for line in prompt.splitlines():
        if "doormat" in line and line.startswith("- "):
            assert any(m in line for m in ("before:", "since changed", "until turn")), f"shown as current: {line}"


async def test_an_edit_or_a_retry_takes_the_change_back(engine: Engine, scripted):
    game = await _start(engine)
    rain = "The rain falls harder, drumming on the lamp-room glass, and the gulls huddle together on the gallery rail."
    _gm(scripted, "The key is now in the cellar, hung on a rusty nail above the coal chute where the damp has crept up "
        "the wall.", "The key is now in the well, glinting on a ledge just above the black water and far out of reach.",
        rain)  # fmt: skip
    await engine.act(game.id, "maya", "I look for the key.")
    moved = await engine.act(game.id, "maya", "I look again.")
    [fact] = [f for f in await engine.facts(game.id) if f.subject == "key"]
    assert fact.value == "in the well"
    retried = await engine.retry(game.id, user_key="maya")  # the GM writes the turn again: nothing moves
    assert retried.text == rain
    [fact] = [f for f in await engine.facts(game.id) if f.subject == "key"]
    assert fact.value == "in the cellar", "the value before the retried reply holds again"
    await engine.edit_entry(game.id, moved.action.id, "I put the key in the drawer.", user_key="maya")
    [fact] = [f for f in await engine.facts(game.id) if f.subject == "key"]
    assert fact.value == "in the drawer", "what the edited action says now"


async def test_a_summary_is_told_the_values_that_changed(engine: Engine, scripted):
    game = await _start(engine)
    _gm(scripted, "The swan candlestick now stands on the chapel altar, its wax dripping onto the cracked stone while "
        "the flame shivers.", "Pip carries the swan candlestick into the vestry. He glances back once, then pulls the "
        "narrow oak door shut behind him.")  # fmt: skip
    await engine.act(game.id, "maya", "I look at the altar.")
    await engine.act(game.id, "maya", "I follow Pip.")
    for n in range(4):  # the protected tail: the turns above are the ones folded
        await engine.act(game.id, "maya", f"I wait a while ({n}).")
    await engine.memory.idle(game.id)
    await engine.compact(game.id)
    summaries = [c for c in scripted.calls if c.messages[0].content.startswith("You keep the memory")]
    told = [c.messages[-1].content for c in summaries if "chapel altar" in c.messages[-1].content]
    assert told and all("Values that have changed, as they are now" in text for text in told)
    assert all("swan candlestick, location: in the vestry (before: on the chapel altar" in text for text in told)


async def test_an_answer_that_gives_a_questions_own_place_back_moves_nothing(engine: Engine, scripted):
    """A question's premise is not an event: "Which servant carries the key to the wine vault?" answered "Wren
    Tally carries the key to the wine vault." once made the wine vault the key's place. A place the question did
    not name is a move, question or not. (The question names a key, so the brief beside it tells the brass key's
    place; the answer says nothing of it and is asked for once more, and says the same again.)"""
    game = await _start(engine)
    premise = (
        "Wren Tally carries the key to the wine vault. He is the only servant trusted below stairs, and he wears it "
        "on a cord around his neck."
    )
    _gm(scripted, "The gulls cry overhead as you stoop; the doormat settles back over the brass key, and nobody on the "
        "cliff path looks your way.", premise, premise, "Wren carries the brass key to the boathouse. Through the "
        "salt-streaked window you see his lantern bob along the jetty.")  # fmt: skip
    await engine.act(game.id, "maya", "I hide the brass key under the doormat.")
    await engine.act(game.id, "maya", "Which servant carries the key to the wine vault?")
    [fact] = [f for f in await engine.facts(game.id) if f.subject == "brass key"]
    assert fact.value == "under the doormat", "the answer repeated the question's place"
    await engine.act(game.id, "maya", "Where did Wren go?")
    [fact] = [f for f in await engine.facts(game.id) if f.subject == "brass key"]
    assert fact.value == "in the boathouse"


async def test_a_reply_said_again_moves_nothing_again(engine: Engine, scripted):
    """The 1.5B GM, asked about a bird etched in a watch, repeated its last reply ("Wren Tally carries the key to
    the wine vault."), and the key moved there in the memory."""
    game = await _start(engine)
    again = (
        "Wren carries the brass key to the boathouse. Through the salt-streaked window you see his lantern bob along "
        "the jetty."
    )
    drawer = "Wren puts the brass key in the drawer. The lock clicks shut, and he glances at the window before he goes."
    _gm(scripted, again, drawer, again, again)  # asked again, it says it again
    for action in ("I watch Wren.", "I follow Wren.", "What bird is etched in the watch?"):
        result = await engine.act(game.id, "maya", action)
    assert result.text == again
    [fact] = [f for f in await engine.facts(game.id) if f.subject == "brass key"]
    assert fact.value == "in the drawer", "the repeated sentence is no second move"


async def test_a_question_in_other_words_is_told_the_current_value_of_the_thing_it_means(
    store, worker, scripted, worlds_dir, real_embedder
):
    """A question that names no word of its thing ("the boatman" for the ferryman) is told the thing's value now,
    beside it, found by meaning; a question about something else, and an action that asks nothing, are not."""
    from bot.engine import EngineConfig
    from bot.worlds import WorldLibrary
    from tests.conftest import EAGER_FOLDING

    config = EngineConfig(n_ctx=2048, reply_tokens=128, memory=EAGER_FOLDING)
    engine = Engine(store, worker, WorldLibrary(worlds_dir), config, embedder=real_embedder)
    try:
        game = await _start(engine)
        _gm(
            scripted,
            "The ferryman works for Ashby, everyone says. He rows out at dawn in all weathers, and nobody in the "
            "village crosses him.",
            "The gulls cry over the rocks, and far below the tide sucks and booms against the landing stage.",
            "The ferryman now works for the Crown. A grey revenue cutter rides at anchor past the reef, and his skiff "
            "is tied alongside.",
            "Wren burns the captain's letter in the kitchen stove. The paper curls black, and he will not meet your "
            "eyes.",
        )  # fmt: skip
        for action in ("I ask about the ferry.", "I listen.", "I watch the water.", "I go to the kitchen."):
            await engine.act(game.id, "maya", action)
        await engine.memory.idle(game.id)
        facts = {(f.subject, f.attribute): f.value for f in await engine.facts(game.id) if f.active}
        assert facts[("ferryman", "allegiance")] == "the Crown" and facts[("captain's letter", "state")] == "burned"

        def brief(context) -> str:
            return context.messages[-1].content.split("The notes from earlier in the game say:")[-1]

        asked = await engine.preview(game.id, "Maya", "Whose side is the boatman on these days?")
        assert "ferryman, allegiance: the Crown (before: Ashby" in brief(asked)
        asked = await engine.preview(game.id, "Maya", "What became of the skipper's correspondence?")
        assert "captain's letter, state: burned" in brief(asked)
        for other in ("Which physician looked after the skipper when he was sick?", "I wave to the boatman."):
            told = (await engine.preview(game.id, "Maya", other)).messages[-1].content
            assert "[fact, now]" not in told.split(other)[-1], other
    finally:
        await engine.close()


async def test_a_question_in_other_words_finds_its_thing_by_the_story_told_of_it(
    store, worker, scripted, worlds_dir, real_embedder
):
    """A question that comes near none of the things' names, but near what the turns that changed one told of it
    ("the stake the jarl lost at dice" of the ivory game board Jarl Ragnvald lost so), is told that thing's value
    now."""
    from bot.engine import EngineConfig
    from bot.engine.upkeep import memory
    from bot.worlds import WorldLibrary
    from tests.conftest import EAGER_FOLDING

    config = EngineConfig(n_ctx=2048, reply_tokens=128, memory=EAGER_FOLDING)
    engine = Engine(store, worker, WorldLibrary(worlds_dir), config, embedder=real_embedder)
    try:
        game = await _start(engine)
        _gm(
            scripted,
            "Jarl Ragnvald loses the ivory game board to the skald Eyvind, wagered at dice and lost.",
            "The gulls cry over the rocks, and far below the tide sucks and booms against the landing stage.",
            "Eyvind gives the ivory game board to his bride Thora as a morning gift.",
        )  # fmt: skip
        for action in ("I watch the dice.", "I listen.", "I watch the skald."):
            await engine.act(game.id, "maya", action)
        await engine.memory.idle(game.id)
        question = "Who ended up with the stake the jarl lost at dice?"
        embedded: list[str] = []  # what the question's turn embeds: what the turns told was embedded between them
        embed = real_embedder.embed
        real_embedder.embed = lambda texts, **kw: embedded.extend(texts) or embed(texts, **kw)  # type: ignore
        try:
            query = await engine.meaning.query(question)
            told = (await engine.preview(game.id, "Maya", question)).messages[-1].content
        finally:
            real_embedder.embed = embed  # type: ignore
        assert embedded == [question]
        [by_name] = await engine.meaning.lore_scores(["ivory game board"], query)
        assert by_name < memory.SUBJECT_BY_MEANING, "its name alone is too far from the question"
        _, brief = told.split("The notes from earlier in the game say:")
        assert "ivory game board, holder: his bride Thora" in brief
    finally:
        await engine.close()


async def test_a_thing_put_somewhere_is_no_longer_held_and_one_taken_no_longer_where_it_lay(engine: Engine, scripted):
    """bench change, the Tidewright chart: pocketed by Corwin Thale, then nailed above a tavern's hearth; with the
    holder and the place kept apart, "Tidewright chart, holder: Corwin Thale" stood as current beside its new
    place. A place and a holder said in one turn stand together."""
    game = await _start(engine)
    _gm(scripted, "First mate Corwin Thale pockets the Tidewright chart and keeps it buttoned inside his coat.",
        "The gulls cry and quarrel over a fish head on the rocks below, their voices thin against the surf.",
        "The Tidewright chart now hangs nailed above the hearth of the Cracked Bell tavern.",
        "Nell Pike pockets the Tidewright chart and walks out into the rain.")  # fmt: skip
    for action in ("I watch the mate.", "I listen to the gulls.", "I go into the tavern.", "I watch Nell."):
        await engine.act(game.id, "maya", action)
        await engine.memory.idle(game.id)
        facts = [(f.attribute, f.value) for f in await engine.facts(game.id) if f.subject == "Tidewright chart"]
        if action == "I go into the tavern.":
            assert facts == [("location", "above the hearth of the Cracked Bell tavern")], facts
    assert facts == [("holder", "Nell Pike")], "the hearth it was taken from is no longer where it is"
    asked = await engine.preview(game.id, "Maya", "Where is the Tidewright chart now?")
    prompt = "\n".join(m.content for m in asked.messages)
    history = "(before: above the hearth of the Cracked Bell tavern until turn 4; held by Corwin Thale until turn 3)"
    assert f"Nell Pike {history}" in prompt
