"""A model for tests: answers what it was told to, records what it was asked."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bot.model.base import ChatMessage, LanguageModel, Messages

Reply = str | Exception | Callable[[list[ChatMessage]], str]

# The background jobs that answer in JSON, by the start of their instructions, and their answer when
# they find nothing: no beat done, no new fact, no term to define.
_FOUND_NOTHING = (
    ("You track the progress", '{"done": []}'),
    ("You record the facts", '{"facts": []}'),
    ("You keep the glossary", '{"definitions": []}'),
)


def found_nothing(messages: list[ChatMessage]) -> str | None:
    """A quiet answer to a beat, fact or glossary job; ``None`` for any other call."""
    system = messages[0].content
    return next((answer for start, answer in _FOUND_NOTHING if system.startswith(start)), None)


@dataclass(frozen=True)
class Call:
    kind: str  # "generate", "stream" or "json"
    messages: list[ChatMessage]
    max_tokens: int
    schema: dict | None = None

    @property
    def prompt_text(self) -> str:
        return "\n".join(m.content for m in self.messages)


class ScriptedModel(LanguageModel):
    """Replies come from :meth:`enqueue` in order, then from ``default``.

    A reply may be a string, an exception to raise, or a function of the
    messages (to answer from the prompt). ``block`` holds every call until
    it is set, so a test can see what queues up behind a running job.
    """

    name = "scripted"

    def __init__(self, default: Reply = "The GM nods.", *, chunk_chars: int = 8):
        self.default = default
        self.chunk_chars = chunk_chars
        self.calls: list[Call] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.block = threading.Event()
        self.block.set()

    def last(self, kind: str = "stream") -> Call:
        """The latest call of one kind ("stream" is a GM turn), whatever background jobs asked since."""
        with self._lock:
            return next(call for call in reversed(self.calls) if call.kind == kind)

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def generate(self, messages: Messages, *, max_tokens: int) -> str:
        return self._answer(Call("generate", list(messages), max_tokens))

    def stream(self, messages: Messages, *, max_tokens: int) -> Iterator[str]:
        text = self._answer(Call("stream", list(messages), max_tokens))
        for start in range(0, len(text), self.chunk_chars):
            yield text[start : start + self.chunk_chars]

    def generate_json(self, messages: Messages, schema: dict, *, max_tokens: int) -> str:
        return self._answer(Call("json", list(messages), max_tokens, schema))

    def count_tokens(self, text: str) -> int:
        # Deterministic and close to real tokenizers for English prose.
        return (len(text) + 3) // 4

    def _answer(self, call: Call) -> str:
        self.block.wait()
        with self._lock:
            self.calls.append(call)
            reply = self._replies.popleft() if self._replies else self.default
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(call.messages)
        return reply
