"""What each server's admins set for it (F20, F23): its own worlds, shipped worlds it hides, and its GM role.

A server (a Discord guild) is named by its id. Its worlds are YAML texts
uploaded by its admins, checked like a world file, kept in the database and
visible in that server only: a game of one records its world as
``SERVER/WORLD`` (a name no world file can have), so it never resolves
anywhere else. Its default settings live beside them (see
:class:`bot.engine.table.settings.GameSettings`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from bot.errors import UserError, shortened
from bot.store import Store
from bot.userfiles import MAX_WORLD_BYTES, over_limit
from bot.worlds import World, WorldFileError, WorldLibrary, world_from_text

log = logging.getLogger(__name__)

MAX_SERVER_WORLDS = 25  # a server's own worlds; an autocomplete shows 25
# All of a server's own world files together: every server's are read at start, so one server may not make
# that slow for all. A shipped world is about 20 KB.
MAX_SERVER_WORLD_BYTES = 2 * 2**20
# Every server's own world files together, as stored (GM_SERVER_WORLDS_MIB): what a start reads and parses.
MAX_TOTAL_WORLD_BYTES = 256 * 2**20
WORLD_PREFIX = "world:"


def server_scope(server: str) -> str:
    return f"server:{server}"


class Servers:
    """Every server's worlds, hidden shipped worlds and GM role, read once at start and kept in step."""

    def __init__(self, store: Store, library: WorldLibrary, *, max_total_bytes: int = MAX_TOTAL_WORLD_BYTES):
        self.store = store
        self.library = library
        self.max_total_bytes = max_total_bytes  # every server's own world files together, as stored
        self._worlds: dict[str, dict[str, World]] = {}  # server -> its own worlds by id
        self._hidden: dict[str, set[str]] = {}  # server -> shipped worlds it hides

    async def load(self) -> None:
        """Read every server's worlds from the database, decoded and parsed in a thread a server at a time (the
        loop serves other servers meanwhile). Left out, and logged: a world that no longer passes the checker,
        one past its server's size limit, and, servers taken in the order of their ids, those past the host's
        ceiling on every server's worlds together (``GM_SERVER_WORLDS_MIB``)."""
        scopes = await self.store.scopes_as_stored("server:")
        worlds: dict[str, dict[str, World]] = {}
        hidden: dict[str, set[str]] = {}
        total = 0
        past: dict[str, list[str]] = {}  # server -> its worlds past the host's ceiling
        for scope, values in scopes.items():
            server = scope.removeprefix("server:")
            hidden[server] = set(json.loads(values.get("hidden_worlds", "[]")))
            stored: dict[str, str] = {}  # its worlds as stored (JSON texts), within the host's ceiling
            for key, value in values.items():
                if not key.startswith(WORLD_PREFIX):
                    continue
                if total + len(value) > self.max_total_bytes:
                    past.setdefault(server, []).append(key.removeprefix(WORLD_PREFIX))
                    continue
                total += len(value)
                stored[key.removeprefix(WORLD_PREFIX)] = value
            if stored:
                worlds[server] = await asyncio.to_thread(_parse_server_worlds, server, stored)
        if past:
            log.warning(
                "Servers' worlds left out, past the host's %s together (GM_SERVER_WORLDS_MIB): %s",
                _mib(self.max_total_bytes), "; ".join(f"server {s}: {', '.join(names)}" for s, names in past.items()),
            )  # fmt: skip
        self._worlds, self._hidden = worlds, hidden

    # What a server sees

    def visible(self, server: str | None) -> dict[str, World]:
        """The worlds a server may play, by name: the shipped ones it does not hide, then its own."""
        if server is None:
            return dict(self.library.worlds)
        hidden = self._hidden.get(server, set())
        shown = {name: world for name, world in self.library.worlds.items() if name not in hidden}
        return {**shown, **self._worlds.get(server, {})}

    def resolve(self, server: str | None, name: str) -> tuple[str, World]:
        """The world id a new game records, and the world, for a name typed in a server."""
        if server is not None:
            own = self._worlds.get(server, {})
            if name in own:
                return f"{server}/{name}", own[name]
            if name in self._hidden.get(server, set()):
                raise UserError(f"The world {name!r} is hidden in this server; an admin can /world restore it.")
        if server is not None and name not in self.library.worlds:
            choices = ", ".join(sorted(self.visible(server))) or "none"
            raise UserError(f"Unknown world {shortened(name)!r}. Worlds here: {choices}.")
        world = self.library.get(name)
        return world.id, world

    def world(self, world_id: str) -> World | None:
        """A server's world by the id its games record (``SERVER/WORLD``)."""
        server, _, name = world_id.partition("/")
        return self._worlds.get(server, {}).get(name)

    def own(self, server: str) -> list[str]:
        return sorted(self._worlds.get(server, {}))

    # What its admins change

    async def add_world(self, server: str, filename: str, data: bytes) -> World:
        """Check an uploaded world file and keep it for this server; :class:`WorldFileError` lists its problems."""
        where = Path(Path(filename).name or "upload.yaml")
        if where.suffix.lower() not in (".yaml", ".yml"):
            raise WorldFileError(where, ["(file): a world is a YAML file (.yaml or .yml); see worlds/ for examples"])
        if len(data) > MAX_WORLD_BYTES:
            raise WorldFileError(where, [f"(file): {over_limit(len(data), MAX_WORLD_BYTES)}"])
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WorldFileError(where, [f"(file): not UTF-8 text (byte {exc.start})"]) from None
        world = await asyncio.to_thread(world_from_text, text, where)  # a big file takes a while: not on the loop
        own = self._worlds.get(server, {})
        if world.id not in own and len(own) >= MAX_SERVER_WORLDS:
            raise UserError(f"This server has {len(own)} worlds of its own, the most it may; /world remove one first.")
        stored = await self.store.scope_values(server_scope(server))
        others = sum(
            len(str(v).encode())
            for k, v in stored.items()
            if k.startswith(WORLD_PREFIX) and k != WORLD_PREFIX + world.id
        )
        if others + len(data) > MAX_SERVER_WORLD_BYTES:
            raise UserError(
                f"This server's worlds would come to {others + len(data):,} bytes, more than the "
                f"{MAX_SERVER_WORLD_BYTES:,} a server may keep; /world remove one first."
            )
        await self._check_total(stored.get(WORLD_PREFIX + world.id), text)
        await self.store.set_scope_value(server_scope(server), WORLD_PREFIX + world.id, text)
        self._worlds.setdefault(server, {})[world.id] = world
        log.info("Server %s: world %s added (%d bytes)", server, world.id, len(data))
        return world

    async def _check_total(self, replaced: str | None, text: str) -> None:
        """Refuse a world that would take every server's worlds together past the host's ceiling."""
        before = len(json.dumps(replaced)) if replaced is not None else 0  # sizes as stored, like the total
        total = await self.store.stored_bytes("server:", WORLD_PREFIX) - before + len(json.dumps(text))
        if total > self.max_total_bytes:
            raise UserError(
                f"Every server's own worlds together would come to {total:,} bytes, more than the "
                f"{self.max_total_bytes:,} ({_mib(self.max_total_bytes)}) the bot's host allows "
                "(GM_SERVER_WORLDS_MIB); nothing was added. /world remove one of this server's, or ask the host."
            )

    async def remove_world(self, server: str, name: str) -> str:
        """Delete a server's own world, or hide a shipped one there; says which it did."""
        own = self._worlds.get(server, {})
        if name in own:
            await self.store.delete_scope_value(server_scope(server), WORLD_PREFIX + name)
            del own[name]
            return "removed"
        if name in self.library.worlds and name not in self._hidden.get(server, set()):
            await self._set_hidden(server, self._hidden.get(server, set()) | {name})
            return "hidden"
        raise UserError(f"No world {name!r} to remove here. Worlds here: {', '.join(sorted(self.visible(server)))}.")

    async def restore_world(self, server: str, name: str) -> None:
        hidden = self._hidden.get(server, set())
        if name not in hidden:
            raise UserError(f"{name!r} is not hidden in this server.")
        await self._set_hidden(server, hidden - {name})

    async def _set_hidden(self, server: str, names: set[str]) -> None:
        await self.store.set_scope_value(server_scope(server), "hidden_worlds", sorted(names))
        self._hidden[server] = set(names)

    def hidden(self, server: str) -> list[str]:
        return sorted(self._hidden.get(server, set()))

    async def gm_role(self, server: str) -> int | None:
        return (await self.store.scope_values(server_scope(server))).get("gm_role")

    async def set_gm_role(self, server: str, role_id: int | None) -> None:
        if role_id is None:
            await self.store.delete_scope_value(server_scope(server), "gm_role")
        else:
            await self.store.set_scope_value(server_scope(server), "gm_role", role_id)


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"


def _parse_server_worlds(server: str, stored: dict[str, str]) -> dict[str, World]:
    """In a thread: a server's world texts as stored (JSON), decoded and checked as at upload, within its size
    limit; the rest left out and logged."""
    worlds: dict[str, World] = {}
    size = 0
    for name, value in sorted(stored.items()):
        text = json.loads(value)
        size += len(text.encode())
        if size > MAX_SERVER_WORLD_BYTES:
            log.warning("Server %s: world %s left out: the server's worlds pass %d bytes", server, name, size)
            continue
        try:
            world = world_from_text(text, Path(f"{name}.yaml"))
        except WorldFileError as exc:
            log.warning("Server %s: world left out: %s", server, exc)
            continue
        worlds[world.id] = world
    return worlds
