"""Folders the bot makes for a model's saved states, and the only folders it ever removes (F30).

Model states (``states/``) and server slots (``slots/``) are kept in one folder per model under a root beside the
database. When a model opens its folder, the folders of models no longer in use are cleared, but only folders the
bot can tell are its own:

- a folder it made carries a mark file (:data:`MARK`) naming what it holds; a folder without one is an admin's
  (notes, a backup, a link to somewhere else) and is never touched;
- a link is never followed to delete: a link in the root is left as it is, and a root that is itself a link is
  not cleared at all (what it points to is not the bot's to sweep);
- of a marked folder, only the files the bot writes there (their suffixes) and the mark go; a folder that still
  holds anything else afterwards stays, said in the log;
- a folder another bot process has open (two bots with their own databases beside each other, with other
  models) is kept: each process holds a shared ``flock`` on its folder's mark while it runs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import stat
import weakref
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on Windows; there a folder in use by another process is not told apart
    fcntl = None  # type: ignore[assignment]  # mypy cannot type a module name that may be None

log = logging.getLogger(__name__)

MARK = ".discord-gm-folder"
MAX_MARK_BYTES = 4096
# Folders written before they were marked: a model key (``<file stem>-<context>-<12 hex digits>``, see
# ``statefiles.model_key``) holding nothing but the bot's own files is recognised as the bot's as well.
_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,60}-\d{1,7}-[0-9a-f]{12}$")


def safe_file_name(label: str, suffix: str, limit: int = 80) -> str:
    """A plain file name for ``label`` (a game's slot or state): no path separators, no leading dots."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-.")[:limit] + suffix


class ModelFolder:
    """One model's folder ``root/key``, made and marked as the bot's, holding files ending in ``suffixes``, for
    ``kind`` (``"states"`` or ``"slots"``). :meth:`open` makes it, holds it while this process runs, and clears
    the folders of other models that are the bot's own and in use by no process."""

    def __init__(self, root: Path, key: str, kind: str, suffixes: tuple[str, ...]):
        self.root = root
        self.key = key
        self.folder = root / key
        self.kind = kind
        self.suffixes = suffixes
        self._held: weakref.finalize | None = None  # closes the held mark's descriptor, at close or when dropped

    def open(self) -> None:
        """Make and mark the folder, hold it, and clear other models' folders of this kind. ``OSError`` when the
        folder cannot be made or is not a plain folder (a link, a file)."""
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            self.folder.mkdir()
        except FileExistsError:
            self._check_own()
        self._mark()
        self._hold()
        self._clear_others()

    def _check_own(self) -> None:
        """The model's own folder, found there: a plain folder holding only what the bot writes, or refused."""
        info = self.folder.lstat()
        if not stat.S_ISDIR(info.st_mode):
            what = "a link" if stat.S_ISLNK(info.st_mode) else "not a folder"
            raise OSError(f"{self.folder} is {what}; the bot keeps its files only in a folder of its own")
        if not self._ours(self.folder):
            raise OSError(f"{self.folder} holds files the bot did not write; move them, or the folder, away")

    def close(self) -> None:
        """Let the folder go (another process may then clear it)."""
        if self._held is not None:
            self._held()
            self._held = None

    def _mark(self) -> None:
        mark = self.folder / MARK
        if _marked(self.folder) == self.kind:
            return
        partial = self.folder / (MARK + ".tmp")
        partial.write_text(json.dumps({"made_by": "discord-gm", "kind": self.kind, "key": self.key}) + "\n")
        partial.replace(mark)

    def _hold(self) -> None:
        """A shared lock on the mark, for as long as this process uses the folder; a process clearing the folder
        meanwhile (it took it for another model's, not in use) is waited for, and the folder made again."""
        if fcntl is None:
            return
        for _ in range(3):
            fd = os.open(self.folder / MARK, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)  # shared: two processes of one model may share its folder
                if os.fstat(fd).st_ino == (self.folder / MARK).lstat().st_ino:
                    self._held = weakref.finalize(self, os.close, fd)
                    return
            except FileNotFoundError:
                pass
            except OSError:
                os.close(fd)
                raise
            os.close(fd)
            self.folder.mkdir(exist_ok=True)
            self._mark()
        raise OSError(f"{self.folder} is being removed by another process")

    def _clear_others(self) -> None:
        if self.root.is_symlink():
            log.info("%s is a link: folders of other models there are left as they are", self.root)
            return
        for entry in sorted(self.root.iterdir()):
            if entry.name == self.key or entry.is_symlink() or not entry.is_dir():
                continue
            if not self._ours(entry):
                log.info("%s is not a folder of the bot's %s; left as it is", entry, self.kind)
                continue
            self._clear(entry)

    def _ours(self, folder: Path) -> bool:
        """Whether ``folder`` is a folder of this kind the bot made: marked, or (written before folders were
        marked) named as a model key and holding only the bot's own files."""
        kind = _marked(folder)
        if kind is not None:
            return kind == self.kind
        if folder != self.folder and not _KEY.match(folder.name):
            return False
        try:
            return all(self._own_file(entry) for entry in folder.iterdir())
        except OSError:
            return False

    def _own_file(self, entry: Path) -> bool:
        """A plain file (not a link) of a name the bot writes in this kind of folder."""
        if entry.is_symlink() or not entry.is_file():
            return False
        name = entry.name
        return name in (MARK, MARK + ".tmp") or any(name.endswith((s, s + ".tmp")) for s in self.suffixes)

    def _clear(self, folder: Path) -> None:
        """Remove the bot's own files of ``folder``, then the folder if nothing else is left; a folder in use by
        another process is kept. The folder's mark is held alone meanwhile, so no process opens it half cleared."""
        with _alone(folder) as alone:
            if not alone:
                log.info("The %s folder %s is in use by another bot process; kept", self.kind, folder.name)
                return
            removed = 0
            try:
                for entry in folder.iterdir():
                    if self._own_file(entry) and entry.name != MARK:
                        entry.unlink(missing_ok=True)
                        removed += 1
                rest = [entry.name for entry in folder.iterdir() if entry.name != MARK]
                if rest:
                    log.warning("The %s folder %s of another model holds files the bot did not write (%s); kept",
                                self.kind, folder, ", ".join(sorted(rest)[:3]))  # fmt: skip
                    return
                (folder / MARK).unlink(missing_ok=True)
                folder.rmdir()
            except OSError as exc:
                log.warning("The %s folder %s of another model could not be cleared (%s)", self.kind, folder,
                            exc.strerror or exc)  # fmt: skip
                return
        log.info("The %s of another model or context removed: %s (%d files)", self.kind, folder.name, removed)


def _marked(folder: Path) -> str | None:
    """The kind a folder's mark names, or ``None`` when it has no mark (or the mark is a link or not the bot's)."""
    mark = folder / MARK
    try:
        if mark.is_symlink() or not mark.is_file() or mark.stat().st_size > MAX_MARK_BYTES:
            return None
        data = json.loads(mark.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("made_by") != "discord-gm" or not isinstance(data.get("kind"), str):
        return None
    return data["kind"]


@contextlib.contextmanager
def _alone(folder: Path) -> Iterator[bool]:
    """Hold ``folder``'s mark alone for the block: ``False`` when another process holds it (or that cannot be
    told); ``True`` with it held, or with no mark to hold (a folder written before marks) or no ``flock``."""
    if fcntl is None:
        yield True
        return
    try:
        fd = os.open(folder / MARK, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield True
        return
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
        else:
            yield True
    finally:
        os.close(fd)
