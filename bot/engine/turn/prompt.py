"""The prompt for answering an action: the game's memory and unsummarized log, built under the game's budget."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from bot.engine.secrets.clues import world_clues
from bot.engine.secrets.reveals import Reveals, reveal_notes
from bot.engine.table.config import EngineConfig
from bot.engine.table.session import Sessions
from bot.engine.table.settings import GameSettings
from bot.engine.turn.narration import room_for_notes
from bot.engine.turn.results import MODEL_FAILED, ModelFailed
from bot.engine.upkeep.memory import MemoryKeeper
from bot.memory.context import Budget, Context, build_context, shared_prefix_share, squeeze_to_fit
from bot.memory.recall import memory_brief
from bot.model.base import ModelUnavailable
from bot.model.sizing import reply_words
from bot.model.worker import ModelWorker
from bot.store import EntryKind, Game, LogEntry, NewReveal, Store, Visibility
from bot.worlds import World

log = logging.getLogger(__name__)


def told_alone(entry: LogEntry, clues: Collection[str]) -> LogEntry:
    """``entry`` as the narrator reads it where the engine holds the secrets (F39): a clue the engine gave one
    player alone, in the world's words (one of ``clues``), shows only that something was told ("[[to Maya: ]]").
    The narrator never held those words, and the default model copied such a message into later public replies
    (bench secrets: drafts stopped on "quote your instructions"). What the narrator told a player in an aside of
    its own it goes on reading: it wrote it. Shown so in every prompt, a secret action's too: a prompt that
    showed the clue on one turn only would differ from the last one there, and the model would read all that
    follows again."""
    if entry.kind is not EntryKind.GM or entry.visibility is not Visibility.PRIVATE or entry.content not in clues:
        return entry
    return entry.model_copy(update={"content": ""})


@dataclass(eq=False)
class Prompts:
    """Builds each turn's prompt; the model's context size and the guide it gets are the engine's ``config``."""

    store: Store
    worker: ModelWorker
    memory: MemoryKeeper
    settings: GameSettings
    sessions: Sessions
    world_of: Callable[[Game], World]
    config: EngineConfig
    reveals: Reveals

    async def build(
        self,
        game: Game,
        action: LogEntry,
        *,
        before_id: int | None = None,
        budget: Budget | None = None,
        remember: bool = True,
        uncovers: Sequence[NewReveal] = (),
    ) -> Context:
        """The prompt for answering ``action``, from the memory and the log before ``before_id`` (all of it when
        ``None``); ``remember``: it is a turn's, so its notes are kept with the action, and its share of the last
        prompt is measured (a preview stores nothing); ``uncovers``: what the turn's actions uncovered (F39),
        told beside the action."""
        world = self.world_of(game)
        reply_tokens, memory = await self.settings.resolved(game.id)
        budget = budget or Budget(n_ctx=self.config.n_ctx, reply_tokens=reply_tokens, **memory.budgets.model_dump())
        state = await self.store.memory_state(game.id)
        hot = await self.store.log_between(game.id, state.folded_through, before_id)
        hot = [e for e in hot if e.id != action.id][-memory.history_limit :]
        players = await self.store.players(game.id)
        view = await self.memory.view(game, state, hot, players, action, memory)
        if self.config.secrets == "held":  # what the front shows as uncovered changes when the front does
            through = max(state.folded_through, state.front.notes_through)
            view = replace(
                view, uncovered=await self.reveals.uncovered(game.id, through), example=game.id,
                reveals=reveal_notes(world, uncovers, players),
                brief=memory_brief(action.content, view.pins, view.recall),
                # Nor what each player alone knows: answering Tom needs nothing of Maya's.
                hot=[told_alone(entry, world_clues(world)) for entry in view.hot], threads=[],
            )  # fmt: skip
        previous = self.sessions[game.id].last_prompt if remember else None
        count = self.worker.count_tokens
        full_guide = self.config.full_guide

        def build() -> Context:
            fitted = replace(budget, reserve=room_for_notes(count))
            built = build_context(
                world, view, action, fitted, count, reply_words=reply_words(fitted.reply_tokens),
                full_guide=full_guide,
            )  # fmt: skip
            built = squeeze_to_fit(built, fitted.n_ctx - fitted.reserve, count)
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
