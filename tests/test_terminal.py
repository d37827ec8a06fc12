"""Hidden information at a terminal table: each private line is marked for the one player it is for."""

from __future__ import annotations

import io
import shutil

import pytest

from bot.engine import Engine
from bot.model import ScriptedModel
from bot.terminal import TerminalGame, channel_key
from tests.cogs.test_hidden import remembering
from tests.conftest import MANOR_CONTEXT, PROJECT

MAYA_CLUE = "Under the brandy the glass smells sharp and bitter, like medicine; the decanter smells only of brandy."
TOM_CLUE = "At his elbow you see Dr. Pike slip a small brown glass bottle off the desk and into his waistcoat."
WHISPER = "I pocket the cufflink I found."
WHISPER_ANSWER = "Nobody sees the heron cufflink vanish into your coat."
# The GM's second draft, once the guard stopped its first.
PANELS = (
    "The panels are solid oak, and cold; your knuckles knock dull on every one, and dust sifts down from the cornice."
)
# A distinctive part of each private message, and the one player who may see it.
SECRETS = {
    "sharp and bitter": "Maya",
    "small brown glass bottle": "Tom",
    "pocket the cufflink": "Tom",
    "heron cufflink vanish": "Tom",
}


class Table:
    """A terminal game driven line by line, with the upkeep after each line done before the next."""

    def __init__(self, engine: Engine, scripted: ScriptedModel, terminal: TerminalGame, out: io.StringIO):
        self.engine, self.scripted, self.terminal, self.out = engine, scripted, terminal, out

    async def line(self, text: str, *replies: str) -> str:
        """What the terminal printed for ``text``; ``replies`` are the GM's answers to it."""
        self.scripted.enqueue(*replies)
        start = len(self.out.getvalue())
        assert await self.terminal.handle(text)
        await self.engine.memory.idle(self.terminal.game.id)
        return self.out.getvalue()[start:]


@pytest.fixture
async def manor(engine: Engine, scripted: ScriptedModel, worlds_dir) -> Table:
    shutil.copy(PROJECT / "worlds" / "hollow-manor.yaml", worlds_dir)
    engine.worlds.reload()
    engine.config = MANOR_CONTEXT  # the manor's front alone nearly fills 2,048 tokens
    scripted.default = remembering
    world = engine.worlds.get("hollow-manor")
    started = await engine.start_game(channel_key(world), world.id)
    out = io.StringIO()
    terminal = TerminalGame(engine, started.game, world, out)
    await terminal.show_entries([started.opening])
    await engine.memory.idle(started.game.id)
    return Table(engine, scripted, terminal, out)


def tidy(text: str) -> list[str]:
    """The printed lines with their spacing evened out."""
    return [" ".join(line.split()) for line in text.splitlines()]


def only_for(text: str, name: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith(f"  (only {name} sees) ") for line in lines)


async def test_two_players_through_the_hidden_clues_of_chapter_one(manor: Table):
    sniffed = await manor.line(
        "Maya: I sniff the brandy glass.",
        f"Maya lifts the glass and breathes in, frowning. [[to Maya: {MAYA_CLUE}]] Who moves next?",
    )
    assert "GM: Maya lifts the glass and breathes in, frowning. Who moves next?" in tidy(sniffed)
    assert f"  (only Maya sees) GM: {MAYA_CLUE}" in sniffed.splitlines()

    examined = await manor.line(
        "Tom: I stand beside Dr. Pike as he examines the body.",
        f"The doctor kneels by the chair and calls it heart failure. [[to Tom: {TOM_CLUE}]] What do you do?",
    )
    assert "GM: The doctor kneels by the chair and calls it heart failure. What do you do?" in tidy(examined)
    assert f"  (only Tom sees) GM: {TOM_CLUE}" in examined.splitlines()

    whispered = await manor.line(f"Tom: /whisper {WHISPER}", WHISPER_ANSWER)
    assert only_for(whispered, "Tom")
    assert whispered.splitlines()[:2] == [
        f"  (only Tom sees) Tom, secretly: {WHISPER}",
        f"  (only Tom sees) GM: {WHISPER_ANSWER}",
    ]

    mayas = await manor.line("Maya: /my-memory")
    assert only_for(mayas, "Maya") and "What Maya knows: " in mayas
    assert "sharp and bitter" in mayas
    assert "small brown glass bottle" not in mayas and "pocket the cufflink" not in mayas
    toms = await manor.line("Tom: /my-memory")
    assert only_for(toms, "Tom") and "What Tom knows: " in toms
    assert "small brown glass bottle" in toms and "pocket the cufflink" in toms
    assert "sharp and bitter" not in toms

    folded = await manor.line("/compact")
    assert "Folded " in folded
    await manor.line("Tom: I follow Maya back down the stair.")  # a turn after it: the front as folded
    status = await manor.line("/memory-status")
    assert "Most recently (turns 0-" in status and "Maya lifts the glass and breathes in" in status
    recall = await manor.line("/recall")
    assert recall.startswith("The GM was given ")
    assert "truth:" not in recall and "hint:" not in recall and "secrets" not in recall, (
        "the GM-only layers are spoilers on a shared screen"
    )
    spoilers = await manor.line("/recall gm")
    # The GM-only layer of hints; no player's private memory, which a narrator answering Tom has no use for (F39).
    assert "hint:ashby-poisoned-silas" in spoilers and "private:" not in spoilers

    # The whole screen: a private message shows only on lines marked for its player.
    screen = manor.out.getvalue().splitlines()
    for secret, owner in SECRETS.items():
        showing = [line for line in screen if secret in line]
        assert showing, secret
        assert all(line.startswith(f"  (only {owner} sees) ") for line in showing), (secret, showing)

    game_id = manor.terminal.game.id
    _, maya = await manor.engine.private_memory(game_id, "maya")
    _, tom = await manor.engine.private_memory(game_id, "tom")
    assert "sharp and bitter" in " ".join(maya.facts) and "sharp and bitter" not in " ".join(tom.facts)
    assert "small brown glass bottle" in " ".join(tom.facts) and "brown glass" not in " ".join(maya.facts)


async def test_a_reply_with_an_aside_inside_is_printed_once(manor: Table):
    """Nothing leaked, so the reply as streamed is the one that stands: no "GM (again)" repeat."""
    shown = await manor.line(
        "Maya: I sniff the brandy glass.",
        "Maya lifts the glass to the lamplight and breathes in slowly, her face unreadable. "
        f"[[to Maya: {MAYA_CLUE}]] Who moves next?",
    )
    assert await manor.engine.store.leak_hits(manor.terminal.game.id) == []
    assert [line for line in tidy(shown) if line.startswith("GM")] == [
        "GM: Maya lifts the glass to the lamplight and breathes in slowly, her face unreadable. Who moves next?"
    ]


async def test_every_line_of_a_long_private_answer_is_marked(manor: Table):
    await manor.line("Tom: I look around the hall.", "The clocks tick.")
    answer = "Nobody sees you.\n\nThe key is cold in your palm.\nMrs. Crane turns away."
    whispered = await manor.line(f"Tom: /whisper {WHISPER}", answer)
    assert only_for(whispered, "Tom")
    assert "  (only Tom sees) The key is cold in your palm." in whispered.splitlines()


async def test_the_resume_recap_marks_every_private_line_as_the_live_game_did(manor: Table):
    rain = "Rain taps at the window as Maya bends over the glass, and the fire settles low in the grate."
    await manor.line("Maya: I sniff the brandy glass.", f"{rain} [[to Maya: {MAYA_CLUE}]]")
    await manor.line(f"Tom: /whisper {WHISPER}", WHISPER_ANSWER)
    await manor.line("Tom: /roll secret 1d20")
    recap = io.StringIO()
    resumed = TerminalGame(manor.engine, manor.terminal.game, manor.terminal.world, recap)
    await resumed.show_entries(await manor.engine.history(manor.terminal.game.id, 20))
    screen = recap.getvalue().splitlines()
    for secret, owner in {**SECRETS, "rolls 1d20": "Tom"}.items():
        showing = [line for line in screen if secret in line]
        if secret in ("small brown glass bottle",):
            continue  # not played in this test
        assert showing, secret
        assert all(line.startswith(f"  (only {owner} sees) ") for line in showing), (secret, showing)
    assert f"GM: {rain}" in tidy(recap.getvalue())


async def test_edit_and_delete_of_a_whisper_do_not_repeat_it_in_public(manor: Table):
    await manor.line(f"Tom: /whisper {WHISPER}", WHISPER_ANSWER)
    edited = await manor.line("Tom: /edit I pocket the silver cufflink.")
    assert only_for(edited, "Tom") and "silver cufflink" in edited
    deleted = await manor.line("Tom: /delete")
    assert only_for(deleted, "Tom") and "silver cufflink" in deleted


async def test_a_reply_the_guard_stopped_shows_as_a_notice_and_what_it_caught_stays_in_the_log(manor: Table, caplog):
    caplog.set_level("WARNING")
    shown = await manor.line(
        "Maya: I tap the wall panels.",
        "The panel swings open on the hidden stair behind the library.",
        PANELS,
    )
    lines = tidy(shown)
    assert "(The GM rewrote its reply: the first draft gave away something secret.)" in lines
    assert f"GM: {PANELS}" in lines
    assert "hidden stair" not in shown, "nothing the guard caught reaches the shared screen"
    assert any("hidden stair" in record.getMessage() for record in caplog.records), "it is in the log"
