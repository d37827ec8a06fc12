"""Change found in play (F40): the sentences that say a value changed, read as facts of one subject each."""

from __future__ import annotations

import pytest

from bot.memory.changes import asks_for, attribute_name, changes_in, same_subject


@pytest.mark.parametrize(
    ("said", "found"),
    [
        ("Tom carries the brass key down to the cellar.", ("brass key", "location", "in the cellar")),
        ("Pell drops the lantern into the ditch and runs.", ("lantern", "location", "in the ditch")),
        ("I move the brass key from under the mat to the chapel bell.",
         ("brass key", "location", "in the chapel bell")),
        ("The swan candlestick now lies at the bottom of the old well, under the moss.",
         ("swan candlestick", "location", "at the bottom of the old well")),
        ("Maya hands the lantern to Pip.", ("lantern", "holder", "Pip")),
        ("Pip now has the lantern.", ("lantern", "holder", "Pip")),
        ("The door code is now 882.", ("door code", "code", "882")),
        ("The code of the cellar door is now 882.", ("cellar door code", "code", "882")),
        ("He changes the strongbox combination to 5-1-9.", ("strongbox combination", "code", "5-1-9")),
        ("The ferryman now works for the Crown.", ("ferryman", "allegiance", "the Crown")),
        ("Wren switches sides to the smugglers.", ("Wren", "allegiance", "the smugglers")),
        ("The letter is burned.", ("letter", "state", "burned")),
        ("She smashes the lamp, and the oil runs out.", ("lamp", "state", "smashed")),
        ("The rations are used up.", ("rations", "state", "used up")),
        ("Wren left the lantern at the mill last night.", ("lantern", "location", "at the mill")),
        ("Pip hands the lantern back to Maya.", ("lantern", "holder", "Maya")),
        ("Ines keeps the ledger now.", ("ledger", "holder", "Ines")),
        ("The smugglers' password is now heron.", ("smugglers' password", "code", "heron")),
        ("They change the watchword to kittiwake.", ("watchword", "code", "kittiwake")),
        ("The waves smash the skiff to pieces against the rocks.", ("skiff", "state", "smashed")),
        # a holder said in other verbs, and how the thing came to them
        ("The brass telescope belongs to Captain Hale.", ("brass telescope", "holder", "Captain Hale")),
        ("Hale trades the brass telescope to a tinker for a jug of rum.", ("brass telescope", "holder", "a tinker")),
        ("The tinker loses the brass telescope at cards to Orla.", ("brass telescope", "holder", "Orla")),
        ("The chart is now owned by Nell.", ("chart", "holder", "Nell")),
        ("Orla owns the spyglass now.", ("spyglass", "holder", "Orla")),
        # a value replaced outright, of anything
        ("The signal for danger is changed to two short flashes.", ("signal", "code", "two short flashes")),
        # where a thing is, said of it, is its place
        ("The whalebone compass sits on the mantelpiece.", ("whalebone compass", "location", "on the mantelpiece")),
        ("The rowing boat is drawn up on the slipway.", ("rowing boat", "location", "on the slipway")),
        ("By dawn the chalice stands once more in the vestry.", ("chalice", "location", "in the vestry")),
        ("Bram wraps the silver locket in a rag and stuffs it behind the loose brick.",
         ("silver locket", "location", "behind the loose brick")),
        # a holder in other words, and a side
        ("Nell keeps the tide chart folded in her apron.", ("tide chart", "holder", "Nell")),
        ("Silas presses the ledger into the hands of Widow Polmear.", ("ledger", "holder", "Widow Polmear")),
        ("Crake seizes the ledger.", ("ledger", "holder", "Crake")),
        ("The innkeeper now takes his orders from the Black Gull gang.",
         ("innkeeper", "allegiance", "the Black Gull gang")),
        ("Elias swears himself to Lord Tremaine.", ("Elias", "allegiance", "Lord Tremaine")),
        ("Kit throws in his lot with the wreckers.", ("Kit", "allegiance", "the wreckers")),
        # a code said in quotes; a thing that is no more
        ("From tonight the countersign becomes 'Cormorant'.", ("countersign", "code", "Cormorant")),
        ("Nothing remains of the old figurehead.", ("old figurehead", "state", "destroyed")),
        # a code in words, or after a colon or a comma; a thing of something; a side in other words; "it" said of
        # the thing the memory holds; a holder with a place, or named in a cleft
        ("The signal for danger is three long flashes.", ("signal", "code", "three long flashes")),
        ("Lowenna breathes the new password into each ear in turn: blackthorn.", ("password", "code", "blackthorn")),
        ("The Pascoe boys roll the keg of brandy deep into the cave at Gullet Cove.",
         ("keg of brandy", "location", "in the cave at Gullet Cove")),
        ("Lowenna feeds the map of the caves to the taproom fire.", ("map of the caves", "state", "destroyed")),
        ("Dorcas, the chandler's widow, now stands with the free-traders.",
         ("Dorcas", "allegiance", "the free-traders")),
        ("Fear of the noose drives the curate into the arms of the dragoons.",
         ("curate", "allegiance", "the dragoons")),
        ("Squire Ashcombe keeps the snuffbox in his waistcoat pocket.", ("snuffbox", "holder", "Squire Ashcombe")),
        ("It is the widow Penhallow who owns the snuffbox now.", ("snuffbox", "holder", "the widow Penhallow")),
        ("The sloop goes down with all hands.", ("sloop", "state", "destroyed")),
        # the word before what it is; a code of words in a row
        ("'Brinewolf' is the sewer watchword now, says the scrap of paper.", ("sewer watchword", "code", "Brinewolf")),
        ("The clockwork lock on the crypt opens to three sigils: owl, serpent, chalice, in that order.",
         ("clockwork lock", "code", "owl, serpent, chalice")),
    ],
)  # fmt: skip
def test_a_change_said_in_so_many_words_is_found(said: str, found: tuple[str, str, str]):
    assert [(c.subject, c.attribute, c.value) for c in changes_in(said)] == [found]


@pytest.mark.parametrize(
    "said",
    [
        "Where is the brass key now?",  # a question changes nothing
        "Maya takes a step toward the door.",
        "The code is 419 and 882.",  # a contradiction in one breath: the memory keeps what it held
        "The code is now .",
        "The lantern hisses in the wind.",
        "We put our shoulders to the study door and force it open.",  # the body put to a task moves nothing
        "I put my ear to the red cask and listen.",
        # a time is no place: leaving a place at an hour moves nothing (the long game's groom, read as "stables,
        # location: at midnight")
        "Pip the groom swears he saw a rider leave the stables at midnight.",
        "They left the inn at dawn.",
        "She sets the clock to noon.",
        "The password is wrong.",  # what a password is like is no password
        "The old password is still secret.",
        "The signal is given.",  # a signal's value is what it is ("two blue lamps"), not what is done with it
        "The knock is soft and slow.",
        "He trades glances with Maya.",
        "She lays out the bread, cheese, apples and wine on the table.",  # a list is no code without a lock
        "The ship sails to Lisbon, Porto and Cadiz.",
        # words that name no thing, and an "it" that names none the sentence said
        "Nothing remains on the plinth but a wide puddle and a few curls of slush.",
        "Children break chunks off what is left to throw at one another.",
        "Something lies at the bottom of the well.",
        "By the third act it is gone from the pit.",
        "Mirela takes a long pull from the flask of healing draught; half of it is gone.",  # a part is not the whole
        "Her husband has changed the cage's numbers again, to 2-8-5, she says.",  # digits are no place
        # words strung together, no thing picked out nor a place (a long game's scripted prose read so as moves)
        "Knife beneath map storm cellar.",
        "Old stair above storm window quiet.",
        "The keeper lantern quiet clock beneath glass marsh old candle across clock lantern.",
        "Mirela takes a long pull from her flask.",  # a pull is done, not held
        "The old pear tree leans slightly to the east.",  # a way it leans, not where it is
        # a time spent is no thing, a cause joined no place, and what will be is not yet
        "It spends the night in the annealing oven and comes out cool, whole and gleaming a deep sapphire blue.",
        "The Sable Lances have joined her war against every lord in the valley.",
        "The bell it is meant to cast will hang in the cathedral tower.",
    ],
)
def test_what_says_no_change_is_none(said: str):
    assert changes_in(said) == []


def test_a_person_by_part_of_their_name_and_a_thing_by_what_it_is_of_are_the_ones_the_memory_holds():
    assert same_subject("Agnes", ["Sister Agnes Pruett"]) == "Sister Agnes Pruett"
    assert same_subject("Sister Agnes Pruett of Ward Nine", ["Sister Agnes Pruett"]) == "Sister Agnes Pruett"
    assert same_subject("skep", ["straw skep at the end of Long Meadow"]) == "straw skep at the end of Long Meadow"
    assert same_subject("map", ["Zebedee's map of the caves"]) == "Zebedee's map of the caves"
    assert same_subject("key ring", ["brass key"]) == "key ring", "still another thing"
    assert same_subject("Tom", ["Tom's Boat"]) == "Tom", "a thing of someone's is not them"


def test_a_new_code_is_of_the_lock_the_sentence_names_not_the_one_the_memory_held_before():
    said = "After the depressurisation scare, colony security resets the airlock; the new code is 5190."
    assert [(c.subject, c.value) for c in changes_in(said, ["cellar door code", "Dome C airlock"])] == [
        ("Dome C airlock", "5190")
    ]


def test_a_thing_named_or_picked_out_is_read_and_one_of_someones():
    assert [(c.subject, c.value) for c in changes_in("Zebedee's map of the caves now lies in the cellar.")] == [
        ("Zebedee's map of the caves", "in the cellar")
    ]
    rowed = changes_in("Tom rows the Kittiwake to Lisbon.")
    assert [(c.subject, c.value) for c in rowed] == [("Kittiwake", "in Lisbon")]
    assert [c.value for c in changes_in("Pip sets the lamp down on deck.")] == ["on deck"], "one word is a place"
    assert [c.subject for c in changes_in("Tally serves the excise men.")] == ["Tally"], "a side needs no article"


def test_one_current_value_when_a_sentence_names_two():
    (change,) = changes_in("She puts the key in the drawer and in the box.")
    assert change.value == "in the box", "the last said"
    (change,) = changes_in("The key is now in the drawer. The key now lies in the box.")
    assert change.value == "in the box"


def test_an_it_is_the_thing_named_in_full_of_two_that_share_a_name():
    said = "Wren Tally carried the brass key down to the cellar and left it on a barrel there."
    [change] = changes_in(said, ["cellar key", "brass key"])
    assert (change.subject, change.value) == ("brass key", "on a barrel"), "not the cellar key"


def test_a_subject_the_memory_holds_is_named_its_way_and_attributes_have_one_name():
    assert same_subject("candlestick", ["swan candlestick", "brass key"]) == "swan candlestick"
    assert same_subject("swan candlestick", ["candlestick"]) == "candlestick"
    assert same_subject("key ring", ["brass key"]) == "key ring", "another thing: its last word differs"
    (change,) = changes_in("Pip carries the candlestick into the vestry.", ["swan candlestick"])
    assert change.subject == "swan candlestick"
    assert attribute_name("Whereabouts") == attribute_name("place") == "location"
    assert attribute_name("loyalty") == "allegiance" and attribute_name("mood") == "mood"
    # of two things it may name, the one the memory came to hold last (the facts are kept in that order)
    assert same_subject("compass", ["whalebone compass", "lapis compass"]) == "lapis compass"


def test_a_code_is_of_the_lock_named_most_fully_and_never_of_another_of_its_kind():
    # bench change: "the crypt door" gave the Ravensworth lock's new sigils to the studio door, and "the new password
    # for the sail-loft meetings" its word to the studio door's password, and the GM told them as the studio's
    tampered = (
        "Someone has tampered with the Ravensworth lock again: fresh scratches on the brass show the dials set to "
        "wolf, lily, crown, and the crypt door yields to that sequence."
    )
    [change] = changes_in(tampered, ["Ravensworth crypt lock", "studio door"])
    assert (change.subject, change.value) == ("Ravensworth crypt lock", "wolf, lily, crown")
    [change] = changes_in(tampered, ["clockwork lock", "studio door"])
    assert change.subject == "clockwork lock", "a crypt door is no studio door"
    said = "Lowenna breathes the new password for the sail-loft meetings into each ear in turn: blackthorn."
    for known in (["studio door password"], ["studio door password", "password for the sail-loft meetings"]):
        [change] = changes_in(said, known)
        assert (change.subject, change.value) == ("password for the sail-loft meetings", "blackthorn")
    assert same_subject("password", ["password for the sail-loft meetings"]) == "password for the sail-loft meetings"
    [change] = changes_in('A note reads: "The ossuary gate now answers to thistle-and-ash."')
    assert (change.attribute, change.value) == ("code", "thistle-and-ash"), "a gate answers to its word, not a side"


def test_an_it_is_a_word_said_not_part_of_one_and_a_place_ends_before_a_clause_of_when():
    assert changes_in("By nightfall it sits in the repair pit beneath the Line Four car.", ["night"]) == []
    [change] = changes_in("The captain locks the sealed orders in the wardroom safe before the boat dives.")
    assert change.value == "in the wardroom safe"
    assert same_subject("sealed orders", ["sealed orders envelope"]) == "sealed orders envelope", "said whole"


def test_a_code_of_words_in_a_row_is_the_lock_the_memory_holds_that_the_sentence_names():
    said = "Someone has tampered with the Ravensworth lock: the dials are set to wolf, lily, crown."
    [change] = changes_in(said, ["clockwork lock", "crypt door"])
    assert (change.subject, change.attribute, change.value) == ("clockwork lock", "code", "wolf, lily, crown")


def test_a_place_in_someones_hands_is_who_holds_it():
    said = "Recovered at last in the raid, the thornwood staff is laid once more in Maelona's hands."
    found = [(c.subject, c.attribute, c.value) for c in changes_in(said, ["thornwood staff"])]
    assert found == [("thornwood staff", "holder", "Maelona")], "not a thing called 'once more'"


def test_a_change_an_answer_gives_back_from_its_question_is_its_premise():
    from bot.memory.changes import beyond_the_questions

    asked = ["Which servant carries the key to the wine vault?"]
    [premise] = changes_in("Wren Tally carries the key to the wine vault.", ["brass key"])
    assert (premise.subject, premise.value) == ("brass key", "in the wine vault"), "read as a move"
    assert beyond_the_questions([premise], asked) == []
    [moved] = changes_in("Wren carries the brass key to the boathouse.", ["brass key"])
    assert beyond_the_questions([moved], asked) == [moved], "a place the question did not name"
    assert beyond_the_questions([premise], []) == [premise], "no question: what the reply says moved"


def test_a_sentence_said_again_moves_nothing_again():
    from bot.memory.changes import said_anew

    [repeat] = changes_in("Wren Tally carries the key to the wine vault.", ["brass key"])
    earlier = ["The gulls cry. Wren Tally carries the key to the wine vault!"]
    assert said_anew([repeat], earlier) == [], "the same sentence (its words, any case or stop)"
    [moved] = changes_in("Wren Tally carries the key to the boathouse.", ["brass key"])
    assert said_anew([moved], earlier) == [moved]


def test_a_thing_ended_somewhere_is_ended_not_moved():
    """The letter in "Wren burns the captain's letter in the kitchen stove." is burned, wherever it burned."""
    [burned] = changes_in("Wren burns the captain's letter in the kitchen stove.", ["captain's letter"])
    assert (burned.subject, burned.attribute, burned.value) == ("captain's letter", "state", "burned")
    [smashed] = changes_in("She smashes the lamp with a poker.")
    assert (smashed.subject, smashed.value) == ("lamp", "smashed")


def test_a_side_is_never_taken_by_words_that_are_no_thing():
    """ "Elias renounces every master and throws in his lot with the wreckers" is no side of "every master and" (a
    thing ends at no "and"): the finder says nothing rather than a fact of nothing."""
    said = "Elias renounces every master and throws in his lot with the wreckers."
    assert all(not change.subject.endswith(" and") for change in changes_in(said))


@pytest.mark.parametrize(
    ("asked", "attributes"),
    [
        ("Where would I find the carved bone needle that points north?", {"location", "holder", "state"}),
        ("Whose keeping is the map of the currents in?", {"holder", "allegiance"}),
        ("Which faction does the young clergyman serve these days?", {"allegiance"}),  # the words name a side
        ("What number opens the wine vault's lock now?", {"code"}),
        ("Which numbers open the iron chest?", {"code"}),  # a word's plural names it too
        ("Which servant carries the key to the wine vault?", {"holder", "allegiance"}),  # which one: who
        ("Who owns the brass telescope now?", {"holder"}),
        ("Where is the side door key?", {"location", "holder", "state"}),  # a side door is no side
        ("Where did the silver candle holder end up?", {"location", "holder", "state"}),
        ("What stands on the chapel altar these days?", None),  # "what" may ask anything
        ("I look at the brass key.", None),  # a look asks nothing in particular
    ],
)
def test_a_question_asks_what_its_question_word_and_its_words_allow(asked: str, attributes: set[str] | None):
    assert asks_for(asked) == (frozenset(attributes) if attributes is not None else None)
