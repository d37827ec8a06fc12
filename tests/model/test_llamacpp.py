"""llama.cpp in this process, made to stop when asked, count what it reads and keep one state per game: the
kept states within their budget and on disk, and with the real bundled model, a call stopped between chunks and
tokens, a game's state kept across other calls and restarts, a fresh reply, and a reply held to its least tokens."""

from __future__ import annotations

import ctypes
from pathlib import Path

import llama_cpp
import numpy as np
import pytest

from bot.model import ChatMessage
from bot.model.llama import LlamaModel, Sampling
from bot.model.llamacpp import GameStates
from bot.model.statefiles import StateFolder
from tests.conftest import bundled_model, loads_a_model


@pytest.fixture(scope="module")
@loads_a_model
def llama() -> LlamaModel:
    return bundled_model(n_ctx=1024, sampling=Sampling(seed=7))


def _state(tokens: list[int], fill: int, size: int = 100) -> llama_cpp.LlamaState:
    """A saved state as llama.cpp gives one back: the tokens it holds and ``size`` bytes of data."""
    ids = np.asarray(tokens, dtype=np.intc)
    return llama_cpp.LlamaState(
        input_ids=ids, scores=np.empty((0, 0), dtype=np.single), n_tokens=len(ids),
        llama_state=(ctypes.c_uint8 * size)(*[fill] * size), llama_state_size=size, seed=7,
    )  # fmt: skip


def test_the_states_kept_in_memory_stay_within_their_budget_and_the_rest_go_to_disk(tmp_path: Path):
    world = list(range(300))  # a world's frozen layer, longer than the least a kin must share
    states = GameStates(250, StateFolder(tmp_path, "model-1024", 10**6))  # two states of 100 bytes fit
    assert states.disk is not None
    states.put("game:1", _state([*world, 1001], fill=1))
    states.put("game:2", _state([*world, 1002], fill=2))
    assert states.get("game:1") is not None  # used again: game:2 is now the least recently used
    states.put("game:3", _state(list(range(500, 800)), fill=3))
    assert states.evicted == 1 and states.size == 200
    assert set(states.disk.slots()) == {"game:2"}, "the state let go is written to disk first"

    back = states.get("game:2")
    assert back is not None and bytes(back.llama_state) == bytes([2] * 100)
    assert back.input_ids.tolist() == [*world, 1002], "read back whole from disk"
    assert set(states.disk.slots()) == {"game:1", "game:2"}, "taking it back in let game:1 go, to disk"
    assert states.flush() == 1 and set(states.disk.slots()) == {"game:1", "game:2", "game:3"}

    kin = states.nearest([*world, 2000, 2001])
    assert kin is not None and kin.input_ids[:300].tolist() == world, "a new game of the world starts from its kin"
    assert states.nearest(list(range(10_000, 10_300))) is None, "no kept state begins as another world does"
    states.drop("game:2")
    assert states.get("game:2") is None and "game:2" not in states.disk.slots()


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
