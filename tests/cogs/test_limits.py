"""Every message and embed the bot sends keeps within Discord's limits, and nothing is cut silently (F29)."""

from __future__ import annotations

import pytest

from bot.engine import Engine, EngineConfig
from bot.memory.config import MemoryConfig
from bot.model import ScriptedModel
from bot.store import EntryKind
from bot.worlds import WorldLibrary
from cogs.rendering import EMBEDS_TOTAL, LIMIT


def _embeds_size(message) -> int:
    return sum(len(e) for e in message.embeds)


async def test_an_action_too_long_to_echo_is_refused_before_anything_is_stored(
    simcord_env, table, engine: Engine, scripted: ScriptedModel
):
    channel, maya, _tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    game = await engine.current_game(f"discord:{channel.id}")
    before = await engine.history(game.id, 50)
    result = await maya.slash(channel, "act", action="I shout " + "a" * 1992)
    assert result.ephemeral
    assert "the room is 1990" in result.response.content and "nothing was saved" in result.response.content
    assert await engine.history(game.id, 50) == before
    fits = await maya.slash(channel, "act", action="b" * 1990)
    assert not fits.ephemeral and len(fits.response.content) == LIMIT
    assert (await engine.history(game.id, 2))[0].kind is EntryKind.ACTION


async def test_a_players_memory_of_three_games_in_a_dm_comes_in_messages_that_fit(simcord_env, table, engine: Engine):
    _channel, maya, _tom, _admin = table
    for n in range(3):
        room = simcord_env.guild.create_text_channel(f"room-{n}")
        await maya.slash(room, "game start", world="lighthouse")
        await maya.slash(room, "join", name=f"Maya{n}")
        game = await engine.current_game(f"discord:{room.id}")
        player = await engine.player(game.id, f"discord:{maya.id}")
        summary = f"Game {n}: " + "She remembers the long night at the lighthouse. " * 80
        facts = [f"fact {i} of game {n}: " + "x" * 150 for i in range(10)]
        await engine.store.save_player_memory(game.id, player.id, summary, facts, 0, [], expect_current=None)
        await maya.slash(room, "notes", add="Ask the keeper about the lamp " * 10)
    result = await maya.user.slash("memory-status")
    messages = [m for m in (result.response, *result.followups) if m is not None]
    assert len(messages) >= 2, "three long memories do not fit one message"
    for message in messages:
        assert message.ephemeral
        assert _embeds_size(message) <= EMBEDS_TOTAL
        for embed in message.embeds:
            assert len(embed.description or "") <= 4096
            assert all(len(f.value) <= 1024 for f in embed.fields)
    titles = [e.title for m in messages for e in m.embeds]
    assert [t.split(": ")[-1] for t in titles] == ["Maya0's memory", "Maya1's memory", "Maya2's memory"]


async def test_a_long_lore_list_comes_whole_in_numbered_messages(simcord_env, table, engine: Engine):
    channel, maya, _tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    game = await engine.current_game(f"discord:{channel.id}")
    for n in range(30):
        await engine.ledger.lore_add(game.id, keys=[f"key{n}"], content=f"Entry {n}: " + "old lore " * 20)
    result = await admin.slash(channel, "lore list")
    messages = [result.response, *result.followups]
    assert len(messages) > 1
    assert all(m.ephemeral and len(m.content) <= LIMIT for m in messages)
    assert messages[-1].content.endswith(f"({len(messages)}/{len(messages)})")
    shown = "\n".join(m.content for m in messages)
    assert all(f"Entry {n}:" in shown for n in range(30)), "no entry is cut off"


async def test_long_answers_are_paged_not_refused_by_discord(simcord_env, table, engine, scripted, worlds_dir):
    """Past Discord's 2,000 characters: a world's long pitch and a long aside (a long player list and a long recap
    have tests of their own, below)."""
    import yaml

    channel, maya, tom, admin = table
    world = yaml.safe_load((worlds_dir / "lighthouse.yaml").read_text())
    world["pitch"] = "The keeper is gone and the lamp is dark. " * 90  # about 3,700 characters
    (worlds_dir / "long.yaml").write_text(yaml.safe_dump({**world, "id": "long"}))
    engine.worlds.reload()
    started = await maya.slash(channel, "game start", world="long")
    said = [m for m in (started.response, *started.followups) if m]
    assert len(said) >= 2 and all(len(m.content) <= 2000 for m in said)
    assert any(c.label == "Join" for row in said[-1].message.components for c in row.children)
    game = await engine.current_game(f"discord:{channel.id}")
    assert (await engine.history(game.id, 5))[0].content, "the opening was posted and stored"

    await maya.slash(channel, "join", name="Maya")
    fog = "Fog presses against the window as you turn the brittle pages under the lamp, one by one."
    scripted.enqueue(fog + " [[to Maya: " + "The ledger lists every ship that passed. " * 60 + "]]")
    await maya.slash(channel, "act", action="I read the ledger.")
    dms = [m.content for m in maya.user.dm_channel.history()]
    assert len(dms) >= 2 and all(len(d) <= 2000 for d in dms), "the aside arrives whole, in pieces"
    assert "".join(dms).count("The ledger lists every ship that passed.") == 60
    assert channel.last_message.content == fog, "the reply is the last word: no notice to open DMs"
    assert not any("direct messages" in m.content for m in channel.history())


async def test_the_status_of_a_table_of_fifty_five_is_paged_with_every_player(simcord_env, table, engine: Engine):
    channel, maya, tom, _admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    game = await engine.current_game(f"discord:{channel.id}")
    names = [f"Wanderer of the Northern Salt Marsh {n:02d}" for n in range(55)]  # 2,200 characters and more
    for n, name in enumerate(names):
        await engine.join(game.id, f"discord:{9000 + n}", name)
    result = await tom.slash(channel, "game status")
    messages = [m for m in (result.response, *result.followups) if m is not None]
    assert len(messages) >= 2 and all(m.ephemeral and len(m.content) <= LIMIT for m in messages)
    assert messages[-1].content.endswith(f"({len(messages)}/{len(messages)})")
    shown = " ".join(m.content.rsplit("\n", 1)[0] for m in messages)  # each page without its "(n/m)"
    assert all(name in shown for name in names), "nobody is cut off the list"


class TestALongRecap:
    @pytest.fixture
    async def engine(self, store, worker, worlds_dir):
        """A host that lets recaps run long: 300 words, about 450 at most."""
        config = EngineConfig(n_ctx=2048, reply_tokens=128, memory=MemoryConfig(recap_words=300))
        engine = Engine(store, worker, WorldLibrary(worlds_dir), config)
        yield engine
        await engine.close()

    async def test_chapter_next_with_a_long_recap_is_paged_not_refused(
        self, simcord_env, table, engine: Engine, scripted: ScriptedModel
    ):
        channel, maya, _tom, admin = table
        await maya.slash(channel, "game start", world="lighthouse")
        await maya.slash(channel, "join", name="Maya")
        await maya.slash(channel, "act", action="I read the keeper's log.")
        await engine.memory.idle()
        recap = "The keeper's log tells of storms. " * 70  # about 2,400 characters
        scripted.enqueue(recap)
        result = await admin.slash(channel, "chapter next")
        messages = [m for m in (result.response, *result.followups) if m is not None and m.content]
        assert len(messages) >= 2 and all(not m.ephemeral and len(m.content) <= LIMIT for m in messages)
        shown = " ".join(m.content for m in messages)
        assert shown.count("The keeper's log tells of storms.") == 70, "the recap comes whole"
        assert "Something went wrong" not in shown
        game = await engine.current_game(f"discord:{channel.id}")
        assert (await engine.memory_status(game.id)).chapter_index == 1
