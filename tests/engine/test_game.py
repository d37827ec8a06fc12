from __future__ import annotations

import asyncio

import pytest

from bot.engine import Engine, ModelFailed
from bot.errors import UserError
from bot.model import ScriptedModel
from bot.store import EntryKind, Store

# A reply that says back the action it answers (the prompt's last line), in as many words as a GM's reply.
ECHO = "The wind drops, the gulls settle along the gallery rail, and the sea falls quiet in reply to"


def _echo(messages) -> str:
    return f"{ECHO} {messages[-1].content.splitlines()[-1]}"


async def _game_with(engine: Engine, channel: str = "chan", *names: str):
    started = await engine.start_game(channel, "lighthouse")
    for name in names or ("Maya",):
        await engine.join(started.game.id, name.lower(), name)
    return started.game


async def test_a_turn_stores_action_and_reply_and_returns_them(engine: Engine, scripted: ScriptedModel):
    reply = "The door groans open onto a stair of wet stone. Water drips somewhere below."
    scripted.enqueue(reply)
    game = await _game_with(engine)
    shown: list[str] = []
    result = await engine.act(game.id, "maya", "  I open the door.  ", message_id="m1", on_text=shown.append)

    assert result.turn == 1 and result.game.turn == 1
    assert result.text == reply
    # The reply streams a sentence at a time: each is checked by the leak guard before it is shown.
    assert shown == ["The door groans open onto a stair of wet stone. ", "Water drips somewhere below."]
    log = await engine.history(game.id, 50)
    assert [(e.kind, e.turn, e.author) for e in log] == [
        (EntryKind.GM, 0, "GM"),  # the opening scene
        (EntryKind.SYSTEM, 1, "system"),  # Maya joins
        (EntryKind.ACTION, 1, "Maya"),
        (EntryKind.GM, 1, "GM"),
    ]
    action = log[2]
    assert action.content == "I open the door." and action.message_id == "m1"
    assert action.player_id == (await engine.player(game.id, "maya")).id


async def test_the_prompt_holds_rules_world_history_and_the_action(engine: Engine, scripted: ScriptedModel):
    game = await _game_with(engine)
    scripted.enqueue(
        'Wren Tally stops coiling his rope and squints up at the dark tower. "The keeper? Kept to himself, mostly," '
        "he mutters, suddenly busy with a knot."
    )
    await engine.act(game.id, "maya", "I ask Wren about the keeper.")
    messages = scripted.last().messages
    assert messages[0].role == "system"
    assert "Never reveal a truth until the players find it." in messages[0].content
    assert "Gull Rock" in messages[0].content and "Wren Tally" in messages[0].content
    assert messages[-1].role == "user" and messages[-1].content.endswith("Maya: I ask Wren about the keeper.")
    assert any(m.role == "assistant" and "supply boat bumps" in m.content for m in messages)


async def test_turns_within_a_game_keep_their_order(engine: Engine, scripted: ScriptedModel):
    scripted.default = _echo
    game = await _game_with(engine, "chan", "Maya", "Tom")
    actions = [("maya", "I climb."), ("tom", "I wait."), ("maya", "I knock."), ("tom", "I shout.")]
    results = await asyncio.gather(*(engine.act(game.id, who, text) for who, text in actions))

    assert sorted(r.turn for r in results) == [1, 2, 3, 4]
    log = [e for e in await engine.history(game.id, 50) if e.kind in (EntryKind.ACTION, EntryKind.GM) and e.turn]
    # Each action is followed by the reply to it before the next action starts.
    for action, reply in zip(log[::2], log[1::2], strict=True):
        assert action.kind is EntryKind.ACTION and reply.kind is EntryKind.GM
        assert action.turn == reply.turn
        assert reply.content == f"{ECHO} {action.author}: {action.content}"
    assert [e.turn for e in log] == [1, 1, 2, 2, 3, 3, 4, 4]


async def test_two_games_play_at_once_without_mixing(engine: Engine, scripted: ScriptedModel):
    scripted.default = _echo
    one = await _game_with(engine, "one", "Maya")
    two = await _game_with(engine, "two", "Tom")

    async def play(game_id: int, who: str, count: int):
        for i in range(count):
            await engine.act(game_id, who, f"{who} move {i}")

    await asyncio.gather(play(one.id, "maya", 5), play(two.id, "tom", 5))
    for game, who, name in [(one, "maya", "Maya"), (two, "tom", "Tom")]:
        log = await engine.history(game.id, 100)
        actions = [e for e in log if e.kind is EntryKind.ACTION]
        assert [e.content for e in actions] == [f"{who} move {i}" for i in range(5)]
        assert all(e.author == name for e in actions)
        replies = [e.content for e in log if e.kind is EntryKind.GM][1:]
        assert replies == [f"{ECHO} {name}: {who} move {i}" for i in range(5)]
    # Neither game's prompt ever held the other's turns.
    for call in scripted.calls:
        text = call.prompt_text
        assert not ("maya move" in text and "tom move" in text)


async def test_bad_actions_are_refused_and_nothing_is_stored(engine: Engine, store: Store, scripted: ScriptedModel):
    game = await _game_with(engine)
    before = await store.log(game.id)
    with pytest.raises(UserError, match="Say what your character does"):
        await engine.act(game.id, "maya", "   \n ")
    with pytest.raises(UserError, match="2001 characters long; the limit is 2000"):
        await engine.act(game.id, "maya", "x" * 2001)
    with pytest.raises(UserError, match="Join the game first"):
        await engine.act(game.id, "stranger", "I steal the lamp.")
    assert await store.log(game.id) == before
    assert scripted.calls == []


async def test_an_action_of_exactly_the_limit_is_played(engine: Engine):
    game = await _game_with(engine)
    result = await engine.act(game.id, "maya", "y" * 2000)
    assert len(result.action.content) == 2000


async def test_a_failing_model_keeps_the_action_and_the_next_turn_answers_it(engine: Engine, scripted: ScriptedModel):
    game = await _game_with(engine)
    scripted.enqueue(RuntimeError("decode failed"))
    with pytest.raises(ModelFailed, match="your action is saved") as failed:
        await engine.act(game.id, "maya", "I light the lamp.")
    assert failed.value.turn == 1, "the turn the action is stored at, which a Retry answers"
    assert (await engine.store.game(game.id)).turn == 0
    result = await engine.act(game.id, "maya", "I try again.")
    assert result.turn == 1
    prompt = scripted.last().prompt_text
    assert "I light the lamp." in prompt and "I try again." in prompt


async def test_an_empty_reply_is_asked_for_once_more_and_never_stored(engine: Engine, scripted: ScriptedModel):
    game = await _game_with(engine)
    scripted.enqueue("   ", "   ")  # the reply rules ask once more before giving up
    with pytest.raises(ModelFailed, match="nothing to say"):
        await engine.act(game.id, "maya", "I listen.")
    assert [e.kind for e in await engine.history(game.id, 10)][-1] is EntryKind.ACTION
    await engine.memory.idle()
    scripted.enqueue("   ", "Waves break below.")
    result = await engine.act(game.id, "maya", "I listen again.")
    assert result.text == "Waves break below."
    assert "Write what happens when they do it (listen), in new words" in scripted.last().prompt_text


async def test_a_second_try_that_was_only_the_players_part_is_never_posted(engine: Engine, scripted: ScriptedModel):
    """What Qwen2.5 1.5B wrote as GM of a long game, twice: the player's own line. The reply rules take it out of
    both tries; the turn fails as an empty reply does instead of posting the player's line as the GM's."""
    game = await _game_with(engine, "chan", "Maya")
    scripted.enqueue("I go on carefully.", "I go on carefully.")
    shown: list[str] = []
    with pytest.raises(ModelFailed, match="nothing to say"):
        await engine.act(game.id, "maya", "I walk on along the corridor.", on_text=shown.append)
    assert "".join(shown) == "", "the player's line never reached the screen"
    assert [e.kind for e in await engine.history(game.id, 10)][-1] is EntryKind.ACTION
    await engine.memory.idle()
    scripted.enqueue("Maya steps over the broken board.", "The corridor ends at a green baize door.")
    result = await engine.act(game.id, "maya", "I walk on.")
    assert result.text == "The corridor ends at a green baize door.", "a try that decides for Maya is not given back"


async def test_a_reply_that_only_echoes_the_action_is_asked_for_again_and_the_turn_counts_both_calls(
    engine: Engine, scripted: ScriptedModel
):
    game = await _game_with(engine)
    echo, answer = "You light the old brass lamp in the lamp room.", "The flame catches and the glass fills with gold."
    scripted.enqueue(echo, answer)
    shown: list[str] = []
    result = await engine.act(game.id, "maya", "I light the old brass lamp in the lamp room.", on_text=shown.append)
    assert result.text == answer and "".join(shown) == answer, "the echo never reached the screen"
    assert "do it (light, old, brass, lamp, room), in new words" in scripted.last().prompt_text
    assert result.model.generated_tokens == scripted.count_tokens(echo) + scripted.count_tokens(answer)
    assert result.model.seconds >= result.model.first_token_seconds > 0


async def test_a_reply_the_rules_cut_to_too_little_is_asked_for_again_and_a_short_one_as_meant_is_kept(
    engine: Engine, scripted: ScriptedModel
):
    """What Qwen2.5 1.5B wrote: one line for a character, then the player's own line, which the rules take out;
    what is left says too little to stand as a reply. A reply the model meant short is shown as it is, but not a
    short one that says only that nothing is there, and nothing of its action."""
    game = await _game_with(engine, "chan", "Maya", "Rook")
    cut = 'Ada: "You\'re late." She points at the boat.\nRook: I climb aboard and ask Ada how far it is.'
    answer = "Ada laughs and unties the rope; the boat drifts toward the dark rock while gulls wheel over the tower."
    scripted.enqueue(cut, answer)
    shown: list[str] = []
    result = await engine.act(game.id, "rook", "I climb aboard and ask Ada how far it is.", on_text=shown.append)
    assert result.text == answer and "".join(shown) == answer, "the cut reply never reached the screen"
    assert "do it (climb, aboard, ask, Ada, far), in new words" in scripted.last().prompt_text

    await engine.memory.idle()
    scripted.enqueue("The fire crackles.")
    shown.clear()
    short = await engine.act(game.id, "maya", "I warm my hands.", on_text=shown.append)
    assert short.text == "The fire crackles." and "".join(shown) == "The fire crackles."
    assert "Your last reply" not in scripted.last().prompt_text, "a reply the model meant short is not asked again"

    await engine.memory.idle()
    scripted.enqueue("You hear nothing.", "The handle turns a little, then sticks: the study door is locked.")
    shown.clear()
    tried = await engine.act(game.id, "maya", "I try the handle of the study door.", on_text=shown.append)
    assert tried.text == "The handle turns a little, then sticks: the study door is locked."
    assert "".join(shown) == tried.text, "the short reply of nothing never reached the screen"
    assert "did not answer Maya's action (try, handle, study, door)" in scripted.last().prompt_text


async def test_a_short_public_part_beside_a_private_aside_stands_as_the_model_meant_it(
    engine: Engine, scripted: ScriptedModel
):
    """What a player's sniff of the glass finds may be told to that player alone: the public line is short, the
    aside is the answer: it stands as the model meant it, in one call."""
    game = await _game_with(engine, "chan", "Maya", "Tom")
    scripted.enqueue("The glass is cold. [[to Maya: Under the brandy, something bitter, like almonds.]]")
    shown: list[str] = []
    result = await engine.act(game.id, "maya", "I sniff the brandy glass.", on_text=shown.append)
    assert result.text == "The glass is cold." and "".join(shown).strip() == "The glass is cold."
    assert [(note.player.name, note.entry.content) for note in result.private] == [
        ("Maya", "Under the brandy, something bitter, like almonds.")
    ]
    assert "Your last reply" not in scripted.last().prompt_text and len(scripted.calls) == 1, "asked once"


async def _only_the_second_try_is_shown(
    engine: Engine, scripted: ScriptedModel, action: str, first: str, answer: str
) -> None:
    """Maya acts; the model writes ``first``, then ``answer``: the turn's reply, and all the screen saw, is the
    answer."""
    game = await _game_with(engine, "chan", "Maya")
    scripted.enqueue(first, answer)
    shown: list[str] = []
    result = await engine.act(game.id, "maya", action, on_text=shown.append)
    assert result.text == answer and "".join(shown) == answer, f"{first!r} never reached the screen"


async def test_a_reply_that_only_restates_the_action_in_other_words_is_asked_for_again(
    engine: Engine, scripted: ScriptedModel
):
    """What Qwen2.5 1.5B wrote as GM of a long game, asked about a pinned fact: the action again, in the third
    person and another verb. The rules let it through; it is asked for again, as an echo is."""
    restated = "Maya leans close and smells the candles."
    answer = "The wax gives off a faint smell of bitter almonds: someone has doctored these candles."
    await _only_the_second_try_is_shown(engine, scripted, "I lean close and sniff the candles.", restated, answer)
    assert "do it (lean, close, sniff, candles), in new words" in scripted.last().prompt_text
    assert not scripted.last().fresh, "the try after a restatement may use the action's words"


async def test_a_reply_that_says_nothing_of_its_action_is_asked_for_again_and_never_shown(
    engine: Engine, scripted: ScriptedModel
):
    """What Qwen2.5 1.5B wrote once the rules cut its lines for the players (bench quality, Ember Road): a scene
    beat that answers nothing of what the player did. It is held back and asked for again, with a note to answer
    the action, by whose it was and its own words; the answer streams."""
    elsewhere = "Gulls wheel over the tower and the grey sea heaves against the granite below the cottage."
    answer = "The boat's rope is stiff with salt; you knot it twice round the iron ring and the hull stops knocking."
    await _only_the_second_try_is_shown(engine, scripted, "I tie the supply boat to the iron ring.", elsewhere, answer)
    assert "did not answer Maya's action (tie, supply, boat, iron, ring)" in scripted.last().prompt_text


async def test_a_reply_answers_its_action_by_a_character_it_refers_to_an_aside_or_any_words_of_a_vague_one(
    engine: Engine, scripted: ScriptedModel
):
    """ "The boatman" is Wren Tally: a reply naming Wren answers; so does one whose aside to the player answers
    what they did; and "I wait." is answered by whatever happens next. None is asked for again."""
    game = await _game_with(engine, "chan", "Maya")
    for action, reply in (
        ("I ask the boatman what he saw last night.", "Wren Tally spits over the rail and shrugs, rubbing his hands."),
        (
            "I run a thumb along the lamp's brass rim.",
            "The tower groans in the wind, and somewhere below a shutter bangs against the whitewashed wall. "
            "[[to Maya: Soot on the brass rim, fresh, and a fingerprint.]]",
        ),
        ("I wait.", "An hour passes. Fog rolls in from the east and swallows the cottage whole."),
    ):
        scripted.enqueue(reply)
        result = await engine.act(game.id, "maya", action)
        await engine.memory.idle()
        assert "did not answer" not in scripted.last().prompt_text, action
        assert result.raw == reply, action


async def test_a_reply_that_says_again_what_the_last_said_is_asked_for_again_kept_from_repeating_its_context(
    engine: Engine, scripted: ScriptedModel
):
    """The bundled model loops on one sentence from turn to turn; asked again, it said the same. The try after a
    repeat is kept from repeating its context (llama.cpp's DRY sampler, where the model has it)."""
    game = await _game_with(engine, "chan", "Maya")
    said = "The Red Throat and the Glass Bridge lie ahead, past the double-barreled cart on the black road."
    new = "Dessa reins in the oxen at a cairn of salt-white stones and points to a camp half a day away."
    scripted.enqueue(said)
    await engine.act(game.id, "maya", "I look down the black road.")
    await engine.memory.idle()
    scripted.enqueue(said, new)
    result = await engine.act(game.id, "maya", "I ask Dessa how far to the first camp.")
    assert result.text == new and scripted.last().fresh


async def test_a_new_config_takes_effect_whole_with_the_next_turn(engine: Engine, scripted: ScriptedModel):
    """The settings' defaults, the reply's length, the pin cap and the byte caps all follow an assigned config,
    not only the prompt's budget."""
    from bot.engine import EngineConfig
    from bot.memory.config import MemoryConfig

    game = (await engine.start_game("chan", "lighthouse")).game
    await engine.join(game.id, "maya", "Maya")
    config = EngineConfig(n_ctx=8192, reply_tokens=64, memory=MemoryConfig(pin_cap=3), vectors_bytes=1 << 20,
                          server_worlds_bytes=1 << 16)  # fmt: skip
    engine.config = config
    scripted.enqueue(
        "The lamp gutters, then steadies as the charred wick falls away; clean yellow light fills the lamp room again."
    )
    await engine.act(game.id, "maya", "I trim the lamp.")

    assert scripted.last("stream").max_tokens <= 64
    reply_tokens, memory = await engine.settings.resolved(game.id)
    assert reply_tokens == 64 and memory.pin_cap == 3
    assert engine.meaning.cap_bytes == 1 << 20 and engine.servers.max_total_bytes == 1 << 16


async def test_a_holder_of_the_turn_lock_that_asks_for_it_again_is_refused_at_once(engine: Engine):
    """A turn that called join, a roll or an edit (each takes the lock) once waited for itself for ever."""
    game = (await engine.start_game("chan", "lighthouse")).game
    lock = engine.sessions[game.id].turn_lock

    async def holder() -> None:
        async with lock:
            with pytest.raises(RuntimeError, match="not re-entrant"):
                await engine.join(game.id, "maya", "Maya")
            assert engine.turn_running(game.id)

    await asyncio.wait_for(holder(), timeout=10)  # one task, holding it and asking again; a hang fails here
    assert not engine.turn_running(game.id)
    await engine.join(game.id, "maya", "Maya")  # the lock was left as it was: free


async def test_a_warm_up_building_its_prompt_does_not_tell_players_the_gm_is_writing(engine: Engine):
    game = (await engine.start_game("chan", "lighthouse")).game
    lock = engine.sessions[game.id].turn_lock

    async def warm_up() -> None:
        async with lock.quietly():
            assert lock.locked() and not engine.turn_running(game.id)
            with pytest.raises(RuntimeError, match="not re-entrant"):
                await engine.roll(game.id, "maya", "1d6")

    await asyncio.wait_for(warm_up(), timeout=10)
    assert not lock.locked()


async def test_a_roll_lands_in_the_log_and_the_next_prompt(engine: Engine, scripted: ScriptedModel):
    game = await _game_with(engine)
    rolled = await engine.roll(game.id, "maya", "1d20+5")
    assert 6 <= rolled.roll.total <= 25
    assert rolled.entry.kind is EntryKind.ROLL and rolled.entry.turn == 1 and rolled.entry.author == "Maya"
    scripted.enqueue(
        "The wet stair is slick under your boots; halfway up, a gust of spray soaks your sleeve and the rail rattles."
    )
    await engine.act(game.id, "maya", "I climb the wet stair.")
    assert f"\nMaya rolls 1d20+5: {rolled.roll.detail}.\n" in scripted.last().prompt_text, "a plain sentence"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("banana", "is not dice notation"),
        ("1000000d1000000", "Too many dice"),
        ("1d0", "Cannot roll"),
        ("1d20/0", "Cannot roll"),
        ("", "Give a dice expression"),
        ("1d20+" * 40, "too long"),
    ],
)
async def test_bad_dice_are_refused_and_nothing_is_stored(engine: Engine, store: Store, expression, message):
    game = await _game_with(engine)
    before = await store.log(game.id)
    with pytest.raises(UserError, match=message):
        await engine.roll(game.id, "maya", expression)
    assert await store.log(game.id) == before


async def test_unknown_world_is_refused_and_no_game_is_made(engine: Engine, store: Store):
    with pytest.raises(UserError, match="Unknown world 'atlantis'"):
        await engine.start_game("chan", "atlantis")
    assert await store.games() == []


async def test_an_ended_game_takes_no_more_turns_and_can_be_resumed(engine: Engine):
    game = await _game_with(engine)
    await engine.act(game.id, "maya", "I look around.")
    await engine.end_game("chan")
    with pytest.raises(UserError, match="There is no game here"):
        await engine.current_game("chan")
    with pytest.raises(UserError, match="has ended"):
        await engine.act(game.id, "maya", "I look again.")
    resumed = await engine.resume_game("chan", "lighthouse")
    assert resumed.id == game.id and resumed.turn == 1
    assert (await engine.act(game.id, "maya", "I look again.")).turn == 2


async def test_when_upkeep_cannot_summarize_the_oldest_turns_leave_the_prompt_first(engine: Engine, scripted):
    def answer(messages):
        if "You keep the memory" in messages[0].content or "You track the progress" in messages[0].content:
            raise RuntimeError("maintenance is down")
        return "A long reply. " * 30

    scripted.default = answer
    game = await _game_with(engine)
    for i in range(40):
        await engine.act(game.id, "maya", f"Step {i}.")
    await engine.memory.idle()
    result = await engine.act(game.id, "maya", "Final step.")
    assert result.context.trace.layer("hot").left_out, "forty long turns do not fit 2,048 tokens"
    assert result.context.tokens <= 2048 - 128
    prompt = scripted.last().prompt_text
    assert "Step 39." in prompt and "Final step." in prompt
    # The oldest recent turns are the ones cut (recall may still offer one of them back, as a relevant fragment).
    hot = result.context.trace.layer("hot")
    steps = {ref: int(ref.split(":")[1]) for ref in [*hot.items, *hot.left_out]}
    assert max(steps[ref] for ref in hot.left_out) < min(steps[ref] for ref in hot.items)
    # Two jobs fail here (the summaries, and the facts on replies that are not JSON): whichever failed last is
    # the last error, and both are reported among the parked jobs.
    status = await engine.memory_status(game.id)
    assert any("maintenance is down" in reported for reported in (status.last_error, *status.parked)), status


async def test_a_world_too_big_for_the_context_is_reported_and_the_turn_still_plays(
    store: Store, worker, scripted: ScriptedModel, tmp_path
):
    import shutil

    from bot.engine import EngineConfig
    from bot.worlds import WorldLibrary
    from tests.conftest import PROJECT

    worlds = tmp_path / "big"
    worlds.mkdir()
    shutil.copy(PROJECT / "worlds" / "hollow-manor.yaml", worlds)
    small = Engine(store, worker, WorldLibrary(worlds), EngineConfig(n_ctx=600, reply_tokens=64))
    started = await small.start_game("chan", "hollow-manor")
    await small.join(started.game.id, "maya", "Maya")
    scripted.enqueue(
        "Your knock echoes down the panelled hall; after a long moment the study door opens a crack and Hester Crane "
        "peers out."
    )
    result = await small.act(started.game.id, "maya", "I knock on the study door.")
    await small.close()
    trace = result.context.trace
    assert trace.overflow and "was cut to fit" in trace.overflow
    assert result.context.tokens <= 600 - 16
    assert scripted.last().messages[-1].content.endswith("Maya: I knock on the study door.")


async def test_round_settings_are_validated_and_an_empty_round_closes_to_nothing(engine: Engine):
    game = await _game_with(engine)
    with pytest.raises(UserError, match="turn_policy: each .* or round"):
        await engine.set_setting(game.id, "turn_policy", "sometimes")
    with pytest.raises(UserError, match="round_seconds: a whole number from 5 to 900"):
        await engine.set_setting(game.id, "round_seconds", "2")
    await engine.set_setting(game.id, "turn_policy", "round")
    assert await engine.turn_policy(game.id) == "round"
    assert await engine.close_round(game.id) is None


async def test_a_private_aside_is_stored_for_its_player_and_kept_out_of_the_public_reply(engine: Engine, scripted):
    game = await _game_with(engine, "chan", "Maya", "Tom")
    fog = "Fog rolls in off the water and muffles the surf, and the lighthouse beam turns to a pale smear."
    scripted.enqueue(f"{fog} [[to Tom: You hear oars below.]] [[to Maya: Your lantern flickers blue.")
    shown: list[str] = []
    result = await engine.act(game.id, "maya", "I listen.", on_text=shown.append)
    assert result.text == fog and "oars" not in "".join(shown) and "blue" not in "".join(shown)
    assert [(p.player.name, p.entry.content) for p in result.private] == [
        ("Tom", "You hear oars below."),
        ("Maya", "Your lantern flickers blue."),
    ]
    tom = await engine.player(game.id, "tom")
    assert result.private[0].entry.visible_to == (tom.id,)
    await engine.act(game.id, "tom", "I look down.")
    prompt = scripted.last().prompt_text
    assert "[[to Tom: You hear oars below.]]" in prompt, "the GM remembers what it told whom"
