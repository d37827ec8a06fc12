"""A stand-in for the Hugging Face Hub on 127.0.0.1: files at its URLs (/REPO/resolve/REVISION/FILE), with the
headers huggingface_hub reads (the commit, the LFS ETag that is the file's SHA-256, the size), ranges, a
connection that drops halfway, and a redirect of the file's bytes to another host (the Hub's file store), on
request."""

from __future__ import annotations

import hashlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeHub:
    def __init__(
        self,
        files: dict[str, bytes],
        *,
        lie_about: set[str] = frozenset(),
        cut: dict[str, int] = {},  # noqa: B006
        store: FakeHub | None = None,
        slow: float = 0.0,
    ):
        self.files = files  # "owner/repo/file.gguf" -> content
        self.lie_about = lie_about  # files whose advertised SHA-256 is wrong
        self.cut = dict(cut)  # files whose first GET breaks off after this many bytes
        self.store = store  # where a GET of a file's bytes is redirected, as the Hub sends them to its file store
        self.slow = slow  # seconds a file's bytes take to send, in ten pieces (downloads that overlap)
        self.requests: list[tuple[str, str, str | None]] = []  # method, path, Range
        self.authorizations: list[str | None] = []  # each request's Authorization header
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, *, body: bool) -> None:
                hub.requests.append((self.command, self.path, self.headers.get("Range")))
                hub.authorizations.append(self.headers.get("Authorization"))
                if body and hub.store is not None:
                    self.send_response(302)
                    self.send_header("Location", hub.store.url + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                repo, _, rest = self.path.lstrip("/").partition("/resolve/")
                _revision, _, name = rest.partition("/")
                data = hub.files.get(f"{repo}/{name}")
                if data is None:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                sha = hashlib.sha256(b"other" if f"{repo}/{name}" in hub.lie_about else data).hexdigest()
                start = 0
                if (wanted := self.headers.get("Range")) and wanted.startswith("bytes="):
                    start = int(wanted.removeprefix("bytes=").split("-")[0] or 0)
                self.send_response(206 if start else 200)
                self.send_header("X-Repo-Commit", "0" * 40)
                self.send_header("X-Linked-Etag", f'"{sha}"')
                self.send_header("ETag", f'"{sha}"')
                self.send_header("X-Linked-Size", str(len(data)))
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Length", str(len(data) - start))
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.end_headers()
                if body and (after := hub.cut.pop(f"{repo}/{name}", None)) is not None:
                    self.wfile.write(data[start : start + after])  # then the connection drops
                    self.close_connection = True
                elif body and hub.slow:
                    rest = data[start:]
                    step = -(-len(rest) // 10)
                    for at in range(0, len(rest), step):
                        self.wfile.write(rest[at : at + step])
                        self.wfile.flush()
                        time.sleep(hub.slow / 10)
                elif body:
                    self.wfile.write(data[start:])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
