"""What a model's size decides when the settings leave it open: the reply's length, the GM's guide, sampling.

A model under a billion parameters rambles and loops when given room, so its replies are kept shorter and it
gets the short guide (measured with bench quality: the 135M bundled model copied the full guide's example). It
also needs a cooler hand and a firmer push away from what it just wrote, or it drifts and loops; a larger one
writes better prose a little warmer. Held at 0.4, the 1.5B default model answered more of a long game's old
clues (the memory test's game, sampling seeds 1 to 3: 9, 8 and 7 of 10, against 4, 6 and 4 at 0.8), but echoed
the action in 4 of 24 replies with the reply rules on (bench quality; none at 0.8): it stays at 0.8 until a
cooler answer costs no echo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SMALL_MODEL = 10**9  # parameters: a model with fewer is small


@dataclass(frozen=True)
class SizeDefaults:
    """The settings a model's size decides; the field defaults are those of a model of 1B parameters or more."""

    reply_tokens: int = 300
    prompt_guide: Literal["short", "full"] = "full"
    temperature: float = 0.8
    repeat_penalty: float = 1.1


LARGE = SizeDefaults()
SMALL = SizeDefaults(reply_tokens=200, prompt_guide="short", temperature=0.7, repeat_penalty=1.18)
REPLY_TOKENS = LARGE.reply_tokens  # where no model is known yet


def defaults_for(parameters: int | None) -> SizeDefaults:
    """The defaults for a model of this many parameters (``None``: not known, as for a model server's)."""
    return SMALL if parameters and parameters < SMALL_MODEL else LARGE


def reply_words(reply_tokens: int) -> int:
    """How many words the GM's guide asks a reply to stay under: three fifths of its tokens, 30 at the least."""
    return max(30, reply_tokens * 3 // 5)
