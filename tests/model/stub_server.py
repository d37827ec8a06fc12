"""A stand-in for an OpenAI-compatible model server on 127.0.0.1, misbehaving on request.

It answers ``/v1/models``, ``/v1/chat/completions`` (streamed or whole), llama.cpp's ``/tokenize`` and
``/v1/embeddings``, and records every request with its headers. What it does wrong is set by its attributes,
which a test may change while it runs.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StubServer:
    REPLY = "The lamp flickers and the stair creaks."

    def __init__(self, name: str = "gm"):
        self.name = name
        self.reply = self.REPLY
        self.tokenize_seconds = 0.0  # a slow tokenizer
        self.tokenize_status = 200  # a failing one: 500
        # "whole"; "cut" (no finish reason, no [DONE]); "endless" (ignores max_tokens); endless with no text:
        # "empty" (events with empty deltas), "comments" (keep-alive comments), "trickle" (one line a byte at a time)
        self.stream = "whole"
        self.trickle = False  # every JSON answer sent a byte at a time, never ending
        self.line_pad = 0  # bytes of padding in a streamed reply's first event: a long line
        self.models: object = {"data": [{"id": name}]}  # the /models answer, whatever its shape (bytes: sent as is)
        self.redirect_to: str | None = None  # answer every request with a 307 to this base URL
        self.pad_bytes = 0  # bytes of padding in each JSON answer: a huge answer
        self.embeddings_status = 200  # 404: a server without embeddings
        self.embedding_dimension = 8  # another: a server restarted with another model under the same name
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # method, path, headers
        # Seconds a chat completion waits before its first byte, as a server reading a long prompt does; a client
        # that hangs up meanwhile is seen (``hung_up``) and its call dropped.
        self.hold_seconds = 0.0
        self.hung_up = threading.Event()
        self.written_words = 0  # words sent in streamed replies
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                stub.requests.append(("GET", self.path, dict(self.headers)))
                if self._redirected():
                    return
                self._json(stub.models)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                stub.requests.append(("POST", self.path, dict(self.headers)))
                if self._redirected():
                    return
                if self.path.endswith("tokenize"):
                    time.sleep(stub.tokenize_seconds)
                    if stub.tokenize_status != 200:
                        self._json({"error": {"message": "tokenizer failed"}}, status=stub.tokenize_status)
                        return
                    self._json({"tokens": list(range(max(1, len(body.get("content", "")) // 4)))})
                elif self.path.endswith("embeddings"):
                    if stub.embeddings_status != 200:
                        self._json({"error": {"message": "no embeddings here"}}, status=stub.embeddings_status)
                        return
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    size = stub.embedding_dimension
                    data = [{"index": i, "embedding": _vector(text, size)} for i, text in enumerate(texts)]
                    self._json({"data": data, "model": stub.name})
                elif self._held():
                    return
                elif body.get("stream"):
                    self._stream(body)
                else:
                    answer = {"choices": [{"message": {"content": stub.reply}, "finish_reason": "stop"}]}
                    self._json({**answer, "usage": {"prompt_tokens": 1, "completion_tokens": 1}})

            def _held(self) -> bool:
                """Wait ``hold_seconds`` before answering; whether the client hung up meanwhile."""
                deadline = time.monotonic() + stub.hold_seconds
                while time.monotonic() < deadline:
                    ready, _, _ = select.select([self.connection], [], [], 0.02)
                    if ready and not self.connection.recv(1, socket.MSG_PEEK):
                        stub.hung_up.set()
                        self.close_connection = True
                        return True
                return False

            def _redirected(self) -> bool:
                if stub.redirect_to is None:
                    return False
                self.send_response(307)
                self.send_header("Location", stub.redirect_to.rstrip("/") + self.path.removeprefix("/v1"))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return True

            def _json(self, payload: object, *, status: int = 200) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                if stub.pad_bytes and isinstance(payload, dict):
                    data = data[:-1] + b', "pad": "' + b"x" * stub.pad_bytes + b'"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) if not stub.trickle else 2**40))
                self.end_headers()
                if stub.trickle:
                    self._trickle(data[:-1])
                    return
                self.wfile.write(data)

            def _trickle(self, start: bytes) -> None:
                """``start``, then one byte after another, until the client hangs up."""
                self.wfile.write(start)
                while True:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.02)

            def _stream(self, body: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                words = stub.reply.split()
                try:
                    if stub.stream == "endless":
                        n = 0
                        while True:  # far past max_tokens, until the client hangs up
                            self._event({"choices": [{"delta": {"content": f"word{n} "}}]})
                            n += 1
                    while stub.stream == "empty":  # a reply that never begins, until the client hangs up
                        self._event({"choices": [{"delta": {}}]})
                    while stub.stream == "comments":
                        self.wfile.write(b": keep-alive\n\n")
                    if stub.stream == "trickle":
                        self._trickle(b'data: {"choices": [{"delta": {"content": "The')
                    for i, word in enumerate(words):
                        event = {"choices": [{"delta": {"content": word + " "}}]}
                        self._event({**event, "pad": "x" * stub.line_pad} if i == 0 and stub.line_pad else event)
                    if stub.stream == "cut":
                        return  # the server died: no finish reason, no [DONE]
                    self._event({"choices": [{"delta": {}, "finish_reason": "stop"}]})
                    self.wfile.write(b"data: [DONE]\n\n")
                except OSError:
                    pass

            def _event(self, event: dict) -> None:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                stub.written_words += 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.root + "/v1"

    def __enter__(self) -> StubServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.requests]


def _vector(text: str, dimension: int = 8) -> list[float]:
    """A stable stand-in embedding: letters counted into ``dimension`` buckets."""
    vector = [0.0] * dimension
    for character in text.lower():
        vector[ord(character) % dimension] += 1.0
    return vector
