"""The memory's slash commands through SimCord, with the scripted model."""

from __future__ import annotations

import pytest

from bot.engine import Engine
from bot.model import ScriptedModel
from tests.engine.upkeep.test_memory import scripted_memory


@pytest.fixture
async def playing(simcord_env, table, scripted: ScriptedModel):
    channel, maya, tom, admin = table
    scripted.default = scripted_memory
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    await tom.slash(channel, "join", name="Tom")
    return channel, maya, tom, admin


async def test_pins_through_slash_commands_with_autocomplete(playing, engine: Engine):
    channel, maya, tom, _ = playing
    pinned = await maya.slash(channel, "pin", fact="The lamp needs oil.")
    assert not pinned.ephemeral and pinned.response.content == "📌 Pinned: The lamp needs oil."
    await tom.slash(channel, "pin", fact="Wren lies about the storm.")
    listing = await tom.slash(channel, "pins")
    assert listing.ephemeral and listing.response.content == "1. The lamp needs oil.\n2. Wren lies about the storm."
    choices = await maya.autocomplete(channel, "unpin", "pin", "wren")
    assert [c["value"] for c in choices] == ["2"]
    removed = await maya.slash(channel, "unpin", pin="2")
    assert removed.response.content == "Unpinned: Wren lies about the storm."
    duplicate = await maya.slash(channel, "pin", fact="the lamp needs oil.")
    assert duplicate.ephemeral and duplicate.response.content == "That is pinned already."


async def test_memory_status_and_recall_show_public_layers_to_players_and_secrets_to_admins(playing, engine):
    channel, maya, _, admin = playing
    early = await maya.slash(channel, "recall")
    assert early.ephemeral and early.response.content == "No turn has been played yet."
    await maya.slash(channel, "act", action="I climb to the lamp room.")
    await engine.memory.idle()

    for command in ("recall", "memory-status"):
        seen = await maya.slash(channel, command)
        assert seen.ephemeral
        text = str(seen.response.embeds[0].to_dict())
        assert "hot" in text and "secrets" not in text, command
        assert "keeper is alive" not in text
        as_admin = await admin.slash(channel, command)
        assert as_admin.ephemeral and "secrets" in str(as_admin.response.embeds[0].to_dict()), command


async def test_memory_status_shows_what_the_last_turn_cost(playing, engine: Engine):
    channel, maya, _, _ = playing
    await maya.slash(channel, "act", action="I climb to the lamp room.")
    await maya.slash(channel, "act", action="I trim the wick.")
    await engine.memory.idle()
    status = await maya.slash(channel, "memory-status")
    fields = {f.name: f.value for f in status.response.embeds[0].fields}
    assert fields["Last turn"].startswith("first text after ")
    assert "prompt tokens (" in fields["Last turn"] and "reused from its cache" in fields["Last turn"]
    assert "of their room" in fields["Compaction"]
    assert fields["Model"] == "scripted, in the test harness (no real model)", "where the model runs"
    game = await engine.current_game(f"discord:{channel.id}")
    turn = (await engine.memory_status(game.id)).last_turn
    assert turn.prompt_tokens == turn.reused_tokens + turn.evaluated_tokens > 0
    assert turn.reused_tokens > 0, "the second turn's prompt begins with the first's"
    assert 0 <= turn.first_text_seconds <= turn.reply_seconds


async def test_compact_reports_what_it_folded(playing, engine: Engine):
    channel, maya, _, _ = playing
    for n in range(5):
        await maya.slash(channel, "act", action=f"I count the stairs, flight {n}.")
    await engine.memory.idle()
    result = await maya.slash(channel, "compact")
    assert result.ephemeral and result.response.content.startswith("Folded ")
    again = await maya.slash(channel, "compact")
    assert again.response.content.startswith("Nothing to compact")


async def test_retry_posts_a_new_reply_and_the_old_one_leaves_the_log(playing, engine, scripted: ScriptedModel):
    channel, maya, _, _ = playing
    await maya.slash(channel, "act", action="I light the lamp.")
    await engine.memory.idle()
    wick = "The wick catches at last, and a warm yellow glow spreads up the brass and over the salt-streaked glass."
    scripted.enqueue(wick)
    result = await maya.slash(channel, "retry")
    assert result.ephemeral
    assert channel.last_message.content == wick
    game = await engine.current_game(f"discord:{channel.id}")
    assert (await engine.history(game.id, 1))[0].content == wick


async def test_chapter_next_needs_an_admin(playing, engine: Engine):
    channel, maya, _, admin = playing
    refused = await maya.slash(channel, "chapter next")
    assert refused.ephemeral and refused.response.content == "That needs the Manage Server permission or the GM role."
    done = await admin.slash(channel, "chapter next")
    assert done.response.content.startswith("**Arrival** is done.")
    game = await engine.current_game(f"discord:{channel.id}")
    assert (await engine.memory_status(game.id)).chapter_index == 1
