"""Terminal play: the same engine, driven by lines of standard input.

``Name: action`` acts as that character (a new name joins); a line without
a name acts as whoever spoke last. A bare name at the ``Name>`` prompt (or
a seated character's name at any prompt) makes that character the one
acting, seating it if new. ``/roll EXPR``, ``/players``, ``/help`` and
``/quit`` are commands. It reads line by line, so a pipe can drive it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bot import reports
from bot.engine import Engine
from bot.errors import UserError
from bot.store import EntryKind, Game, LogEntry, Player, Visibility
from bot.worlds import World

log = logging.getLogger(__name__)

# "Maya: I open the door". A known name matches in any case; a new name is
# one word, or capitalised words, so "I say: hello" is not taken for a name.
# A name longer than a character's may be is read as one, for joining to say so.
_NAMED = re.compile(r"^\s*([^\W\d_][\w' -]{0,79}?)\s*:\s*(.*)$")
_NEW_NAME = re.compile(r"^(?:[^\W\d_][\w'-]*|[A-Z][\w'-]*(?: [A-Z][\w'-]*){1,3})$")

HELP = """\
Type your character's name to join (Maya), then what your character does:
  I light the lantern and look around.
Players sharing the keyboard start a line with the name: Maya: I light the lantern.
Typing a seated character's name alone switches to that character.
Commands:
  /roll EXPR       roll dice (1d20+5, 4d6kh3, 1d20 adv); Maya: /roll 1d20 rolls for Maya;
                   /roll secret 1d20 is seen by the roller and the GM only
  Maya: /whisper TEXT   act in secret: only Maya and the GM know, and the answer is Maya's alone
  Maya: /my-memory      what Maya's character knows: her private memory, built from what she witnessed
  /edit TEXT       change your last action      /delete   take back your last action
  /retry           answer an action left unanswered, or write the last reply again
  /memory-status   what the GM remembers        /recall   what the GM was given last turn
                                                /recall gm   with its GM-only layers (spoilers)
  /compact         summarize old turns now      /chapter next   finish the chapter now
  /pin TEXT        keep a fact in every prompt  /unpin N   /pins
  /lore            the world book; /lore add KEY, KEY: TEXT; /lore remove ID;
                   /lore import FILE.json (a SillyTavern World Info export)
  /facts           what the GM has recorded     /glossary  names the GM coined
  /bucket NAME on|off   switch pins, lore, glossary, facts or recall out of the prompt
  /players         who is playing               /help     this text
  /quit            save and leave (resume with --resume)"""

RECAP_ENTRIES = 12
# Commands a character gives (they act on that player's own lines).
PLAYER_COMMANDS = ("/roll", "/edit", "/delete", "/whisper", "/my-memory")


def channel_key(world: World) -> str:
    """Terminal games are kept per world, so ``--resume`` finds that world's last game."""
    return f"terminal:{world.id}"


@dataclass
class _Line:
    name: str | None
    text: str


def parse_line(line: str, known: set[str]) -> _Line:
    match = _NAMED.match(line)
    if match:
        name, text = match.group(1).strip(), match.group(2)
        if name.casefold() in known or _NEW_NAME.match(name):
            return _Line(name, text)
    return _Line(None, line.strip())


def bare_name(line: str, known: set[str], *, anyone: bool) -> str | None:
    """The character a line made of a name alone picks: a seated one, or (``anyone``) a new one."""
    name = line.strip()
    if name.casefold() in known or (anyone and _NEW_NAME.match(name)):  # joining says if it is too long
        return name
    return None


class TerminalGame:
    def __init__(
        self, engine: Engine, game: Game, world: World, out: TextIO = sys.stdout, *, log_file: Path | None = None
    ):
        self.engine = engine
        self.game = game
        self.world = world
        self.out = out
        self.log_file = log_file  # where details go: the screen is shared
        self.current: Player | None = None

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    async def show_entries(self, entries: list[LogEntry]) -> None:
        """Logged messages as the live game printed them: a private one only on lines marked for its player."""
        names = {p.id: p.name for p in await self.engine.players(self.game.id, include_left=True)}
        for entry in entries:
            if entry.visibility is Visibility.PRIVATE:
                for player_id in entry.visible_to:
                    self.say(_indent(names.get(player_id, "?"), _private_line(entry)))
            elif entry.kind is EntryKind.GM:
                self.say(f"GM: {entry.content}\n")
            elif entry.kind is EntryKind.ROLL:
                self.say(f"[{entry.author} rolls {entry.content}]")
            elif entry.kind is EntryKind.SYSTEM:
                self.say(f"[{entry.content}]")
            else:
                self.say(f"{entry.author}: {entry.content}")

    async def run(self, lines: AsyncIterator[str], *, interactive: bool) -> None:
        players = await self.engine.players(self.game.id)
        if players:
            self.current = players[-1]
        unanswered = await self.engine.unanswered(self.game.id)
        if unanswered and await self.engine.turn_policy(self.game.id) != "round":
            last = unanswered[-1]
            who = next((p for p in players if p.id == last.player_id), self.current)
            self._tell(who, last, "[The last action has no answer yet: /retry answers it.]")
        async for line in lines:
            if not line.strip():
                if interactive:
                    self.prompt()
                continue
            if not await self.handle(line):
                break
            if interactive:
                self.prompt()
        if self.engine.writes_failing:
            self.say(
                f"Not all of it was saved: the last {self.engine.writes_failing} write(s) failed (see above). What "
                f"was saved before is kept (game {self.game.id}): python -m bot play {self.world.id}"
            )
        else:
            self.say(f"Game saved (game {self.game.id}). Resume with: python -m bot play {self.world.id}")

    def _tell(self, player: Player | None, about: LogEntry, text: str) -> None:
        """A line about ``about``: for its player's eyes alone when the entry was private (``player`` is None
        only when no one is seated any more: then it is said plainly)."""
        if player is not None and about.visibility is Visibility.PRIVATE:
            text = _indent(player.name, text)
        self.say(text)

    def prompt(self) -> None:
        who = self.current.name if self.current else "Name"
        self.out.write(f"{who}> ")
        self.out.flush()

    async def handle(self, line: str) -> bool:
        """One line of input; ``False`` ends the game loop."""
        try:
            return await self._handle(line)
        except UserError as exc:
            self.say(f"! {exc}")
        except Exception:
            log.exception("Terminal line failed: %r", line)
            self.say(f"! Something went wrong; details are in {self.log_file or 'the log'}.")
        return True

    async def _handle(self, line: str) -> bool:
        players = await self.engine.players(self.game.id)
        known = {p.name.casefold() for p in players}
        name = bare_name(line, known, anyone=self.current is None)
        if name is not None:
            # "Rook" at the Name> prompt seats Rook and makes Rook the one acting, as the prompt asks.
            player = await self._speaker(name, players)
            if player.name.casefold() in known:
                self.say(f"[{player.name} is acting.]")
            return True
        parsed = parse_line(line, known)
        text = parsed.text
        if parsed.name is None and text.startswith("/") and not text.startswith(PLAYER_COMMANDS):
            command, _, rest = text.partition(" ")
            return await self._command(command.lower(), rest.strip(), players)
        player = await self._speaker(parsed.name, players)
        if text.startswith("/roll"):
            await self._roll(player, text.removeprefix("/roll"))
        elif text.startswith("/edit"):
            entry = await self.engine.last_action_of(self.game.id, player.user_key)
            edited = await self.engine.edit_entry(
                self.game.id, entry.id, text.removeprefix("/edit"), user_key=player.user_key
            )
            self._tell(player, edited, f"[{player.name}'s last action now reads: {edited.content}]")
        elif text.startswith("/delete"):
            entry = await self.engine.last_action_of(self.game.id, player.user_key)
            await self.engine.delete_entry(self.game.id, entry.id, user_key=player.user_key)
            self._tell(player, entry, f"[{player.name}'s last action is taken back: {entry.content}]")
        elif text.startswith("/whisper"):
            secret = text.removeprefix("/whisper")
            self.engine.check_action(secret)
            result = await self.engine.whisper(self.game.id, player.user_key, secret)
            self.say(_indent(player.name, f"{player.name}, secretly: {secret.strip()}"))
            for aside in result.private:
                self.say(_indent(aside.player.name, f"GM: {aside.entry.content}") + "\n")
        elif text.startswith("/my-memory"):
            _, memory = await self.engine.private_memory(self.game.id, player.user_key)
            notes = await self.engine.notes(self.game.id, player.user_key)
            self.say(_indent(player.name, reports.private_memory_text(player.name, memory, notes)))
        elif text.startswith("/"):
            self.say(f"! {text.split()[0]} is not something a character can do; type /help for commands.")
        else:
            await self._act(player, text)
        return True

    async def _command(self, command: str, rest: str, players: list[Player]) -> bool:
        game_id = self.game.id
        if command in ("/quit", "/exit"):
            return False
        if command == "/help":
            self.say(HELP)
        elif command == "/players":
            self.say(", ".join(f"{p.name}" for p in players) or "Nobody has joined yet.")
        elif command == "/memory-status":
            self.say(reports.status_text(await self.engine.memory_status(game_id)))
        elif command == "/recall":
            everything = rest.lower() == "gm"  # the GM-only layers: spoilers on a shared screen
            trace = await self.engine.last_trace(game_id, everything=everything)
            self.say(reports.trace_text(trace, show_secrets=everything))
            if everything:
                self.say(reports.reveals_text(await self.engine.uncovered_so_far(game_id)))
        elif command == "/compact":
            self.say("[Summarizing...]")
            self.say(reports.compaction_text(await self.engine.compact(game_id)))
        elif command == "/chapter":
            if rest.lower() != "next":
                raise UserError("/chapter next finishes the current chapter now; chapters go only forward.")
            self.say("[Writing the chapter's recap...]")
            self.say(reports.chapter_text(await self.engine.next_chapter(game_id)))
        elif command == "/pin":
            result = await self.engine.pin(game_id, rest, self.current.name if self.current else "terminal")
            self.say(f"[Pinned: {result.pin.text}]")
            if result.moved:
                self.say(f"[Over the cap: moved to the facts library: {result.moved.text}]")
        elif command == "/unpin":
            self.say(f"[Unpinned: {(await self.engine.unpin(game_id, rest)).text}]")
        elif command == "/pins":
            pins = await self.engine.pins(game_id)
            self.say("\n".join(f"{i}. {p.text}" for i, p in enumerate(pins, 1)) or "Nothing is pinned.")
        elif command == "/lore":
            await self._lore(rest)
        elif command == "/facts":
            facts = await self.engine.facts(game_id)
            self.say(reports.facts_text(facts))
        elif command == "/glossary":
            terms = await self.engine.glossary(game_id)
            self.say("\n".join(f"{t.term}: {t.definition}" for t in terms) or "The glossary is empty.")
        elif command == "/bucket":
            name, _, state = rest.partition(" ")
            if state.strip().lower() not in ("on", "off"):
                raise UserError("Say /bucket NAME on or /bucket NAME off.")
            buckets = await self.engine.set_bucket(game_id, name.strip().lower(), state.strip().lower() == "on")
            self.say("Buckets: " + ", ".join(f"{k} {'on' if v else 'off'}" for k, v in buckets.model_dump().items()))
        elif command == "/retry":
            await self._stream(lambda show: self.engine.retry(game_id, on_text=show))
        else:
            self.say(f"! Unknown command {command}; type /help.")
        return True

    async def _lore(self, rest: str) -> None:
        action, _, spec = rest.partition(" ")
        if action == "add":
            keys, _, content = spec.partition(":")
            entry = await self.engine.add_lore(
                self.game.id, keys=[k.strip() for k in keys.split(",") if k.strip()], content=content.strip()
            )
            self.say(f"[Lore added: {entry.id}]")
        elif action == "import":
            from bot.worldinfo import read_world_info

            if not spec.strip():
                raise UserError("Name the export to import: /lore import FILE.json (a SillyTavern World Info file).")
            found = read_world_info(Path(spec.strip()))
            added = await self.engine.import_lore(self.game.id, found.entries)
            self.say(f"[Lore imported into this game: {', '.join(e.id for e in added) or 'nothing'}]")
            for reason in found.skipped:
                self.say(f"[Left out: {reason}]")
        elif action == "remove":
            self.say(f"[Lore removed: {(await self.engine.remove_lore(self.game.id, spec.strip())).id}]")
        elif not action:
            listing = await self.engine.lore(self.game.id)
            self.say(reports.lore_text(listing))
        else:
            raise UserError("Say /lore, /lore add KEY, KEY: TEXT, /lore import FILE.json, or /lore remove ID.")

    async def _speaker(self, name: str | None, players: list[Player]) -> Player:
        if name is None:
            if self.current is None:
                raise UserError(
                    "Who is acting? Type a character's name first (like `Maya`), "
                    "or start the line with it: `Maya: I look around`."
                )
            return self.current
        for player in players:
            if player.name.casefold() == name.casefold():
                self.current = player
                return player
        self.current = await self.engine.join(self.game.id, name.casefold(), name)
        self.say(f"[{self.current.name} joins the game.]")
        return self.current

    async def _roll(self, player: Player, expression: str) -> None:
        first, _, rest = expression.strip().partition(" ")
        secret = first.lower() == "secret"
        expression = rest if secret else expression
        if not expression.strip():
            raise UserError("Say what to roll: /roll 1d20+2, or /roll secret 1d20 for you and the GM alone.")
        result = await self.engine.roll(self.game.id, player.user_key, expression, secret=secret)
        if secret:
            self.say(_indent(player.name, f"[{player.name} rolls {result.roll.text}]"))
        else:
            self.say(f"[{player.name} rolls {result.roll.text}]")

    async def _act(self, player: Player, text: str) -> None:
        self.engine.check_action(text)  # say what is wrong before anything streams
        await self._stream(lambda show: self.engine.act(self.game.id, player.user_key, text, on_text=show))

    async def _stream(self, turn) -> None:
        """Run a turn, printing the GM's reply as it is written."""
        shown = False

        def show(piece: str) -> None:
            nonlocal shown
            if not shown:
                self.out.write("GM: ")
                shown = True
            self.out.write(piece)
            self.out.flush()

        try:
            result = await turn(show)
        finally:
            if shown:
                self.say("\n")
        if result.draft is not None:
            # The leak guard stopped the draft and the GM wrote again: this is the reply that stands. What it
            # caught is in the log file, not on this shared screen.
            self.say("(The GM rewrote its reply: the first draft gave away something secret.)")
            self.say(f"GM{' (again)' if shown else ''}: {result.text}\n")
        elif not shown and result.public:
            self.say(f"GM: {result.text}\n")
        for aside in result.private:
            self.say(_indent(aside.player.name, f"GM: {aside.entry.content}") + "\n")
        if result.context.trace.overflow:
            self.say(f"! The memory is over budget: {result.context.trace.overflow}. Raise GM_N_CTX or lower budgets.")


def _private_line(entry: LogEntry) -> str:
    """A private entry as its player saw it when it happened."""
    if entry.kind is EntryKind.GM:
        return f"GM: {entry.content}"
    if entry.kind is EntryKind.ROLL:
        return f"[{entry.author} rolls {entry.content}]"
    return f"{entry.author}, secretly: {entry.content}"


def _indent(name: str, text: str) -> str:
    """Text for one player's eyes, set apart under their name."""
    return "\n".join(f"  (only {name} sees) {line}" for line in text.splitlines() if line.strip())


async def stdin_lines(stream: TextIO = sys.stdin) -> AsyncIterator[str]:
    """Lines of a stream, read in a thread so the event loop keeps running.

    Bytes are decoded here, whatever error handler the stream was given (``PYTHONIOENCODING=utf-8:strict``):
    what is not text reaches the game as lone surrogates, which it refuses with one clear line.
    """
    raw = getattr(stream, "buffer", None)
    encoding = getattr(stream, "encoding", None) or "utf-8"
    while True:
        if raw is not None:
            line = (await asyncio.to_thread(raw.readline)).decode(encoding, "surrogateescape")
        else:
            line = await asyncio.to_thread(stream.readline)
        if not line:
            return
        yield line.rstrip("\r\n")
