"""How a turn's notes read in its message (bot.memory.transcript)."""

from __future__ import annotations

from bot.memory.layers import BRIEF_CHOICE, BRIEF_CLOSING, HEADERS
from bot.memory.transcript import notes_text
from bot.store.models import TurnNote


def note(layer: str, text: str) -> TurnNote:
    return TurnNote(layer=layer, ref=f"{layer}:{text[:8]}", text=text)


def test_the_brief_reads_as_one_paragraph_closed_by_what_to_do_with_it():
    """A small model copied the recent turns' manner past a bulleted list of labelled turns; the brief is prose:
    the plain turn label and the GM's name go, a player's name and a label that says more stay."""
    notes = [
        note("recall", "[turn 40] GM: The cliff path is steep."),
        note("brief", "[turn 6] … GM: Gorse grows thick, and blue wool hangs on its thorns …"),
        note("brief", "[fact, now] brass key, location: in the cellar"),
    ]
    text = notes_text(notes)
    recall, brief = text.split("\n\n")
    assert recall == f"{HEADERS['recall']}\n- [turn 40] GM: The cliff path is steep."
    assert brief == (
        f"{HEADERS['brief']} Gorse grows thick, and blue wool hangs on its thorns. "
        f"[fact, now] brass key, location: in the cellar.\n{BRIEF_CLOSING}"
    )
    said = notes_text([note("brief", "[turn 9] Maya: I hide the key in the clock."),
                       note("brief", "[turn 5, since changed] … The key lies on the desk.")])  # fmt: skip
    assert said == (f"{HEADERS['brief']} Maya: I hide the key in the clock. [turn 5, since changed] … The key lies on "
                    f"the desk.\n{BRIEF_CLOSING}")  # fmt: skip


def test_a_brief_of_two_turns_asks_the_model_to_tell_what_they_say():
    """Two turns neither of which is clearly the answer (bot.memory.recall.CANDIDATES): "Answer with that." had the
    small model pick one, often the wrong one, or neither; it is asked to tell what they say."""
    notes = [
        TurnNote(layer="brief", ref="entry:303", text="[turn 150] … GM: Wren Tally carried the brass key down."),
        TurnNote(layer="brief", ref="entry:21", text="[turn 9] … GM: Mrs Ashdown wears the cellar key on a chain."),
    ]
    assert notes_text(notes) == (
        f"{HEADERS['brief']} Wren Tally carried the brass key down. Mrs Ashdown wears the cellar key on a chain.\n"
        f"{BRIEF_CHOICE}"
    )
    one = [notes[0], TurnNote(layer="brief", ref="fact:3", text="[fact, now] brass key, location: in the cellar")]
    assert notes_text(one).endswith(f"\n{BRIEF_CLOSING}"), "one turn and a fact's value: the answer"
