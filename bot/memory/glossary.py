"""The glossary's policy: which words in the GM's prose are new proper nouns or coined terms."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from bot.model.base import ChatMessage

# Capitalised words (and runs of them, "Black Tide Company") that do not open a sentence.
_NAME_RUN = re.compile(
    r"(?<![.!?:;\"“\n]\s)(?<![\"“‘(])(?<!^)\b([A-Z][a-z'’-]+(?:\s+(?:of\s+|the\s+)?[A-Z][a-z'’-]+)*)"
)
COMMON = frozenset(
    """I I'm I'll I've I'd You Your We Our They Their He She It His Her Its The A An This That These Those
    There Here Then When What Where Who Why How If But And Or Yes No Not As At In On Of To For With From By
    Mr Mrs Ms Dr Sir Lady Lord Miss GM Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
    February March April May June July August September October November December""".split()
)


def candidate_terms(text: str, known: Iterable[str], limit: int) -> list[str]:
    """Proper nouns and coined terms in ``text`` that nothing known covers yet, first seen first."""
    known_folded = {k.casefold() for k in known}
    found: dict[str, None] = {}
    for match in _NAME_RUN.finditer(text):
        term = match.group(1).strip("'’-")
        words = term.split()
        while words and words[0] in COMMON:
            words = words[1:]
        term = " ".join(words)
        if len(term) < 3 or term in COMMON:
            continue
        folded = term.casefold()
        if folded in known_folded or any(part.casefold() in known_folded for part in words):
            continue
        found.setdefault(term)
        if len(found) >= limit:
            break
    return list(found)


class Definition(BaseModel):
    term: str
    definition: str = Field(min_length=3, max_length=120)


class Definitions(BaseModel):
    definitions: list[Definition]


def definitions_schema(terms: Sequence[str]) -> type[Definitions]:
    """One short definition per candidate term, the term restricted to the candidates: :class:`Definitions`, its
    terms narrowed to a ``Literal`` of ``terms`` and its length to theirs."""
    # A Literal of values known only at run time: a type form mypy cannot express, so it is typed as Any.
    term_type: Any = Literal[tuple(terms)]
    entry = create_model("Definition", __base__=Definition, term=(term_type, ...))
    return create_model(
        "Definitions",
        __base__=Definitions,
        definitions=(list[entry], Field(max_length=len(terms))),  # type: ignore[valid-type]  # a class made at run time
    )


def definition_messages(title: str, terms: Sequence[str], context: str) -> list[ChatMessage]:
    system = (
        f'You keep the glossary of "{title}", a role-playing game. For each term, write a one-line '
        "definition (at most 20 words) from what the passage says about it. Answer in JSON."
    )
    user = f"Terms: {', '.join(terms)}\n\nPassage:\n{context}"
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]
