"""The language model: one interface, llama.cpp in process, a scripted fake."""

from bot.model.base import CallStats, ChatMessage, Interrupted, LanguageModel, Messages
from bot.model.scripted import ScriptedModel
from bot.model.structured import Structured, generate_object
from bot.model.worker import ModelWorker, Priority

__all__ = [
    "CallStats",
    "ChatMessage",
    "Interrupted",
    "LanguageModel",
    "Messages",
    "ModelWorker",
    "Priority",
    "ScriptedModel",
    "Structured",
    "generate_object",
]
