"""The key-value table (``settings`` in SQL): JSON values by scope and key.

A scope names what the values belong to: ``game:<id>`` (a game's overrides,
its server, its bucket switches), ``server:<id>`` (a server's defaults, its
worlds, its GM role), ``notes:<id>`` (players' notes), ``embedding`` (the
model vectors are made with), and the Discord client's sync digests. What
the values mean is for their owners; this table only keeps them.
"""

from __future__ import annotations

import json
from typing import Any

from bot.store.base import StoreBase, timestamp


class KeyValueTable(StoreBase):
    async def scope_values(self, scope: str) -> dict[str, Any]:
        """Every key of ``scope`` with its value."""
        rows = await self._all("SELECT key, value FROM settings WHERE scope = ? ORDER BY key", (scope,))
        return {row["key"]: json.loads(row["value"]) for row in rows}

    async def scopes(self, prefix: str) -> dict[str, dict[str, Any]]:
        """Every scope whose name starts with ``prefix``, with its values."""
        return {
            scope: {key: json.loads(text) for key, text in values.items()}
            for scope, values in (await self.scopes_as_stored(prefix)).items()
        }

    async def scopes_as_stored(self, prefix: str) -> dict[str, dict[str, str]]:
        """As :meth:`scopes`, each value its JSON text as stored: a caller with big values (a server's world
        files) decodes them off the event loop."""
        rows = await self._all(
            "SELECT scope, key, value FROM settings WHERE substr(scope, 1, ?) = ? ORDER BY scope, key",
            (len(prefix), prefix),
        )
        found: dict[str, dict[str, str]] = {}
        for row in rows:
            found.setdefault(row["scope"], {})[row["key"]] = row["value"]
        return found

    async def stored_bytes(self, scope_prefix: str, key_prefix: str) -> int:
        """The bytes of the JSON texts stored under keys starting with ``key_prefix`` in every scope starting
        with ``scope_prefix`` (ASCII: a value is stored as JSON with its other characters escaped)."""
        rows = await self._all(
            "SELECT coalesce(sum(length(value)), 0) AS size FROM settings"
            " WHERE substr(scope, 1, ?) = ? AND substr(key, 1, ?) = ?",
            (len(scope_prefix), scope_prefix, len(key_prefix), key_prefix),
        )
        return rows[0]["size"]

    async def set_scope_value(self, scope: str, key: str, value: Any) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO settings (scope, key, value, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (scope, key, json.dumps(value), timestamp()),
            )

    async def delete_scope_value(self, scope: str, key: str) -> None:
        async with self.transaction() as db:
            await db.execute("DELETE FROM settings WHERE scope = ? AND key = ?", (scope, key))
