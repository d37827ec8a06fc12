"""The docs: every setting of the process is in the settings page, and every relative link resolves."""

from __future__ import annotations

import re

from bot.memory.config import MemoryConfig
from bot.settings import ProcessSettings
from tests.conftest import PROJECT

PAGES = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_setting_is_in_the_settings_page():
    page = (PROJECT / "docs" / "settings.md").read_text()
    names = [f"GM_{name.upper()}" for name in ProcessSettings.model_fields if name not in ("memory", "discord_token")]
    memory = [f"GM_MEMORY__{name.upper()}" for name in MemoryConfig.model_fields if name != "budgets"]
    names += ["DISCORD_TOKEN", *memory]
    missing = [name for name in names if name not in page]
    assert missing == []


def test_every_page_is_reachable_from_the_readme_and_every_relative_link_resolves():
    readme = PAGES[0].read_text()
    assert [p.name for p in PAGES[1:] if f"docs/{p.name}" not in readme] == []
    assert len(readme.splitlines()) <= 150, "the README is the front page; the rest is in docs/"
    broken = []
    for page in PAGES:
        for target in _LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web address, or a place in the same page
            if not (page.parent / target.split("#")[0]).exists():
                broken.append(f"{page.relative_to(PROJECT)}: {target}")
    assert broken == []


def _blocks(page: str, heading: str, language: str) -> list[str]:
    """The ``language`` code blocks of a page's section under ``heading``."""
    text = (PROJECT / "docs" / page).read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.DOTALL)


def test_the_minimal_world_of_the_world_reference_passes_check_and_lacks_nothing():
    from pathlib import Path

    from bot.memory.worldcheck import world_problems
    from bot.worlds import world_from_text

    (minimal,) = _blocks("worlds.md", "## A minimal world", "yaml")
    world = world_from_text(minimal, Path("quiet-inn.yaml"))
    assert world_problems(world) == []


def test_the_worked_secret_of_the_world_reference_is_valid_world_data():
    import yaml

    from bot.worlds import NPC, Chapter, Truth

    (worked,) = _blocks("worlds.md", "### A worked secret", "yaml")
    data = yaml.safe_load(worked)
    assert [Truth.model_validate(t).id for t in data["truths"]] == ["hidden-stair"]
    assert NPC.model_validate(data["npcs"][0]).secrets[0].uncovered_by[0].to == "hester-crane"
    assert Chapter.model_validate(data["chapters"][0]).beats[0].clue.earned_by[0].after == ["hidden-stair"]
