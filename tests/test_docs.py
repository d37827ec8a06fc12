"""The docs: every setting of the process is in the settings page and every one they name exists, every relative
link resolves, the README stays a front page, and the Discord quick start does what it says without a token."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from bot.memory.config import Budgets, MemoryConfig
from bot.settings import ProcessSettings
from tests.conftest import PROJECT

PAGES = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
# Pages for the people who use the bot: no run-by-run history (that is in docs/lab/ and the measurements page).
USER_PAGES = [p for p in PAGES if p.name != "measurements.md"]
# Named in the docs but not settings of the process: the build's flags for llama.cpp, and the opt-in tests' model.
NOT_SETTINGS = {"GM_CMAKE_ARGS", "GM_TEST_INSTRUCT_MODEL", "GM_TEST_INSTRUCT_SEED"}


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
    assert len(readme.splitlines()) < 120, "the README is the front page, under 120 lines; the rest is in docs/"
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


def test_every_setting_the_docs_name_exists():
    known = {f"GM_{name.upper()}" for name in ProcessSettings.model_fields}
    known |= {f"GM_MEMORY__{name.upper()}" for name in MemoryConfig.model_fields}
    known |= {f"GM_MEMORY__BUDGETS__{name.upper()}" for name in Budgets.model_fields}
    named = {
        f"{page.relative_to(PROJECT)}: {name}"
        for page in [*PAGES, PROJECT / ".env.example"]
        for name in re.findall(r"\bGM_[A-Z0-9_]*[A-Z0-9]\b", page.read_text())
        if name not in known | NOT_SETTINGS
    }
    assert sorted(named) == []


def test_the_user_pages_carry_no_commit_ids():
    """Figures with their commit live in docs/measurements.md; the history of runs in docs/lab/."""
    commit = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
    found = [f"{page.relative_to(PROJECT)}: {m}" for page in USER_PAGES for m in commit.findall(page.read_text())]
    assert found == []


def test_the_discord_quick_start_without_a_token_says_what_is_missing_in_one_line(tmp_path: Path):
    """The README's Discord quick start as written, up to the token: ``cp .env.example .env`` and ``make run``
    (which runs ``python -m bot run``) in a folder of its own."""
    from tests.test_cli import one_clear_line, run_bot

    readme = PAGES[0].read_text()
    assert "cp .env.example .env" in readme and "make run" in readme
    assert re.search(r"^run:.*\n\t\S+ -m bot run$", (PROJECT / "Makefile").read_text(), re.M), "make run runs the bot"
    shutil.copy(PROJECT / ".env.example", tmp_path / ".env")
    line = one_clear_line(run_bot("run", cwd=tmp_path))
    assert line.startswith("No DISCORD_TOKEN") and "discord.com/developers/applications" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == [".env"], "nothing written"
