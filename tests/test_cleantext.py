"""Tests of bot.cleantext: escape sequences and control characters taken out of typed and written text."""

from __future__ import annotations

import pytest

from bot.cleantext import NotText, clean_text, clean_tree
from bot.errors import UserError


def test_escape_sequences_and_control_characters_are_taken_out_and_tabs_and_newlines_stay():
    typed = "\x1b[2J\x1b[31mRed\x1b[0m door\x07\x00 \x1b]0;title\x07opens\x9b\ttab\r\nnext"
    assert clean_text(typed) == "Red door opens\ttab\nnext"


def test_plain_text_and_other_scripts_are_kept_as_they_are():
    text = "Wren’s lantern — ça brûle, 灯台 🌊"
    assert clean_text(text) == text


def test_bytes_that_are_not_utf8_are_refused_as_a_users_error():
    not_utf8 = b"caf\xe9".decode("utf-8", "surrogateescape")
    with pytest.raises(NotText, match="not UTF-8") as refused:
        clean_text(not_utf8)
    assert isinstance(refused.value, UserError)


def test_every_string_of_a_structure_is_cleaned_keys_too_and_other_values_are_left():
    tree = {"na\x1b[1mme\x1b[0m": ["a\x00b", {"k": "v\x7f"}, 3, None, True], "n": 2.5}
    assert clean_tree(tree) == {"name": ["ab", {"k": "v"}, 3, None, True], "n": 2.5}
