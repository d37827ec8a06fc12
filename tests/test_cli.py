"""The command line, run as a newcomer runs it: in a subprocess, reading a pipe."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.store.lock import lock_holder
from tests.conftest import FIXTURES, bot_environment

TIMEOUT = 300


def run_bot(
    *args: str, stdin: str = "", cwd: Path, timeout: float = TIMEOUT, **env: str
) -> subprocess.CompletedProcess:
    environment = bot_environment()
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=timeout,
    )


def one_clear_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.slow
def test_terminal_play_through_a_pipe_then_resume(tmp_path: Path, play_env):
    script = "\n".join(
        [
            "Maya: I step onto the landing stage and look up at the tower.",
            "Tom: I tie the boat to the iron ring.",
            "/roll 1d20+2",
            "Maya: /roll 2d6",
            "/quit",
        ]
    )
    first = run_bot("play", "lighthouse", stdin=script + "\n", cwd=tmp_path, **play_env)
    out = first.stdout
    assert first.returncode == 0, first.stderr
    assert "== The Lighthouse at Gull Rock: game 1 ==" in out
    assert "GM: The supply boat bumps" in out, "the opening scene comes first"
    assert "[Maya joins the game.]" in out and "[Tom joins the game.]" in out
    assert out.count("GM: ") == 3, "the opening and one reply per action"
    assert "[Tom rolls 1d20+2: 1d20 (" in out
    assert "[Maya rolls 2d6: 2d6 (" in out
    assert "Game saved" in out
    assert "Traceback" not in first.stderr
    assert first.stderr.strip() == "", "the log goes to a file, not onto the shared screen"
    assert "Game 1 turn 1: prompt" in (tmp_path / "data" / "play.log").read_text()

    again = run_bot("play", "lighthouse", stdin="/quit\n", cwd=tmp_path, **play_env)
    assert again.returncode == 0, again.stderr
    assert "== The Lighthouse at Gull Rock: resuming game 1 at turn 2 (--new starts another) ==" in again.stdout
    assert "Maya: I step onto the landing stage and look up at the tower." in again.stdout
    assert "[Tom rolls 1d20+2: 1d20 (" in again.stdout


@pytest.mark.slow
def test_play_never_ends_a_game_silently_and_any_game_can_be_resumed(tmp_path: Path, play_env):
    first = run_bot("play", "lighthouse", stdin="Maya: I row ashore.\n/quit\n", cwd=tmp_path, **play_env)
    assert first.returncode == 0, first.stderr
    fresh = run_bot("play", "lighthouse", "--new", stdin="/quit\n", cwd=tmp_path, **play_env)
    assert "[Game 1 of The Lighthouse at Gull Rock (turn 1) is kept: --game 1 resumes it.]" in fresh.stdout
    assert "== The Lighthouse at Gull Rock: game 2 ==" in fresh.stdout

    listing = run_bot("games", cwd=tmp_path, **play_env)
    rows = [line.split() for line in listing.stdout.splitlines() if line[:4].strip().isdigit()]
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("1", "lighthouse", "ended", "1"),
        ("2", "lighthouse", "active", "0"),
    ]
    assert "Maya" in listing.stdout and "python -m bot play --game ID" in listing.stdout

    back = run_bot("play", "--game", "1", stdin="/quit\n", cwd=tmp_path, **play_env)
    assert "== The Lighthouse at Gull Rock: game 1, turn 1 ==" in back.stdout
    assert "Maya: I row ashore." in back.stdout
    neither = run_bot("play", stdin="/quit\n", cwd=tmp_path, **play_env)
    assert one_clear_line(neither).startswith("Name a world to play")
    for nonsense in ("99999999999999999999999", "0", "-3", "one"):
        refused = run_bot("play", "--game", nonsense, stdin="/quit\n", cwd=tmp_path, **play_env)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert "argument --game:" in refused.stderr.splitlines()[-1]


def holding_the_database(cwd: Path, play_env: dict[str, str]) -> subprocess.Popen:
    """A terminal game playing on ``play_env``'s database, once it holds the database's lock (/quit ends it)."""
    holder = subprocess.Popen(
        [sys.executable, "-m", "bot", "play", "lighthouse"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=cwd,
        env={**bot_environment(), **play_env},
    )  # fmt: skip
    database = Path(play_env["GM_DATABASE"])
    deadline = time.monotonic() + 120  # a guard against a process that never gets there, not a speed bound
    while not (database.exists() and lock_holder(database.stat()) == holder.pid):
        if holder.poll() is not None or time.monotonic() > deadline:
            holder.kill()
            raise AssertionError(f"the first process never held the database: {holder.communicate()[1]}")
        time.sleep(0.05)
    return holder


@pytest.mark.slow
def test_a_second_process_on_the_same_database_is_refused(tmp_path: Path, play_env):
    holder = holding_the_database(tmp_path, play_env)
    try:
        second = run_bot("play", "lighthouse", stdin="/quit\n", cwd=tmp_path, **play_env)
        line = one_clear_line(second)
        assert line.startswith(f"Another bot process (pid {holder.pid}) is using ") and "--db" in line
    finally:
        holder.communicate("/quit\n", timeout=TIMEOUT)
    after = run_bot("play", "lighthouse", stdin="/quit\n", cwd=tmp_path, **play_env)
    assert after.returncode == 0, "the lock went with the first process"


def test_a_start_leaves_folders_it_never_made_beside_its_states(tmp_path: Path, play_env):
    """An admin's folders under ``states/`` and ``slots/`` beside the database (one a link to a home-like folder)
    survive a start: the bot clears only folders it made for other models."""
    data = tmp_path / "data"
    (data / "states" / "my-notes").mkdir(parents=True)
    (data / "states" / "my-notes" / "plot.txt").write_text("the twist")
    home = tmp_path / "home"
    (home / "projects").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("key")
    (data / "slots").symlink_to(home, target_is_directory=True)
    played = run_bot("play", "lighthouse", stdin="Maya\n/quit\n", cwd=tmp_path, **play_env)
    assert played.returncode == 0, played.stderr
    assert (data / "states" / "my-notes" / "plot.txt").read_text() == "the twist"
    assert (home / "projects").is_dir() and (home / ".ssh" / "id_ed25519").read_text() == "key"
    assert "another model" not in (data / "play.log").read_text()


def test_terminal_answers_bad_input_and_goes_on(tmp_path: Path, play_env):
    script = "\n".join(
        [
            "I look around.",  # nobody has joined yet
            "Maya:",
            "Maya: " + "x" * 2001,
            "/roll banana",
            "/roll 1000000d1000000",
            "/teleport",
            "/roll 1d4",
            "/quit",
        ]
    )
    result = run_bot("play", "lighthouse", stdin=script + "\n", cwd=tmp_path, **play_env)
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert "! Who is acting?" in out
    assert "! Say what your character does." in out
    assert "! That action is 2001 characters long; the limit is 2000." in out
    assert "! 'banana' is not dice notation" in out
    assert "! Too many dice: at most 1000 in one roll." in out
    assert "! Unknown command /teleport" in out
    assert "[Maya rolls 1d4: 1d4 (" in out, "the game goes on after the errors"
    assert out.count("GM: ") == 1, "no bad input reached the model"

    resumed = run_bot("play", "lighthouse", stdin="/quit\n", cwd=tmp_path, **play_env)
    assert "x" * 100 not in resumed.stdout and "banana" not in resumed.stdout


def test_unknown_world_is_one_line(tmp_path: Path, bot_env):
    line = one_clear_line(run_bot("play", "atlantis", cwd=tmp_path, **bot_env))
    assert line == "Unknown world 'atlantis'. Worlds here: lighthouse."


def test_bad_world_file_names_file_and_field(tmp_path: Path, bot_env):
    bad = tmp_path / "bad.yaml"
    bad.write_text((FIXTURES / "worlds" / "lighthouse.yaml").read_text().replace("opening:", "openin:"))
    result = run_bot("play", str(bad), cwd=tmp_path, **bot_env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{bad}: opening: Field required" in result.stderr.splitlines()
    assert f"{bad}: openin: Extra inputs are not permitted" in result.stderr.splitlines()


def test_missing_model_file_is_one_line(tmp_path: Path, bot_env):
    played = run_bot("play", "lighthouse", cwd=tmp_path, **bot_env, GM_MODEL="", GM_MODEL_PATH="/no/such.gguf")
    line = one_clear_line(played)
    assert line == "Model file not found: /no/such.gguf (set GM_MODEL_PATH to a .gguf file)."


def test_unwritable_database_is_one_line(tmp_path: Path, bot_env):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be")
    result = run_bot("play", "lighthouse", "--db", str(blocker / "gm.sqlite3"), cwd=tmp_path, **bot_env)
    assert one_clear_line(result).startswith(f"Cannot open the database at {blocker / 'gm.sqlite3'}")


@pytest.mark.parametrize("kind", ["folder", "fifo", "device", "long name"])
@pytest.mark.parametrize("command", ["play", "games"])
def test_a_database_path_that_cannot_be_one_is_one_line_and_nothing_is_created_beside_it(
    tmp_path: Path, bot_env, kind: str, command: str
):
    place = tmp_path / "place"
    place.mkdir()
    database = place / ("x" * 10_000 if kind == "long name" else kind)
    if kind == "folder":
        database.mkdir()
    elif kind == "fifo":
        os.mkfifo(database)
    elif kind == "device":
        database.symlink_to(os.devnull)
    args = ("play", "lighthouse") if command == "play" else ("games",)
    line = one_clear_line(run_bot(*args, "--db", str(database), stdin="/quit\n", cwd=tmp_path, **bot_env))
    said = {
        "folder": f"The database path {database} is a folder;",
        "fifo": f"The database path {database} is not a regular file;",
        "device": f"The database path {database} is not a regular file;",
        "long name": f"Cannot open the database at {place}/{'x' * 20}",
    }[kind]
    assert line.startswith(said), line
    assert len(line) < 400, "the path is shortened, not echoed whole"
    assert sorted(p.name for p in place.iterdir()) == ([] if kind == "long name" else [kind]), "nothing beside it"
    if kind == "folder":
        assert list(database.iterdir()) == []


def test_pulling_a_path_of_a_huge_name_is_one_short_line(tmp_path: Path, bot_env):
    line = one_clear_line(run_bot("model", "pull", "x" * 10_000 + ".gguf", cwd=tmp_path, **bot_env))
    assert line.startswith("'" + "x" * 20) and "…" in line and "is a path, not something to download" in line
    assert len(line) < 200, line


def test_a_context_too_small_for_the_world_is_refused_at_start_with_the_numbers(tmp_path: Path, play_env):
    shutil.copy(Path(__file__).parent.parent / "worlds" / "hollow-manor.yaml", play_env["GM_WORLDS_DIR"])
    result = run_bot("play", "hollow-manor", cwd=tmp_path, **{**play_env, "GM_N_CTX": "1024", "GM_REPLY_TOKENS": "300"})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    problem = re.search(
        r"hollow-manor\.yaml: \(context\): its frozen layer .* is (\d+) tokens, more than the 724 ", result.stderr
    )
    assert problem and int(problem.group(1)) > 724, result.stderr
    assert "GM_N_CTX 1024 minus GM_REPLY_TOKENS 300" in result.stderr and "raise GM_N_CTX" in result.stderr
    assert "==" not in result.stdout, "no game was started"


def test_a_context_longer_than_the_model_was_trained_for_is_refused(tmp_path: Path, play_env):
    line = run_bot("play", "lighthouse", cwd=tmp_path, **{**play_env, "GM_N_CTX": "16384"}).stderr.splitlines()[-1]
    assert line == (
        "GM_N_CTX is 16384, but SmolLM2-135M-Instruct.Q4_1 was trained for 8192 tokens of context; "
        "set GM_N_CTX to 8192 or less."
    )


def test_a_bad_setting_names_the_setting(tmp_path: Path, bot_env):
    bot_env["GM_N_CTX"] = "lots"
    line = one_clear_line(run_bot("play", "lighthouse", cwd=tmp_path, **bot_env))
    assert line.startswith("settings: n_ctx: Input should be a valid integer")


@pytest.mark.parametrize("command", ["run", "sync"])
def test_run_without_a_token_says_how_to_get_one(tmp_path: Path, bot_env, command):
    line = one_clear_line(run_bot(command, cwd=tmp_path, **bot_env))
    assert "DISCORD_TOKEN" in line and "discord.com/developers/applications" in line and "make play" in line


@pytest.mark.slow
def test_terminal_memory_commands_with_the_real_model(tmp_path: Path, play_env):
    play_env.update(GM_MEMORY__SHORT_WORDS="40", GM_MEMORY__STORY_WORDS="60", GM_MEMORY__RECAP_WORDS="30")
    script = "\n".join(
        [
            "Maya: I climb onto the landing stage.",
            "Tom: I haul the crates up.",
            "Maya: I try the cottage door.",
            "Maya: /edit I knock on the cottage door.",
            "Tom: I shout for the keeper.",
            "/delete",
            "/retry",
            "/compact",
            "/memory-status",
            "/recall",
            "/chapter next",
            "/quit",
        ]
    )
    result = run_bot("play", "lighthouse", stdin=script + "\n", cwd=tmp_path, **play_env)
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert "[Maya's last action now reads: I knock on the cottage door.]" in out
    assert "[Tom's last action is taken back: I shout for the keeper.]" in out
    assert "Folded " in out and " messages (turns 0-" in out
    assert "Most recently (turns 0-" in out, "the short-term summary shows in /memory-status"
    where = "on the CPU (" if play_env["GM_N_GPU_LAYERS"] == "0" else " layers on "
    assert re.search(rf"\nModel: SmolLM2-135M-Instruct\S*, [^\n]*{re.escape(where)}", out), "where the model runs"
    assert "The GM was given " in out and "  hot " in out and "  action " in out
    # The model may already have judged chapters done (then /memory-status shows their recaps and
    # /chapter next may find none left); otherwise /chapter next finishes the first one here.
    judged = "Chapter 1 recap (" in out
    assert judged or re.search(r"Chapter finished: Arrival\. Recap: \S", out)
    assert re.search(
        r"Chapter finished: (Arrival|The Lamp)\. Recap: \S|! Every chapter of this world is already done", out
    )
    assert "Traceback" not in result.stderr

    again = run_bot("play", "lighthouse", "--resume", stdin="/quit\n", cwd=tmp_path, **play_env)
    assert "Maya: I knock on the cottage door." in again.stdout
    lines = again.stdout.splitlines()  # player lines only: the GM's replies may quote anything
    assert "Maya: I try the cottage door." not in lines and "Tom: I shout for the keeper." not in lines


def test_terminal_pins_lore_and_buckets(tmp_path: Path, play_env):
    script = "\n".join(
        [
            "/pin The lamp needs oil.",
            "/pin The keeper owes Wren money.",
            "/pins",
            "/unpin 1",
            "/pins",
            "/lore add Saltmere, harbour: Saltmere is the harbour town.",
            "/lore",
            "/lore add : no keys",
            "/facts",
            "/glossary",
            "/bucket recall off",
            "/bucket dreams off",
            "/quit",
        ]
    )
    result = run_bot("play", "lighthouse", stdin=script + "\n", cwd=tmp_path, **play_env)
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert "1. The lamp needs oil.\n2. The keeper owes Wren money." in out
    assert "[Unpinned: The lamp needs oil.]\n1. The keeper owes Wren money." in out
    assert "[Lore added: saltmere]" in out
    assert "saltmere [Saltmere, harbour; priority 50; game]: Saltmere is the harbour town." in out
    assert "oil-store [oil (with store, cellar); priority 70; world]" in out
    assert "! a lore entry needs keys, or always_on: true" in out
    assert "No facts recorded yet." in out and "The glossary is empty." in out
    assert "Buckets: pins on, lore on, glossary on, facts on, recall off" in out
    assert "! Unknown memory bucket 'dreams'" in out


def test_import_lore_adds_a_sillytavern_export_to_a_world_file(tmp_path: Path, bot_env):
    import json

    export = tmp_path / "export.json"
    chapel = {"uid": 0, "key": ["chapel"], "comment": "Chapel", "content": "The chapel bell is cracked.", "order": 60}
    export.write_text(json.dumps({"entries": {"0": chapel, "1": {"uid": 1, "key": ["x"], "content": ""}}}))
    world = Path(bot_env["GM_WORLDS_DIR"]) / "lighthouse.yaml"
    result = run_bot("import-lore", str(export), str(world), cwd=tmp_path, **bot_env)
    assert result.returncode == 0, result.stderr
    assert f"{world}: 1 lore entries added: chapel" in result.stdout
    assert f"{export}: entries.1: empty content" in result.stdout
    checked = run_bot("check", str(world), cwd=tmp_path, **bot_env)
    assert "4 lore entries" in checked.stdout

    missing = run_bot("import-lore", str(tmp_path / "none.json"), str(world), cwd=tmp_path, **bot_env)
    assert missing.returncode == 1 and "none.json" in missing.stderr and "Traceback" not in missing.stderr


class Terminal:
    """``python -m bot`` in a pseudo-terminal, read as a person at the keyboard reads it."""

    def __init__(self, *args: str, cwd: Path, **env: str):
        import pty

        environment = bot_environment()
        environment.update(env, TERM="dumb")
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot", *args],
            stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=environment, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self.screen = ""

    def wait_for(self, text: str, *, after: int = 0) -> int:
        """Read until ``text`` shows past ``after``; where it ends on the screen."""
        import select

        deadline = time.monotonic() + TIMEOUT
        while (at := self.screen.find(text, after)) < 0:
            assert time.monotonic() < deadline and self.process.poll() is None, f"no {text!r} in:\n{self.screen}"
            ready, _, _ = select.select([self.master], [], [], 1)
            if ready:
                self.screen += os.read(self.master, 4096).decode(errors="replace").replace("\r\n", "\n")
        return at + len(text)

    def type(self, line: str) -> int:
        """Type a line and press Enter; where its answer starts on the screen."""
        at = len(self.screen)
        os.write(self.master, (line + "\n").encode())
        return self.wait_for(line + "\n", after=at)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        os.close(self.master)


def test_a_newcomer_types_a_name_at_the_name_prompt_and_plays(tmp_path: Path, play_env):
    terminal = Terminal("play", "lighthouse", cwd=tmp_path, **play_env)
    try:
        at = terminal.wait_for("Name> ")
        assert "Type /help" in terminal.screen[:at]
        answer = terminal.type("Rook")
        prompt = terminal.wait_for("Rook> ", after=answer)
        assert terminal.screen[answer:prompt].strip() == "[Rook joins the game.]\nRook>"
        answer = terminal.type("I climb the stairs to the lamp room.")
        prompt = terminal.wait_for("Rook> ", after=answer)
        assert "GM: " in terminal.screen[answer:prompt] and "Who is acting" not in terminal.screen[answer:prompt]

        # A shared keyboard: "Name: action" seats another player and acts; a seated name alone switches back.
        answer = terminal.type("Maya: I wait by the door.")
        prompt = terminal.wait_for("Maya> ", after=answer)
        assert "[Maya joins the game.]" in terminal.screen[answer:prompt]
        answer = terminal.type("rook")
        prompt = terminal.wait_for("Rook> ", after=answer)
        assert terminal.screen[answer:prompt].strip() == "[Rook is acting.]\nRook>", "nothing reached the model"
        answer = terminal.type("/players")
        terminal.wait_for("Rook> ", after=answer)
        assert "Rook" in terminal.screen[answer:] and "Maya" in terminal.screen[answer:]
        terminal.type("/quit")
        terminal.wait_for("Game saved")
        assert terminal.process.wait(timeout=TIMEOUT) == 0
    finally:
        terminal.close()


def test_an_action_at_the_name_prompt_asks_for_a_name_first(tmp_path: Path, play_env):
    result = run_bot("play", "lighthouse", stdin="I look around.\nRook\n/players\n/quit\n", cwd=tmp_path, **play_env)
    assert result.returncode == 0, result.stderr
    assert "! Who is acting? Type a character's name first (like `Maya`)" in result.stdout
    assert "[Rook joins the game.]" in result.stdout
    assert result.stdout.count("GM: ") == 1, "the world's opening only: neither line reached the model"


@pytest.mark.parametrize("encoding", ["", "utf-8:strict"])
def test_bytes_that_are_not_utf8_on_stdin_get_one_clear_line_whatever_the_stdin_encoding(
    tmp_path: Path, play_env, encoding: str
):
    environment = bot_environment()
    environment.update(play_env, PYTHONIOENCODING=encoding)
    result = subprocess.run(
        [sys.executable, "-m", "bot", "play", "lighthouse"],
        input=b"/join Maya\nMaya: I look \xff\xfe around.\n/quit\n",
        capture_output=True, cwd=tmp_path, env=environment, timeout=TIMEOUT,
    )  # fmt: skip
    out = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0 and "Traceback" not in out, out
    assert "bytes that are not UTF-8; nothing was done with it" in out and "Game saved" in out


def test_debug_logging_shows_the_bots_lines_and_keeps_libraries_at_info(tmp_path: Path, play_env):
    result = run_bot("play", "lighthouse", stdin="/join Maya\nMaya: I row ashore.\n/quit\n", cwd=tmp_path,
                     GM_LOG_LEVEL="DEBUG", **play_env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    log = (Path(play_env["GM_DATABASE"]).parent / "play.log").read_text()
    assert "DEBUG bot.engine.turn.prompt: Game 1 prompt:" in log, "the prompt is what DEBUG is for"
    assert "DEBUG aiosqlite" not in log, "not every SQL call around it"


def test_a_malformed_token_or_an_unknown_setting_in_dotenv_is_one_line_and_nothing_is_written(tmp_path: Path):
    env = {k: v for k, v in bot_environment().items() if k != "GM_MODEL"}
    (tmp_path / ".env").write_text("DISCORD_TOKEN=not-a-token\nGM_MODEL=tiny\n")
    line = one_clear_line(run_bot("run", cwd=tmp_path, **env))
    assert line.startswith("DISCORD_TOKEN is not a bot token") and "Reset Token" in line
    (tmp_path / ".env").write_text("DISCORD_TOKEN=x\nGM_N_CTXX=4096\nGM_MODLE=tiny\n")
    refused = run_bot("run", cwd=tmp_path, **env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines() == [
        "settings: GM_N_CTXX in .env is not a setting; did you mean GM_N_CTX? (docs/settings.md lists them)",
        "settings: GM_MODLE in .env is not a setting; did you mean GM_MODEL? (docs/settings.md lists them)",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".env"], "nothing written"
