"""The files of the models that come with the bot, found inside their installed packages."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_files(package: str, pattern: str) -> list[Path] | None:
    """The files matching ``pattern`` in an installed package, found without importing it (importing a model's
    package may print, or need another tool); ``None`` when the package is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return [
        path
        for location in spec.submodule_search_locations
        for path in sorted(Path(location).glob(pattern))
        if path.is_file()
    ]
