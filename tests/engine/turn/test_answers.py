"""Whether a reply answers (bot/engine/turn/answers.py): something of the notes' brief, not only the action again."""

from __future__ import annotations

from bot.engine.turn.answers import carries, notes_answer, only_restates


def test_a_short_reply_about_something_else_is_no_restatement():
    assert only_restates("Maya leans close and smells the candles.", ["I lean close and sniff the candles."], ["Maya"])
    assert only_restates("You pick up the brass key from the desk.", ["I take the brass key from the desk."])
    assert not only_restates("The door is locked.", ["I try the door."])
    asked = "Meg, where were you at a quarter to eleven?"
    said = "Tom asks about Meg's whereabouts at a quarter to eleven."
    assert only_restates(said, [asked], ["Maya", "Tom"]), "reported, not answered"
    looked = "Maya carefully examines the bookcase and the worn green atlas."
    assert only_restates(looked, ["I look closely at the bookcase and the worn green atlas."], ["Maya", "Tom"])
    assert not only_restates('Meg laughs. "In the billiard room, alone."', [asked], ["Maya", "Tom"])
    assert not only_restates("The log book is soaked. Tom shivers.", ["I read the log book."], ["Maya", "Tom"])
    assert not only_restates("Nobody answers; the hall is silent.", ["I knock on the study door and call out."])
    long = "You lean close to the candles: the wax smells of bitter almonds, and a thread of smoke curls up."
    assert not only_restates(long, ["I lean close and sniff the candles."]), "it says enough that is new"


def test_a_reply_carries_the_brief_by_a_word_of_its_answer_the_action_did_not_say():
    asked = ["Which servant carries the key to the wine vault?"]
    clue = ["[turn 9] … GM: Mrs Ashdown wears the cellar key on a chain around her neck, day and night."]
    assert carries("Mrs Ashdown has it, on a chain.", clue, asked)
    said = "The captain takes the key from the barrel and goes down to the wine vault."
    assert not carries(said, clue, asked), "the question's own words are not its answer"
    fact = ["[fact, now] brass key, location: in the cellar (before: on the desk until turn 150)"]
    where = ["Where is the brass key now?"]
    assert carries("It lies on a barrel in the cellar.", fact, where)
    assert not carries("The key is on the desk.", fact, where), "the value it had before is no answer"
    assert carries("Anything at all.", [], where), "no brief: any reply"
    boot = ["[fact, now] brass key, location: inside his boot (before: in the chapel bell until turn 240)"]
    heard = "The storm lantern's glass is sooty, and you hear a noise coming from inside."  # the 1.5B, bench change
    assert not carries(heard, boot, where), "a word of the value that is not the thing itself is no answer"
    assert carries("Wren has it tucked in his boot.", boot, where)
    code = ["[fact, now] strongbox combination, code: 5-5-0 (before: 2-9-4 until turn 249)"]
    assert carries("The dial stops at 5, 5 and 0.", code, ["What is the combination?"]), "a code by its digits"
    assert not carries("It opens to 2-9-4.", code, ["What is the combination?"]), "its old digits are not it"


def test_a_reply_that_gives_the_briefed_thing_a_new_value_carries_it():
    """bench change, the default GM, 300 turns: "Mrs Ashdown puts the red signal flag back in the boathouse." had
    "(From earlier in the game: red signal flag, location: in the sea.)" told after it, the place it had just left,
    and that turn came back unmarked when a player asked where the flag was now. A reply that moves the thing told
    its news; one that only names it, or moves another thing, did not."""
    flag = ["[fact, now] red signal flag, location: in the sea (before: on the cottage door until turn 159)"]
    moved = "Mrs Ashdown puts the red signal flag back in the boathouse. The gulls cry."
    assert carries(moved, flag, ["I wait and watch."])
    assert carries("Wren carries the flag up to the cottage.", flag, ["I listen to the sea."])
    assert not carries("The red signal flag snaps in the wind.", flag, ["Where is the red signal flag?"])
    assert not carries("Maya hands the storm lantern to Pip.", flag, ["Where is the red signal flag?"])
    lantern = ["[fact, now] storm lantern, holder: Mrs Ashdown (before: Pip until turn 120)"]
    assert not carries("Pip puts the storm lantern in the boathouse.", lantern, ["Who has the lantern?"]), (
        "a new place is not a new holder"
    )


def test_a_brief_that_names_someone_or_somewhere_is_carried_by_the_name():
    """Seed 42 of the memory test: "Which physician looked after the skipper when he was sick?", briefed "Doctor
    Penhale from Brightwater treated the captain's fever last winter.", answered "The captain coughs into his sleeve.
    The doctor looks over the skipper, ...": a doctor and a captain, not who. A name the brief says and the action
    did not is its answer; a title beside it ("Doctor", "Mrs") is not."""
    asked = ["Which physician looked after the skipper when he was sick?"]
    doctor = ["[turn 28] … GM: Doctor Penhale from Brightwater treated the captain's fever last winter."]
    vague = "The captain coughs into his sleeve. The doctor looks over the skipper, who is covered in salt."
    assert not carries(vague, doctor, asked), "a doctor, not which"
    assert carries("It was Penhale, the Brightwater man.", doctor, asked)
    assert carries("A doctor from Brightwater saw to him.", doctor, asked)
    ledger = ["[turn 16] … GM: The ledger was bought from a merchant in Saltmere at the autumn fair."]
    assert not carries("A merchant sold it at a fair.", ledger, ["Where was the ledger bought?"])
    assert carries("At the fair in Saltmere.", ledger, ["Where was the ledger bought?"])
    servant = ["[turn 9] … GM: Mrs Ashdown wears the cellar key on a chain around her neck, day and night."]
    assert not carries("A servant keeps it on a chain.", servant, ["Who has the cellar key?"])
    told = ["[turn 3] … GM: Pip the groom swears he saw a rider leave the stables at midnight."]
    assert carries("A rider left at midnight.", told, ["What did Pip see?"]), "a name the action said is not asked"
    heron = ["[turn 12] … GM: A silver heron is engraved inside the lid of the captain's pocket watch."]
    assert carries("A heron, in silver.", heron, ["What bird is on the watch?"]), "no name: any word of it"


def test_what_the_scene_already_says_is_not_the_notes_news():
    """Seed 23 of the memory test: the brief told the heron, the reply told the watch the last replies spoke of."""
    asked = ["What bird is etched in the old sailor's timepiece?"]
    heron = ["[turn 12] … GM: A silver heron is engraved inside the lid of the captain's pocket watch."]
    scene = ["The captain's watch ticks loudly in the quiet.", "The captain checks his pocket watch and frowns."]
    ticking = "The captain checks the watch again. The clock ticks, ticking away to 6 PM."
    assert carries(ticking, heron, asked), "without the scene, the watch and the captain are the brief's words"
    assert not carries(ticking, heron, asked, scene), "the scene's own words are not what the notes added"
    assert carries("A heron, etched in silver.", heron, asked, scene)
    said = ["A silver heron is engraved inside the lid of the captain's pocket watch."]
    assert carries("The captain's watch has a heron on it.", heron, asked, said), "all of it said: any word of it"


def test_one_word_of_a_brief_is_not_its_news():
    """Seed 7 of the memory test: the brief told the heron, the reply looked at the lid it is inside."""
    asked = ["What bird is etched in the old sailor's timepiece?"]
    heron = ["[turn 12] … GM: A silver heron is engraved inside the lid of the captain's pocket watch."]
    scene = ["The captain's watch ticks loudly in the quiet."]
    lid = "The captain holds the watch in his hand. He looks at the etched mark on the lid."
    assert not carries(lid, heron, asked, scene), "the lid alone"
    assert carries("A silver heron, engraved on the inside.", heron, asked, scene)
    told = ["[turn 40] … GM: The oars are sawn."]
    assert carries("Sawn through, near the blades.", told, ["I look at the oars. What is wrong with them?"]), (
        "a line of one word of news: that word"
    )


def test_a_briefs_news_is_said_in_one_sentence_not_gathered_over_a_long_reply():
    """Seed 23 of the memory test, at b4e970e: a long reply about the old chart said "captain" in one sentence and
    "Inside, they find nothing" in another, and counted as telling the heron inside the captain's watch."""
    asked = ["What bird is etched in the old sailor's timepiece?"]
    heron = ["[turn 12] … GM: A silver heron is engraved inside the lid of the captain's pocket watch."]
    scene = ["Mrs Ashdown carries the key to the wine vault."]
    wandering = (
        'The ship\'s captain stands at the helm. "Low tide!" he yells. The players follow the captain to the cottage. '
        "Inside, they find nothing either."
    )
    assert not carries(wandering, heron, asked, scene)
    assert carries("Inside the lid, a heron is engraved.", heron, asked, scene)


def test_a_new_value_is_no_answer_to_an_action_that_asks_after_the_thing():
    """bench change, the default GM, 300 turns: asked "Where is the brass key now?", briefed its place "inside his
    boot", it wrote "The brass key now rests in the chapel bell.", word for word an older turn, and that was taken
    as the key's news: nothing asked again, nothing told after it. An action that asks after the thing wants the
    value the notes hold; a look at something else may still see it moved."""
    boot = ["[fact, now] brass key, location: inside his boot (before: in the chapel bell until turn 240)"]
    stale = "The brass key now rests in the chapel bell."
    assert not carries(stale, boot, ["Where is the brass key now?"])
    assert not carries(stale, boot, ["Where's the little metal key kept these days?"]), "asked in other words"
    assert not carries(stale, boot, ["I search the chapel for the brass key."]), "a look that names it"
    assert carries(stale, boot, ["I look around."]), "a look at the scene: the GM may move the key in it"
    assert carries("Wren has it in his boot.", boot, ["Where is the brass key now?"])


def test_the_notes_answer_tells_a_changed_value_as_the_one_that_holds_now():
    """The memory test, sampling seed 11: the default GM wrote "The brass key now lies on the desk", its older
    place, and "(From earlier in the game: brass key, location: in the cellar.)" was told after it, which a player
    reads as where the key had been. A value that changed is told as the current one; one that never did as it
    was."""
    moved = ["[fact, now] brass key, location: in the cellar (before: on the desk until turn 150)"]
    assert notes_answer(moved) == "brass key, location now: in the cellar"
    kept = ["[fact, now] ledger, origin: a merchant in Saltmere"]
    assert notes_answer(kept) == "ledger, origin: a merchant in Saltmere"
    turn = ["[turn 24] GM: The lifeboat's oars were sawn halfway through."]
    assert notes_answer(turn) == "The lifeboat's oars were sawn halfway through"
