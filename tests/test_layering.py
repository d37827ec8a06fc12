"""The core never talks to Discord: only cogs/ and the start-up client do."""

from __future__ import annotations

import ast

from tests.conftest import PROJECT

ALLOWED = {PROJECT / "bot" / "discord_client.py"}


def _imports(path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_core_module_imports_discord():
    offenders = [
        str(path.relative_to(PROJECT))
        for path in (PROJECT / "bot").rglob("*.py")
        if path not in ALLOWED and "discord" in _imports(path)
    ]
    assert offenders == []


def test_memory_policy_does_no_io_and_no_asyncio():
    for path in (PROJECT / "bot" / "memory").rglob("*.py"):
        assert not _imports(path) & {"asyncio", "aiosqlite", "sqlite3", "llama_cpp", "discord"}, path
