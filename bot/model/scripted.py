"""A model for tests: answers what it was told to, records what it was asked."""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bot.model.base import Answer, CallStats, ChatMessage, Interrupted, LanguageModel, Messages, StreamCall, Written

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
    kind: str  # "generate", "stream", "json" or "prefill"
    messages: list[ChatMessage]
    max_tokens: int
    schema: dict | None = None
    slot: str | None = None
    fresh: bool = False  # asked not to repeat its context
    min_tokens: int = 0  # asked not to end before this many tokens

    @property
    def prompt_text(self) -> str:
        return "\n".join(m.content for m in self.messages)


# What the GM says when no reply is queued: as many words as a GM's reply (bench quality counts a shorter one thin).
DEFAULT_REPLY = "The GM nods; rain drums on the slate roof, and the lamps gutter low in the draught."


class ScriptedModel(LanguageModel):
    """Replies come from :meth:`enqueue` in order, then from ``default``.

    A reply may be a string, an exception to raise, or a function of the
    messages (to answer from the prompt). ``block`` holds every call until
    it is set, so a test can see what queues up behind a running job; a
    held call that may be interrupted (the worker set ``stop``) gives way
    with :class:`Interrupted`, as the real model does between tokens.
    ``started`` lists calls as they begin, ``calls`` as they are answered.

    It keeps a stand-in for the model's cache: the text of the last call's
    prompt and reply, and of each slot's last call, so each call's figures
    say how much of its prompt a real model could have reused.
    """

    name = "scripted"
    placement = "in the test harness (no real model)"

    def __init__(self, default: Reply = DEFAULT_REPLY, *, chunk_chars: int = 8):
        self.default = default
        self.chunk_chars = chunk_chars
        self.calls: list[Call] = []
        self.started: list[Call] = []
        self.interrupted = 0
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.block = threading.Event()
        self.block.set()
        self._cached = ""
        self._slots: dict[str, str] = {}
        self.prefilled: list[Call] = []  # prompts read ahead of a turn (see bot.engine.turn.warmup)
        self.dropped: list[str] = []  # slots whose state was dropped (their game ended)

    def last(self, kind: str = "stream") -> Call:
        """The latest call of one kind ("stream" is a GM turn), whatever background jobs asked since."""
        with self._lock:
            return next(call for call in reversed(self.calls) if call.kind == kind)

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def generate(self, messages: Messages, *, max_tokens: int) -> Answer:
        return self._answer(Call("generate", list(messages), max_tokens))

    def _write(self, call: StreamCall, written: Written) -> Iterator[str]:
        answer = self._answer(Call(
            "stream", list(call.messages), call.max_tokens, slot=call.slot, fresh=call.fresh, min_tokens=call.min_tokens
        ))  # fmt: skip
        written.stats = answer.stats
        text = answer.text
        cuts = [text.find(s) for s in call.stop if s in text]
        text = text[: min(cuts)] if cuts else text  # as a model ends at a stop string
        for start in range(0, len(text), self.chunk_chars):
            if self.stop is not None and self.stop.is_set():
                raise Interrupted()
            yield text[start : start + self.chunk_chars]

    def generate_json(self, messages: Messages, schema: dict, *, max_tokens: int) -> Answer:
        return self._answer(Call("json", list(messages), max_tokens, schema))

    def count_tokens(self, text: str) -> int:
        # Deterministic and close to real tokenizers for English prose.
        return (len(text) + 3) // 4

    def prefill(self, messages: Messages, *, slot: str) -> CallStats:
        """Held by ``block`` like any call; recorded in ``prefilled`` (not ``calls``), and kept as the slot's
        state, as a real model keeps what it read."""
        started = time.perf_counter()
        self._wait()
        call = Call("prefill", list(messages), 0, slot=slot)
        with self._lock:
            self.prefilled.append(call)
        return self._remember(call, "", started)

    def drop_state(self, slot: str) -> None:
        with self._lock:
            self._slots.pop(slot, None)
            self.dropped.append(slot)

    def _wait(self) -> None:
        while not self.block.wait(0.005):
            if self.stop is not None and self.stop.is_set():
                self.interrupted += 1
                raise Interrupted()

    def _answer(self, call: Call) -> Answer:
        started = time.perf_counter()
        with self._lock:
            self.started.append(call)
        self._wait()
        with self._lock:
            self.calls.append(call)
            reply = self._replies.popleft() if self._replies else self.default
        if isinstance(reply, Exception):
            raise reply
        text = reply(call.messages) if callable(reply) else reply
        return Answer(text, self._remember(call, text, started))

    def _remember(self, call: Call, reply: str, started: float) -> CallStats:
        """Figures as a prefix-caching model would have them: what of the prompt it already held."""
        prompt = "".join(f"<{m.role}>{m.content}</{m.role}>" for m in call.messages) + "<assistant>"
        live = len(os.path.commonprefix([self._cached, prompt]))
        saved = len(os.path.commonprefix([self._slots.get(call.slot or "", ""), prompt])) if call.slot else 0
        total = self.count_tokens(prompt)
        reused_tokens = min(total, self.count_tokens(prompt[: max(live, saved)]))
        self._cached = prompt + reply
        if call.slot is not None:
            self._slots[call.slot] = self._cached
        return CallStats(
            prompt_tokens=total,
            reused_tokens=reused_tokens,
            evaluated_tokens=total - reused_tokens,
            generated_tokens=self.count_tokens(reply),
            first_token_seconds=time.perf_counter() - started,
            seconds=time.perf_counter() - started,
            state_restored=saved > live,
        )
