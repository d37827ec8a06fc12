"""What start-up builds from the process settings: the model's sampling and reply length, the engine's config."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_sampling_and_reply_length_follow_the_models_size_unless_set():
    from bot.model.llama import LlamaConfig, LlamaModel, Sampling
    from bot.settings import ProcessSettings
    from bot.startup import settle_for_model

    class Sized(LlamaModel):
        def __init__(self, parameters: int):  # not loaded: only its size and its sampling matter here
            self.size = parameters
            self.config = LlamaConfig(model_path=Path("m.gguf"), sampling=Sampling(temperature=0.8))

        @property
        def parameters(self) -> int:
            return self.size

    small, large = Sized(135 * 10**6), Sized(7 * 10**9)
    for model in (small, large):
        settle_for_model(ProcessSettings(), model)
    assert (small.config.sampling.temperature, small.config.sampling.repeat_penalty) == (0.7, 1.18)
    assert (large.config.sampling.temperature, large.config.sampling.repeat_penalty) == (0.8, 1.1)
    chosen = Sized(135 * 10**6)
    settings = ProcessSettings(temperature=1.0, reply_tokens=80)
    settle_for_model(settings, chosen)
    assert chosen.config.sampling.temperature == 1.0 and settings.reply_tokens == 80


def test_an_engine_config_is_valid_when_made_or_refused_in_one_line():
    """Built before the settings were settled for the model, the reply length was None, and the first prompt
    failed deep inside with a TypeError."""
    from dataclasses import replace

    from bot.engine import EngineConfig
    from bot.settings import ProcessSettings
    from bot.startup import engine_config

    with pytest.raises(ValueError, match=r"reply_tokens is None: settle the settings for the model first"):
        engine_config(ProcessSettings(_env_file=None))
    made = engine_config(ProcessSettings(_env_file=None, reply_tokens=120))
    assert made.reply_tokens == 120
    for change, said in [({"reply_tokens": 0}, "from 1 to less than n_ctx"), ({"secrets": "maybe"}, "'held' or")]:
        with pytest.raises(ValueError, match=said):
            replace(made, **change)
    with pytest.raises(ValueError, match="less than n_ctx"):
        EngineConfig(n_ctx=1024, reply_tokens=1024)
