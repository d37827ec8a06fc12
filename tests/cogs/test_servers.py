"""Server admins in charge: server-wide defaults, a GM role by id, and worlds of the server's own (F20, F23)."""

from __future__ import annotations

import discord
import pytest

from bot.discord_client import GameMasterBot
from bot.engine import Engine
from bot.settings import ProcessSettings
from cogs.game import world_choices
from tests.conftest import FIXTURES

WORLD = (FIXTURES / "worlds" / "lighthouse.yaml").read_bytes()


def _other_server(simcord_env):
    guild = simcord_env.create_guild("Elsewhere")
    channel = guild.create_text_channel("hall")
    admins = guild.create_role("Owners", permissions=discord.Permissions(manage_guild=True))
    owner = guild.add_member(simcord_env.create_user("olga"), roles=[admins])
    return channel, owner


async def test_server_defaults_reach_a_new_game_and_a_games_own_setting_wins(simcord_env, table, engine: Engine):
    channel, maya, _tom, admin = table
    done = await admin.slash(channel, "config set", setting="reply_tokens", value="99", scope="server")
    assert done.ephemeral and "every game in this server" in done.response.content
    await admin.slash(channel, "config set", setting="buckets.glossary", value="off", scope="server")
    await maya.slash(channel, "game start", world="lighthouse")
    game = await engine.current_game(f"discord:{channel.id}")
    assert (await engine.settings.resolved(game.id))[0] == 99
    assert not (await engine.buckets(game.id)).glossary
    shown = (await admin.slash(channel, "config show")).response.content
    assert "`reply_tokens` = 99 (this server's default)" in shown

    await admin.slash(channel, "config set", setting="reply_tokens", value="50")
    assert (await engine.settings.resolved(game.id))[0] == 50
    shown = (await admin.slash(channel, "config show")).response.content
    assert "`reply_tokens` = 50 (set for this game)" in shown
    server = (await admin.slash(channel, "config show", scope="server")).response.content
    assert "`reply_tokens` = 99" in server and "`buckets.glossary` = off" in server

    hall, olga = _other_server(simcord_env)
    await olga.slash(hall, "game start", world="lighthouse")
    elsewhere = await engine.current_game(f"discord:{hall.id}")
    assert (await engine.settings.resolved(elsewhere.id))[0] == engine.config.reply_tokens, "another server's own"


async def test_a_server_setting_out_of_range_names_the_setting_and_its_range(simcord_env, table, engine: Engine):
    channel, _maya, _tom, admin = table
    refused = await admin.slash(channel, "config set", setting="reply_tokens", value="99999", scope="server")
    assert (
        refused.ephemeral
        and refused.response.content == "reply_tokens: a whole number from 16 to 128 (the bot's host allows no more)."
    )
    assert await engine.settings.server_defaults(str(simcord_env.guild.id)) == {}
    # The host's own values are ceilings on what costs the model every server shares.
    for setting, value in (("story_words", "5000"), ("history_limit", "10000"), ("trigger_tokens", "99999")):
        refused = await admin.slash(channel, "config set", setting=setting, value=value, scope="server")
        assert refused.ephemeral and f"{setting}: at most " in refused.response.content, refused.response.content
        assert "its host's setting" in refused.response.content
    lower = await admin.slash(channel, "config set", setting="story_words", value="100", scope="server")
    assert "every game in this server" in lower.response.content, "lower is always allowed"


@pytest.mark.parametrize(("setting", "value"), [("budgets.story", "8000"), ("recall_following", "2000")])
async def test_layer_budgets_and_recall_following_are_capped_by_the_hosts_values(
    simcord_env, table, engine: Engine, setting, value
):
    channel, maya, _tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    host = (await engine.game_settings((await engine.current_game(f"discord:{channel.id}")).id))[setting]
    for scope in ("game", "server"):
        refused = await admin.slash(channel, "config set", setting=setting, value=value, scope=scope)
        assert refused.ephemeral and refused.response.content == (
            f"{setting}: at most {host} on this bot (its host's setting; every server shares the model)."
        )
    lower = await admin.slash(channel, "config set", setting=setting, value=str(host - 1))
    assert "is now" in lower.response.content


async def test_a_stored_value_past_a_ceiling_the_host_lowered_is_capped_and_config_show_says_so(
    simcord_env, table, engine: Engine, scripted, caplog
):
    """Values saved when the host allowed more (or before a setting had a ceiling) count as the ceiling now."""
    channel, maya, _tom, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    game = await engine.current_game(f"discord:{channel.id}")
    host_reply = engine.config.reply_tokens
    host_story = (await engine.game_settings(game.id))["budgets.story"]
    await engine.store.set_scope_value(f"game:{game.id}", "config", {"reply_tokens": 4000, "budgets.story": 8000})
    await engine.store.set_scope_value(f"server:{simcord_env.guild.id}", "config", {"recall_following": 2000})
    caplog.set_level("WARNING", logger="bot.engine.table.settings")
    for action in ("I wait.", "I wait again."):
        await maya.slash(channel, "act", action=action)
    assert scripted.last().max_tokens <= host_reply, "the reply is no longer than the host allows"
    reply_tokens, memory = await engine.settings.resolved(game.id)
    assert (reply_tokens, memory.budgets.story, memory.recall_following) == (
        host_reply, host_story, engine.config.memory.recall_following,
    )  # fmt: skip
    logged = [r.getMessage() for r in caplog.records if "past the host's ceiling" in r.getMessage()]
    assert sorted(logged) == sorted(
        f"Game {game.id}: its {name} of {stored} is past the host's ceiling; {most} is used"
        for name, stored, most in [("reply_tokens", 4000, host_reply), ("budgets.story", 8000, host_story),
                                   ("recall_following", 2000, engine.config.memory.recall_following)]
    ), "each logged once, however many turns read it"  # fmt: skip
    shown = (await admin.slash(channel, "config show")).response.content
    assert f"`reply_tokens` = {host_reply} (set for this game; set to 4000, capped by the bot's host)" in shown
    assert f"`budgets.story` = {host_story} (set for this game; set to 8000, capped by the bot's host)" in shown
    server = (await admin.slash(channel, "config show", scope="server")).response.content
    cap = engine.config.memory.recall_following
    assert f"`recall_following` = 2000 (capped at {cap} by the bot's host)" in server


async def test_the_gm_role_is_chosen_by_id_and_cannot_change_the_server(simcord_env, table, engine: Engine):
    channel, maya, tom, admin = table
    narrators = simcord_env.guild.create_role("Narrators")
    gm = simcord_env.guild.add_member(simcord_env.create_user("gwen"), roles=[narrators])
    await maya.slash(channel, "game start", world="lighthouse")
    refused = await gm.slash(channel, "lore add", keys="fog", content="The fog hides boats.")
    assert refused.ephemeral and "Manage Server permission or the GM role" in refused.response.content
    set_role = await admin.slash(channel, "config gm-role", role=narrators)
    assert narrators.mention in set_role.response.content
    added = await gm.slash(channel, "lore add", keys="fog", content="The fog hides boats.")
    assert added.response.content.startswith("Lore `"), "the role's members are admins of games now"
    server_wide = await gm.slash(channel, "config set", setting="pin_cap", value="3", scope="server")
    assert server_wide.ephemeral and "Manage Server" in server_wide.response.content
    not_theirs = await gm.slash(channel, "config gm-role")
    assert "Manage Server" in not_theirs.response.content
    assert await engine.servers.gm_role(str(simcord_env.guild.id)) == narrators.id


async def test_config_reset_takes_back_a_bucket_switch_at_either_scope(simcord_env, table, engine: Engine):
    channel, maya, _tom, admin = table
    await admin.slash(channel, "config set", setting="buckets.glossary", value="off", scope="server")
    await maya.slash(channel, "game start", world="lighthouse")
    game = await engine.current_game(f"discord:{channel.id}")
    await admin.slash(channel, "config set", setting="buckets.lore", value="off")
    buckets = await engine.buckets(game.id)
    assert not buckets.glossary and not buckets.lore
    reset = await admin.slash(channel, "config reset", setting="buckets.lore")
    assert "back to the default" in reset.response.content and (await engine.buckets(game.id)).lore
    reset = await admin.slash(channel, "config reset", setting="glossary", scope="server")
    assert "back to the bot's default" in reset.response.content and (await engine.buckets(game.id)).glossary
    again = await admin.slash(channel, "config reset", setting="buckets.glossary", scope="server")
    assert again.ephemeral and "'buckets.glossary' is not set for this server" in again.response.content


async def test_a_world_uploaded_in_one_server_is_played_there_only(
    simcord_env, table, engine: Engine, scripted, worlds_dir
):
    channel, maya, _tom, admin = table
    added = await admin.slash(channel, "world add", file=("cove.yaml", WORLD))
    assert "is added for this server only" in "\n".join(m.content for m in (added.response, *added.followups) if m)
    listed = (await maya.slash(channel, "world list")).response.content
    assert "(`cove`) · this server" in listed
    assert [c.value for c in world_choices(engine, "co", str(simcord_env.guild.id))] == ["cove"]
    await maya.slash(channel, "game start", world="cove")
    game = await engine.current_game(f"discord:{channel.id}")
    assert engine.world_of(game).title == "The Lighthouse at Gull Rock"

    hall, olga = _other_server(simcord_env)
    assert "cove" not in (await olga.slash(hall, "world list")).response.content
    refused = await olga.slash(hall, "game start", world="cove")
    assert refused.ephemeral and refused.response.content.startswith("Unknown world 'cove'")
    info = await olga.slash(hall, "world info", world="cove")
    assert info.ephemeral and info.response.content.startswith("Unknown world 'cove'")

    # A new process reads the server's worlds back: the game goes on.
    restarted = Engine(engine.store, engine.worker, engine.worlds, engine.config)
    await simcord_env.restart_bot(GameMasterBot(restarted, ProcessSettings(discord_token="simulated")))
    await maya.slash(channel, "join", name="Maya")
    waves = "Waves on the rocks below, slow and heavy, and under them the far clang of a bell buoy out in the fog."
    scripted.enqueue(waves)
    await maya.slash(channel, "act", action="I listen.")
    assert channel.last_message.content == waves

    removing = await admin.slash(channel, "world remove", world="cove")
    assert "/game end them first" in removing.response.content
    await admin.slash(channel, "game end")
    await admin.slash(channel, "world remove", world="cove")
    assert "cove" not in (await maya.slash(channel, "world list")).response.content
    await restarted.close()


async def test_an_upload_with_a_shipped_worlds_id_says_it_hides_that_world_and_how_to_bring_it_back(
    simcord_env, table, engine: Engine
):
    channel, _maya, _tom, admin = table
    custom = WORLD.replace(b"The Lighthouse at Gull Rock", b"Our Own Lighthouse")
    added = await admin.slash(channel, "world add", file=("lighthouse.yaml", custom))
    said = "\n".join(m.content for m in (added.response, *added.followups) if m)
    assert "**Our Own Lighthouse** (`lighthouse`) is added" in said
    assert "id of a world the bot ships" in said and "/world remove world:lighthouse" in said
    removed = await admin.slash(channel, "world remove", world="lighthouse")
    assert "is removed from this server" in removed.response.content
    info = await admin.slash(channel, "world info", world="lighthouse")
    assert info.response.embeds[0].title == "The Lighthouse at Gull Rock", "the shipped world is back"


async def test_a_shipped_world_can_be_hidden_in_one_server_and_restored(simcord_env, table, engine: Engine):
    channel, maya, _tom, admin = table
    hidden = await admin.slash(channel, "world remove", world="lighthouse")
    assert "hidden in this server" in hidden.response.content
    refused = await maya.slash(channel, "game start", world="lighthouse")
    assert refused.ephemeral and "hidden in this server" in refused.response.content
    hall, olga = _other_server(simcord_env)
    started = await olga.slash(hall, "game start", world="lighthouse")
    assert not started.ephemeral, "other servers still have it"
    await admin.slash(channel, "world restore", world="lighthouse")
    assert not (await maya.slash(channel, "game start", world="lighthouse")).ephemeral


BOMB = b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n".encode() for i in range(8)
)


@pytest.mark.parametrize(
    ("filename", "data", "problem"),
    [
        ("notes.txt", b"title: x", "a world is a YAML file"),
        ("broken.yaml", b"title: [unclosed\n", "not valid YAML"),
        ("huge.yaml", b"# " + b"x" * (1024 * 1024 + 10), "the limit is 1.0 MiB"),
        ("bomb.yaml", BOMB, "expands to more than 100,000 values"),
        ("extra.yaml", WORLD + b"\nweather: stormy\n", "weather: Extra inputs are not permitted"),
        ("nested.yaml", WORLD.replace(b"pitch: A keeper", b"pitch:\n  - A keeper"), "pitch: Input should be a valid"),
        ("latin1.yaml", "title: café".encode("latin-1"), "not UTF-8"),
    ],
)
async def test_a_bad_world_upload_is_answered_with_its_problems_and_changes_nothing(
    simcord_env, table, engine: Engine, filename, data, problem
):
    channel, _maya, _tom, admin = table
    result = await admin.slash(channel, "world add", file=(filename, data))
    answers = [m for m in (result.response, *result.followups) if m is not None and m.content]
    assert answers and all(m.ephemeral for m in answers)
    text = "\n".join(m.content for m in answers)
    assert problem in text, text
    assert "Something went wrong" not in text
    assert engine.servers.own(str(simcord_env.guild.id)) == []
    assert await engine.store.scopes("server:") == {}
