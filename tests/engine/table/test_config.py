"""Tests of bot.engine.table.config: the engine's settings, refused at once when they cannot work."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.engine import EngineConfig
from bot.memory.config import Budgets, MemoryConfig


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"n_ctx": 255}, "n_ctx is 255: a context of at least 256 tokens"),
        ({"n_ctx": "4096"}, "n_ctx is '4096'"),
        ({"reply_tokens": None}, "reply_tokens is None: settle the settings for the model first"),
        ({"n_ctx": 512, "reply_tokens": 512}, r"reply_tokens is 512: from 1 to less than n_ctx \(512\)"),
        ({"reply_tokens": 0}, "reply_tokens is 0: from 1"),
        ({"secrets": "hidden"}, "secrets is 'hidden': 'held' or 'prompt'"),
        ({"max_action_chars": 0}, "max_action_chars must be positive"),
        ({"server_worlds_bytes": -1}, "not negative"),
        ({"vectors_bytes": -1}, "not negative"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_when_the_config_is_made(change: dict, said: str):
    with pytest.raises(ValueError, match=said):
        EngineConfig(**{"n_ctx": 4096, "reply_tokens": 128, **change})


def test_a_config_made_again_with_a_change_is_checked_again():
    config = EngineConfig(n_ctx=2048, reply_tokens=128)
    assert replace(config, secrets="prompt").secrets == "prompt"
    with pytest.raises(ValueError, match="secrets is 'neither'"):
        replace(config, secrets="neither")


def test_the_budget_is_the_context_less_the_reply_with_the_memorys_layer_budgets():
    memory = MemoryConfig(budgets=Budgets(story=100, recall=250))
    budget = EngineConfig(n_ctx=2048, reply_tokens=200, memory=memory).budget
    assert (budget.n_ctx, budget.reply_tokens, budget.limit) == (2048, 200, 1848)
    assert (budget.story, budget.recall) == (100, 250)
    assert (budget.chapters, budget.pins, budget.secrets) == (300, 300, 600), "the other layers keep their defaults"
