"""Which slot of a llama.cpp server holds which game (F33): each game's calls go to its own slot, so its prompt
stays cached; when games outnumber slots, an idle game's slot is saved to disk and its slot given to the game
that comes, which restores its own file if it has one. A game new to the slots starts from a copy of a slot whose
game's prompt begins as its own (the same world): the world's frozen layer is read once, not once per game.

The files live in one folder per model (``data/slots/<model key>/``, the server's ``--slot-save-path``), the bot's
own and marked as such (:mod:`bot.model.ownfolders`): when a model opens its folder, the folders the bot made for
other models, and only those, are cleared. The folder keeps within a byte budget, the least recently written file
out first. A file that the server cannot restore (damaged, or another model's) is
deleted with one line in the log, and that game reads its prompt cold.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bot.model.kin import MIN_SHARED_CHARS, least_recent, nearest_kin, shared_prefix
from bot.model.ownfolders import ModelFolder, safe_file_name
from bot.model.statefiles import over_budget

if TYPE_CHECKING:
    from bot.model.client import ServerClient

log = logging.getLogger(__name__)

SUFFIX = ".bin"
# A new game starts from a copy of another game's slot when their prompts' first messages (the frozen layer: the
# world, its rules and characters, then the players, who differ) begin with at least this many characters alike.
COPY_MIN_CHARS = MIN_SHARED_CHARS
WAIT_SECONDS = 120.0  # a call waits this long at most for its game's slot, or any slot, to be free


class Phase(enum.Enum):
    """What a slot is doing, besides holding its game's state (a slot with no phase is idle, its state whole)."""

    BUSY = "busy"  # a call of its game runs there, on a state read whole (or restored, or copied)
    READING_NEW = "reading new"  # a call reads a new game's prompt there from nothing
    CUT_SHORT = "cut short"  # idle, its new game's prompt read only in part: the next call goes on reading it
    RETURNING = "returning"  # idle, a new game's prompt read whole in a call of its own: kept for the reply's call
    WRITING_FIRST = "writing first"  # that call runs: kin that come wait for its end, as for a reading


# Phases in which a call runs in the slot, and in which the slot holds only part of its new game's prompt.
RUNNING = frozenset({Phase.BUSY, Phase.READING_NEW, Phase.WRITING_FIRST})
COLD = frozenset({Phase.READING_NEW, Phase.CUT_SHORT})


@dataclass(frozen=True)
class Lease:
    """A slot given to one call of a game: save its holder's state under ``save`` first, then restore ``restore``
    (both file names in the slot folder, or ``None``).

    ``copy_from``: a game new to the slots, whose prompt begins as the game in that slot's does (the same world's
    frozen layer), starts from a copy of it: that slot, held for this call, is saved under ``restore`` (a file of
    this call's, dropped once restored) and let go with :meth:`SlotMap.release_copied`; its prompt's beginning is
    then not read again, as in process a new game starts from another game's state of its world."""

    slot: int
    save: str | None = None
    restore: str | None = None
    copy_from: int | None = None


@dataclass
class Held:
    """A :class:`Lease` held for one call, given back when the call ends: ``read`` once its prompt was read whole
    (a piece came, or the reply ended); ``kept`` when it was a new game's prompt read in a call of its own, whose
    slot is then kept for the call that writes the reply (see :meth:`SlotMap.read`)."""

    lease: Lease
    read: bool = False
    kept: bool = False


def file_name(label: str) -> str:
    """A game's slot file: llama.cpp takes a plain file name only."""
    return safe_file_name(label, SUFFIX)


class SlotFolder:
    """The saved slots of one model on disk, within ``capacity_bytes``."""

    def __init__(self, root: Path, key: str, capacity_bytes: int):
        """``OSError`` when the folder cannot be made, or is not the bot's own."""
        self.root = root
        self.own = ModelFolder(root, key, "slots", (SUFFIX,))
        self.folder = self.own.folder
        self.capacity_bytes = capacity_bytes
        self.own.open()
        self.trim()  # a budget lowered since the last start is kept from the start

    def close(self) -> None:
        """Let the folder go: another process may clear it once this one no longer uses it."""
        self.own.close()

    def has(self, name: str) -> bool:
        return (self.folder / name).is_file()

    def drop(self, name: str) -> None:
        (self.folder / name).unlink(missing_ok=True)

    def trim(self) -> None:
        """Remove the least recently written files until the folder fits its budget (a folder that cannot be read
        is left as it is, said in the log)."""
        try:
            for path in over_budget(self.folder, SUFFIX, self.capacity_bytes):
                path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("Saved slots in %s could not be trimmed (%s)", self.folder, exc.strerror or exc)


class SlotMap:
    """``slots`` slots for games, numbered from 0; thread-safe (the worker's runners call at once)."""

    def __init__(self, slots: int, folder: SlotFolder | None = None, *, wait: float = WAIT_SECONDS):
        self.slots = slots
        self.folder = folder
        self.wait = wait
        self._lock = threading.Condition()
        self._holder: dict[int, str] = {}  # slot -> the game whose state it holds
        self._of: dict[str, int] = {}  # game -> its slot
        self._used: dict[int, float] = {}  # slot -> when its last call ended
        self._phase: dict[int, Phase] = {}  # slot -> what it is doing; an idle slot, its state whole, has none
        self._copying: set[int] = set()  # slots whose state is being saved for a kin to copy, whatever their phase
        self._beginning: dict[str, str] = {}  # game -> how its prompt begins (its first message)
        self._copy_wanted: dict[int, int] = {}  # cold slot -> new games of its world waiting to copy it
        self.saves = self.restores = self.failed = self.copies = 0  # changed only by counted(), under the lock

    def phase(self, slot: int) -> Phase | None:
        """What ``slot`` is doing now (``None``: idle, its state whole)."""
        with self._lock:
            return self._phase.get(slot)

    def _in(self, phases: frozenset[Phase]) -> set[int]:
        return {slot for slot, phase in self._phase.items() if phase in phases}

    @property
    def _busy(self) -> set[int]:
        """The slots a call runs in, or a copy is made from."""
        return self._in(RUNNING) | self._copying

    @property
    def _cold(self) -> set[int]:
        """The slots holding only part of a new game's prompt, read now or cut short."""
        return self._in(COLD)

    @property
    def _returning(self) -> set[int]:
        return self._in(frozenset({Phase.RETURNING}))

    @property
    def _writing(self) -> set[int]:
        return self._in(frozenset({Phase.WRITING_FIRST}))

    def _unkeep(self, slot: int) -> None:
        """A slot kept for its game's reply (:attr:`Phase.RETURNING`) is kept no longer; any other phase stays."""
        if self._phase.get(slot) is Phase.RETURNING:
            del self._phase[slot]

    def counted(self, what: Literal["saves", "restores", "failed", "copies"]) -> None:
        """One more slot state saved, restored, failed to restore or copied (calls of several threads count)."""
        with self._lock:
            setattr(self, what, getattr(self, what) + 1)

    def acquire(self, label: str, beginning: str | None = None) -> Lease | None:
        """The slot for one call of ``label``'s game, whose prompt begins with ``beginning`` (its first message). A
        game whose slot is busy with another of its calls (its prompt read ahead) waits for it, and so does one
        that finds every slot busy: its prompt is read once, where it is kept. ``None`` after :attr:`wait`
        seconds of that (the server then picks a slot)."""
        with self._lock:
            if beginning is not None:
                self._beginning[label] = beginning
            claimed: list[int] = []  # its kin's slots, held for its copy until it has its lease
            try:
                lease = self._lease(label, beginning, claimed)
                if lease is None and (kept := self._of.get(label)) is not None:  # gave up: a slot kept for this
                    self._unkeep(kept)  # game's reply is kept no longer
                return lease
            finally:
                for slot in claimed:
                    self._copy_wanted[slot] -= 1
                    if not self._copy_wanted[slot]:
                        del self._copy_wanted[slot]

    @contextmanager
    def leased(self, label: str, beginning: str | None = None) -> Iterator[Held | None]:
        """:meth:`acquire` and its release in one: the slot is given back however the call ends (one left held
        would keep its game, and any that wants a slot, waiting :attr:`wait` seconds). ``None`` where no slot
        came in time."""
        lease = self.acquire(label, beginning)
        if lease is None:
            yield None
            return
        held = Held(lease)
        try:
            yield held
        finally:
            if held.kept and held.read:
                self.read(lease.slot)
            else:
                self.release(lease.slot, read=held.read)

    def _lease(self, label: str, beginning: str | None, claimed: list[int]) -> Lease | None:
        """:meth:`acquire`'s work, under the lock; the kin slots it waits to copy go into ``claimed``, held (their
        own games kept off them) until it has its lease or gives up."""
        waited = False
        while True:
            if not self._lock.wait_for(lambda: self._available(label), timeout=self.wait):
                return None
            if waited or not self._kin_reading(label, beginning):
                break
            # A new game of its world is reading its prompt from nothing (games started together): wait for it, to
            # copy its slot rather than read the same beginning again beside it. So does a game whose own reading
            # of it was cut short (its prompt read ahead, stopped for another game's turn): what it read is little.
            # The kin's own game waits for that copy (see _available): its next call, queued behind the reading,
            # would otherwise take the slot back at once, and this game would read the world from nothing after all.
            kin = self._kin_cold(label, beginning or "")
            for kin_slot in kin:
                self._copy_wanted[kin_slot] = self._copy_wanted.get(kin_slot, 0) + 1
            claimed += kin
            self._lock.wait_for(lambda: not self._kin_reading(label, beginning), timeout=self.wait)
            waited = True
        keeping = self.folder is not None and self.folder.capacity_bytes > 0
        own = file_name(label)
        slot = self._of.get(label)
        if slot is not None:  # its state is in its slot; one read only in part gives way to a kin's read whole
            donor = self._donor(beginning, slot, None) if keeping and slot in self._cold else None
            was = self._phase.get(slot)
            if was is Phase.RETURNING:  # back to write the reply whose prompt its last call read
                self._phase[slot] = Phase.WRITING_FIRST
            else:  # a reading cut short goes on
                self._phase[slot] = Phase.READING_NEW if was is Phase.CUT_SHORT else Phase.BUSY
            if donor is None:
                return Lease(slot)
            self._copying.add(donor)
            return Lease(slot, restore="copy-" + own, copy_from=donor)
        free = [s for s in range(self.slots) if s not in self._busy and s not in self._returning]
        empty = [s for s in free if s not in self._holder]
        chosen = empty[0] if empty else least_recent(free, self._used)
        before = self._holder.get(chosen)
        if before is not None:
            del self._of[before]
        self._holder[chosen], self._of[label] = label, chosen
        self._phase[chosen] = Phase.BUSY
        save = file_name(before) if before is not None and keeping else None
        if self.folder is not None and self.folder.has(own):
            return Lease(chosen, save=save, restore=own)
        donor = self._donor(beginning, chosen, before) if keeping else None
        if donor is None:  # cold, or the slot already holds a prompt that begins as this game's
            if self._alike(before, beginning or "") < COPY_MIN_CHARS:
                self._phase[chosen] = Phase.READING_NEW
            return Lease(chosen, save=save)
        self._copying.add(donor)
        return Lease(chosen, save=save, restore="copy-" + own, copy_from=donor)

    def _alike(self, holder: str | None, beginning: str) -> int:
        """How many characters the prompt of ``holder``'s game begins with alike to ``beginning``."""
        other = self._beginning.get(holder or "")
        return shared_prefix(other, beginning) if other else 0

    def _kin_reading(self, label: str, beginning: str | None) -> bool:
        """Whether the call of ``label``'s game should wait to copy a kin's slot (a game whose prompt begins as
        its own): its game is new to the slots (or its slot's reading was cut short, so holds little), there is
        disk to copy through, a kin is reading its prompt from nothing, and no kin's slot is free and read."""
        if beginning is None or self.folder is None or self.folder.capacity_bytes <= 0:
            return False
        slot = self._of.get(label)
        if slot is not None and slot not in self._cold:
            return False
        if slot is None and self.folder.has(file_name(label)):
            return False
        ready = [s for s in self._holder if s != slot and s not in self._busy and s not in self._cold]
        if any(self._is_kin(s, beginning) for s in ready):
            return False
        return bool(self._kin_cold(label, beginning))

    def _kin_cold(self, label: str, beginning: str) -> list[int]:
        """The slots where a call of ``label``'s kin is reading their prompt from nothing now, or writing the
        first reply to a prompt so read in a call of its own."""
        own = self._of.get(label)
        return [s for s in self._cold | self._writing if s != own and s in self._busy and self._is_kin(s, beginning)]

    def _is_kin(self, slot: int, beginning: str) -> bool:
        """Whether the game in ``slot`` has a prompt that begins as ``beginning`` (the same world)."""
        return self._alike(self._holder.get(slot), beginning) >= COPY_MIN_CHARS

    def _donor(self, beginning: str | None, chosen: int, before: str | None) -> int | None:
        """The free slot whose game's prompt begins most like ``beginning`` (at least :data:`COPY_MIN_CHARS`
        alike), unless the chosen slot's own game, ``before``, begins as much alike: its state stays and serves.
        A slot whose reading from nothing was cut short holds too little to copy."""
        if beginning is None:
            return None
        kept = [
            (slot, self._beginning.get(holder, "")) for slot, holder in self._holder.items()
            if slot != chosen and slot not in self._busy and slot not in self._cold
        ]  # fmt: skip
        found = nearest_kin(kept, beginning, COPY_MIN_CHARS, used=self._used, beats=self._alike(before, beginning))
        return None if found is None else found[0]

    def reads_new(self, slot: int) -> bool:
        """Whether a call leased ``slot`` reads a new game's prompt from nothing there, which a game of its world
        could then copy (there is disk to copy through): it reads it in a call of its own, then :meth:`read`."""
        with self._lock:
            return slot in self._cold and self.folder is not None and self.folder.capacity_bytes > 0

    def read(self, slot: int) -> None:
        """The call in ``slot`` has read its new game's prompt whole and ended; the game's next call, which
        writes the reply, asks for the slot at once. Meanwhile a game of its world that waits to copy it does
        (its reading is not held up for the reply's writing as well), and no other game's call takes it."""
        with self._lock:
            self._phase[slot] = Phase.RETURNING
            self._used[slot] = time.monotonic()
            self._lock.notify_all()

    def release_copied(self, slot: int) -> None:
        """A slot copied for another game is free again (its game's last use unchanged)."""
        with self._lock:
            self._copying.discard(slot)
            self._lock.notify_all()

    def _available(self, label: str) -> bool:
        slot = self._of.get(label)
        if slot is not None:
            return slot not in self._busy and slot not in self._copy_wanted
        return len(self._busy | self._returning) < self.slots

    def release(self, slot: int, *, read: bool = True) -> None:
        """The call in ``slot`` has ended; ``read``: its prompt was read whole (a call cut short, or failed, before
        its first token leaves a new game's slot cold: its next call goes on reading the world, and a new game of
        its world waits for that, as for the first)."""
        with self._lock:
            if not read and self._phase.get(slot) in COLD:
                self._phase[slot] = Phase.CUT_SHORT
            else:
                self._phase.pop(slot, None)
            self._used[slot] = time.monotonic()
            self._lock.notify_all()

    def emptied(self) -> None:
        """The server was started again: no slot holds any game's state now (the calls in flight failed with it);
        each game's next call restores its file, or reads its prompt from nothing."""
        with self._lock:
            self._holder.clear()
            self._of.clear()
            # A call still running there holds nothing of a game the slot was reading or kept for.
            self._phase = {slot: Phase.BUSY for slot, phase in self._phase.items() if phase in RUNNING}
            self._copy_wanted.clear()
            self._lock.notify_all()

    def forget(self, label: str) -> int | None:
        """The game ended: its slot is free, and its file goes; the slot it held, if any."""
        with self._lock:
            slot = self._of.pop(label, None)
            self._beginning.pop(label, None)
            if slot is not None:
                self._holder.pop(slot, None)
                self._unkeep(slot)
            self._lock.notify_all()
        if self.folder is not None:
            self.folder.drop(file_name(label))
        return slot


class SlotStates:
    """The slot map acted out on llama.cpp's server: one call of a game leases its slot, the slot's holder's state
    is saved and the game's own restored (or, for a game new to the slots, its kin's copied) through the server's
    slot routes, and the slot is given back however the call ends."""

    def __init__(self, slots: SlotMap, client: ServerClient):
        self.slots = slots
        self.client = client

    @contextmanager
    def leased(self, label: str, beginning: str | None) -> Iterator[Held | None]:
        """The game's slot for one call, ready: its state in it (see :meth:`SlotMap.leased`)."""
        with self.slots.leased(label, beginning) as held:
            if held is not None:
                self._ready(held.lease)
            yield held

    def _ready(self, lease: Lease) -> None:
        """Save the slot's holder's state, then restore the game's own (or copy its kin's) into the slot."""
        slots, folder = self.slots, self.slots.folder
        if lease.save is not None and self.client.slot_action(lease.slot, "save", lease.save):
            slots.counted("saves")
            if folder is not None:
                folder.trim()
        if lease.copy_from is not None and lease.restore is not None:  # a copy: its file is the slot folder's
            try:
                saved = self.client.slot_action(lease.copy_from, "save", lease.restore)
            finally:
                slots.release_copied(lease.copy_from)
            if saved and self.client.slot_action(lease.slot, "restore", lease.restore):
                slots.counted("copies")
            if folder is not None:
                folder.drop(lease.restore)
        elif lease.restore is not None:
            if self.client.slot_action(lease.slot, "restore", lease.restore):
                slots.counted("restores")
            elif folder is not None:
                slots.counted("failed")
                folder.drop(lease.restore)
