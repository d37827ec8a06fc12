"""The glossary's policy: which words of the GM's prose are new names worth defining, and how definitions are asked
for and bounded."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.memory.glossary import Definition, candidate_terms, definition_messages, definitions_schema

PROSE = (
    "Fog rolls in. You meet Captain Ilse Varga of the Black Tide Company near Gullrock, where the Saltwives sing. "
    "She points to Gullrock again."
)


def test_new_names_are_found_in_the_order_they_first_appear_each_once():
    assert candidate_terms(PROSE, [], 10) == ["Captain Ilse Varga", "Black Tide Company", "Gullrock", "Saltwives"]


def test_a_name_already_known_in_whole_or_part_is_not_offered_again():
    assert candidate_terms(PROSE, ["gullrock"], 10) == ["Captain Ilse Varga", "Black Tide Company", "Saltwives"]
    assert "Captain Ilse Varga" not in candidate_terms(PROSE, ["Varga"], 10), "one of its words is known"
    assert candidate_terms(PROSE, ["Captain Ilse Varga", "black tide company", "Gullrock", "Saltwives"], 10) == []


def test_no_more_than_the_limit_is_offered():
    assert candidate_terms(PROSE, [], 2) == ["Captain Ilse Varga", "Black Tide Company"]


def test_common_words_days_titles_and_sentence_openers_are_not_names():
    text = "The tide turns. On Monday I saw Mr Haddock and Sir Bo by the pier, and You waved. Then It rained."
    assert candidate_terms(text, [], 10) == ["Haddock"], "a title is dropped from the name it opens"
    assert candidate_terms("We sail at dawn. In March the boats return.", [], 10) == []
    assert candidate_terms('She said: "Gullrock waits." And so it did.', [], 10) == [], "a quote opens a sentence"


def test_a_definition_may_name_only_the_candidates_and_one_each_at_most():
    schema = definitions_schema(["Gullrock", "Saltwives"])
    answer = schema.model_validate({"definitions": [{"term": "Saltwives", "definition": "Women who sing to the sea."}]})
    assert [(d.term, d.definition) for d in answer.definitions] == [("Saltwives", "Women who sing to the sea.")]
    with pytest.raises(ValidationError):
        schema.model_validate({"definitions": [{"term": "Elsewhere", "definition": "Not a candidate."}]})
    three = [{"term": "Gullrock", "definition": "A rocky isle."}] * 3
    with pytest.raises(ValidationError):
        schema.model_validate({"definitions": three})
    shape = schema.model_json_schema()
    assert shape["properties"]["definitions"]["maxItems"] == 2
    assert shape["$defs"]["Definition"]["properties"]["term"]["enum"] == ["Gullrock", "Saltwives"]


def test_a_definition_is_a_short_line():
    assert Definition(term="Gullrock", definition="An isle.").definition == "An isle."
    with pytest.raises(ValidationError):
        Definition(term="Gullrock", definition="ok")
    with pytest.raises(ValidationError):
        Definition(term="Gullrock", definition="x" * 121)


def test_the_definer_is_told_the_game_the_terms_and_the_passage():
    system, user = definition_messages("The Lighthouse", ["Gullrock", "Saltwives"], PROSE)
    assert system.role == "system" and '"The Lighthouse"' in system.content and "JSON" in system.content
    assert "at most 20 words" in system.content
    assert user.role == "user" and user.content == f"Terms: Gullrock, Saltwives\n\nPassage:\n{PROSE}"
