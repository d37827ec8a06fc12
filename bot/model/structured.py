"""Structured output: grammar, validation, one retry, then a visible fallback."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from bot.model.base import CallStats, ChatMessage, Interrupted, LanguageModel, Messages, schema_for

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

ATTEMPTS = 2


@dataclass
class Structured(Generic[T]):
    """A model answer of type ``T``; ``ok`` is false when ``value`` is the fallback."""

    value: T
    ok: bool
    attempts: int
    errors: list[str] = field(default_factory=list)
    stats: CallStats | None = None  # what the tries cost together


def generate_object(
    model: LanguageModel,
    messages: Messages,
    schema_type: type[T],
    *,
    fallback: T,
    max_tokens: int = 256,
) -> Structured[T]:
    """Ask for a ``schema_type`` object; retry once with the error, then fall back.

    The grammar is not enough on its own: llama-cpp-python falls back to
    plain JSON when it cannot compile a schema, and a reply cut off at
    ``max_tokens`` is not valid JSON either, so every answer is validated.
    """
    schema = schema_for(schema_type)
    chat = list(messages)
    errors: list[str] = []
    stats: CallStats | None = None
    for attempt in range(1, ATTEMPTS + 1):
        try:
            answer = model.generate_json(chat, schema, max_tokens=max_tokens)
        except Interrupted:
            raise  # not a failure: the worker runs the whole call again later
        except Exception as exc:  # a model that raises is one more failed attempt
            log.warning("Structured %s: attempt %d raised", schema_type.__name__, attempt, exc_info=True)
            errors.append(f"model error: {exc}")
            continue
        raw = answer.text
        stats = answer.stats if stats is None else stats.then(answer.stats)
        try:
            return Structured(_parse(schema_type, raw), ok=True, attempts=attempt, errors=errors, stats=stats)
        except ValidationError as exc:
            problem = _short_problem(exc)
            errors.append(problem)
            log.info("Structured %s: attempt %d invalid: %s", schema_type.__name__, attempt, problem)
            chat = [
                *messages,
                ChatMessage(role="assistant", content=raw[:2000]),
                ChatMessage(role="user", content=f"That was not valid ({problem}). Answer again with JSON only."),
            ]
    log.warning("Structured %s: falling back after %d attempts: %s", schema_type.__name__, ATTEMPTS, errors)
    return Structured(fallback, ok=False, attempts=ATTEMPTS, errors=errors, stats=stats)


def _parse(schema_type: type[T], raw: str) -> T:
    """The answer as ``schema_type``; a raw newline inside a string (small models write them) is forgiven."""
    try:
        return schema_type.model_validate_json(raw)
    except ValidationError as strict_error:
        try:
            loose = json.loads(raw, strict=False)
        except ValueError:
            raise strict_error from None
        return schema_type.model_validate(loose)


def _short_problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]
