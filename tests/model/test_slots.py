"""Which llama.cpp server slot holds which game: each game keeps its own, and more games than slots take turns
through files on disk."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from bot.model.slots import Lease, SlotFolder, SlotMap, SlotStates, file_name


def _folder(tmp_path: Path, capacity: int = 10**9) -> SlotFolder:
    return SlotFolder(tmp_path / "slots", "model-a", capacity)


def _waiting(slots: SlotMap, label: str, beginning: str) -> tuple[threading.Thread, list[Lease | None]]:
    """A call of ``label``'s game asking for its slot in a thread; once it has one, it is in the list. It is
    given a moment to take one, and the caller then asserts that it has or has not."""
    got: list[Lease | None] = []
    thread = threading.Thread(target=lambda: got.append(slots.acquire(label, beginning)))
    thread.start()
    time.sleep(0.2)
    return thread, got


def test_each_game_keeps_its_own_slot_call_after_call(tmp_path: Path):
    slots = SlotMap(2, _folder(tmp_path))
    first = slots.acquire("game:1")
    slots.release(first.slot)
    second = slots.acquire("game:2")
    slots.release(second.slot)
    assert first.slot != second.slot
    for _ in range(3):
        again = slots.acquire("game:1")
        assert again == Lease(first.slot)  # nothing to save or restore: the slot still holds its game
        slots.release(again.slot)


def test_a_game_beyond_the_slots_takes_the_least_recently_used_one_saving_its_holder(tmp_path: Path):
    folder = _folder(tmp_path)
    slots = SlotMap(2, folder)
    for label in ("game:1", "game:2", "game:1"):
        slots.release(slots.acquire(label).slot)
    third = slots.acquire("game:3")  # game 2 played least recently
    assert third.save == file_name("game:2") and third.restore is None
    (folder.folder / third.save).write_bytes(b"state of game 2")  # what the server would write
    slots.release(third.slot)
    back = slots.acquire("game:2")  # game 1 is now the least recently used
    assert back.save == file_name("game:1")
    assert back.restore == file_name("game:2")


MANOR = "You are the GM of Hollow Manor. The house is old and every clock in it has stopped. " * 30
ROAD = "You are the GM of the Ember Road. The ash glows at night and the caravan moves by day. " * 30


def test_a_game_new_to_the_slots_starts_from_a_copy_of_a_game_of_its_world(tmp_path: Path):
    """The world's frozen layer is read once, not once per game: a new game's slot is copied from a free slot
    whose game's prompt begins as its own (its players differ), that slot held while it is saved."""
    slots = SlotMap(3, _folder(tmp_path), wait=0.2)
    manor = slots.acquire("game:1", MANOR + "Players: Maya (a doctor).")
    slots.release(manor.slot)
    road = slots.acquire("game:2", ROAD + "Players: Rook.")
    slots.release(road.slot)
    new = slots.acquire("game:3", MANOR + "Players: Tom.")
    assert new.copy_from == manor.slot and new.restore == "copy-" + file_name("game:3") and new.save is None
    assert new.slot not in (manor.slot, road.slot)
    assert slots.acquire("game:1", MANOR) is None, "the copied slot is held until it is saved"
    slots.release_copied(manor.slot)
    slots.release(new.slot)
    assert slots.acquire("game:1", MANOR) == Lease(manor.slot), "then its game has it again, as it was"


def test_a_game_of_another_world_or_whose_slot_already_begins_as_its_own_is_not_copied(tmp_path: Path):
    slots = SlotMap(2, _folder(tmp_path))
    for label, beginning in (("game:1", MANOR), ("game:2", ROAD)):
        slots.release(slots.acquire(label, beginning).slot)
    third = slots.acquire("game:3", "You are the GM of a world of its own." * 100)  # no game of its world: cold
    assert third.copy_from is None and third.restore is None and third.save == file_name("game:1")
    slots.release(third.slot)
    fourth = slots.acquire("game:4", ROAD + "Players: Sable.")  # game 2's slot, which begins as its prompt does
    assert fourth.slot == 1 and fourth.copy_from is None and fourth.restore is None
    slots.release(fourth.slot)
    short = SlotMap(2, _folder(tmp_path / "short"))
    short.release(short.acquire("game:1", MANOR[:500] + "Maya").slot)
    assert short.acquire("game:2", MANOR[:500] + "Tom").copy_from is None, "too little alike to be worth a copy"
    unkept = SlotMap(2, _folder(tmp_path / "unkept", capacity=0))
    unkept.release(unkept.acquire("game:1", MANOR).slot)
    assert unkept.acquire("game:2", MANOR).copy_from is None, "no disk for states: nothing to copy through"


def test_a_call_waits_for_its_games_busy_slot_rather_than_read_its_prompt_elsewhere(tmp_path: Path):
    slots = SlotMap(2, _folder(tmp_path), wait=5)
    ahead = slots.acquire("game:1")  # its prompt read ahead
    other = slots.acquire("game:2")
    got: list[Lease | None] = []
    turn = threading.Thread(target=lambda: got.append(slots.acquire("game:1")))
    turn.start()
    time.sleep(0.2)
    assert not got  # its turn waits for the read-ahead, in its own slot
    slots.release(ahead.slot)
    turn.join(5)
    assert got == [Lease(ahead.slot)]
    slots.release(other.slot)


def test_with_every_slot_busy_a_call_waits_then_lets_the_server_pick(tmp_path: Path):
    slots = SlotMap(1, _folder(tmp_path), wait=0.2)
    held = slots.acquire("game:1")
    assert slots.acquire("game:1") is None  # waited its time: the server picks any free slot
    assert slots.acquire("game:2") is None
    slots.release(held.slot)
    assert slots.acquire("game:2").save == file_name("game:1")


def test_a_game_that_ends_frees_its_slot_and_its_file(tmp_path: Path):
    folder = _folder(tmp_path)
    slots = SlotMap(1, folder)
    slots.release(slots.acquire("game:1").slot)
    (folder.folder / file_name("game:1")).write_bytes(b"x")
    assert slots.forget("game:1") == 0
    assert not folder.has(file_name("game:1"))
    assert slots.acquire("game:2") == Lease(0)  # nothing of game 1 to save


def test_without_disk_for_states_nothing_is_saved(tmp_path: Path):
    slots = SlotMap(1, _folder(tmp_path, capacity=0))
    slots.release(slots.acquire("game:1").slot)
    assert slots.acquire("game:2").save is None


def test_the_folder_keeps_its_budget_and_drops_other_models_files(tmp_path: Path):
    """Another model's folder the bot made goes; a folder it did not make (an admin's) stays, whatever it holds."""
    other = SlotFolder(tmp_path / "slots", "model-b", 250)
    (other.folder / "game-1.bin").write_bytes(b"another model's state")
    other.close()
    admins = tmp_path / "slots" / "backup"
    admins.mkdir()
    (admins / "game-1.bin").write_bytes(b"an admin's copy")
    folder = SlotFolder(tmp_path / "slots", "model-a", 250)
    assert not other.folder.exists()
    assert (admins / "game-1.bin").read_bytes() == b"an admin's copy"
    for n in range(4):
        path = folder.folder / f"game-{n}.bin"
        path.write_bytes(b"s" * 100)
        os.utime(path, (n, n))
    folder.trim()
    assert sorted(p.name for p in folder.folder.glob("*.bin")) == ["game-2.bin", "game-3.bin"]


def test_a_slot_file_name_is_a_plain_file_name():
    assert file_name("game:12") == "game-12.bin"
    assert "/" not in file_name("../../etc/passwd")


def test_a_new_game_waits_for_a_new_game_of_its_world_reading_its_prompt_to_copy_its_slot(tmp_path: Path):
    """Games started together: the second game of a world waits for the first one's slot, busy reading the
    world from nothing, and copies it, rather than read the same beginning beside it. A slot busy with a game's
    later call (its state already there) is not waited for: the new game reads cold."""
    slots = SlotMap(3, _folder(tmp_path), wait=5)
    reading = slots.acquire("game:1", MANOR + "Players: Maya.")
    second, got = _waiting(slots, "game:2", MANOR + "Players: Tom.")
    assert not got, "it waits for the slot of its world's new game"
    slots.release(reading.slot)
    second.join(5)
    assert got[0].copy_from == reading.slot
    slots.release_copied(reading.slot)
    slots.release(got[0].slot)
    later = slots.acquire("game:1", MANOR + "Players: Maya.")  # game 1's next turn: its state is in its slot
    started = time.monotonic()
    cold = slots.acquire("game:3", MANOR + "Players: Ines.")
    assert time.monotonic() - started < 1, "no wait behind a later call"
    assert cold.copy_from == got[0].slot, "it copies the other free slot of its world"
    slots.release(later.slot)


def test_a_new_game_waiting_to_copy_its_world_copies_before_that_game_takes_its_slot_again(tmp_path: Path):
    """Games started together, the first one's prompt read ahead: when that reading ends, the game's own turn,
    queued behind it, takes the slot again at once. The new game of its world, which waited for the reading to
    copy it, copies it first (a save: a moment) rather than find it busy and read the world from nothing."""
    slots = SlotMap(3, _folder(tmp_path), wait=5)
    reading = slots.acquire("game:1", MANOR + "Players: Maya.")  # game 1's prompt read ahead, from nothing
    own: list[Lease | None] = []
    kin: list[Lease | None] = []
    turn = threading.Thread(target=lambda: own.append(slots.acquire("game:1", MANOR + "Players: Maya.")))
    turn.start()
    copier = threading.Thread(target=lambda: kin.append(slots.acquire("game:2", MANOR + "Players: Tom.")))
    copier.start()
    time.sleep(0.2)
    assert not own and not kin
    slots.release(reading.slot)
    copier.join(5)
    assert kin and kin[0] is not None and kin[0].copy_from == reading.slot
    time.sleep(0.2)
    assert not own, "game 1's turn waits while its slot is saved for the copy"
    slots.release_copied(reading.slot)
    turn.join(5)
    assert own == [Lease(reading.slot)]
    slots.release(own[0].slot)
    slots.release(kin[0].slot)


def test_a_new_game_that_gave_up_waiting_to_copy_holds_nothing_back(tmp_path: Path):
    """A reading that outlasts the wait: the new game stops waiting, and the slot's own game, once its reading
    ends, takes its slot again at once."""
    slots = SlotMap(3, _folder(tmp_path), wait=0.2)
    reading = slots.acquire("game:1", MANOR + "Players: Maya.")
    waited = slots.acquire("game:2", MANOR + "Players: Tom.")  # gives up waiting after 0.2 s and reads cold
    assert waited is not None and waited.copy_from is None and waited.slot != reading.slot
    slots.release(reading.slot)
    started = time.monotonic()
    assert slots.acquire("game:1", MANOR + "Players: Maya.") == Lease(reading.slot)
    assert time.monotonic() - started < 0.1, "nothing left waiting on game 1's slot"


def test_a_new_games_reading_cut_short_leaves_its_slot_cold_and_its_kin_waits_for_the_reading_to_end(tmp_path: Path):
    """Four tables started together through llama.cpp's server on two cores: game 3's prompt read ahead was cut
    after 0.3 s for the first player's turn, its slot counted as read, and game 1 of its world, finding it busy
    with game 3's turn, read the world from nothing beside it (2,367 and 2,364 tokens at once, 70 s each).
    The cut reading leaves the slot cold: the kin waits for the turn that reads the rest, and copies it."""
    slots = SlotMap(3, _folder(tmp_path), wait=5)
    ahead = slots.acquire("game:3", MANOR + "Players: Ines.")
    slots.release(ahead.slot, read=False)  # cut short for another game's turn
    turn = slots.acquire("game:3", MANOR + "Players: Ines.")  # its own turn goes on reading in its slot
    assert turn == Lease(ahead.slot)
    kin, got = _waiting(slots, "game:1", MANOR + "Players: Maya.")
    assert not got, "it waits for the reading of its world"
    slots.release(turn.slot)  # read whole this time
    kin.join(5)
    assert got[0] is not None and got[0].copy_from == turn.slot
    slots.release_copied(turn.slot)
    slots.release(got[0].slot)


def test_a_game_whose_reading_was_cut_short_copies_the_world_a_kin_read_meanwhile(tmp_path: Path):
    """The other order: game 3's reading cut short, game 1 of its world comes first. The few tokens in game 3's
    slot are not worth a copy: game 1 reads the world; game 3's turn, coming meanwhile, waits for that reading
    and copies it into its own slot, rather than read the world beside it."""
    slots = SlotMap(3, _folder(tmp_path), wait=5)
    ahead = slots.acquire("game:3", MANOR + "Players: Ines.")
    slots.release(ahead.slot, read=False)
    reading = slots.acquire("game:1", MANOR + "Players: Maya.")
    assert reading.copy_from is None and reading.slot != ahead.slot
    turn, got = _waiting(slots, "game:3", MANOR + "Players: Ines.")
    assert not got, "game 3 waits for its world's reading"
    slots.release(reading.slot)
    turn.join(5)
    assert got == [Lease(ahead.slot, restore="copy-" + file_name("game:3"), copy_from=reading.slot)]
    slots.release_copied(reading.slot)
    slots.release(ahead.slot)
    started = time.monotonic()
    assert slots.acquire("game:3", MANOR + "Players: Ines.") == Lease(ahead.slot), "read whole: its own again"
    assert time.monotonic() - started < 0.1


def test_a_new_games_prompt_read_in_a_call_of_its_own_is_copied_before_its_reply_is_written(tmp_path: Path):
    """Four tables started together through the server on two cores: the second game of a world waited for its
    kin's whole first call, reading and reply (11 s more). The kin's prompt is read in a call of its own: the
    copy is made between it and the reply's call, and no other game takes the slot meanwhile."""
    slots = SlotMap(2, _folder(tmp_path), wait=5)
    reading = slots.acquire("game:1", MANOR + "Players: Maya.")
    assert slots.reads_new(reading.slot)
    copier, got = _waiting(slots, "game:2", MANOR + "Players: Tom.")
    assert not got, "it waits for the reading"
    slots.read(reading.slot)  # the prompt read; game 1's reply comes next
    copier.join(5)
    assert got[0] is not None and got[0].copy_from == reading.slot
    reply, own = _waiting(slots, "game:1", MANOR + "Players: Maya.")
    assert not own, "the reply waits while the slot is saved for the copy"
    slots.release_copied(reading.slot)
    reply.join(5)
    assert own == [Lease(reading.slot)] and not slots.reads_new(reading.slot)
    slots.release(got[0].slot)
    slots.release(own[0].slot)


def test_between_a_new_games_reading_and_its_reply_the_slot_is_kept_for_it(tmp_path: Path):
    """No other game's call takes the slot between the two calls; a kin that comes while the reply is written
    waits for it to end and copies the slot, as it would wait for a reading."""
    slots = SlotMap(2, _folder(tmp_path), wait=5)
    other = slots.acquire("game:9", ROAD + "Players: Ada.")
    reading = slots.acquire("game:1", MANOR + "Players: Maya.")
    slots.read(reading.slot)
    elsewhere, got = _waiting(slots, "game:3", ROAD + "Players: Lin.")
    assert not got, "the only slot not busy is kept for game 1's reply"
    reply = slots.acquire("game:1", MANOR + "Players: Maya.")
    assert reply == Lease(reading.slot)
    kin, copied = _waiting(slots, "game:2", MANOR + "Players: Tom.")
    slots.release(other.slot)
    elsewhere.join(5)
    assert got and got[0] is not None and got[0].slot == other.slot
    assert not copied, "game 2 waits for game 1's reply, to copy its slot"
    slots.release(got[0].slot)
    slots.release(reply.slot)
    kin.join(5)
    assert copied and copied[0] is not None and copied[0].copy_from == reading.slot


def test_without_disk_to_copy_through_a_new_game_reads_and_writes_in_one_call(tmp_path: Path):
    slots = SlotMap(2, _folder(tmp_path, capacity=0))
    lease = slots.acquire("game:1", MANOR + "Players: Maya.")
    assert not slots.reads_new(lease.slot)


def test_a_lowered_budget_is_kept_from_the_start(tmp_path: Path):
    folder = SlotFolder(tmp_path / "slots", "model-a", 10**6)
    for n in range(4):
        path = folder.folder / f"game-{n}.bin"
        path.write_bytes(b"s" * 100)
        os.utime(path, (n, n))
    folder.close()
    smaller = SlotFolder(tmp_path / "slots", "model-a", 250)
    assert sorted(p.name for p in smaller.folder.glob("*.bin")) == ["game-2.bin", "game-3.bin"]


def test_a_leased_slot_is_given_back_however_its_call_ends(tmp_path: Path):
    """The lease as one block: a call that fails gives its slot back unread (a new game's slot stays cold), one
    that read its prompt gives it back read, and a new game's reading kept for its reply keeps the slot for it."""
    slots = SlotMap(1, _folder(tmp_path), wait=0.2)
    try:
        with slots.leased("game:1", MANOR + "Players: Maya.") as held:
            assert held is not None and slots.reads_new(held.lease.slot)
            raise RuntimeError("the server went down")
    except RuntimeError:
        pass
    with slots.leased("game:1", MANOR + "Players: Maya.") as held:
        assert held is not None and slots.reads_new(held.lease.slot), "still cold: nothing was read"
        held.read = held.kept = True
    with slots.leased("game:2") as other:
        assert other is None, "the slot is kept for game 1's reply"
    with slots.leased("game:1", MANOR + "Players: Maya.") as held:
        assert held is not None and not slots.reads_new(held.lease.slot)
        held.read = True
    with slots.leased("game:2") as other:
        assert other is not None and other.lease.save == file_name("game:1"), "given back: game 2 has it"


class _Client:
    """A server's slot routes, recorded: ``fails`` names the file names whose restore fails."""

    def __init__(self, folder: SlotFolder, fails: tuple[str, ...] = ()):
        self.folder, self.fails = folder, fails
        self.actions: list[tuple[int, str, str]] = []

    def slot_action(self, slot: int, action: str, filename: str) -> bool:
        self.actions.append((slot, action, filename))
        if action == "save":
            (self.folder.folder / filename).write_bytes(b"state")
        return filename not in self.fails


def test_slot_states_save_the_holder_and_restore_the_game_through_the_server_and_count_each(tmp_path: Path):
    folder = _folder(tmp_path)
    slots = SlotMap(1, folder)
    client = _Client(folder)
    states = SlotStates(slots, client)  # type: ignore[arg-type]
    with states.leased("game:1", "one") as held:
        assert held is not None and held.lease == Lease(0)
        held.read = True
    with states.leased("game:2", "two") as held:
        held.read = True
    with states.leased("game:1", "one") as held:
        held.read = True
    assert client.actions == [
        (0, "save", file_name("game:1")),
        (0, "save", file_name("game:2")),
        (0, "restore", file_name("game:1")),
    ]
    assert (slots.saves, slots.restores, slots.failed) == (2, 1, 0)
    assert not slots._busy, "every slot given back"


def test_a_restore_the_server_refuses_drops_the_file_and_the_game_reads_its_prompt_cold(tmp_path: Path):
    folder = _folder(tmp_path)
    slots = SlotMap(1, folder)
    states = SlotStates(slots, _Client(folder, fails=(file_name("game:1"),)))  # type: ignore[arg-type]
    for label in ("game:1", "game:2", "game:1"):
        with states.leased(label, label) as held:
            held.read = True
    assert slots.failed == 1 and not folder.has(file_name("game:1"))


def test_a_slot_is_given_back_when_its_call_fails(tmp_path: Path):
    slots = SlotMap(1, _folder(tmp_path), wait=0.5)
    states = SlotStates(slots, _Client(slots.folder))  # type: ignore[arg-type]
    try:
        with states.leased("game:1", "one"):
            raise RuntimeError("the server broke off")
    except RuntimeError:
        pass
    with states.leased("game:2", "two") as held:
        assert held is not None, "the slot was free again, at once"


def test_a_slot_goes_through_named_phases_from_a_new_games_reading_to_its_first_reply(tmp_path: Path):
    """A new game's prompt read from nothing in a call of its own (``reading new``), kept for the reply's call
    (``returning``), which writes there (``writing first``); a reading cut short is ``cut short`` and goes on at
    the next call; the server started again leaves only the calls running, ``busy``."""
    from bot.model.slots import Phase

    slots = SlotMap(2, _folder(tmp_path))
    lease = slots.acquire("game:1", MANOR)
    assert slots.phase(lease.slot) is Phase.READING_NEW and slots.reads_new(lease.slot)
    slots.release(lease.slot, read=False)
    assert slots.phase(lease.slot) is Phase.CUT_SHORT, "stopped before its prompt was read whole"
    assert slots.acquire("game:1", MANOR) == Lease(lease.slot)
    assert slots.phase(lease.slot) is Phase.READING_NEW, "its next call goes on reading"
    slots.read(lease.slot)
    assert slots.phase(lease.slot) is Phase.RETURNING
    assert slots.acquire("game:1", MANOR) == Lease(lease.slot)
    assert slots.phase(lease.slot) is Phase.WRITING_FIRST
    slots.release(lease.slot)
    assert slots.phase(lease.slot) is None, "idle, its state whole"

    other = slots.acquire("game:2", ROAD)
    assert slots.phase(other.slot) is Phase.READING_NEW
    slots.emptied()
    assert slots.phase(other.slot) is Phase.BUSY, "its call still runs, on a slot that holds no game now"
    slots.release(other.slot)
    assert not slots._busy and slots.phase(other.slot) is None
