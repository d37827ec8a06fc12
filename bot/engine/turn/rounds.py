"""The "round" turn policy: gather the players' actions, then narrate once for all.

A round opens with its first action and closes when every seated player
has acted or its window ends, whichever comes first; a restart keeps the
window's end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from bot.engine.table.session import Sessions
from bot.engine.table.settings import GameSettings
from bot.engine.turn.results import OnRoundClosed, OnText, RoundState, TurnResult
from bot.engine.turn.turns import Turns, coming_actions
from bot.store import Store

log = logging.getLogger(__name__)


class Rounds:
    def __init__(
        self, store: Store, settings: GameSettings, sessions: Sessions, turns: Turns, stopping: Callable[[], bool]
    ):
        self.store = store
        self.settings = settings
        self.sessions = sessions
        self.turns = turns
        self.stopping = stopping  # the process is going down: no round closes with a new model call

    async def add(
        self, game_id: int, user_key: str, text: str, *, on_closed: OnRoundClosed, message_id: str | None = None
    ) -> RoundState:
        """Store a checked action for this round; the GM answers once everyone has acted or the window ends.

        ``on_closed`` gets the GM's answer, from whichever closes the round.
        """
        _, seconds = await self.settings.turns(game_id)
        async with self.sessions[game_id].turn_lock:
            game, action = await self.turns.store_action(game_id, user_key, text, message_id)
            acted = {e.player_id for e in await coming_actions(self.store, game)}
            players = await self.store.players(game_id)
            waiting = [p.name for p in players if p.id not in acted]
        state = RoundState(action.turn, [p.name for p in players if p.id in acted], waiting, seconds)
        session = self.sessions[game_id]
        if not waiting:
            self.stop_timer(game_id)
            result = await self.close(game_id)
            if result is not None:
                await on_closed(result)
        elif session.round_timer is None or session.round_timer.done():
            session.round_timer = asyncio.create_task(self._timer(game_id, seconds, on_closed))
        return state

    def stop_timer(self, game_id: int) -> None:
        """The round's window ends without closing the round (it closes now, or its game ends)."""
        session = self.sessions[game_id]
        timer, session.round_timer = session.round_timer, None
        if timer is not None:
            timer.cancel()

    async def resume(self, game_id: int, on_closed: OnRoundClosed) -> float | None:
        """After a restart, run the window of a round that had actions and no answer; ``None`` if there is none.

        The window keeps its end: the seconds left from its first action (none, if it is already over).
        """
        policy, seconds = await self.settings.turns(game_id)
        session = self.sessions[game_id]
        pending = await coming_actions(self.store, await self.store.game(game_id))
        if policy != "round" or not pending or session.round_open:
            return None
        opened = pending[0].created_at
        opened = opened if opened.tzinfo else opened.replace(tzinfo=UTC)  # the store writes UTC
        left = max(0.0, seconds - (datetime.now(UTC) - opened).total_seconds())
        session.round_timer = asyncio.create_task(self._timer(game_id, left, on_closed))
        log.info("Game %d: the open round closes in %.0f s", game_id, left)
        return left

    async def _timer(self, game_id: int, seconds: float, on_closed: OnRoundClosed) -> None:
        await asyncio.sleep(seconds)
        self.sessions[game_id].round_timer = None
        try:
            result = await self.close(game_id)
            if result is not None:
                await on_closed(result)
        except Exception:
            log.exception("Game %d: closing the round failed; the actions are kept", game_id)

    async def close(self, game_id: int, *, on_text: OnText | None = None) -> TurnResult | None:
        """Narrate the round's actions now; ``None`` if nobody has acted since the last reply."""
        async with self.sessions[game_id].turn_lock:
            game = await self.store.game(game_id)
            if game.status != "active" or self.stopping():  # an ended game, or a process going down: no new call
                return None
            actions = await coming_actions(self.store, game)
            if not actions:
                return None
            return await self.turns.answer(game, actions[-1], on_text=on_text)
