"""What a model's size decides when the settings leave it open: the reply's length, the GM's guide, sampling.

A model under a billion parameters rambles and loops when given room, so its replies are kept shorter and it
gets the short guide (measured with bench quality: the 135M bundled model copied the full guide's example). It
also needs a cooler hand and a firmer push away from what it just wrote, or it drifts and loops; a larger one
writes better prose a little warmer. One of a few billion answers a player's question from what its prompt holds
only when held cool: at 0.8 it made answers up beside the clue that answered them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SMALL_MODEL = 10**9  # parameters: a model with fewer is small
MID_MODEL = 4 * 10**9  # parameters: a model with fewer, and not small, is sampled cooler


@dataclass(frozen=True)
class SizeDefaults:
    """The settings a model's size decides; the field defaults are those of a model of 1B parameters or more."""

    reply_tokens: int = 300
    prompt_guide: Literal["short", "full"] = "full"
    temperature: float = 0.8
    repeat_penalty: float = 1.1


LARGE = SizeDefaults()
SMALL = SizeDefaults(reply_tokens=200, prompt_guide="short", temperature=0.7, repeat_penalty=1.18)
# Measured with Qwen2.5-Coder-1.5B as the GM of a 300-turn game asked about ten of its first turns' clues
# (the game of tests/engine/test_instruct_model.py, each answer but one in the prompt), sampling seeds 1, 2 and 3:
# 4, 6 and 4 answered at 0.8; 7, 7 and 6 at 0.6; 9, 8 and 7 at 0.4.
MID = SizeDefaults(temperature=0.4)
REPLY_TOKENS = LARGE.reply_tokens  # where no model is known yet


def defaults_for(parameters: int | None) -> SizeDefaults:
    """The defaults for a model of this many parameters (``None``: not known, as for a model server's)."""
    if parameters and parameters < SMALL_MODEL:
        return SMALL
    return MID if parameters and parameters < MID_MODEL else LARGE


def reply_words(reply_tokens: int) -> int:
    """How many words the GM's guide asks a reply to stay under: three fifths of its tokens, 30 at the least."""
    return max(30, reply_tokens * 3 // 5)
