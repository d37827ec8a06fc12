"""What the process gives every game: the model's context size, the reply length, the memory's defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.memory.config import MemoryConfig
from bot.memory.context import Budget
from bot.model.sizing import REPLY_TOKENS

# Rankings by meaning in recall's fusion, beside the three by words (the action's words count twice): bench locomo
# chooses among 1, 2 and 3 leaving one conversation out, and chose 2 for every conversation (MiniLM, 1,000 tokens).
MEANING_WEIGHT = 2


@dataclass(frozen=True)
class EngineConfig:
    n_ctx: int = 4096
    reply_tokens: int = REPLY_TOKENS
    max_action_chars: int = 2000
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    shape_replies: bool = True  # take out of replies what the GM must not write (see bot.engine.turn.shaping)
    full_guide: bool = True  # the frozen layer's full guide and example reply (see bot.memory.context.world_brief)
    # "held": the engine keeps the world's secrets and tells the narrator what the players' actions uncover (F39);
    # "prompt": every secret is in the narrator's prompt and the guard alone keeps them (bench leaks' baseline).
    secrets: str = "held"
    read_ahead: bool = True  # read each game's next prompt ahead of its turn (F35); off, every first turn reads cold
    server_worlds_bytes: int = 256 * 2**20  # all servers' own world files together (GM_SERVER_WORLDS_MIB)
    vectors_bytes: int = 256 * 2**20  # the games' vectors held in memory together (GM_VECTORS_MIB)
    # How many times recall by meaning counts in the fusion beside the words (see bot.engine.upkeep.ledger).
    meaning_weight: int = MEANING_WEIGHT

    def __post_init__(self) -> None:
        """Valid when made, or refused at once in one line (never a TypeError deep in the first prompt)."""
        if not isinstance(self.reply_tokens, int):
            raise ValueError(
                f"reply_tokens is {self.reply_tokens!r}: settle the settings for the model first "
                "(bot.startup.settle_for_model), or give a number"
            )
        if not isinstance(self.n_ctx, int) or self.n_ctx < 256:
            raise ValueError(f"n_ctx is {self.n_ctx!r}: a context of at least 256 tokens")
        if not 1 <= self.reply_tokens < self.n_ctx:
            raise ValueError(f"reply_tokens is {self.reply_tokens}: from 1 to less than n_ctx ({self.n_ctx})")
        if self.secrets not in ("held", "prompt"):
            raise ValueError(f"secrets is {self.secrets!r}: 'held' or 'prompt'")
        if not 1 <= self.meaning_weight <= 5:
            raise ValueError(f"meaning_weight is {self.meaning_weight!r}: from 1 to 5")
        if self.max_action_chars < 1 or self.server_worlds_bytes < 0 or self.vectors_bytes < 0:
            raise ValueError("max_action_chars must be positive, server_worlds_bytes and vectors_bytes not negative")

    @property
    def budget(self) -> Budget:
        return Budget(n_ctx=self.n_ctx, reply_tokens=self.reply_tokens, **self.memory.budgets.model_dump())
