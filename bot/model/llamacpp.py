"""llama-cpp-python's ``Llama``, made to stop when asked, count what it reads, and keep one state per game.

Imported only by :class:`bot.model.llama.LlamaModel`, since importing
``llama_cpp`` loads the native library. The changes to the stock class:

- ``eval`` reads the prompt in chunks and checks a stop event before each
  chunk and before each generated token, so background work can give the
  model up to a player within a fraction of a second;
- it counts the prompt tokens actually read, so a turn's cost can be
  compared with its floor;
- saved states hold the KV cache and the token ids only. The stock
  ``save_state`` also copies the score buffer (``n_batch`` rows of the
  vocabulary, about 100 MB for SmolLM2), which sampling no longer needs;
- a game without a saved state starts from the state of another game whose
  prompt began the same way (the same world's frozen layer), and reads only
  what differs;
- a call may sample with DRY over its whole context, and may be kept from
  ending before it has written ``min_tokens`` (its end-of-generation tokens
  held out by a logit bias at the head of the chain, taken away once written).
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Generator, Sequence
from dataclasses import dataclass

import llama_cpp
import numpy as np

from bot.model.base import Dry, Interrupted
from bot.model.kin import MIN_SHARED_TOKENS, nearest_kin
from bot.model.statefiles import SavedState, StateFolder

log = logging.getLogger(__name__)

# Prompt tokens read between two checks of the stop event, for calls that may be interrupted: at
# about 250 tokens a second on two cores, a player waits at most a quarter of a second.
INTERRUPTIBLE_CHUNK = 64


@dataclass
class Reading:
    """The figures of the call in progress."""

    prompt_tokens: int = 0
    evaluated: int = 0
    prompt_evaluated: int | None = None  # set when the first token is sampled
    generated: int = 0
    started: float = 0.0
    first_token: float | None = None
    restored: bool = False


class GameStates:
    """One saved model state per slot (a game), least recently used first out, within a byte budget; with a
    :class:`~bot.model.statefiles.StateFolder`, also on disk: a state the memory lets go, and every state at
    :meth:`flush` (the bot's stop), is written there, and a slot not in memory is looked for there."""

    def __init__(self, capacity_bytes: int, disk: StateFolder | None = None):
        self.capacity_bytes = capacity_bytes
        self.disk = disk if disk is not None and disk.on else None
        self._states: OrderedDict[str, llama_cpp.LlamaState] = OrderedDict()
        self._unwritten: set[str] = set()  # slots whose state in memory is newer than their file
        self._lock = threading.RLock()  # the worker's thread saves and loads; the loop drops a game's
        self.saved = 0
        self.restored = 0
        self.evicted = 0

    @property
    def size(self) -> int:
        with self._lock:
            return sum(state.llama_state_size for state in self._states.values())

    def get(self, slot: str) -> llama_cpp.LlamaState | None:
        with self._lock:
            state = self._states.get(slot)
            if state is not None:
                self._states.move_to_end(slot)
                return state
        return self._from_disk(slot)

    def nearest(self, tokens: Sequence[int]) -> llama_cpp.LlamaState | None:
        """The kept state, in memory or on disk, of the nearest kin of a game whose prompt is ``tokens``
        (:func:`bot.model.kin.nearest_kin`): another game of the same world has read its frozen layer already."""
        wanted = np.asarray(tokens, dtype=np.intc)
        with self._lock:
            kept = [(slot, state.input_ids[: state.n_tokens]) for slot, state in self._states.items()]
            on_disk = self.disk.slots() if self.disk is not None else {}
            kept += [(slot, ids) for slot, ids in on_disk.items() if slot not in self._states]
            found = nearest_kin(kept, wanted, MIN_SHARED_TOKENS)
            if found is None:
                return None
            state = self._states.get(found[0])
        return state if state is not None else self._from_disk(found[0])

    def put(self, slot: str, state: llama_cpp.LlamaState) -> None:
        with self._lock:
            self._states.pop(slot, None)
            if state.llama_state_size > self.capacity_bytes:
                self._unwritten.discard(slot)
                if self.disk is not None:
                    self.disk.write(slot, _saved(state))
                return
            self._states[slot] = state
            self._unwritten.add(slot)
            self.saved += 1
            self._within_budget()

    def _within_budget(self) -> None:
        """Let the least recently used states go until the rest fit in memory, each newer than its file written to
        disk first; under the lock."""
        while self.size > self.capacity_bytes:
            old_slot, old = self._states.popitem(last=False)
            self.evicted += 1
            if old_slot in self._unwritten and self.disk is not None:
                self.disk.write(old_slot, _saved(old))
            self._unwritten.discard(old_slot)

    def keep(self, slot: str) -> None:
        """Write ``slot``'s state to disk now (a world's prefix just read, kept for a restart)."""
        with self._lock:
            state = self._states.get(slot)
            if state is None or self.disk is None or slot not in self._unwritten:
                return
            self.disk.write(slot, _saved(state))
            self._unwritten.discard(slot)

    def flush(self) -> int:
        """Write every state newer than its file to disk (the bot stops); how many were written."""
        with self._lock:
            slots = list(self._unwritten) if self.disk is not None else []
        for slot in slots:
            self.keep(slot)
        return len(slots)

    def drop(self, slot: str) -> None:
        """Forget ``slot``'s state, in memory and on disk (its game ended)."""
        with self._lock:
            self._states.pop(slot, None)
            self._unwritten.discard(slot)
            if self.disk is not None:
                self.disk.drop(slot)

    def _from_disk(self, slot: str) -> llama_cpp.LlamaState | None:
        if self.disk is None:
            return None
        saved = self.disk.read(slot)
        if saved is None:
            return None
        state = llama_cpp.LlamaState(
            input_ids=saved.input_ids, scores=np.empty((0, 0), dtype=np.single), n_tokens=len(saved.input_ids),
            # A ctypes buffer, which load_state below hands to llama.cpp as it is (llama_cpp annotates bytes: its own
            # load_state copies them into such a buffer first).
            llama_state=(ctypes.c_uint8 * len(saved.state)).from_buffer_copy(saved.state),  # type: ignore[arg-type]
            llama_state_size=len(saved.state), seed=saved.seed,
        )  # fmt: skip
        with self._lock:
            if state.llama_state_size <= self.capacity_bytes:
                self._states[slot] = state  # as written: nothing to write back
                self._within_budget()
        return state


def _saved(state: llama_cpp.LlamaState) -> SavedState:
    data = memoryview(state.llama_state).cast("B")[: state.llama_state_size]
    return SavedState(np.asarray(state.input_ids[: state.n_tokens], dtype=np.intc), data, state.seed)


class _SlotCache(llama_cpp.BaseLlamaCache):
    """What ``Llama._create_completion`` looks up and saves into: one slot of :class:`GameStates`."""

    def __init__(self, states: GameStates, slot: str):
        super().__init__(states.capacity_bytes)
        self.states = states
        self.slot = slot

    @property
    def cache_size(self) -> int:
        return self.states.size

    def __getitem__(self, key: Sequence[int]) -> llama_cpp.LlamaState:
        """The slot's own state; for a slot without one (a new game), the state of another that read the same
        beginning, so only what differs is read (``Llama`` loads it only when it beats what the model holds)."""
        state = self.states.get(self.slot) or self.states.nearest(key)
        if state is None:
            raise KeyError(self.slot)
        return state

    def __contains__(self, key: Sequence[int]) -> bool:
        return self.states.get(self.slot) is not None

    def __setitem__(self, key: Sequence[int], value: llama_cpp.LlamaState) -> None:
        self.states.put(self.slot, value)


class GameLlama(llama_cpp.Llama):
    def __init__(self, *args, states: GameStates, **kwargs):
        super().__init__(*args, **kwargs)
        self.states = states
        self.stop_event: threading.Event | None = None
        self.reading = Reading()
        self.dry: Dry | None = None
        self._dry_sampler = None  # the DRY sampler of the call in progress, fed the context at its first token
        self.min_tokens = 0
        self._holding_end = False  # the call's chain begins with the sampler that keeps the end tokens out
        self._sampled = 0  # tokens sampled in the call in progress
        self._end_tokens: list[int] | None = None

    def begin(
        self, *, slot: str | None, stop: threading.Event | None, dry: Dry | None = None, min_tokens: int = 0
    ) -> None:
        """Set up the next call: whose saved state it may use, whether it may be interrupted, whether it
        samples with :class:`Dry` over its whole context, and how many tokens it writes before it may end."""
        self.cache = _SlotCache(self.states, slot) if slot is not None and self.states.capacity_bytes else None
        self.stop_event = stop
        self.reading = Reading(started=time.perf_counter())
        self.dry = dry
        self.min_tokens = min_tokens

    def _init_sampler(self, *args, **kwargs):
        """The stock chain, with :class:`Dry` first when the call asks for it (before the penalties and the
        sampling, so that it acts on the raw logits), and before that, for a call with ``min_tokens``, a logit
        bias that keeps every end-of-generation token out until :meth:`sample` takes it away."""
        sampler = super()._init_sampler(*args, **kwargs)
        self._dry_sampler = None
        self._holding_end = False
        self._sampled = 0
        if kwargs.get("grammar") is not None:
            return sampler
        first = []
        if self.min_tokens > 0:
            ends = self.end_tokens()
            biases = (llama_cpp.llama_logit_bias * len(ends))(*(llama_cpp.llama_logit_bias(t, -np.inf) for t in ends))
            first.append(llama_cpp.llama_sampler_init_logit_bias(self._n_vocab, len(ends), biases))
            self._holding_end = True
        if self.dry is not None:
            breakers = (ctypes.c_char_p * len(self.dry.breakers))(*(b.encode() for b in self.dry.breakers))
            self._dry_sampler = llama_cpp.llama_sampler_init_dry(
                self._model.vocab, self.dry.multiplier, self.dry.base, self.dry.allowed, self.n_ctx(), breakers,
                len(self.dry.breakers),
            )  # fmt: skip
            first.append(self._dry_sampler)
        if not first:
            return sampler
        chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        for added in first:
            llama_cpp.llama_sampler_chain_add(chain, added)
        while llama_cpp.llama_sampler_chain_n(sampler.sampler) > 0:  # the stock samplers, in their order, after
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_chain_remove(sampler.sampler, 0))
        llama_cpp.llama_sampler_free(sampler.sampler)
        sampler.sampler = chain
        return sampler

    def end_tokens(self) -> list[int]:
        """The tokens that end a reply (end of text, end of turn ...), as the model's vocabulary marks them."""
        if self._end_tokens is None:
            vocab = self._model.vocab
            self._end_tokens = [t for t in range(self._n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t)]
        return self._end_tokens

    def sample(self, *args, **kwargs):
        if self._dry_sampler is not None:  # the prompt is read now: DRY learns the context it must not repeat
            for token in self._input_ids[: self.n_tokens].tolist():
                llama_cpp.llama_sampler_accept(self._dry_sampler, token)
            self._dry_sampler = None
        if self._holding_end and self._sampled >= self.min_tokens and self._sampler is not None:
            # written enough: the reply may end from here (the bias is first in the chain)
            llama_cpp.llama_sampler_free(llama_cpp.llama_sampler_chain_remove(self._sampler.sampler, 0))
            self._holding_end = False
        self._sampled += 1
        return super().sample(*args, **kwargs)

    def eval(self, tokens: Sequence[int]) -> None:
        step = INTERRUPTIBLE_CHUNK if self.stop_event is not None else self.n_batch
        for start in range(0, len(tokens), step):
            if self.stop_event is not None and self.stop_event.is_set():
                raise Interrupted()
            chunk = tokens[start : start + step]
            super().eval(chunk)
            self.reading.evaluated += len(chunk)

    def generate(self, tokens: Sequence[int], *args, **kwargs) -> Generator[int, Sequence[int] | None, None]:
        self.reading.prompt_tokens = len(tokens)
        for token in super().generate(tokens, *args, **kwargs):
            if self.reading.first_token is None:
                self.reading.first_token = time.perf_counter()
                self.reading.prompt_evaluated = self.reading.evaluated
            self.reading.generated += 1
            yield token

    def keep_state(self) -> None:
        """Save the state for this call's slot now (as the stock class does only at a stream's end)."""
        if self.cache is not None:
            self.cache[self.input_ids[: self.n_tokens].tolist()] = self.save_state()

    def save_state(self) -> llama_cpp.LlamaState:
        size = llama_cpp.llama_state_get_size(self._ctx.ctx)
        buffer = (ctypes.c_uint8 * int(size))()
        written = int(llama_cpp.llama_state_get_data(self._ctx.ctx, buffer, size))
        if written > size:
            raise RuntimeError("llama.cpp wrote more state than it said it would")
        return llama_cpp.LlamaState(
            input_ids=self.input_ids[: self.n_tokens].copy(),
            scores=np.empty((0, 0), dtype=np.single),
            n_tokens=self.n_tokens,
            llama_state=buffer,  # type: ignore[arg-type]  # kept a ctypes buffer, for load_state (see _from_disk)
            llama_state_size=written,
            seed=self._seed,
        )

    def load_state(self, state: llama_cpp.LlamaState) -> None:
        if state.n_tokens > len(self.input_ids):  # more than the context holds: never this context's state
            log.warning("A saved state of %d tokens is more than the context's %d; the prompt is read cold",
                        state.n_tokens, len(self.input_ids))  # fmt: skip
            self.reset()
            return
        if llama_cpp.llama_state_set_data(self._ctx.ctx, state.llama_state, state.llama_state_size) != (
            state.llama_state_size
        ):
            # Not this model's state after all: the prompt is read from its start, and nothing else is lost.
            log.warning("llama.cpp did not take a saved state of %d tokens; the prompt is read cold", state.n_tokens)
            self._ctx.kv_cache_clear()
            self.reset()
            return
        self.input_ids[: state.n_tokens] = state.input_ids
        self.n_tokens = state.n_tokens
        self._requires_eval = True  # the logits are not saved: the last token is read again before sampling
        self._seed = state.seed
        self.reading.restored = True
        self.states.restored += 1
