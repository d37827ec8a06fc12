"""The language model behind one small interface.

Implementations are synchronous and not safe to call concurrently: the
:class:`~bot.model.worker.ModelWorker` owns one and calls it from a thread,
one job at a time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict


class ChatMessage(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


Messages = Sequence[ChatMessage]


class LanguageModel(ABC):
    """Generate text, stream it, generate JSON for a schema, count tokens."""

    name: str = "model"

    @abstractmethod
    def generate(self, messages: Messages, *, max_tokens: int) -> str:
        """The whole reply to a chat."""

    @abstractmethod
    def stream(self, messages: Messages, *, max_tokens: int) -> Iterator[str]:
        """The reply to a chat, piece by piece as it is written."""

    @abstractmethod
    def generate_json(self, messages: Messages, schema: dict, *, max_tokens: int) -> str:
        """Raw text of a reply constrained (where the model can) to a JSON schema.

        Validation, the retry and the fallback are the caller's business:
        see :func:`bot.model.structured.generate_object`.
        """

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with the model's own tokenizer."""


# ChatML-style templates wrap each message in about five tokens of markup.
TEMPLATE_TOKENS_PER_MESSAGE = 6


def schema_for(schema_type: type[BaseModel]) -> dict:
    """The JSON schema the model's grammar is compiled from."""
    return schema_type.model_json_schema()
