"""The GM's reply loses what it must not say, as it streams (bot.engine.turn.shaping)."""

from __future__ import annotations

from bot.engine.turn.shaping import ReplyShaper
from bot.memory.private import split_reply

SEATED = ["Maya", "Pip"]


def _shape(text: str, *, pieces: int = 7, cut: bool = False, **rules) -> tuple[str, ReplyShaper]:
    shaper = ReplyShaper(rules.pop("players", ["Maya", "Meg Wren"]), **rules)
    out = []
    for start in range(0, len(text), pieces):
        out.append(shaper.feed(text[start : start + pieces]))
        if shaper.done:
            break
    out.append(shaper.finish(cut_by_length=cut))
    return "".join(out), shaper


def test_the_reply_ends_where_it_would_speak_for_a_player():
    text, shaper = _shape("The door creaks open. Dust falls.\nMaya: I step inside.\nThe hall is dark.")
    assert text == "The door creaks open. Dust falls."
    assert shaper.shaped.speaks_for_players and shaper.done
    # Run on after a sentence, as the default model went on in bench secrets: the transcript's next line all the same.
    said = "The brandy smells sharp."
    text, shaper = _shape(f"{said} Maya: I lean over the desk and sniff the glass.")
    assert text == said and shaper.shaped.speaks_for_players and shaper.done
    text, _ = _shape(f'{said} Meg Wren: "I keep the key."', players=["Maya"])
    assert text == f'{said} Meg Wren: "I keep the key."', "a character of the world speaks in the script form"


def test_a_reply_in_the_transcripts_name_form_loses_the_label_and_an_echo():
    text, shaper = _shape("Meg Wren: The closet is locked. A key glints.")
    assert text == "The closet is locked. A key glints."
    assert shaper.shaped.speaks_for_players
    text, shaper = _shape(
        "Maya: I walk up to the front door of the manor and knock. Nobody answers.",
        actions=["I walk up to the front door of the manor and knock."],
    )
    assert text == "Nobody answers." and shaper.shaped.echo


def test_a_reply_with_nothing_new_is_given_back_and_said_to_be_so():
    text, shaper = _shape("The clock strikes nine.", recent=["The clock strikes nine."])
    assert text == "The clock strikes nine." and shaper.said_nothing_new


def test_a_character_answering_in_the_script_form_is_no_echo_of_the_question():
    """The speaker's label says who talks, not what is said: a character's answer that shares the question's words
    (the default model's answers on Hollow Manor) is the answer, not the action said again."""
    for reply, action in (
        ('Meg Wren: "I keep the key to the study. I always use it."', "I ask Meg Wren who keeps the key to the study."),
        (
            'Dr. Anselm Pike: "I last saw Silas Wren alive at twelve o\'clock this afternoon."',
            "I ask Dr. Pike when he last saw Silas Wren alive.",
        ),
    ):
        text, shaper = _shape(reply, players=["Maya", "Tom"], actions=[action])
        assert text == reply and not shaper.shaped.echo and not shaper.said_nothing_new
    text, shaper = _shape(
        "Tom: I ask Meg Wren who keeps the key to the study. She shrugs.",
        players=["Maya", "Tom"],
        actions=["I ask Meg Wren who keeps the key to the study."],
    )
    assert text == "She shrugs." and shaper.shaped.echo, "a player's line saying the action again is still an echo"


def test_the_models_own_name_is_taken_off_and_bold_names_count():
    assert _shape("GM: Rain lashes the windows.")[0] == "Rain lashes the windows."
    text, _ = _shape("Rain lashes the windows.\n**Maya**: I shiver.")
    assert text == "Rain lashes the windows."


def test_a_character_saying_the_action_back_is_dropped_but_not_one_answering_it():
    """The default model answered Rook's action with Old Marrow saying it back (bench quality, Ember Road): the
    quoted words are the action's, what it does; an answer shares what the action asks, not what it does."""
    counting = "I help Old Marrow count the water casks and ask about the red wax one."
    reply = (
        'Old Marrow smiles down at you. "I count the water casks, Rook," she says with a laugh. '
        '"And I ask about the red wax one."'
    )
    text, shaper = _shape(reply, players=["Rook", "Sable"], actions=[counting])
    assert text == "Old Marrow smiles down at you." and shaper.shaped.echo
    for reply, action in (
        ('Meg Wren: "I keep the key to the study."', "I ask Meg Wren who keeps the key to the study."),
        ('"There is no other way into this study," Mrs. Crane says.', "Mrs. Crane, is there any other way in here?"),
        ('"The red wax one holds medicine water," Marrow says.', counting),
    ):
        text, shaper = _shape(reply, players=["Rook", "Sable"], actions=[action])
        assert text == reply and not shaper.shaped.echo, reply


def test_an_echo_of_the_action_at_the_start_is_dropped():
    text, shaper = _shape(
        "Maya walks up to the front door of the manor and knocks. Nobody answers; the knocker is cold.",
        actions=["I walk up to the front door of the manor and knock."],
    )
    assert text == "Nobody answers; the knocker is cold."
    assert shaper.shaped.echo
    asked = ["Was the fuel for the beacon tampered with?"]  # three content words: too few to judge a restating
    text, shaper = _shape("Was the fuel for the beacon tampered with? No, but the keeper is suspicious.", actions=asked)
    assert text == "No, but the keeper is suspicious." and shaper.shaped.echo, "said again word for word: an echo"
    text, _ = _shape("You light the lamp. It flickers.", actions=["I light the lamp."])
    assert text == "You light the lamp. It flickers.", "told back as what happens: no echo"


def test_narration_in_the_first_person_is_the_players_part_and_is_dropped():
    text, shaper = _shape("I look at the desk. There's a brandy glass on it by Silas's hand.")
    assert text == "There's a brandy glass on it by Silas's hand." and shaper.shaped.first_person
    text, shaper = _shape("I look around the desk.", actions=["I search the study."])
    assert text == "" and shaper.shaped.first_person, "a reply that was only the player's part leaves nothing"
    assert not shaper.said_nothing_new, "nor is the player's part given back for want of anything else"
    spoken = 'Meg turns. "I saw him at nine.\nI swear it." I hand you the key, says Pike. "I... I think so."'
    text, shaper = _shape(spoken)
    assert text == spoken and not shaper.shaped.first_person, "what characters say, quoted or to someone, stays"


def test_a_sentence_said_before_ends_the_reply():
    text, shaper = _shape("Hester will get it tomorrow. The shop is shut. Hester will get it tomorrow. More.")
    assert text == "Hester will get it tomorrow. The shop is shut."
    assert shaper.shaped.repeats
    recent = ["Outside it rains. The clock strikes nine."]
    text, _ = _shape("The clock strikes nine. A door slams. Outside it rains. You wait.", recent=recent)
    assert text == "A door slams.", "a sentence of the last replies counts too; at the start it is only dropped"


def test_a_reply_cut_by_the_token_limit_ends_at_its_last_whole_sentence():
    text, shaper = _shape("The stair is steep. At the top you see a narrow wood", cut=True)
    assert text == "The stair is steep."
    assert shaper.shaped.cut_off
    assert _shape("The stair is steep. At the top", cut=False)[0] == "The stair is steep. At the top"
    assert _shape("At the top of the stair you see", cut=True)[0] == "At the top of the stair you see", "all it has"


def test_asides_pass_through_and_nothing_changes_when_switched_off():
    aside = "The lamp flares. [[to Maya: You see a boat.]] The wind rises."
    assert _shape(aside)[0] == aside
    raw = "Maya: I walk in.\nThe hall. The hall."
    shaper = ReplyShaper(["Maya"], enabled=False)
    assert shaper.feed(raw) + shaper.finish(cut_by_length=True) == raw


def test_a_new_gm_line_further_on_ends_the_reply():
    text, shaper = _shape("The fog lifts.\nGM: The fog lifts again.\nMaya: I wave.")
    assert text == "The fog lifts." and shaper.done


def test_the_recorded_reply_from_the_issue_comes_out_as_narration():
    """Turn 1 of Hollow Manor with the bundled model, as a new user met it: a preamble, the player's line with
    an echo of the action, an NPC's line, and a loop."""
    raw = (
        "GM: Here's a continuation of the game:\n"
        "- Maya: I walk up to the front door of the manor and knock. She sees a lamp lit in the hall.\n"
        "Meg Wren: She was walking to the closet and she had no money.\n"
        "I'm going to get it tomorrow.\n"
        "I'm going to get it tomorrow.\n"
    )
    text, shaper = _shape(raw, players=["Maya"], actions=["I walk up to the front door of the manor and knock."])
    assert text == (
        "She sees a lamp lit in the hall.\n"
        "Meg Wren: She was walking to the closet and she had no money.\n"
        "I'm going to get it tomorrow."
    )
    assert shaper.shaped.speaks_for_players and shaper.shaped.echo and shaper.shaped.repeats
    assert "Here's a continuation of the game:" in shaper.shaped.dropped


def test_a_preamble_goes_but_a_line_of_the_story_ending_in_a_colon_stays():
    assert _shape("Sure! Here is the next part:\nThe lamp gutters.")[0] == "The lamp gutters."
    assert _shape("Here's what happens next:\nThe lamp gutters.", pieces=3)[0] == "The lamp gutters."
    assert _shape("The note reads:\nMeet me at midnight.")[0] == "The note reads:\nMeet me at midnight."
    assert _shape("Here the stair ends. A door waits.")[0] == "Here the stair ends. A door waits."
    assert _shape("Sure enough, the door is locked.")[0] == "Sure enough, the door is locked."
    # An opening that might be a preamble is held only for the length of one: a long line streams as usual.
    shaper = ReplyShaper(["Maya"])
    long = (
        "Sure enough, the door is locked. The hall beyond is dark and cold. Rain drums on the high windows. "
        "Somewhere above, a board creaks under a slow step. "
    )
    shown = shaper.feed(long + "A clock ")
    assert shown == long.strip() and not shaper.done


def test_the_engines_own_notes_copied_into_a_reply_end_it_and_never_open_it():
    text, shaper = _shape(
        "The rain falls. What do you do? (GM note: your draft gave away GM-only knowledge. Rewrite the reply.)"
    )
    assert text == "The rain falls. What do you do?" and shaper.shaped.engine_notes
    text, shaper = _shape("(Your last reply only repeated the action.) The clock ticks on the mantel. Who moves?")
    assert text == "The clock ticks on the mantel. Who moves?" and shaper.shaped.engine_notes
    text, _ = _shape("GM-only, this scene: Meg hides a debt. The hall is quiet.")
    assert text == "The hall is quiet."
    text, _ = _shape("(The GM answers privately.) The lamp gutters.")
    assert text == "The lamp gutters."
    # A note the model put in its own words is still a note.
    text, shaper = _shape(
        "The lamp gutters. (GM: keep to what the players have found; write what happens next in new words.)"
    )
    assert text == "The lamp gutters." and shaper.shaped.engine_notes
    text, _ = _shape("GM: The lamp gutters. Who moves?")
    assert text == "The lamp gutters. Who moves?", "the GM's own name before a line is no note"
    # The note's form with its words changed, as a 1.5B model went on after its reply in a 300-turn game.
    for note in (
        "(Your next reply only repeated the player's actions or an earlier reply, or told you nothing.",
        "(Your next turn should be what happens as the player does it.)",
        "(Your next reply should be a short summary of what the players do on the following turn.)",
    ):
        text, shaper = _shape(f"The lamp gutters. Who moves?\n\n{note} The captain nods.")
        assert text == "The lamp gutters. Who moves?" and shaper.shaped.engine_notes, note
    # The engine's bookkeeping in the model's words, as a 1.5B model closed two replies of a 300-turn game.
    note = "End of turn 257, with no new player joining or leaving the game, and no further actions by the players."
    text, shaper = _shape(f"The oars were sawn halfway through.\n\n{note}")
    assert text == "The oars were sawn halfway through." and shaper.shaped.engine_notes
    text, _ = _shape("Turn 12 ends with the rain. The lamp gutters.")
    assert text == "The lamp gutters."
    # A recalled turn's or fact's label with its bracket left open, as the 1.5B model went on after its answers in
    # the memory test's long game: the notes' lines, copied, and everything after them more of the same.
    said = "He doesn't see any signs of tampering."
    for note in ("[turn 263 Maya: I go on carefully.\n- [fact, now the fuel is fresh.", "- [fact] oil, state: fresh"):
        text, shaper = _shape(f"{said} {note}")
        assert text == said and shaper.shaped.engine_notes, note
    text, _ = _shape("The turn of the tide is near. Fact: the oil is fresh.")
    assert text == "The turn of the tide is near. Fact: the oil is fresh.", "the words alone are no label"
    # The engine's words about a clue, copied at the reply's opening (bench secrets, the 1.5B model, Ember Road).
    text, shaper = _shape("The bot tells me something is wrong with the water wagon. The wagon creaks.")
    assert text == "The wagon creaks." and shaper.shaped.engine_notes
    copied = "Maya notices something only they see; the bot tells them privately. In public, say only that Maya "
    text, shaper = _shape(copied + 'noticed something, and nothing of what. Pell: "I keep my own pace."')
    assert text == 'Pell: "I keep my own pace."' and shaper.shaped.engine_notes
    # What an NPC entering witnessed, as the notes write it, copied after an answer (the memory test, seed 23).
    said = "The brass key is now in the cellar."
    note = "Wren Tally witnesses turns 203-205, 212-214, 216-218, and knows nothing else that happened."
    text, shaper = _shape(f"{said} {note} Wren nods.")
    assert text == said and shaper.shaped.engine_notes
    text, _ = _shape("Wren Tally witnessed the wreck from the cliff. Wren nods.")
    assert text == "Wren Tally witnessed the wreck from the cliff. Wren nods.", "a witness in the story is no note"
    text, _ = _shape("Maya notices something by the wheel. Pell shrugs.")
    assert text == "Maya notices something by the wheel. Pell shrugs.", "noticing is the story"
    text, _ = _shape("At the end of the road, a lamp gutters.")
    assert text == "At the end of the road, a lamp gutters.", "an end in the story is no note"
    text, _ = _shape("Your turn is over for now. The lamp gutters.")
    assert text == "Your turn is over for now. The lamp gutters.", "the GM speaking to the player is no note"


def test_transcript_brackets_are_taken_out_of_the_story():
    text, shaper = _shape("GM: [The study door is locked. A keyhole glints.")
    assert text == "The study door is locked. A keyhole glints." and shaper.shaped.artefacts
    text, _ = _shape("[Maya joins the game.]\nThe rain beats on the glass. What do you do?")
    assert text == "The rain beats on the glass. What do you do?"
    text, _ = _shape("The rain falls on the roof.] What do you do?")
    assert text == "The rain falls on the roof. What do you do?"
    text, _ = _shape('Meg laughs. "Not tonight," she says. "Ask me at dawn."')
    assert text == 'Meg laughs. "Not tonight," she says. "Ask me at dawn."', "quotes are the story's"


def test_an_aside_in_single_brackets_becomes_a_real_one_and_an_empty_one_goes():
    # Meg Wren is the NPC here, not a seated player: a player's character frowning is the player's to say.
    said = "The clock strikes. [To Maya: A key lies under the desk. It is gold.] Meg Wren frowns."
    text, shaper = _shape(said, players=SEATED)
    assert text == "The clock strikes. [[To Maya: A key lies under the desk. It is gold.]] Meg Wren frowns."
    assert shaper.shaped.artefacts
    text, _ = _shape("The clock strikes. [[to Maya: ]] Meg Wren frowns.", players=SEATED)
    assert "[[" not in text and "Meg Wren frowns." in text
    text, _ = _shape("The clock strikes. [To Tom: psst.] Meg Wren frowns.", players=SEATED)
    public, notes = split_reply(text, SEATED)
    assert (public, notes) == ("The clock strikes. Meg Wren frowns.", []), "Tom does not play here: it goes nowhere"


def test_asides_wrapped_in_braces_or_to_a_character_nobody_plays_go_nowhere_public():
    """What Qwen2.5 1.5B wrote once asked to answer an action (bench quality, Hollow Manor), and the next replies
    copied from it: asides in braces, in single brackets, to characters of the world. None of it reaches the
    channel; an aside to a seated player still reaches them."""
    players = ["Maya", "Tom", "Ines"]
    said = (
        "Tom hears voices outside, distorted by the storm.\n\n[[to Ines: You see the storm...]] "
        "{{[to Julian Ashby: You see voices outside...}}"
    )
    text, shaper = _shape(said, players=players)
    public, notes = split_reply(text, players)
    assert public == "Tom hears voices outside, distorted by the storm."
    assert [note.name for note in notes] == ["Ines"]
    assert shaper.shaped.artefacts
    assert "Julian Ashby" not in text, "an aside that reaches no one is taken out of what the model wrote too"
    text, _ = _shape("The hall is cold. [to Meg Wren: Her hands shake.] A clock ticks.", players=players)
    assert split_reply(text, players) == ("The hall is cold. A clock ticks.", [])


def test_an_aside_to_a_character_nobody_plays_is_taken_out_whole():
    """The default model wrote one aside to every character in the scene, seated or not (bench quality)."""
    players = ["Maya", "Tom", "Ines"]
    said = (
        "Tom climbs the stair.\n\n[[to Meg: You hear water again. The door is locked...]] "
        "[[to Ines: The storm picks up.]] [[to Julian Ashby: You see the storm...]]\n\nThe candle gutters."
    )
    text, shaper = _shape(said, pieces=len(said), players=players, actions=["I climb the stair."], actors=["Tom"])
    assert text == "Tom climbs the stair.\n\n[[to Ines: The storm picks up.]]\n\nThe candle gutters."
    assert "[[to Julian Ashby: You see the storm...]]" in shaper.shaped.dropped


def test_a_players_line_after_asides_taken_out_still_ends_the_reply():
    """What the default model wrote on bench quality's first turn: asides to the world's characters, then Maya's
    own next action on a line of its own. The asides go; the line is still a player's, and the reply ends there,
    however the stream is cut."""
    said = (
        "You hear the sound of water. [[to Hester Crane: You see a small crack.]] [[to Julian Ashby: You hear "
        "nothing.]]\n\nMaya: I knock on the front door again. You hear nothing."
    )
    for pieces in (1, 3, 7, len(said)):
        text, shaper = _shape(said, pieces=pieces, players=["Maya", "Tom"], actions=["I knock."], actors=["Maya"])
        assert text == "You hear the sound of water.", pieces
        assert shaper.shaped.speaks_for_players


def test_a_she_after_a_sentence_about_a_player_is_that_player():
    """What the default model wrote in a first game of Hollow Manor (make play): after Maya's sniff of the glass, a
    line for her and an act she never chose, by "she". A "she" after a sentence naming someone else too may be
    either, and an NPC's "she" is the NPC's."""
    players, actors = ["Maya", "Tom"], ["Maya"]
    said = (
        "Maya looks down at the brandy glass by Silas's hand, but it is still empty. \"I can't open the door,\" she "
        "says to herself. She goes to the window and locks it tightly again."
    )
    action = ["I lean over the desk and sniff the brandy glass by his hand."]
    text, shaper = _shape(said, players=players, actions=action, actors=actors)
    assert text == "Maya looks down at the brandy glass by Silas's hand, but it is still empty."
    assert "She goes to the window and locks it tightly again." in shaper.shaped.dropped
    for kept, action in (
        ("Maya hands Meg the key. She thanks her and pockets it.", "I hand Meg the key."),
        ('Hester Crane looks at you. "Tobias is in the drawing room," she says. She turns away.', "I ask her."),
    ):
        assert _shape(kept, players=players, actions=[action], actors=actors)[0] == kept


def test_narration_after_an_aside_that_opened_another_is_still_judged():
    """ "[[to Maya: ...}" then "[[to Ines: ...]]": the aside ends at the first "]]", as the channel's text is
    split, so "Tom asks the housekeeper ..." after it is narration deciding for Tom, and goes."""
    said = (
        "You find an old map of the area. It lies on a shelf.\n\n{{[[to Maya: You find an old map...}\n"
        "[[to Ines: You see the map on a shelf...]]}}\n[[to Tom: You notice it is out of place...]]\n\n"
        "Tom asks the housekeeper what the map represents."
    )
    text, shaper = _shape(said, players=["Maya", "Tom", "Ines"], actions=["I search the shelves."], actors=["Maya"])
    assert "Tom asks" not in text
    assert "Tom asks the housekeeper what the map represents." in shaper.shaped.dropped


def test_a_sentence_copied_from_an_example_reply_is_taken_out():
    """Qwen2.5 1.5B wrote the prompt's example into a game of another world: "The door locks with a groan, and
    the cold air smells of earth and lamp oil." Any of the examples games are given, copied in part, goes."""
    from bot.memory.brief import EXAMPLE_REPLIES

    copied = "The door locks with a groan, and the cold air smells of earth and lamp oil. Meg watches you, Maya."
    text, shaper = _shape(copied, actions=["I push the study door."], recent=[])
    assert text == "Meg watches you, Maya." and shaper.shaped.dropped == [copied.split(". ")[0] + "."]
    ferry = EXAMPLE_REPLIES[1].split(". ")[0]  # "The ferryman takes your coin without a word and pushes off ..."
    text, _ = _shape(f"{ferry}. The rain keeps on.", actions=["I pay the ferryman."], recent=[])
    assert text == "The rain keeps on."
    text, _ = _shape(
        "The cold air bites at your hands as you push. What do you do?", actions=["I push the door."], recent=[]
    )
    assert text == "The cold air bites at your hands as you push. What do you do?", "a few of its words are no copy"
    copied = "Doctor Penhale looked after him. The notes from earlier in the game say: He treated a fever."
    text, _ = _shape(copied, actions=["Which physician looked after the skipper?"], recent=[])
    assert text == "Doctor Penhale looked after him. He treated a fever.", "the brief's heading goes, the story stays"
    text, _ = _shape("The doctor came by. Answer with that.", actions=["Who came?"], recent=[])
    assert text == "The doctor came by.", "the brief's closing goes"
    aside = "The captain looks up and sees a pale hand slip back under water. The gulls cry."
    text, _ = _shape(aside, actions=["I check the thorns."], recent=[])
    assert text == "The gulls cry.", "an example's private aside, copied in public"
    slipping = "Maya notices a pale hand slipping back under the water. The gulls cry."  # the README's transcript
    text, _ = _shape(slipping, actions=["I sniff the brandy glass."], recent=[])
    assert text == "The gulls cry.", "copied with another ending"


def test_narration_that_decides_what_a_players_character_does_or_feels_is_taken_out():
    """Seen with the 1.5B model: prose, not dialogue, taking the players' part ("Maya and Tom nod in agreement")."""

    def shape(text: str, action: str) -> tuple[str, ReplyShaper]:
        return _shape(text, players=["Maya", "Tom"], actions=[action])

    asked = "I ask Dessa who is buying the cargo in Kettle."
    text, shaper = shape('Dessa shrugs. "Thale\'s House." Maya and Tom nod in agreement.', asked)
    assert text == 'Dessa shrugs. "Thale\'s House."' and shaper.shaped.decides_for_players
    text, _ = shape('Tom looks around, his heart pounding. Dessa: "Thale\'s House." Maya reaches for the cask.', asked)
    assert text == 'Dessa: "Thale\'s House."', "after a line of dialogue as well"
    said = "Maya forces the lock; it gives with a snap. The room is dark."
    assert shape(said, "I force the lock.")[0] == said, "what the player wrote"
    said = "Maya notices a faint smell of medicine. Tom is soaked to the skin."
    assert shape(said, "I sniff the glass.")[0] == said, "what happens to them"
    said = "Maya, you see the door swing open. Tom's lantern gutters."
    assert shape(said, "I open the door.")[0] == said, "spoken to, or theirs"
    said = "Maya lifts the glass and breathes in. The brandy smells sharp."
    text, _ = _shape(said, players=["Maya", "Tom"], actions=["I sniff the brandy glass."], actors=["Maya"])
    assert text == said, "the acting player's own action on what it named, told"
    text, _ = _shape(f"{said} Tom lifts his eyebrows.", players=["Maya", "Tom"], actions=["I sniff the brandy glass."],
                     actors=["Maya"])  # fmt: skip
    assert text == said, "another player's character is no actor of this turn"
    said = ("The ledger is full of cramped figures. Maya realizes that this ledger is related to her father's "
            "business dealings, and she starts to question if her father is involved in smuggling.")  # fmt: skip
    text, shaper = _shape(said, players=["Maya", "Tom"], actions=["Where was the ledger bought?"], actors=["Maya"])
    assert text == "The ledger is full of cramped figures.", "what she thinks is hers, whatever it names"
    said = "Maya wonders whether the ledger lies. The ink is fresh."
    text, _ = _shape(said, players=["Maya", "Tom"], actions=["I wonder if the ledger lies."], actors=["Maya"])
    assert text == said, "what her player wrote she thinks"
    text, _ = _shape("Maya frowns. The brandy smells sharp.", players=["Maya", "Tom"],
                     actions=["I sniff the brandy glass."], actors=["Maya"])  # fmt: skip
    assert text == "The brandy smells sharp.", "a feeling their action never named"
    # A name their action said is not what it did: "Who killed Silas Wren?" is no sniff of the glass by his hand.
    text, _ = _shape("Maya leans over the desk and smells the brandy glass by Silas's hand. The fire crackles.",
                     players=["Maya", "Tom"], actions=["Who killed Silas Wren, and how?"], actors=["Maya"])  # fmt: skip
    assert text == "The fire crackles."


def test_a_line_of_the_notes_copied_with_its_label_is_taken_out():
    """Seen with the default model in bench secrets: "fact telephone line, state: dead Julian Ashby: Oh no." """
    text, shaper = _shape("fact telephone line, state: dead. Julian Ashby sighs.", actions=["I ask Ashby."])
    assert text == "Julian Ashby sighs." and shaper.shaped.engine_notes
    text, _ = _shape("- [fact, now] brass key, location: in the cellar. The wind howls.", actions=["Where is it?"])
    assert text == "The wind howls."
    text, _ = _shape("(Your last reply did not advance the game.) The wind howls.", actions=["I go up the stair."])
    assert text == "The wind howls.", "the re-ask's note in the model's words (bench quality, the default model)"
    said = "In fact the line is dead, as Ashby says: nobody can call the mainland."
    assert _shape(said, actions=["I try the telephone."])[0] == said, "the word in a sentence of the story"
    # Without its label (the memory test, sampling seed 7): a followed attribute and the value's history.
    copied = "A brass key, location: in the cellar (before: on the desk until turn 150) is found."
    text, shaper = _shape(f"The oil has been watered down. {copied}", actions=["Was the fuel tampered with?"])
    assert text == "The oil has been watered down." and shaper.shaped.engine_notes
    text, _ = _shape("The key was on the desk (before: under the mat until turn 12). The wind howls.")
    assert text == "The wind howls.", "the history alone"
    said = "Ashby, the butler, has a state: of nerves. The code is hers, location unknown."
    assert _shape(said, actions=["I ask Ashby."])[0] == said, "the attribute's word without its colon"


def test_narration_told_to_you_that_decides_what_the_acting_player_does_is_taken_out():
    """Seen in a real session with the 1.5B model: "You decide to leave.", "You look down at the room and see a
    dark shadow" for a player who sniffed a glass. Told to "you", narration is told to the turn's acting players."""

    def shape(text: str, action: str) -> tuple[str, ReplyShaper]:
        return _shape(text, players=["Maya", "Tom"], actions=[action], actors=["Maya"])

    text, shaper = shape("The study is cold. You decide to leave.", "I look at the body.")
    assert text == "The study is cold." and shaper.shaped.decides_for_players
    said = "The brandy smells sharp. You look down at the room and see a dark shadow behind the window."
    assert shape(said, "I sniff the brandy glass.")[0] == "The brandy smells sharp.", "an action they never took"
    said = "You look at the desk and find a brandy glass. You see a shadow. You can't open the drawer."
    assert shape(said, "I go to the study and look at the body.")[0] == said, "their action, and what happens to them"
    said = "You lift the glass and breathe in. The brandy smells sharp."
    assert shape(said, "I sniff the brandy glass.")[0] == said, "their own action on what it named"
    said = '"You killed him," Meg says. "You decide nothing here."'
    assert shape(said, "I ask Meg about the will.")[0] == said, "someone's line, not narration"
    said = "Meg Wren: You killed him. You leave now."
    text, _ = _shape(said, players=["Maya", "Tom"], actions=["I accuse Meg."], actors=["Maya"])
    assert "You leave now." in text, "a reply in the script form: its lines are spoken"
    said = 'Meg Wren: "I don\'t know, but I think Tobias keeps it." She frowns.\n\nYou turn to Julian Ashby again.'
    text, _ = _shape(said, players=["Maya", "Tom"], actions=["I ask Meg Wren who keeps the key."], actors=["Maya"])
    assert "Tobias keeps it" in text and "You turn" not in text, "the line after the script form's is narration"


def test_a_line_given_to_a_seated_player_after_its_quote_is_taken_out():
    """Seen with the default model in bench secrets: '"I found out that Silas Wren died of natural causes," says
    Maya.' for a player who asked for an epilogue: the GM spoke for her."""

    def shape(text: str, action: str) -> str:
        return _shape(text, players=["Maya", "Tom"], actions=[action], actors=["Maya"])[0]

    said = '"I found out that Silas died of natural causes," says Maya. Rain falls.'
    assert shape(said, "Write the epilogue.") == "Rain falls."
    said = '"Where were you at a quarter to eleven?" asks Maya. Meg looks away.'
    assert shape(said, 'I ask Meg, "Where were you at a quarter to eleven?"') == said, "her own words, told back"
    said = '"Nobody," says Meg. Tom looks at her.'
    assert shape(said, "I ask Meg who was there.") == '"Nobody," says Meg.', "an NPC's line stays"
    said = '"Fine," said Tom. The fire crackles.'
    assert shape(said, 'I say "Fine."') == "The fire crackles.", "another player's line, though this one spoke"
    said = '"The tunnel floods at high tide," Maya says. The captain nods.'
    assert shape(said, "Was the fuel for the beacon tampered with?") == "The captain nods.", "the name before the tag"
    said = '"Nobody," Meg says. Tom looks at her.'
    assert shape(said, "I ask Meg who was there.") == '"Nobody," Meg says.', "an NPC's line, her name first, stays"
