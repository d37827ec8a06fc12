"""Whether a reply answers (bot/engine/turn/answers.py): something of the notes' brief, not only the action again."""

from __future__ import annotations

from bot.engine.turn.answers import carries, only_restates


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
