"""The memory's knobs, with the defaults of the spec. Admins set them as GM_MEMORY__NAME."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Budgets(BaseModel):
    """Most tokens each memory layer may put into one prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chapters: int = Field(default=300, ge=0, le=8000)
    story: int = Field(default=600, ge=0, le=8000)
    pins: int = Field(default=300, ge=0, le=8000)
    glossary: int = Field(default=200, ge=0, le=8000)
    # The chunk summaries folded since the story the front shows: two of them at the default summary length.
    short: int = Field(default=500, ge=0, le=8000)
    secrets: int = Field(default=600, ge=0, le=8000)
    private: int = Field(default=500, ge=0, le=8000)
    lore: int = Field(default=400, ge=0, le=8000)
    recall: int = Field(default=400, ge=0, le=8000)


class Buckets(BaseModel):
    """Which memory buckets go into prompts (F20). Off stops injection; the data stays."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pins: bool = True
    lore: bool = True
    glossary: bool = True
    facts: bool = True
    recall: bool = True


class MemoryConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    protected_tail: int = Field(default=4, ge=0, le=200, description="Newest messages never summarized.")
    trigger_messages: int = Field(default=20, ge=2, le=2000, description="Messages that make one chunk.")
    trigger_tokens: int = Field(default=1500, ge=100, le=100_000, description="Tokens that close a chunk early.")
    # bench scenes, 120 turns, the default model writing every chunk summary: of 26 change steps, the summary that
    # covers each carried 15 with chunks of 20 messages, 18 with chunks ended at scenes (16.8 messages on average)
    # and 19 with chunks of 17 messages and no scene borders: shorter chunks carry more, scene borders add nothing.
    chunk_ends: Literal["length", "scene"] = Field(
        default="length",
        description="Where a chunk closes: at its length, or (scene) also where a scene ends once half as long.",
    )  # fmt: skip
    fold_at_percent: int = Field(
        default=75, ge=10, le=100,
        description="How full the recent turns' room gets before closed chunks are folded (the front then changes).",
    )  # fmt: skip
    short_words: int = Field(default=150, ge=20, le=2000, description="Soft ceiling of a short-term summary.")
    story_words: int = Field(default=400, ge=50, le=5000, description="Soft ceiling of the story summary.")
    recap_words: int = Field(default=70, ge=20, le=500, description="A chapter recap: 2 to 3 sentences.")
    history_limit: int = Field(default=400, ge=10, le=10_000, description="Unsummarized messages read per turn.")
    pin_cap: int = Field(default=20, ge=1, le=200, description="Pins per game; past it the oldest becomes a fact.")
    lore_scan_depth: int = Field(default=4, ge=0, le=50, description="Recent messages searched for lore keys.")
    # A clue told in one sentence of a long reply comes back without the rest, so more matches fit the recall
    # budget and each turn adds fewer tokens (what the prompt cache cannot reuse). Chosen with bench locomo,
    # leaving one conversation out in turn among 45, 30, 20, 15 and 10 words: 10 for every one (evidence recall
    # at 1,000 tokens 0.767, 0.782, 0.795, 0.805, 0.811); bench context at 4k: 83.7% of each prompt reused at 45
    # words, 86.5% at 20.
    excerpt_words: int = Field(
        default=10, ge=5, le=2000,
        description="A recalled fragment longer than this is cut to its sentence nearest the question, whole.",
    )  # fmt: skip
    recall_candidates: int = Field(default=200, ge=1, le=2000, description="Fragments fetched from the index per turn.")
    # Measured with bench locomo: past the first few hits, the turn after a hit costs more room than it brings.
    recall_following: int = Field(
        default=4, ge=0, le=2000, description="Leading recalled turns that bring the turn after them; 0: none."
    )
    scene_depth: int = Field(default=4, ge=1, le=50, description="Recent messages whose NPCs are in the scene.")
    glossary_terms_per_turn: int = Field(default=3, ge=0, le=10)
    budgets: Budgets = Field(default_factory=Budgets)


# The context the defaults above are sized for.
REFERENCE_CONTEXT = 8192
# What scales with a smaller context, each with its floor. The protected tail is a share of the recent turns'
# room too: at 4k the room after the front is about 1,600 tokens, four messages and their notes held a third of
# it through every fold, and the front changed every fourth turn (bench context, 4k, 120 turns: 86.8% of each
# prompt reused with a tail of four messages, 89.1% with two, the last exchange).
SCALED = {"short_words": 20, "story_words": 50, "protected_tail": 2}


def fitted(config: MemoryConfig, n_ctx: int) -> MemoryConfig:
    """``config`` sized for a context of ``n_ctx`` tokens.

    The defaults are for an 8k context. In a smaller one, the layer budgets,
    the summaries' length and the protected tail that nobody set scale with
    it, so the recent turns keep their share of the prompt. The GM-only
    layer does not: it holds the world's truths. What an admin set stays as
    set.
    """
    factor = n_ctx / REFERENCE_CONTEXT
    if factor >= 1:
        return config
    update: dict[str, object] = {
        name: max(floor, int(getattr(config, name) * factor))
        for name, floor in SCALED.items()
        if name not in config.model_fields_set
    }
    chosen = config.budgets.model_fields_set | {"secrets"} if "budgets" in config.model_fields_set else {"secrets"}
    update["budgets"] = config.budgets.model_copy(
        update={name: int(value * factor) for name, value in config.budgets.model_dump().items() if name not in chosen}
    )
    return config.model_copy(update=update)
