"""llama.cpp's own server, started and supervised by the bot: the path for several tables on one machine (F27, F33).

With ``GM_SERVER_SLOTS=N`` (and no ``GM_MODEL_URL``), ``python -m bot``
starts ``llama-server`` for the configured model file with N slots for games
and one more for the memory's background work, each slot ``GM_N_CTX`` tokens;
prompts are cached per slot, and a slot's state can be saved to and restored
from ``data/slots/`` (see :class:`bot.model.server.ServerModel`). The bot
waits for the server's health, talks to it as to any model server, and
stops it when it stops. A server that dies meanwhile (killed, out of memory)
is started again on the same port, with back-off, and said in the log; its
games then restore their slots from their files.

The binary is the one ``scripts/build-llama-server`` builds from the llama.cpp
that the pinned llama-cpp-python carries (the same version as the in-process
model, linked into the virtual environment's ``bin``), or the one
``GM_LLAMA_SERVER`` names. A binary that is missing, was built from another
version, or dies at start is said in one line, and the bot plays the
in-process model instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from bot.model.base import ModelUnavailable
from bot.model.llama import physical_cores

log = logging.getLogger(__name__)

BINARY = "llama-server"
VERSION_FILE = "VERSION"  # written beside the binary by scripts/build-llama-server: the llama-cpp-python version
START_SECONDS = 180.0  # loading a 7B model from a cold disk takes a while
STOP_SECONDS = 10.0
LOG_LINES = 40  # the server's last lines kept, to say why it died
CACHE_REUSE = 256  # tokens: llama.cpp's --cache-reuse, reusing a cached prompt's chunks past the first difference
# Flash attention, which llama-server turns on where it can ("auto"), is off on a CPU, as in the in-process model.
# On two cores (llama-batched-bench, the bundled model, prompts of 2,300 tokens as a game's are, 128 written) it
# wrote 48 tokens/s for one sequence and 40 for four with it on, against 59 and 60 with it off, and read 7% to 22%
# faster; a GM turn is mostly writing. bench tables, 4 tables, one run: 6.7 replies a minute with it off
# against 5.4, first text p50 10.7 s against 19.8. On a GPU the server's default stays.
CPU_FLASH_ATTENTION = "off"
# Prompt tokens the server reads in one step, on a CPU (its default 2,048; a GPU keeps it). A call the bot cancels
# (a background call a player's turn interrupts) stops at the end of a step, and a player's call waits for it:
# 2,048 tokens are 13 to 20 s of reading on two cores (100 to 155 tokens/s in the server's log). And each step
# writes one token for every slot that is writing, so while one game's prompt is read another game's reply comes a
# token a step, and each such token slows the reading (on two cores about 0.2 s a step for Qwen2.5 1.5B). Short
# steps read about as fast alone (llama-batched-bench, two threads, a prompt of 2,300 tokens: the bundled model 223
# tokens/s in steps of 128, 221 in 64, 217 in 32; Qwen2.5 1.5B 60.7 in 128, 57.9 in 32). bench tables' reply of 120
# tokens beside a first prompt of 2,543 tokens read, Qwen2.5 1.5B: its first sentence after 47.0 s in steps of 128,
# 25.8 s in 64, 14.2 s in 32; the reading 48.0 s, 54.9 s, 62.0 s (44 s to 46 s alone). Steps of 64 nearly halve the
# wait of a player whose reply is written beside a reading, for a seventh more of the reading's; see docs/tables.md.
CPU_BATCH = 64
WATCH_SECONDS = 1.0  # how often the supervisor looks whether the server it started is still running
RESTART_BACKOFF = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)  # seconds between tries to start it again


class LlamaServerError(ModelUnavailable):
    """llama.cpp's server cannot be started or used; the message says what to do."""


def find_binary(named: str | None = None) -> Path:
    """The ``llama-server`` to run: the one named (``GM_LLAMA_SERVER``), or the one built into the virtual
    environment, or one on the ``PATH``."""
    if named:
        path = Path(named).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise LlamaServerError(f"GM_LLAMA_SERVER names {path}, which is not an executable file.")
        return path
    beside = Path(sys.executable).parent / BINARY
    found = beside if beside.exists() else shutil.which(BINARY)
    if found is None or not Path(found).exists():
        raise LlamaServerError(
            f"llama.cpp's server is not built: run `sh scripts/build-llama-server {Path(sys.prefix)}` (a few "
            "minutes, once) or set GM_LLAMA_SERVER to a llama-server binary."
        )
    return Path(found)


def check_version(binary: Path) -> str:
    """The version the binary was built from, refused when it is not the in-process model's (a binary built here
    says so in the file beside it; one the user named is taken as it is)."""
    import llama_cpp

    stamp = binary.resolve().parent / VERSION_FILE
    if not stamp.is_file():
        return "its own version (named by GM_LLAMA_SERVER)"
    built = stamp.read_text(encoding="utf-8").strip()
    if built != llama_cpp.__version__:
        raise LlamaServerError(
            f"{binary} was built from llama-cpp-python {built}, but {llama_cpp.__version__} is installed: run "
            f"`sh scripts/build-llama-server {Path(sys.prefix)}` again."
        )
    return f"llama-cpp-python {built}'s llama.cpp"


def _die_with_parent() -> None:
    """In the server's process before it runs: it is sent SIGTERM when the thread that started it ends (the bot's
    process dying, even by kill -9; start-up runs in a thread that lives as long as the event loop)."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _signal(process: subprocess.Popen, sig: int) -> None:
    """``sig`` to the server and whatever it started (its process group), or to it alone where groups are not."""
    try:
        if os.name == "posix":
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(OSError):
            process.send_signal(sig)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class LlamaServer:
    """One ``llama-server`` process serving ``model_path`` as ``alias`` on ``slots`` game slots, plus one slot for
    background work."""

    binary: Path
    model_path: Path
    alias: str
    slots: int
    n_ctx: int
    slot_dir: Path
    threads: int | None = None
    gpu_layers: int = 0
    port: int = 0
    extra: list[str] = field(default_factory=list)
    process: subprocess.Popen | None = None
    # The key the server asks of every call but its health and model list: any local process reaches its port,
    # and without a key could have it save a game's slot to a file it names. Given in its environment
    # (LLAMA_API_KEY, which llama-server reads), not its command line, which every local user can read.
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    # While the server is down and being started again: why, for /memory-status and for the calls that wait.
    down: str | None = None
    restarts: int = 0
    _lines: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    _reader: threading.Thread | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _up: threading.Event = field(default_factory=threading.Event)
    _watch: threading.Thread | None = None
    _on_restart: list = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def total_slots(self) -> int:
        return self.slots + 1  # the games' slots and one for background work

    def command(self) -> list[str]:
        command = [
            str(self.binary), "--model", str(self.model_path), "--alias", self.alias,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--parallel", str(self.total_slots), "--ctx-size", str(self.n_ctx * self.total_slots),
            "--slot-save-path", str(self.slot_dir), "--cache-reuse", str(CACHE_REUSE),
            "--n-gpu-layers", str(self.gpu_layers),
        ]  # fmt: skip
        if not self.gpu_layers:
            command += ["--flash-attn", CPU_FLASH_ATTENTION, "--batch-size", str(CPU_BATCH), "--ubatch-size",
                        str(CPU_BATCH)]  # fmt: skip
        # As the in-process model: the physical cores this process may run on (llama-server's own default counts
        # every core of the machine, whatever CPUs the process is given).
        threads = self.threads or physical_cores()
        command += ["--threads", str(threads), "--threads-batch", str(threads)]
        return command + self.extra

    def start(self, timeout: float = START_SECONDS) -> None:
        """Start the server and wait for its health; :class:`LlamaServerError`, with its last lines, when it dies
        or does not become healthy in ``timeout`` seconds."""
        self.slot_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self._lines.clear()  # what an earlier run wrote says nothing of why this one stops
        try:
            # A process group of its own: a GM_LLAMA_SERVER that is a wrapper script is stopped with what it runs.
            self.process = subprocess.Popen(
                self.command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                text=True, errors="replace", preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                start_new_session=os.name == "posix", env={**os.environ, "LLAMA_API_KEY": self.api_key},
            )  # fmt: skip
        except OSError as exc:
            raise LlamaServerError(f"{self.binary} could not be started: {exc.strerror or exc}.") from None
        self._reader = threading.Thread(target=self._read_output, name="llama-server-log", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._reader.join(1.0)  # its last lines
                raise LlamaServerError(
                    f"llama-server stopped at start (exit status {self.process.returncode}): {self.last_words()}"
                )
            if self.healthy():
                if self.process.poll() is not None or not self._serves_alias():
                    # Another HTTP server answered on the port (taken between the check and the start): not ours.
                    self._kill()
                    raise LlamaServerError(
                        f"port {self.port} answers, but not as this llama-server (another program took it)"
                    )
                log.info("llama-server serves %s on %s (%d game slots + 1, %d tokens each)",
                         self.alias, self.url, self.slots, self.n_ctx)  # fmt: skip
                self._up.set()
                return
            time.sleep(0.25)
        self._kill()
        raise LlamaServerError(f"llama-server did not become healthy within {timeout:g} s: {self.last_words()}")

    def _serves_alias(self) -> bool:
        request = urllib.request.Request(f"{self.url}/models", headers={"Authorization": f"Bearer {self.api_key}"})
        try:
            with urllib.request.urlopen(request, timeout=2) as answer:
                data = json.loads(answer.read() or b"{}").get("data") or []
        except (OSError, ValueError, AttributeError, urllib.error.URLError):
            return False
        return any(isinstance(m, dict) and m.get("id") == self.alias for m in data)

    def supervise(self, on_restart=None) -> None:
        """Watch the server from now on: if it dies, start it again (same port, back-off between tries), and then
        call ``on_restart`` (its slots hold nothing any more)."""
        if on_restart is not None:
            self._on_restart.append(on_restart)
        if self._watch is None:
            self._watch = threading.Thread(target=self._watch_loop, name="llama-server-watch", daemon=True)
            self._watch.start()

    def wait_serving(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) while the server is down or being started again; whether it serves.
        A server found dead before its supervisor saw it is waited for too, and so is one whose process still
        runs but answers nothing: killed, it closes its port before it is gone."""
        deadline = time.monotonic() + timeout
        while not self._stopping.is_set():
            process = self.process
            running = process is not None and process.poll() is None and self.down is None and self._up.is_set()
            if running and self.healthy():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return False

    def _watch_loop(self) -> None:
        while not self._stopping.wait(WATCH_SECONDS):
            process = self.process
            if process is None or process.poll() is None:
                continue
            self._up.clear()
            died = time.monotonic()
            self.down = f"llama.cpp's server stopped (exit status {process.returncode}); it is being started again"
            if process.returncode < 0:  # killed: what it wrote before was not why
                why = f"killed by signal {-process.returncode}"
            else:
                if self._reader is not None:
                    self._reader.join(1.0)  # its last lines
                why = self.last_words()
            log.warning("llama-server stopped (exit status %s): %s; starting it again", process.returncode, why)
            for attempt in range(10**9):
                if self._stopping.is_set():
                    return
                try:
                    self.start()
                except LlamaServerError as exc:
                    wait = RESTART_BACKOFF[min(attempt, len(RESTART_BACKOFF) - 1)]
                    self.down = f"llama.cpp's server does not start again ({exc}); next try in {wait:g} s"
                    log.warning("llama-server did not start again: %s; next try in %g s", exc, wait)
                    self._stopping.wait(wait)
                    continue
                break
            self.down = None
            self.restarts += 1
            log.warning("llama-server is serving again, %.1f s after it stopped", time.monotonic() - died)
            for callback in self._on_restart:
                with contextlib.suppress(Exception):
                    callback()

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as answer:
                return answer.status == 200 and json.loads(answer.read() or b"{}").get("status", "ok") == "ok"
        except (OSError, ValueError, urllib.error.URLError):
            return False

    def last_words(self) -> str:
        """The server's last lines that say something went wrong, or its last line."""
        lines = [line for line in self._lines if line.strip()]
        bad = [line for line in lines if any(w in line.lower() for w in ("error", "failed", "invalid", "unknown"))]
        chosen = bad[-3:] or lines[-1:]
        return " / ".join(" ".join(line.split())[:200] for line in chosen) or "it wrote nothing"

    def stop(self) -> None:
        """Stop the server for good: the supervisor starts it no more."""
        self._stopping.set()
        self._up.set()  # a call waiting for a restart waits no more
        if self._watch is not None and self._watch is not threading.current_thread():
            self._watch.join(STOP_SECONDS)
        self._kill()

    def _kill(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        _signal(process, signal.SIGTERM)
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            _signal(process, signal.SIGKILL)
            process.wait(STOP_SECONDS)
        log.info("llama-server stopped")

    def _read_output(self) -> None:
        process = self.process
        if process is None or process.stdout is None:
            return
        with contextlib.suppress(ValueError, OSError):
            for line in process.stdout:
                self._lines.append(line.rstrip("\n"))
                log.debug("llama-server: %s", line.rstrip())
