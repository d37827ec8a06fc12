"""Several model servers: each game sticks to one, and a server that stops answering moves its games to the
others (the real failover, with two llama.cpp servers, is in test_llama_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.model.base import Answer, ChatMessage, Written
from bot.model.pool import ServerPool
from bot.model.server import ServerDown, ServerModel

HELLO = [ChatMessage(role="user", content="hello")]


class FakeServer(ServerModel):
    """A server in this process: ``down`` fails every call as an unreachable server does; ``break_after`` cuts a
    reply off after that many pieces."""

    def __init__(self, url: str):
        super().__init__(url, "m")
        self.down = False
        self.break_after: int | None = None
        self.games: list[str | None] = []

    def check(self) -> None:
        if self.down:
            raise ServerDown(f"{self.url} is not answering")

    def stream(self, messages, *, max_tokens, slot=None, stop=(), fresh=False, min_tokens=0) -> Written:
        return Written.of(lambda written: self._pieces(slot))

    def _pieces(self, slot: str | None) -> Iterator[str]:
        if self.down:
            raise ServerDown(f"{self.url} is not answering")
        self.games.append(slot)
        for n, piece in enumerate(["The ", "door ", "opens."]):
            if self.break_after is not None and n == self.break_after:
                raise ServerDown(f"{self.url} broke off its reply")
            yield piece

    def generate(self, messages, *, max_tokens) -> Answer:
        if self.down:
            raise ServerDown(f"{self.url} is not answering")
        self.games.append(None)
        return Answer(self.url)

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _pool(n: int = 3) -> tuple[ServerPool, list[FakeServer]]:
    servers = [FakeServer(f"http://10.0.0.{i}:8080/v1") for i in range(1, n + 1)]
    return ServerPool(servers), servers


def _reply(pool: ServerPool, game: str) -> str:
    return "".join(pool.stream(HELLO, max_tokens=8, slot=game))


def test_each_game_sticks_to_one_server_and_the_games_spread_over_them():
    pool, servers = _pool()
    games = [f"game:{n}" for n in range(30)]
    first = {game: pool.order(game)[0] for game in games}
    for game in games:
        assert _reply(pool, game) == "The door opens."
        assert pool.order(game)[0] is first[game]
    assert all(len(s.games) >= 5 for s in servers)  # 30 games over 3 servers, none left idle
    assert pool.parallel == 3


def test_a_server_that_stops_answering_moves_its_games_and_only_those():
    pool, servers = _pool()
    games = [f"game:{n}" for n in range(12)]
    home = {game: pool.order(game)[0] for game in games}
    dead = home["game:0"]
    dead.down = True
    for game in games:
        assert _reply(pool, game) == "The door opens."  # a call that failed before any text went on elsewhere
    moved = {game for game in games if home[game] is dead}
    for game in games:
        now = pool.order(game)[0]
        assert (now is not dead) and (now is home[game] or game in moved)
    assert not dead.games


def test_a_reply_cut_off_after_its_first_words_fails_and_the_retry_goes_elsewhere():
    pool, _ = _pool(2)
    home = pool.order("game:1")[0]
    home.break_after = 1
    pieces = pool.stream(HELLO, max_tokens=8, slot="game:1")
    assert next(pieces) == "The "
    with pytest.raises(ServerDown):
        list(pieces)  # its first words are shown: the turn fails (the action is kept for /retry)
    assert pool.order("game:1")[0] is not home
    assert _reply(pool, "game:1") == "The door opens."


def test_background_work_goes_to_the_servers_in_turn_and_none_answering_is_one_error():
    pool, servers = _pool(2)
    assert {pool.generate(HELLO, max_tokens=4).text for _ in range(4)} == {s.url for s in servers}
    for server in servers:
        server.down = True
    with pytest.raises(ServerDown, match="No model server answers"):
        pool.generate(HELLO, max_tokens=4)


def test_at_start_a_server_that_does_not_answer_is_left_out_and_none_answering_refuses():
    pool, servers = _pool(2)
    servers[0].down = True
    pool.check()
    assert all(pool.order(f"game:{n}")[0] is servers[1] for n in range(5))
    servers[1].down = True
    with pytest.raises(ServerDown, match="No model server of GM_MODEL_URL answers"):
        ServerPool(servers).check()


def _pair(stub) -> tuple[ServerPool, ServerModel, ServerModel]:
    """A pool of a misbehaving stub and a healthy one, ordered for the game asked about: the stub first."""
    from tests.model.stub_server import StubServer

    healthy = StubServer()
    healthy.__enter__()
    bad = ServerModel(stub.url, "gm", timeout=1)
    good = ServerModel(healthy.url, "gm", timeout=30)
    pool = ServerPool([bad, good])
    return pool, bad, good, healthy


def _game_on(pool: ServerPool, server: ServerModel) -> str:
    return next(g for g in (f"game:{n}" for n in range(100)) if pool.order(g)[0] is server)


def test_a_hung_server_holds_a_call_for_one_timeout_then_the_next_server_answers():
    """A server that takes calls and never answers: a read timeout is not retried with back-off (it held each call
    for minutes), the server is left out, and the call goes on to the next one."""
    import time

    from tests.model.stub_server import StubServer

    with StubServer() as stub:
        stub.hold_seconds = 60  # takes the call, says nothing
        pool, bad, good, healthy = _pair(stub)
        try:
            game = _game_on(pool, bad)
            started = time.monotonic()
            reply = "".join(pool.stream(HELLO, max_tokens=8, slot=game))
            assert reply.strip() == StubServer.REPLY and time.monotonic() - started < 4, "one timeout, not four"
            assert pool.order(game)[0] is good, "the hung server is left out for a cool-down"
            started = time.monotonic()
            assert pool.generate(HELLO, max_tokens=8).text == StubServer.REPLY
            assert time.monotonic() - started < 5, "the next call does not wait on it"
        finally:
            healthy.__exit__(None, None, None)


@pytest.mark.parametrize("mode", ["comments", "trickle"])
def test_a_server_that_streams_and_never_finishes_is_left_out_and_the_call_goes_on(mode: str):
    from tests.model.stub_server import StubServer

    with StubServer() as stub:
        stub.stream = mode
        pool, bad, good, healthy = _pair(stub)
        try:
            game = _game_on(pool, bad)
            assert "".join(pool.stream(HELLO, max_tokens=8, slot=game)).strip() == StubServer.REPLY
            assert pool.order(game)[0] is good, "left out, as one that does not answer"
        finally:
            healthy.__exit__(None, None, None)


async def test_a_hung_server_holds_only_its_own_places_and_the_others_games_do_not_wait():
    """Two servers of one place each: calls stuck on the hung one took every place of the worker, and a game of
    the healthy server waited behind them. Each server has its own places now: a call whose server is full goes
    to one with room."""
    import asyncio
    import threading
    import time

    from bot.model.worker import ModelWorker

    release = threading.Event()

    class Hung(FakeServer):
        def _pieces(self, slot):
            self.games.append(slot)
            release.wait(30)  # takes the call, says nothing
            yield "Late."

    hung, healthy = Hung("http://10.0.0.1:8080/v1"), FakeServer("http://10.0.0.2:8080/v1")
    pool = ServerPool([hung, healthy])
    hung_games = [g for g in (f"game:{n}" for n in range(100)) if pool.order(g)[0] is hung][:2]
    healthy_game = next(g for g in (f"game:{n}" for n in range(100)) if pool.order(g)[0] is healthy)
    try:
        async with ModelWorker(pool) as worker:

            async def reply(game: str) -> str:
                return "".join([piece async for piece in worker.stream(HELLO, max_tokens=8, slot=game, label=game)])

            stuck = asyncio.create_task(reply(hung_games[0]))
            await asyncio.sleep(0.2)
            started = time.monotonic()
            moved = await asyncio.wait_for(reply(hung_games[1]), 5)
            own = await asyncio.wait_for(reply(healthy_game), 5)
            assert moved == own == "The door opens." and time.monotonic() - started < 5
            release.set()
            assert await stuck == "Late."
    finally:
        release.set()


def test_a_pool_says_its_models_size_and_trained_context_and_start_up_uses_them(worlds_dir):
    """Several ``GM_MODEL_URL`` servers that say their model's size and trained context (llama.cpp's /models): the
    pool declares them as one server would, so a small model gets the small model's defaults and a context longer
    than it was trained for is refused, as with one server."""
    from bot.errors import UserError
    from bot.model.sizing import SMALL
    from bot.settings import ProcessSettings
    from bot.startup import check_context, load_model, settle_for_model
    from bot.worlds import WorldLibrary
    from tests.model.stub_server import StubServer

    meta = {"n_params": 135_000_000, "n_ctx_train": 8192}
    with StubServer() as a, StubServer() as b:
        a.models = {"data": [{"id": "gm", "meta": meta}]}
        b.models = {"data": [{"id": "gm", "meta": {**meta, "n_ctx_train": 4096}}]}
        settings = ProcessSettings(model_url=f"{a.url},{b.url}", model_name="gm", n_ctx=6144)
        pool = load_model(settings)
        assert isinstance(pool, ServerPool)
        assert (pool.parameters, pool.trained_context) == (135_000_000, 4096)
        settle_for_model(settings, pool)
        assert settings.reply_tokens == SMALL.reply_tokens and settings.temperature == SMALL.temperature
        with pytest.raises(UserError, match="was trained for 4096 tokens of context; set GM_N_CTX to 4096 or less"):
            check_context(settings, pool, WorldLibrary(worlds_dir))
        pool.close()
