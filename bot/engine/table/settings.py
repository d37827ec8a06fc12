"""Per-game settings (F20): overrides of the memory's knobs and the reply length, validated."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from bot.errors import UserError
from bot.memory.config import Buckets, Budgets, MemoryConfig
from bot.store import Store
from bot.worlds import format_validation_error

log = logging.getLogger(__name__)

REPLY_TOKENS = "reply_tokens"
REPLY_RANGE = (16, 4096)
# Settings that cost a model every server shares (tokens written or read, calls made): a game or a server may
# lower them, never raise them past the host's own value (``reply_tokens`` too, past GM_REPLY_TOKENS).
CEILINGS = frozenset({"short_words", "story_words", "recap_words", "history_limit", "trigger_messages",
                      "trigger_tokens", "recall_candidates", "recall_following",
                      *(f"budgets.{name}" for name in Budgets.model_fields)})  # fmt: skip
TURN_POLICY = "turn_policy"
POLICIES = ("each", "round")
ROUND_SECONDS = "round_seconds"
ROUND_RANGE = (5, 900)
DEFAULT_ROUND_SECONDS = 60


def setting_names() -> list[str]:
    names = [REPLY_TOKENS, TURN_POLICY, ROUND_SECONDS]
    names += [name for name in MemoryConfig.model_fields if name != "budgets"]
    names += [f"budgets.{name}" for name in Budgets.model_fields]
    return names


def ceilings(base: MemoryConfig, reply_tokens: int) -> dict[str, int]:
    """The host's own value of each setting that costs the shared model: no game or server goes past it."""
    return {REPLY_TOKENS: reply_tokens, **{name: _read(base, name) for name in CEILINGS}}


def over_ceilings(base: MemoryConfig, reply_tokens: int, overrides: dict[str, Any]) -> dict[str, tuple[Any, int]]:
    """The stored values past the host's ceiling now, by name, with that ceiling: saved before the setting had
    one, or before the host lowered it (``GM_REPLY_TOKENS``, ``GM_MEMORY__...``)."""
    most = ceilings(base, reply_tokens)
    return {
        name: (value, most[name])
        for name, value in overrides.items()
        if name in most and isinstance(value, int | float) and value > most[name]
    }


def resolve(
    base: MemoryConfig, reply_tokens: int, overrides: dict[str, Any], *, capped: bool = True
) -> tuple[int, MemoryConfig]:
    """The reply length and memory config of a game: the process's, with the game's overrides on top; a stored
    value past the host's ceiling counts as the ceiling (``capped``; a value being checked is not)."""
    if capped:
        over = over_ceilings(base, reply_tokens, overrides)
        overrides = {name: over[name][1] if name in over else value for name, value in overrides.items()}
    data = base.model_dump()
    for name, value in overrides.items():
        if name in (TURN_POLICY, ROUND_SECONDS):
            continue
        if name == REPLY_TOKENS:
            reply_tokens = value
        elif name.startswith("budgets."):
            data["budgets"][name.removeprefix("budgets.")] = value
        else:
            data[name] = value
    return reply_tokens, MemoryConfig.model_validate(data)


SERVER_KEY = "server"  # in a game's scope: the server it is played in, whose defaults it inherits
BUCKETS_KIND = "buckets"  # in a scope: its bucket switches, beside "config", its settings
BUCKET_PREFIX = "buckets."  # a bucket switch's name among the settings (/config reset buckets.lore)


class GameSettings:
    """A game's settings: the process's defaults, then its server's, then its own, each on top of the last."""

    def __init__(self, store: Store, base: MemoryConfig, reply_tokens: int):
        self.store = store
        self.base = base
        self.reply_tokens = reply_tokens
        self._logged: set[tuple[int, str, Any]] = set()  # stored values found past a ceiling, logged once each

    async def server_of(self, game_id: int) -> str | None:
        return (await self.store.scope_values(f"game:{game_id}")).get(SERVER_KEY)

    async def set_server_of(self, game_id: int, server: str) -> None:
        await self.store.set_scope_value(f"game:{game_id}", SERVER_KEY, server)

    # A game's values of a kind (KINDS: its settings, its bucket switches) are its server's defaults with its own
    # over them, over the process's defaults; written here once for both kinds.

    async def _scope(self, scope: str, kind: str) -> dict[str, Any]:
        return dict((await self.store.scope_values(scope)).get(kind, {}))

    async def layered(self, game_id: int, kind: str = "config") -> dict[str, Any]:
        """Every value of ``kind`` that differs from the process's defaults for this game: its server's, then
        its own."""
        own = await self.store.scope_values(f"game:{game_id}")
        server = own.get(SERVER_KEY)
        inherited = await self._scope(f"server:{server}", kind) if server else {}
        return {**inherited, **own.get(kind, {})}

    async def own(self, game_id: int, kind: str = "config") -> dict[str, Any]:
        """What was set for this game itself."""
        return await self._scope(f"game:{game_id}", kind)

    async def server_defaults(self, server: str, kind: str = "config") -> dict[str, Any]:
        """What a server's admins set for every game there."""
        return await self._scope(f"server:{server}", kind)

    async def overrides(self, game_id: int) -> dict[str, Any]:
        """Every setting that differs from the process's defaults for this game: its server's, then its own."""
        return await self.layered(game_id)

    async def buckets(self, game_id: int) -> Buckets:
        """The game's bucket switches: its own, over its server's, over all on."""
        return Buckets.model_validate(await self.layered(game_id, BUCKETS_KIND))

    async def set_bucket(self, game_id: int, name: str, on: bool) -> Buckets:
        _check_bucket(name)
        own = await self.own(game_id, BUCKETS_KIND)
        await self.store.set_scope_value(f"game:{game_id}", BUCKETS_KIND, {**own, name: on})
        return await self.buckets(game_id)

    async def set_server_bucket(self, server: str, name: str, on: bool) -> dict[str, bool]:
        _check_bucket(name)
        buckets = {**await self.server_defaults(server, BUCKETS_KIND), name: on}
        await self.store.set_scope_value(f"server:{server}", BUCKETS_KIND, buckets)
        return buckets

    async def sources(self, game_id: int) -> dict[str, str]:
        """Where each changed value comes from: "game" or "server"."""
        server = await self.server_of(game_id)
        inherited = await self.server_defaults(server) if server else {}
        return {**dict.fromkeys(inherited, "server"), **dict.fromkeys(await self.own(game_id), "game")}

    async def resolved(self, game_id: int) -> tuple[int, MemoryConfig]:
        overrides = await self.overrides(game_id)
        for name, (value, most) in over_ceilings(self.base, self.reply_tokens, overrides).items():
            if (game_id, name, value) not in self._logged:
                self._logged.add((game_id, name, value))
                log.warning("Game %d: its %s of %s is past the host's ceiling; %s is used", game_id, name, value, most)
        return resolve(self.base, self.reply_tokens, overrides)

    async def capped(self, game_id: int) -> dict[str, tuple[Any, int]]:
        """The game's values (its own or its server's) past the host's ceiling: the value stored, the one used."""
        return over_ceilings(self.base, self.reply_tokens, await self.overrides(game_id))

    async def capped_for_server(self, server: str) -> dict[str, tuple[Any, int]]:
        """A server's defaults past the host's ceiling: the value stored, the one its games use."""
        return over_ceilings(self.base, self.reply_tokens, await self.server_defaults(server))

    async def memory(self, game_id: int) -> MemoryConfig:
        return (await self.resolved(game_id))[1]

    async def turns(self, game_id: int) -> tuple[str, int]:
        """The game's turn policy ("each" or "round") and its round window in seconds."""
        overrides = await self.overrides(game_id)
        return overrides.get(TURN_POLICY, "each"), overrides.get(ROUND_SECONDS, DEFAULT_ROUND_SECONDS)

    async def set(self, game_id: int, name: str, value: str) -> dict[str, Any]:
        """Set one setting for a game, or raise a :class:`UserError` naming it and what it accepts."""
        server = await self.server_of(game_id)
        inherited = await self.server_defaults(server) if server else {}
        own = await self.own(game_id)
        name, checked = self._check(name, value, {**inherited, **own})
        own[name] = checked
        await self.store.set_scope_value(f"game:{game_id}", "config", own)
        return {**inherited, **own}

    async def set_for_server(self, server: str, name: str, value: str) -> dict[str, Any]:
        """Set a default for every game of a server (a game's own value still wins)."""
        defaults = await self.server_defaults(server)
        name, checked = self._check(name, value, defaults)
        defaults[name] = checked
        await self.store.set_scope_value(f"server:{server}", "config", defaults)
        return defaults

    def _check(self, name: str, value: str, current: dict[str, Any]) -> tuple[str, Any]:
        """The setting's name and its value as stored, or a :class:`UserError` naming it and its range."""
        name = name.strip().lower().replace("-", "_")
        if name not in setting_names():
            raise UserError(f"There is no setting {name!r}. Settings: {', '.join(setting_names())}.")
        if name == TURN_POLICY:
            if value.strip().lower() not in POLICIES:
                raise UserError(f"{name}: each (answer every action) or round (gather everyone's actions).")
            return name, value.strip().lower()
        if name in (REPLY_TOKENS, ROUND_SECONDS):
            low, high = REPLY_RANGE if name == REPLY_TOKENS else ROUND_RANGE
            if name == REPLY_TOKENS:
                high = min(high, self.reply_tokens)  # the host's GM_REPLY_TOKENS: a ceiling on a shared model
            try:
                number = int(value)
            except ValueError:
                number = low - 1
            if not low <= number <= high:
                ceiling = (
                    " (the bot's host allows no more)" if name == REPLY_TOKENS and high == self.reply_tokens else ""
                )
                raise UserError(f"{name}: a whole number from {low} to {high}{ceiling}.")
            return name, number
        candidate = {**current, name: value}
        try:
            _, config = resolve(self.base, self.reply_tokens, candidate, capped=False)
        except ValidationError as exc:
            problems = "; ".join(format_validation_error(exc))
            raise UserError(f"{name}: {problems.split(': ', 1)[-1]}") from None
        checked = _read(config, name)
        if name in CEILINGS and checked > (most := _read(self.base, name)):
            raise UserError(f"{name}: at most {most} on this bot (its host's setting; every server shares the model).")
        return name, checked

    async def reset(self, game_id: int, name: str) -> None:
        """Take back a game's own value of a setting or a bucket switch (``buckets.NAME``): its server's, or the
        process's, holds again."""
        await self._unset(f"game:{game_id}", name, "this game")

    async def reset_for_server(self, server: str, name: str) -> None:
        """Take back a server's default of a setting or a bucket switch (``buckets.NAME``)."""
        await self._unset(f"server:{server}", name, "this server")

    async def _unset(self, scope: str, name: str, where: str) -> None:
        kind, key = "config", name
        if name.startswith(BUCKET_PREFIX):
            kind, key = BUCKETS_KIND, name.removeprefix(BUCKET_PREFIX)
            _check_bucket(key)
        values = await self._scope(scope, kind)
        if values.pop(key, None) is None:
            raise UserError(f"{name!r} is not set for {where}.")
        await self.store.set_scope_value(scope, kind, values)


def _check_bucket(name: str) -> None:
    if name not in Buckets.model_fields:
        raise UserError(f"Unknown memory bucket {name!r}; the buckets are {', '.join(Buckets.model_fields)}.")


def _read(config: MemoryConfig, name: str) -> Any:
    if name.startswith("budgets."):
        return getattr(config.budgets, name.removeprefix("budgets."))
    return getattr(config, name)
