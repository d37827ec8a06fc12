"""What one server's admins do for its games: its own worlds, the shipped ones it hides, its GM role, and the
defaults its games' settings and buckets take (F20, F23). A front end gets it from :meth:`Engine.server`."""

from __future__ import annotations

from bot.engine.table.servers import Servers
from bot.engine.table.settings import BUCKETS_KIND, GameSettings
from bot.errors import UserError
from bot.store import Store
from bot.worlds import World


class ServerAdmin:
    def __init__(self, server: str, store: Store, servers: Servers, settings: GameSettings):
        self.server = server  # the server's id, as a string
        self._store = store
        self._servers = servers
        self._settings = settings

    # Worlds

    def own_worlds(self) -> list[str]:
        """The names of the server's own worlds (its admins' uploads)."""
        return self._servers.own(self.server)

    def hidden_worlds(self) -> list[str]:
        """The shipped worlds the server hides."""
        return self._servers.hidden(self.server)

    async def add_world(self, filename: str, data: bytes) -> World:
        """Check an uploaded world file and keep it for the server; :class:`WorldFileError` lists its problems."""
        return await self._servers.add_world(self.server, filename, data)

    async def remove_world(self, name: str) -> str:
        """Delete one of the server's own worlds, or hide a shipped one there (``"removed"`` or ``"hidden"``);
        refused while a game of the server still plays its own world of that name."""
        playing = [g for g in await self._store.games("active") if g.world_id == f"{self.server}/{name}"]
        if playing:
            raise UserError(f"{len(playing)} game(s) here still play {name!r}; /game end them first.")
        return await self._servers.remove_world(self.server, name)

    async def restore_world(self, name: str) -> None:
        """Show a shipped world the server had hidden."""
        await self._servers.restore_world(self.server, name)

    # Its GM role

    async def gm_role(self) -> int | None:
        """The role whose members act as admins of the server's games; ``None``: Manage Server only."""
        return await self._servers.gm_role(self.server)

    async def set_gm_role(self, role_id: int | None) -> None:
        await self._servers.set_gm_role(self.server, role_id)

    # Defaults for its games

    async def defaults(self) -> dict[str, object]:
        """The server's defaults for its games' settings (those it set)."""
        return await self._settings.server_defaults(self.server)

    async def capped_defaults(self) -> dict[str, int]:
        """The server's defaults past the host's ceiling (set before the host lowered it): the ceiling its games
        use instead, by name."""
        return {name: most for name, (_, most) in (await self._settings.capped_for_server(self.server)).items()}

    async def set_default(self, name: str, value: str) -> dict[str, object]:
        return await self._settings.set_for_server(self.server, name, value)

    async def bucket_defaults(self) -> dict[str, bool]:
        """The server's defaults for its games' bucket switches (those it set)."""
        return await self._settings.server_defaults(self.server, BUCKETS_KIND)

    async def set_bucket_default(self, name: str, on: bool) -> dict[str, bool]:
        return await self._settings.set_server_bucket(self.server, name, on)

    async def reset_default(self, name: str) -> None:
        """Take back the server's default of a setting or a bucket switch (``buckets.NAME``)."""
        await self._settings.reset_for_server(self.server, name)
