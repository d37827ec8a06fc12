"""Pins, facts, lore, glossary, recall and bucket switches through the engine."""

from __future__ import annotations

import json

import pytest

from bot.engine import Engine, EngineConfig
from bot.engine.turn.narration import room_for_notes
from bot.engine.turn.results import ModelFailed
from bot.errors import UserError
from bot.memory.config import MemoryConfig
from bot.memory.context import Budget
from bot.model import ChatMessage, ModelWorker, ScriptedModel
from bot.store import EntryKind, FactKind, NewEntry, Store
from bot.worlds import WorldLibrary
from tests.engine.upkeep.test_memory import play, scripted_memory, start


class Extractor:
    """Answers extraction calls from a queue of fact lists; everything else like scripted_memory."""

    def __init__(self):
        self.facts: list[list[dict]] = []
        self.definitions: dict[str, str] = {}

    def __call__(self, messages: list[ChatMessage]) -> str:
        system = messages[0].content
        if system.startswith("You record the facts"):
            return json.dumps({"facts": self.facts.pop(0) if self.facts else []})
        if system.startswith("You keep the glossary"):
            terms = messages[-1].content.split("\n", 1)[0].removeprefix("Terms: ").split(", ")
            found = [{"term": t, "definition": self.definitions[t]} for t in terms if t in self.definitions]
            return json.dumps({"definitions": found})
        return scripted_memory(messages)


@pytest.fixture
def extractor(scripted: ScriptedModel) -> Extractor:
    extractor = Extractor()
    scripted.default = extractor
    return extractor


async def turn(engine: Engine, game_id: int, text: str, who: str = "maya"):
    result = await engine.act(game_id, who, text)
    await engine.memory.idle(game_id)
    return result


def key_fact(value: str) -> dict:
    return {"kind": "item", "subject": "brass key", "attribute": "location", "value": value}


async def test_pins_go_in_every_prompt_and_the_cap_moves_the_oldest_to_the_facts(
    store: Store, worker: ModelWorker, worlds_dir, extractor
):
    config = EngineConfig(n_ctx=2048, reply_tokens=128, memory=MemoryConfig(pin_cap=2))
    engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
    game = await start(engine)
    first = await engine.pin(game.id, "The keeper owes Wren money.", "Maya")
    assert first.moved is None
    await engine.pin(game.id, "The lamp needs oil.", "Maya")
    third = await engine.pin(game.id, "Wren lies about the storm.", "Tom")
    assert third.moved is not None and third.moved.text == "The keeper owes Wren money."
    assert [p.text for p in await engine.pins(game.id)] == ["The lamp needs oil.", "Wren lies about the storm."]
    moved = [f for f in await engine.facts(game.id) if f.kind is FactKind.PINNED]
    assert [f.value for f in moved] == ["The keeper owes Wren money."]

    result = await turn(engine, game.id, "I look at the lamp.")
    system = result.context.messages[0].content
    assert "Pinned facts (always true):\n- The lamp needs oil.\n- Wren lies about the storm." in system
    assert "owes Wren money" not in system
    await engine.close()


async def test_pin_refusals_and_unpin(engine: Engine, extractor):
    game = await start(engine)
    with pytest.raises(UserError, match="Say what to pin"):
        await engine.pin(game.id, "  ", "Maya")
    await engine.pin(game.id, "The lamp needs oil.", "Maya")
    with pytest.raises(UserError, match="pinned already"):
        await engine.pin(game.id, "the lamp needs oil.", "Tom")
    with pytest.raises(UserError, match="No pin matches"):
        await engine.unpin(game.id, "7")
    assert (await engine.unpin(game.id, "1")).text == "The lamp needs oil."
    assert await engine.pins(game.id) == []


async def test_extracted_facts_keep_their_sources_and_a_contradiction_supersedes(engine: Engine, extractor):
    game = await start(engine)
    extractor.facts = [[key_fact("under the mat")], [key_fact("Under the mat.")], [key_fact("in Maya's pocket")]]
    first = await turn(engine, game.id, "I hide the brass key under the mat.")
    [fact] = await engine.facts(game.id)
    assert fact.value == "under the mat" and fact.turn == 1
    assert first.action.id in fact.sources, "the action that names the key is a source"

    second = await turn(engine, game.id, "I check the brass key is still there.")
    [same] = await engine.facts(game.id)
    assert same.id == fact.id and second.action.id in same.sources, "a duplicate merges its sources"

    await turn(engine, game.id, "I take the brass key and pocket it.")
    [current] = await engine.facts(game.id)
    assert current.value == "in Maya's pocket"
    history = await engine.facts(game.id, include_superseded=True)
    old = next(f for f in history if f.id == fact.id)
    assert old.superseded_by == current.id and old.superseded_turn == 3, "kept, marked with the turn"


async def test_a_thing_held_under_two_of_its_names_has_one_current_value(engine: Engine, extractor):
    """bench change: "sealed orders" (in the wardroom safe), then "envelope" (in the chart table drawer), then
    "sealed orders envelope" moved on: the envelope's newer place superseded the one it was named like last, and
    "the sealed orders, in the wardroom safe" stayed current beside it, and was told as where they are now."""
    game = await start(engine)
    orders = {"kind": "item", "attribute": "location"}
    extractor.facts = [
        [{**orders, "subject": "sealed orders", "value": "in the wardroom safe"}],
        [{**orders, "subject": "envelope", "value": "in the chart drawer"}],
        [{**orders, "subject": "sealed orders envelope", "value": "in the galley freezer"}],
    ]
    for action in (
        "I ask about the sealed orders.",
        "I ask about the envelope.",
        "I ask about the sealed orders envelope.",
    ):
        await turn(engine, game.id, action)
    assert [(f.subject, f.value) for f in await engine.facts(game.id)] == [
        ("sealed orders envelope", "in the galley freezer")
    ]


async def test_editing_a_source_retracts_its_facts_and_derives_them_again(engine: Engine, extractor):
    game = await start(engine)
    extractor.facts = [[key_fact("under the mat")], [key_fact("under the loose stone")]]
    first = await turn(engine, game.id, "I hide the brass key under the mat.")
    await engine.edit_entry(game.id, first.action.id, "I hide the brass key under the loose stone.", user_key="maya")
    await engine.memory.idle(game.id)
    [fact] = await engine.facts(game.id)
    assert fact.value == "under the loose stone" and first.action.id in fact.sources
    retracted = [f for f in await engine.facts(game.id, include_superseded=True) if f.retracted_at]
    assert [f.value for f in retracted] == ["under the mat"]


async def test_lore_fires_on_the_turn_its_key_is_first_typed(engine: Engine, extractor, scripted):
    game = await start(engine)
    result = await turn(engine, game.id, "I go down to the oil store in the cellar.")
    final = result.context.messages[-1].content
    assert "The oil store is a cellar under the cottage; its lock is new." in final
    assert "lore:oil-store" in result.context.trace.layer("lore").items
    assert "lore:weather" in result.context.trace.layer("lore").items, "always on"
    quiet = await turn(engine, game.id, "I wait for the tide.")
    assert "lore:oil-store" in quiet.context.trace.layer("lore").items, "still in the last few turns"


async def test_lore_secondary_keys_need_a_secondary_match(engine: Engine, extractor):
    game = await start(engine)
    result = await turn(engine, game.id, "I sniff the oil lamp.")
    assert "lore:oil-store" not in result.context.trace.layer("lore").items


async def test_lore_added_edited_removed_and_imported_at_run_time(engine: Engine, extractor):
    from bot.worldinfo import parse_world_info

    game = await start(engine)
    added = await engine.ledger.lore_add(game.id, keys=["Saltmere"], content="Saltmere is the harbour town.")
    assert added.id == "saltmere"
    await engine.ledger.lore_edit(game.id, "gull-rock", content="Gull Rock is a granite stack with a ruined chapel.")
    await engine.ledger.lore_remove(game.id, "weather")
    chapel = {"uid": 0, "key": ["chapel"], "keysecondary": [], "comment": "Chapel", "selective": True,
              "content": "The chapel bell is cracked.", "constant": False, "order": 60, "disable": False}  # fmt: skip
    export = {"entries": {"0": chapel}}
    imported = await engine.ledger.lore_import(game.id, parse_world_info(export, "test.json").entries)
    listing = {item.entry.id: item for item in await engine.lore(game.id)}
    assert listing["saltmere"].source == "game" and listing["gull-rock"].source == "game"
    assert "weather" not in listing and imported[0].id in listing
    result = await turn(engine, game.id, "We sail past Gull Rock toward Saltmere and its chapel.")
    final = result.context.messages[-1].content
    assert "ruined chapel" in final and "harbour town" in final and "bell is cracked" in final
    assert "storm is coming" not in final
    with pytest.raises(UserError, match="no lore entry 'nope'"):
        await engine.ledger.lore_remove(game.id, "nope")
    with pytest.raises(UserError, match="keys"):
        await engine.ledger.lore_add(game.id, content="No keys and not always on.")


async def test_the_glossary_defines_new_names_and_can_be_edited(engine: Engine, extractor, scripted):
    game = await start(engine)
    extractor.definitions = {"Saltmere": "The harbour town where the supply boat is based."}
    scripted.enqueue(
        "Wren spits over the rail. 'The boat came from Saltmere, the harbour town across the grey water, with salt "
        "cod and letters.'"
    )
    await turn(engine, game.id, "I ask Wren where the boat came from.")
    [term] = await engine.glossary(game.id)
    assert term.term == "Saltmere" and term.source_entry_id is not None
    # The prompt's front shows the glossary as it stood at the last compaction, so it stays put from turn to
    # turn; the reply that coined the name is in the recent turns meanwhile.
    result = await turn(engine, game.id, "I nod.")
    assert "Saltmere: The harbour town" not in result.context.messages[0].content
    assert any("came from Saltmere" in m.content for m in result.context.messages[1:])
    await engine.compact(game.id)
    result = await turn(engine, game.id, "I nod again.")
    assert "Glossary:\n- Saltmere: The harbour town" in result.context.messages[0].content
    await engine.ledger.glossary_edit(game.id, "saltmere", "A fishing town.")
    assert [(t.term, t.definition, t.edited) for t in await engine.glossary(game.id)] == [
        ("Saltmere", "A fishing town.", True)
    ]
    await engine.ledger.glossary_remove(game.id, "Saltmere")
    assert await engine.glossary(game.id) == []


async def test_recall_finds_a_turn_3_clue_at_turn_300(engine: Engine, extractor):
    game = await start(engine)
    await turn(engine, game.id, "I climb onto the landing stage.")
    await turn(engine, game.id, "I shake the rain off my coat.")
    clue = await turn(engine, game.id, "I hide the brass key inside the cracked bell of the chapel.")
    for n in range(4, 300):
        await turn(engine, game.id, f"I keep watch from the gallery, hour {n}.")
    assert (await engine.memory_status(game.id)).folded_through > clue.action.id, "turn 3 left the hot window"
    result = await turn(engine, game.id, "Where did I hide the brass key?")
    recall = result.context.trace.layer("recall")
    assert f"entry:{clue.action.id}" in recall.items
    final = result.context.messages[-1].content
    assert "[turn 3] Maya: I hide the brass key inside the cracked bell of the chapel." in final
    assert result.context.tokens <= result.context.trace.limit


async def test_switched_off_buckets_leave_the_prompt_and_keep_their_data(engine: Engine, extractor, scripted):
    game = await start(engine)
    extractor.facts = [[key_fact("under the mat")]]
    extractor.definitions = {"Saltmere": "The harbour town."}
    scripted.enqueue(
        "The brass key slips under the mat just as the supply boat from Saltmere rounds the point, its sail dark with "
        "rain."
    )
    await turn(engine, game.id, "I hide the brass key under the mat.")
    await engine.pin(game.id, "The lamp needs oil.", "Maya")
    for n in range(12):
        await turn(engine, game.id, f"I watch the sea, hour {n}.")
    on = await turn(engine, game.id, "Where is the brass key? I smell oil in the store cellar.")
    assert on.context.trace.layer("pins").items and on.context.trace.layer("glossary").items
    assert on.context.trace.layer("lore").items and on.context.trace.layer("recall").items

    for bucket in ("pins", "glossary", "lore", "facts", "recall"):
        await engine.set_bucket(game.id, bucket, False)
    off = await turn(engine, game.id, "Where is the brass key? I smell oil in the store cellar.")
    for layer in ("pins", "glossary", "lore", "recall"):
        assert off.context.trace.layer(layer).items == [], layer
    prompt = "\n".join(m.content for m in off.context.messages)
    assert "The lamp needs oil." not in prompt and "Saltmere: The harbour town" not in prompt
    assert [p.text for p in await engine.pins(game.id)] == ["The lamp needs oil."]
    assert [t.term for t in await engine.glossary(game.id)] == ["Saltmere"]
    assert [f.value for f in await engine.facts(game.id)] == ["under the mat"]
    with pytest.raises(UserError, match="Unknown memory bucket 'dreams'"):
        await engine.set_bucket(game.id, "dreams", False)


async def test_one_answer_naming_a_key_twice_keeps_the_last_and_the_job_does_not_break(engine: Engine, extractor):
    game = await start(engine)
    extractor.facts = [[key_fact("under the mat"), key_fact("in the chapel bell"), key_fact("in the chapel bell")]]
    await turn(engine, game.id, "I move the brass key from under the mat to the chapel bell.")
    status = await engine.memory_status(game.id)
    assert status.last_error is None
    [active] = await engine.facts(game.id)
    assert active.value == "in the chapel bell"
    every = await engine.facts(game.id, include_superseded=True)
    # (The move the action states is also found in play, as soon as the turn is stored: "the chapel bell".)
    assert "under the mat" in [f.value for f in every if not f.active], "kept, superseded by the last value"


async def test_the_extractors_copy_of_its_prompt_example_is_not_recorded(engine: Engine, extractor):
    game = await start(engine)
    extractor.facts = [[key_fact("under the mat"), {"kind": "character", "subject": "Wren", "attribute": "mood",
                                                     "value": "wary"}]]  # fmt: skip
    await turn(engine, game.id, "I ask Wren about the storm.")
    assert [(f.subject, f.value) for f in await engine.facts(game.id)] == [("Wren", "wary")]


async def test_a_fact_an_earlier_turn_recalled_is_followed_by_its_newer_value(engine: Engine, extractor):
    game = await start(engine)
    extractor.facts = [[key_fact("under the mat")], [], [key_fact("in the cellar")]]
    await turn(engine, game.id, "I hide the brass key under the mat.")
    asked = await turn(engine, game.id, "Where did I put the brass key?")
    [old] = await engine.facts(game.id)
    trace = asked.context.trace
    noted = trace.layer("recall").items + trace.layer("brief").items  # the brief tells it beside the question
    assert f"fact:{old.id}" in noted, "recalled into turn 2's notes"
    await turn(engine, game.id, "I carry the brass key down to the cellar.")

    later = await turn(engine, game.id, "I whistle a tune by the fire.")
    prompt = "\n".join(m.content for m in later.context.messages)
    [current] = await engine.facts(game.id)
    assert f"fact:{current.id}" in later.context.trace.layer("recall").items
    assert later.context.trace.found_by[f"fact:{current.id}"] == "newer"
    assert prompt.index("under the mat") < prompt.index("[fact, now] brass key, location: in the cellar")


async def test_a_reply_that_says_nothing_of_what_the_notes_told_is_asked_for_again_with_a_note(
    engine: Engine, scripted: ScriptedModel, extractor
):
    """What Qwen2.5 1.5B wrote as GM of a long game, asked where the key is now with its place told right after
    the question: another place, or nothing of it. The engine knows what the reply must carry: it holds that try
    back and asks once more, saying the notes were not told. A reply that tells them is not asked again."""
    game = await start(engine, "Maya", "Tom")
    extractor.facts = [[key_fact("under the mat")]]
    await turn(engine, game.id, "I hide the brass key under the mat.")
    elsewhere = "You look for the brass key on the desk, but rain drums on the slate roof and the fire burns low."
    answer = "It is under the mat by the door, where you hid it."
    scripted.enqueue(elsewhere, answer)
    shown: list[str] = []
    result = await engine.act(game.id, "maya", "Where did I put the brass key?", on_text=shown.append)
    await engine.memory.idle(game.id)
    first, again = [c.messages[-1].content for c in _gm_calls(scripted, "Where did I put")]
    assert "The notes from earlier in the game say: [fact] brass key, location: under the mat" in first
    assert result.text == answer and "".join(shown) == answer, "the try that missed never reached the screen"
    assert "did not say what the notes from earlier in the game say" in again

    told = "The brass key is still under the mat by the door, where Maya left it, cold and beaded with sea spray."
    scripted.enqueue(told)
    result = await engine.act(game.id, "tom", "Where did Maya put the brass key?")
    await engine.memory.idle(game.id)
    assert result.text == told
    asked = _gm_calls(scripted, "Where did Maya put")
    assert len(asked) == 1, "it says them: kept as it is"


async def test_a_reply_that_misses_the_notes_twice_is_followed_by_what_they_told(
    engine: Engine, scripted: ScriptedModel, extractor
):
    """What Qwen2.5 1.5B wrote as GM of a 300-turn game asked where a thing is now, with its place told right after
    the question and again after the note: the scene's filler, twice. The engine knows what the reply must carry:
    it tells it after the reply, in the notes' words, on the screen and in the log alike."""
    game = await start(engine, "Maya", "Tom")
    extractor.facts = [[key_fact("under the mat")]]
    await turn(engine, game.id, "I hide the brass key under the mat.")
    filler = "The storm lantern hisses as its wick burns. The hallway smells of damp wool and woodsmoke."
    scripted.enqueue(filler, filler)
    shown: list[str] = []
    result = await engine.act(game.id, "tom", "Where is the brass key now?", on_text=shown.append)
    await engine.memory.idle(game.id)
    told = "(From earlier in the game: brass key, location: under the mat.)"
    assert result.text == f"{filler}\n\n{told}", result.text
    assert "".join(shown) == result.text, "the screen shows what the log keeps"
    assert len(_gm_calls(scripted, "Where is the brass key now?")) == 2, "asked once more first"
    last = (await engine.store.recent_log(game.id, 1))[-1]
    assert last.line == f"GM: {result.text}", "stored as it was shown"


async def test_a_question_the_gm_had_nothing_to_say_to_twice_is_answered_by_the_notes(
    engine: Engine, scripted: ScriptedModel, extractor
):
    """The small model wrote only the next player's line, on both tries ("Tom: I look around."): with nothing of
    its own to post, the turn is answered by what the notes told beside the question, not failed."""
    game = await start(engine, "Maya", "Tom")
    extractor.facts = [[key_fact("under the mat")]]
    await turn(engine, game.id, "I hide the brass key under the mat.")
    scripted.enqueue("Tom: I look around.", "Tom: I look around.")
    result = await engine.act(game.id, "maya", "Where is the brass key now?")
    await engine.memory.idle(game.id)
    assert result.text == "(From earlier in the game: brass key, location: under the mat.)"

    scripted.enqueue("Maya: I wait.", "Maya: I wait.")  # no brief: nothing to answer with, the turn fails
    with pytest.raises(ModelFailed, match="nothing to say"):
        await engine.act(game.id, "tom", "I stretch my legs by the door.")


async def test_an_old_turn_recalled_beside_the_question_is_followed_by_the_value_that_holds_now(
    engine: Engine, extractor
):
    """A small model answers from what sits next to the question: an old turn saying where the key was, recalled
    there, with the key's new place only in an earlier turn's notes far up, had it answer the old place."""
    game = await start(engine)
    extractor.facts = [[key_fact("under the mat")], [key_fact("in the cellar")]]
    await turn(engine, game.id, "I hide the brass key under the mat.")
    await turn(engine, game.id, "I carry the brass key down to the cellar.")
    await turn(engine, game.id, "Where is the brass key now?")  # its notes show the new place
    await play(engine, game.id, 8, start=4)

    asked = await turn(engine, game.id, "Did I hide the brass key under the mat?")
    question = asked.context.messages[-1].content
    [current] = await engine.facts(game.id)
    assert "I hide the brass key under the mat." in question, "the old turn recalled beside the question"
    assert question.index("I hide the brass key under the mat.") < question.index(
        "[fact, now] brass key, location: in the cellar"
    )
    assert asked.context.trace.found_by[f"fact:{current.id}"] == "newer"


async def test_a_turns_notes_leave_the_prompt_when_the_front_changes_and_its_action_stays(engine: Engine, extractor):
    """After a fold the recent turns after the new summaries are read again anyway: their notes go, and the room
    they took goes to the turns to come, which puts the next fold (and the next full read) later."""
    game = await start(engine)
    extractor.facts = [[key_fact("under the mat")]]
    await turn(engine, game.id, "I hide the brass key under the mat.")
    asked = await turn(engine, game.id, "Where did I put the brass key?")
    assert "brass key, location: under the mat" in asked.context.messages[-1].content, "recalled into its notes"
    before = await turn(engine, game.id, "I whistle a tune by the fire.")
    assert "brass key, location: under the mat" in "\n".join(m.content for m in before.context.messages)

    await engine.compact(game.id)
    after = await turn(engine, game.id, "I whistle another tune by the fire.")
    users = [m.content for m in after.context.messages[1:-1] if m.role == "user"]
    assert "Maya: Where did I put the brass key?" in users, "the turn is still among the recent ones, bare"
    assert not any("From earlier in the game" in text for text in users), "no earlier turn's notes"


async def test_a_recent_turn_the_budget_cuts_from_the_prompt_can_still_be_recalled(engine: Engine, extractor):
    """The recent turns were left out of recall (the prompt holds them) even where the budget then cut the oldest
    of them: a clue there was in neither."""
    game = await start(engine)
    maya = (await engine.store.players(game.id))[0]
    said = [
        "I hide the brass key inside the cracked bell of the chapel.",
        *(f"I keep watch from the gallery and count the gulls, hour {n}." for n in range(40)),
    ]
    entries = [
        (await engine.store.append(game.id, NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", content=text,
                                                      player_id=maya.id)))[0]
        for text in said
    ]  # fmt: skip
    question = "Where did I hide the brass key?"
    roomy = await engine.preview(game.id, "maya", question, budget=Budget(n_ctx=100_000, reply_tokens=100))
    assert roomy.trace.layer("hot").left_out == []
    clue = f"entry:{entries[0].id}"
    assert clue in roomy.trace.layer("hot").items and clue not in roomy.trace.layer("recall").items

    # A limit 610 tokens under what the roomy prompt took, whatever room the retry's notes keep free: the recent
    # turns' budget then cuts the clue's turn, and recall has room for it.
    n_ctx = roomy.tokens - 510 + room_for_notes(engine.worker.count_tokens)
    tight = await engine.preview(game.id, "maya", question, budget=Budget(n_ctx=n_ctx, reply_tokens=100, recall=150))
    assert clue in tight.trace.layer("hot").left_out, "the budget cut the clue's turn from the recent ones"
    assert clue in tight.trace.layer("recall").items
    assert "Maya: I hide the brass key inside the cracked bell of the chapel." in tight.messages[-1].content
    assert tight.tokens <= tight.trace.limit


def _gm_calls(scripted: ScriptedModel, action: str) -> list:
    """The GM's calls that answered ``action`` (the memory's jobs read it too)."""
    return [c for c in scripted.calls if c.kind == "stream" and c.messages[-1].content.count(action)
            and c.messages[0].content.startswith("You are")]  # fmt: skip


async def test_a_question_in_other_words_is_answered_in_the_brief_by_the_turn_first_by_meaning_by_far(
    store: Store, worker: ModelWorker, worlds_dir, scripted: ScriptedModel
):
    """The turn recall by meaning puts far ahead of any other is told beside the question though it shares no word
    with it (see bot.memory.recall.MEANING_CLEAR); the action itself, indexed by meaning as soon as it is logged and
    nearest of all to itself, is not the fragment that stands out (the memory test, seed 42: no brief, and the
    1.5B GM missed the heron)."""
    from bot.engine.upkeep.indexes import RecallIndex
    from bot.memory.layers import HEADERS
    from bot.store.models import RecallHit

    class Meaning(RecallIndex):
        name = "meaning"

        async def search(self, game_id, scene, limit):
            log = await store.log(game_id)
            asked = [e for e in log if e.content == scene.action]
            clue = next((e for e in log if "heron" in e.content), None)
            if clue is None or scene.action.startswith("Action"):  # the turns played between: nothing by meaning
                return []
            rest = [e for e in log if e.kind is EntryKind.GM and e.id != clue.id]
            found = [(e, 1.2) for e in asked] + [(clue, 0.65)] + [(e, 0.46 - n / 1000) for n, e in enumerate(rest)]
            return [RecallHit(ref=f"entry:{e.id}", text=e.content, turn=e.turn, score=s) for e, s in found]

    engine = Engine(store, worker, WorldLibrary(worlds_dir), EngineConfig(n_ctx=2048, reply_tokens=128))
    engine.ledger.indexes.append(Meaning())
    game = await start(engine)
    scripted.enqueue("A silver heron is engraved inside the lid of the captain's pocket watch.")
    await turn(engine, game.id, "I open the captain's watch.")
    await play(engine, game.id, 40, start=2)
    scripted.enqueue("A heron, in silver.")
    result = await turn(engine, game.id, "What bird is etched in the old sailor's timepiece?")
    brief = result.context.trace.layer("brief").items
    clue = next(e for e in await store.log(game.id) if "heron" in e.content)
    assert brief == [f"entry:{clue.id}"], brief
    assert "A silver heron is engraved" in result.context.messages[-1].content

    scripted.enqueue("The gulls cry.")
    result = await turn(engine, game.id, "I walk along the gallery.")
    assert HEADERS["brief"] not in result.context.messages[-1].content, "an action that asks nothing gets no brief"
