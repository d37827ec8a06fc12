"""The layers: the core never talks to Discord (only cogs/ and the start-up client do), the memory policy does
no I/O, and no module of bot/ or cogs/ imports one that imports it back."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator

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


def _module_name(path) -> str:
    parts = path.relative_to(PROJECT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for package in ("bot", "cogs") for path in (PROJECT / package).rglob("*.py")}


def _runtime_imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import that can run, at module level or inside a function: a cycle through an import in a function
    breaks as soon as that function runs early. Imports under ``if TYPE_CHECKING:`` never run."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    type_checking = isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
    for child in node.orelse if type_checking else ast.iter_child_nodes(node):
        yield from _runtime_imports(child)


def _internal(name: str) -> str | None:
    """The module of bot/ or cogs/ that ``name`` is or is in (``bot.store.Store`` is in ``bot.store``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The modules of bot/ and cogs/ an import statement loads (a package's ``__init__`` only when named)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: package.count(".") + 2 - node.level]
            base = ".".join([*anchor, base] if base else anchor)
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    return {found for name in names if (found := _internal(name)) and found != module}


IMPORTS = {
    module: {target for node in _runtime_imports(ast.parse(path.read_text())) for target in _targets(module, node)}
    for module, path in MODULES.items()
}


def _cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The cycles a depth-first walk of the graph closes: at least one through every group of modules that
    import each other, each starting at its first module by name."""
    found, done, path = set(), set(), []

    def visit(module: str) -> None:
        path.append(module)
        for target in sorted(graph[module]):
            if target in path:
                cycle = path[path.index(target) :]
                first = cycle.index(min(cycle))
                found.add(tuple(cycle[first:] + cycle[:first]))
            elif target not in done:
                visit(target)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module)
    return sorted(found)


def test_the_import_graph_holds_imports_at_module_level_and_in_functions():
    assert "bot.memory.leaks" in IMPORTS["bot.engine.secrets.guard"]  # from bot.memory.leaks import (...)
    assert "bot.store" in IMPORTS["bot.engine.secrets.guard"]  # from bot.store import Game, Store
    assert "bot.bench.turns" in IMPORTS["bot.bench.cli"]  # inside _turns()
    assert "bot.bench.cli" in IMPORTS["bot.__main__"]  # inside build_parser()
    assert "bot.model.llamacpp" in IMPORTS["bot.model.llama"]  # inside a method
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]


def test_no_module_of_bot_or_cogs_imports_one_that_imports_it_back():
    cycles = [" -> ".join((*cycle, cycle[0])) for cycle in _cycles(IMPORTS)]
    assert cycles == []


def test_nothing_imports_the_composition_root():
    """``python -m bot`` builds everything; the benches and the tests build their parts with bot.startup."""
    assert sorted(module for module, targets in IMPORTS.items() if "bot.__main__" in targets) == []
