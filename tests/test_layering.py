"""The core never talks to Discord: only cogs/ and the start-up client do."""

from __future__ import annotations

import ast
import subprocess
import sys

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


# Loaded by the store and the model; the memory policy works on plain data and needs neither.
IO_LIBRARIES = ("aiosqlite", "llama_cpp")


def test_the_memory_policy_loads_neither_the_database_driver_nor_llama_cpp():
    policy = ["bot.memory", "bot.store.models", "bot.words"]
    policy += sorted(f"bot.memory.{path.stem}" for path in (PROJECT / "bot" / "memory").glob("[!_]*.py"))
    code = (
        "import importlib, sys\n"
        f"for name in {IO_LIBRARIES!r}:\n"
        "    sys.modules[name] = None  # an import of it raises ImportError\n"
        f"for module in {policy!r}:\n"
        "    importlib.import_module(module)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
