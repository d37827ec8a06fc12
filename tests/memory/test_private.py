"""The GM's private asides: split from the public reply, never leaked, even half-written or garbled."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.memory.private import PublicStream, public_prefix, split_reply

NAMES = ["Maya", "Tom"]


def test_an_aside_goes_to_its_player_and_leaves_the_public_text():
    public, notes = split_reply("The hall is dark. [[to Maya: You spot a key under the rug.]] Tom sneezes.", NAMES)
    assert public == "The hall is dark. Tom sneezes."
    assert [(n.name, n.text) for n in notes] == [("Maya", "You spot a key under the rug.")]


def test_names_match_in_any_case_and_several_asides_keep_their_order():
    public, notes = split_reply("A. [[TO maya: one]] B. [[for Tom: two]] C. [[privately to MAYA: three]]", NAMES)
    assert public == "A. B. C."
    assert [(n.name, n.text) for n in notes] == [("Maya", "one"), ("Tom", "two"), ("Maya", "three")]


def test_garbled_markup_never_leaks():
    # Left open: everything after it is private (or dropped), never public.
    public, notes = split_reply("The door opens. [[to Maya: the letter names Ashby", NAMES)
    assert public == "The door opens." and notes[0].text == "the letter names Ashby"
    # No name the game knows: the aside goes to no one.
    public, notes = split_reply("Rain. [[to Ghost: the will is burned]] Thunder.", NAMES)
    assert public == "Rain. Thunder." and notes == []
    # No address at all.
    public, notes = split_reply("Rain. [[the will is burned]] Thunder.", NAMES)
    assert public == "Rain. Thunder." and notes == []
    # A stray closer is dropped.
    assert split_reply("Rain.]] Thunder.", NAMES)[0] == "Rain. Thunder."


def test_a_paragraph_of_asides_leaves_one_blank_line_and_no_spaces():
    reply = "Tom climbs the stair.\n\n[[to Meg: rain]] [[to Maya: a draught]]\n\nThe candle gutters."
    assert split_reply(reply, NAMES)[0] == "Tom climbs the stair.\n\nThe candle gutters."


def test_only_asides_leaves_an_empty_public_text():
    assert split_reply("[[to Tom: psst]]", NAMES) == ("", split_reply("[[to Tom: psst]]", NAMES)[1])


def test_the_stream_holds_back_whatever_might_open_an_aside():
    stream = PublicStream()
    shown = "".join(stream.feed(p) for p in ["The hall ", "is dark. [", "[to Maya: a ke", "y]] Tom ", "sneezes["])
    assert shown == "The hall is dark.  Tom sneezes"
    assert "key" not in shown


SECRET = st.text(alphabet="abcdefghij ", min_size=1, max_size=20).map(lambda t: "SECRET" + t.replace(" ", "_"))
PUBLIC = st.text(alphabet="abcdefghij .,[]\n", max_size=30).map(lambda t: t.replace("[[", "[").replace("]]", "]"))


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(
        st.tuples(PUBLIC, SECRET, st.sampled_from(["to Maya", "to Tom", "for ghost", "nonsense"]), st.booleans()),
        min_size=1,
        max_size=4,
    ),  # fmt: skip
    cuts=st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=30),
)
def test_no_private_text_reaches_the_public_reply_or_the_stream(parts, cuts):
    reply = ""
    for public, secret, address, closed in parts:
        reply += public + "[[" + address + ": " + secret + ("]]" if closed else "")
        if not closed:
            break
    text, _ = split_reply(reply, NAMES)
    assert "SECRET" not in text
    stream, shown, at = PublicStream(), "", 0
    for cut in cuts:
        shown += stream.feed(reply[at : at + cut])
        at += cut
    shown += stream.feed(reply[at:])
    assert "SECRET" not in shown
    assert public_prefix(reply) == shown
