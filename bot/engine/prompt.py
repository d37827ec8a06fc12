"""The prompt for answering an action: the game's memory and unsummarized log, built under the game's budget."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence

from bot.engine.config import EngineConfig
from bot.engine.memory import MemoryKeeper
from bot.engine.results import MODEL_FAILED, ModelFailed
from bot.engine.session import Sessions
from bot.engine.settings import GameSettings
from bot.memory.context import Budget, Context, CountTokens, build_context, shared_prefix_share, squeeze_to_fit
from bot.memory.layers import GUIDE
from bot.model.base import ChatMessage, ModelUnavailable
from bot.model.sizing import reply_words
from bot.model.worker import ModelWorker
from bot.store import EntryKind, Game, LogEntry, Store, TurnNote, Visibility
from bot.worlds import World

log = logging.getLogger(__name__)

# A model continues the pattern of its prompt: after a run of one-line GM turns the 1.5B model wrote one-liners,
# whatever the guide and the world's style asked (bench length). The guide's length is then recalled after the
# action, a note kept with it (later prompts show it again, so the prompt cache still holds them).
KEEP_LENGTH = TurnNote(layer=GUIDE, ref="length", text="(Answer in two to five sentences of story.)")
SHORT_REPLY_WORDS = 20  # a GM reply under this many words is a one-liner, short of two to five sentences
RECENT_REPLIES = 3


def ran_short(replies: Sequence[str]) -> bool:
    """Whether most of a game's last public replies (two at least) were one-liners (see :data:`KEEP_LENGTH`)."""
    replies = replies[-RECENT_REPLIES:]
    return len(replies) >= 2 and 2 * sum(len(reply.split()) < SHORT_REPLY_WORDS for reply in replies) > len(replies)


class Prompts:
    """Builds each turn's prompt; the model's context size and the guide it gets are the engine's ``config``."""

    def __init__(
        self, store: Store, worker: ModelWorker, memory: MemoryKeeper, settings: GameSettings, sessions: Sessions,
        world_of: Callable[[Game], World], config: EngineConfig,
    ):  # fmt: skip
        self.store = store
        self.worker = worker
        self.memory = memory
        self.settings = settings
        self.sessions = sessions
        self.world_of = world_of
        self.config = config

    async def build(
        self,
        game: Game,
        action: LogEntry,
        *,
        before_id: int | None = None,
        budget: Budget | None = None,
        remember: bool = True,
    ) -> Context:
        """The prompt for answering ``action``, from the memory and the log before ``before_id`` (all of it when
        ``None``); ``remember``: it is a turn's, so its notes are kept with the action, and its share of the last
        prompt is measured (a preview stores nothing)."""
        world = self.world_of(game)
        reply_tokens, memory = await self.settings.resolved(game.id)
        budget = budget or Budget(n_ctx=self.config.n_ctx, reply_tokens=reply_tokens, **memory.budgets.model_dump())
        state = await self.store.memory_state(game.id)
        hot = await self.store.log_between(game.id, state.folded_through, before_id)
        hot = [e for e in hot if e.id != action.id][-memory.history_limit :]
        view = await self.memory.view(game, state, hot, await self.store.players(game.id), action, memory)
        previous = self.sessions[game.id].last_prompt if remember else None
        count = self.worker.count_tokens
        full_guide = self.config.full_guide

        own = view.notes.get(action.id)
        said = [e.content for e in hot if e.kind is EntryKind.GM and e.visibility is Visibility.PUBLIC]
        hold_length = (
            KEEP_LENGTH in own if own is not None  # answered again: as it was asked the first time
            else self.config.hold_length and full_guide and action.visibility is Visibility.PUBLIC and ran_short(said)
        )  # fmt: skip

        def build() -> Context:
            built = build_context(
                world, view, action, budget, count, reply_words=reply_words(budget.reply_tokens),
                full_guide=full_guide,
            )  # fmt: skip
            if hold_length:
                built = _with_note(built, KEEP_LENGTH, count)
            built = squeeze_to_fit(built, budget.n_ctx, count)
            if previous is not None:
                built.trace.prefix_reuse = shared_prefix_share(previous, built.messages, count)
            return built

        try:  # counting tokens may wait on a tokenizer (a model server's): never on the loop
            context = await asyncio.to_thread(build)
        except ModelUnavailable as exc:
            log.warning("Game %d: counting the prompt's tokens failed: %s", game.id, exc)
            raise ModelFailed(MODEL_FAILED, turn=action.turn) from exc
        if not remember:
            return context
        if context.notes and action.id not in view.notes:  # kept with the action, so later prompts show it there
            await self.store.save_turn_notes(game.id, action.id, context.notes)
        log.debug("Game %d prompt:\n%s", game.id, "\n---\n".join(m.content for m in context.messages))
        return context


def _with_note(context: Context, note: TurnNote, count: CountTokens) -> Context:
    """``context`` with a guide note after its action, kept with the turn's other notes."""
    *front, last = context.messages
    context.trace.total_tokens += count(note.text) + 1
    noted = ChatMessage(role=last.role, content=f"{last.content}\n\n{note.text}")
    return dataclasses.replace(context, messages=[*front, noted], notes=(*context.notes, note))
