"""The front ends use the engine's front door: no cog, nor the terminal, reaches past it into the engine's parts."""

from __future__ import annotations

import ast

from tests.conftest import PROJECT

FRONT_ENDS = [
    *sorted((PROJECT / "cogs").rglob("*.py")),
    PROJECT / "bot" / "terminal.py",
    PROJECT / "bot" / "discord_client.py",
]
# The engine's parts; a front end asks the engine itself (``engine.lore(...)``, ``engine.server(id).gm_role()``).
PARTS = {"store", "ledger", "servers", "settings"}


def _is_engine(node: ast.expr) -> bool:
    """``engine``, or a chain ending in ``.engine``: ``self.engine``, ``bot.engine``, ``interaction.client.engine``."""
    return (isinstance(node, ast.Name) and node.id == "engine") or (
        isinstance(node, ast.Attribute) and node.attr == "engine"
    )


def reaches_past(source: str, parts: frozenset[str] | set[str] = PARTS) -> list[str]:
    """Each ``<engine>.<part>`` in ``source``, as ``line: text``."""
    return [
        f"{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in parts and _is_engine(node.value)
    ]


def test_the_check_finds_a_reach_past_the_front_door_and_nothing_else():
    found = reaches_past(
        "engine.store.games()\n"
        "self.engine.ledger.lore_add(1)\n"
        "bot.engine.servers.visible(None)\n"
        "interaction.client.engine.settings.sources(1)\n"
        "self.bot.settings.ooc_prefix\n"  # the process's settings, not the engine's
        "self.engine.server('1').defaults()\n"
        "store.games()\n"
    )
    assert found == [
        "1: engine.store",
        "2: self.engine.ledger",
        "3: bot.engine.servers",
        "4: interaction.client.engine.settings",
    ]


def test_cogs_and_the_terminal_use_the_engines_front_door_only():
    offenders = [f"{path.relative_to(PROJECT)}:{hit}" for path in FRONT_ENDS for hit in reaches_past(path.read_text())]
    assert offenders == []


def past_the_door(source: str) -> list[str]:
    """Each import of the engine's or the memory's modules themselves (``bot.engine.table.settings``,
    ``bot.memory.context``), as ``line: module``: a front end takes what it needs from ``bot.engine``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        modules += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found += [f"{node.lineno}: {m}" for m in modules if m.startswith(("bot.engine.", "bot.memory"))]
    return found


def test_the_front_ends_import_the_engine_and_not_its_modules():
    sample = "from bot.engine import Engine\nfrom bot.engine.table.settings import x\nimport bot.memory.context"
    assert past_the_door(sample) == ["2: bot.engine.table.settings", "3: bot.memory.context"]
    offenders = [f"{path.relative_to(PROJECT)}:{hit}" for path in FRONT_ENDS for hit in past_the_door(path.read_text())]
    assert offenders == []


# Every part the engine wires together: a bench reads them through ``engine.measures`` (bot.engine.measures).
ENGINE_PARTS = PARTS | {
    "meaning", "worker", "memory", "reveals", "guards", "sessions", "prompts", "turns", "seats", "edits", "rounds",
    "warmups", "player_notes",
}  # fmt: skip


def test_the_benches_read_an_engine_through_its_two_doors():
    """A bench plays through the front door and reads how the engine came to it through ``engine.measures``; what
    it built itself (the store, the worker) it uses directly, never through the engine."""
    assert reaches_past("engine.meaning.closeness(a, b)\nengine.measures.closeness(a, b)\n", ENGINE_PARTS) == [
        "1: engine.meaning"
    ]
    benches = sorted((PROJECT / "bot" / "bench").rglob("*.py"))
    offenders = [
        f"{path.relative_to(PROJECT)}:{hit}" for path in benches for hit in reaches_past(path.read_text(), ENGINE_PARTS)
    ]
    assert offenders == []
