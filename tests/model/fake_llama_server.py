"""A stand-in for llama.cpp's server, run as its binary by tests of the bot's supervision: the routes the bot uses
(health, the model list, chat completions whole and streamed, slot saves), a fixed reply, nothing loaded."""

from __future__ import annotations

import argparse
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = "The lamp flickers, and the rain goes on. What do you do?"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", required=True)
    args, _ = parser.parse_known_args()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args) -> None:
            pass

        def _json(self, data: dict) -> None:
            body = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._json({"status": "ok"})
            elif self.path == "/v1/models":
                self._json({"data": [{"id": args.alias}]})
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            key = os.environ.get("LLAMA_API_KEY")
            if key and self.headers.get("Authorization") != f"Bearer {key}":  # as llama-server checks its key
                self.send_error(401)
                return
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            if self.path.startswith("/slots/"):
                self._json({})
            elif self.path == "/tokenize":
                self._json({"tokens": list(range(len(str(request.get("content", "")).split())))})
            elif self.path == "/v1/chat/completions" and request.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for word in REPLY.split(" "):
                    chunk = {"choices": [{"delta": {"content": word + " "}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                end = {"choices": [{"delta": {}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 12}}  # fmt: skip
                self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
            elif self.path == "/v1/chat/completions":
                self._json({"choices": [{"message": {"content": REPLY}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 12}})  # fmt: skip
            else:
                self.send_error(404)

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
