"""Dice rolls in d20 notation, bounded so no expression can hang the bot."""

from __future__ import annotations

import re
from dataclasses import dataclass

import d20

from bot.errors import UserError

MAX_EXPRESSION_CHARS = 100
MAX_DICE = 1000  # d20 stops rolling past this many dice, whatever the notation asks.
MAX_RESULT_CHARS = 500

_ADVANTAGE = re.compile(r"\s+(adv|advantage|dis|disadvantage)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Roll:
    expression: str
    total: int
    detail: str  # e.g. "1d20 (14) + 5 = `19`", shortened when very long

    @property
    def text(self) -> str:
        return f"{self.expression}: {self.detail}"


def roll(expression: str) -> Roll:
    """Roll ``expression`` (``1d20+5``, ``4d6kh3``, ``1d20 adv``) or raise a clear :class:`UserError`."""
    expression = " ".join(expression.split())
    if not expression:
        raise UserError("Give a dice expression, for example 1d20+5 or 4d6kh3.")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise UserError(f"That dice expression is too long (at most {MAX_EXPRESSION_CHARS} characters).")
    advantage = d20.AdvType.NONE
    match = _ADVANTAGE.search(expression)
    if match:
        advantage = d20.AdvType.DIS if match.group(1).lower().startswith("dis") else d20.AdvType.ADV
        expression = expression[: match.start()]
    try:
        # d20 evaluates lazily: reading the total and the text can raise too.
        result = d20.roll(expression, advantage=advantage, allow_comments=False)
        total, detail = result.total, str(result)
    except d20.TooManyRolls:
        raise UserError(f"Too many dice: at most {MAX_DICE} in one roll.") from None
    except d20.RollSyntaxError:
        raise UserError(f"{expression!r} is not dice notation; try 1d20+5, 2d6, 4d6kh3 or 1d20 adv.") from None
    except d20.RollError as exc:
        raise UserError(f"Cannot roll {expression!r}: {exc}.") from None
    if not isinstance(total, int) or abs(total) > 10**12:
        raise UserError("That roll's result is out of any sensible range.")
    if len(detail) > MAX_RESULT_CHARS:
        detail = f"{expression} = `{total}`"
    if advantage is not d20.AdvType.NONE:
        expression += " (advantage)" if advantage is d20.AdvType.ADV else " (disadvantage)"
    return Roll(expression=expression, total=total, detail=detail)
