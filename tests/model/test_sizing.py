"""What a model's size decides where the settings leave it open."""

from __future__ import annotations

from bot.model.sizing import LARGE, SMALL, SMALL_MODEL, defaults_for, reply_words


def test_a_model_under_a_billion_parameters_gets_the_small_defaults_and_an_unknown_one_the_large():
    assert defaults_for(135_000_000) == SMALL and SMALL.prompt_guide == "short"
    assert defaults_for(SMALL_MODEL) == LARGE and defaults_for(1_500_000_000) == LARGE
    assert defaults_for(None) == LARGE, "a model server that does not say its size"
    assert SMALL.reply_tokens < LARGE.reply_tokens and SMALL.temperature < LARGE.temperature


def test_the_guide_asks_for_three_fifths_of_the_reply_tokens_in_words_and_never_under_thirty():
    assert reply_words(300) == 180
    assert reply_words(10) == 30
