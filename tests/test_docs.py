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
