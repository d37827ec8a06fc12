"""/world and /lore through SimCord."""

from __future__ import annotations

from pathlib import Path

from bot.access import REFUSALS, Access
from tests.conftest import FIXTURES


async def test_world_list_info_and_reload(simcord_env, simcord_bot, table, worlds_dir: Path):
    channel, maya, _, admin = table
    listed = await maya.slash(channel, "world list")
    assert listed.ephemeral and "**The Lighthouse at Gull Rock** (`lighthouse`)" in listed.response.content
    info = await maya.slash(channel, "world info", world="lighthouse")
    fields = {f.name: f.value for f in info.response.embeds[0].fields}
    assert fields["Chapters"] == "Arrival\nThe Lamp" and fields["Characters"] == "Wren Tally"
    assert [c["value"] for c in await maya.autocomplete(channel, "world info", "world", "light")] == ["lighthouse"]
    missing = await maya.slash(channel, "world info", world="atlantis")
    assert missing.ephemeral and missing.response.content.startswith("Unknown world 'atlantis'.")

    (worlds_dir / "broken.yaml").write_text("title: only a title\n")
    refused = await maya.slash(channel, "world reload")
    assert refused.ephemeral and refused.response.content == REFUSALS[Access.OWNER]
    # The shipped worlds are every server's: a server's admin may not reload them, the bot's owner may.
    not_theirs = await admin.slash(channel, "world reload")
    assert not_theirs.ephemeral and not_theirs.response.content == REFUSALS[Access.OWNER]
    assert "for the bot's owner" in REFUSALS[Access.OWNER]
    simcord_bot.owner_id = admin.id
    reloaded = await admin.slash(channel, "world reload")
    assert "Loaded 1 worlds." in reloaded.response.content
    assert "`broken.yaml: chapters: Field required" in reloaded.response.content
    assert str(worlds_dir) not in reloaded.response.content, "no host path"


async def test_a_broken_shipped_world_asked_about_in_a_dm_shows_no_host_path(
    simcord_env, table, engine, worlds_dir: Path
):
    _channel, maya, _, _ = table
    (worlds_dir / "lighthouse.yaml").write_text("title: only a title\n")
    engine.worlds.reload()
    info = await maya.user.slash("world info", world="lighthouse")  # in a DM with the bot
    assert str(worlds_dir) not in (info.response.content or ""), info.response.content


async def test_lore_commands_change_this_games_world_book(simcord_env, table):
    channel, maya, _, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    listing = await maya.slash(channel, "lore list")
    assert "`oil-store` [oil]" in listing.response.content
    refused = await maya.slash(channel, "lore add", keys="Saltmere", content="The harbour town.")
    assert refused.ephemeral and "Manage Server" in refused.response.content
    added = await admin.slash(channel, "lore add", keys="Saltmere, harbour", content="The harbour town.")
    assert added.response.content == "Lore `saltmere` added."
    choices = await admin.autocomplete(channel, "lore remove", "entry", "salt")
    assert [c["value"] for c in choices] == ["saltmere"]
    edited = await admin.slash(channel, "lore edit", entry="saltmere", content="A grey harbour town.")
    assert edited.response.content == "Lore `saltmere` changed."
    removed = await admin.slash(channel, "lore remove", entry="weather")
    assert removed.response.content == "Lore `weather` removed from this game."
    after = (await maya.slash(channel, "lore list")).response.content
    assert "A grey harbour town." in after and "`weather`" not in after
    bad = await admin.slash(channel, "lore edit", entry="saltmere")
    assert bad.ephemeral and bad.response.content == "Give the new content, keys, priority or secret."


async def test_config_show_set_reset_are_for_admins_and_validated(simcord_env, table, engine):
    channel, maya, _, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    refused = await maya.slash(channel, "config show")
    assert refused.ephemeral and "Manage Server" in refused.response.content
    shown = await admin.slash(channel, "config show")
    assert shown.ephemeral and "`pin_cap` = 20" in shown.response.content
    assert "`budgets.recall` = 400" in shown.response.content

    done = await admin.slash(channel, "config set", setting="pin_cap", value="5")
    assert done.response.content == "`pin_cap` is now 5 in this game."
    too_big = await admin.slash(channel, "config set", setting="protected_tail", value="500")
    assert too_big.ephemeral and too_big.response.content.startswith("protected_tail: Input should be less than")
    unknown = await admin.slash(channel, "config set", setting="turbo", value="1")
    assert unknown.response.content.startswith("There is no setting 'turbo'.")
    reply = await admin.slash(channel, "config set", setting="reply_tokens", value="9999")
    assert reply.response.content == "reply_tokens: a whole number from 16 to 128 (the bot's host allows no more)."
    await admin.slash(channel, "config set", setting="buckets.recall", value="off")
    shown = (await admin.slash(channel, "config show")).response.content
    assert "`pin_cap` = 5 (set for this game)" in shown and "recall off" in shown
    choices = await admin.autocomplete(channel, "config set", "setting", "budgets.st")
    assert [c["value"] for c in choices] == ["budgets.story"]

    game = await engine.current_game(f"discord:{channel.id}")
    assert (await engine.memory_status(game.id)).pin_cap == 5
    await admin.slash(channel, "config reset", setting="pin_cap")
    assert (await engine.memory_status(game.id)).pin_cap == 20


async def test_a_path_as_a_world_name_is_refused_without_touching_the_file(
    simcord_env, table, engine, monkeypatch, tmp_path: Path
):
    import bot.worlds

    opened: list[str] = []
    real_read = bot.worlds.read_text

    def read_text(path, *args, **kwargs):
        opened.append(str(path))
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(bot.worlds, "read_text", read_text)
    secret = tmp_path / "elsewhere" / "secret.yaml"
    secret.parent.mkdir()
    secret.write_text((FIXTURES / "worlds" / "lighthouse.yaml").read_text())
    channel, maya, _, admin = table
    for name in ("/etc/shadow", "/dev/zero", str(secret), "../../etc/passwd", "lighthouse.yaml"):
        for who, command in ((maya, "world info"), (maya, "game start"), (admin, "game start")):
            answer = await who.slash(channel, command, world=name)
            text = answer.response.content
            assert answer.ephemeral and text.startswith("Unknown world '") and text.endswith("Worlds here: lighthouse.")
            assert "root:" not in text
    assert opened == [], "no file was opened for a name typed in Discord"
    assert engine.worlds.names() == ["lighthouse"]
    assert await engine.store.active_game(f"discord:{channel.id}") is None


async def test_lore_marked_secret_is_listed_to_admins_only(simcord_env, table, engine, worlds_dir: Path):
    import yaml

    channel, maya, _, admin = table
    world = yaml.safe_load((worlds_dir / "lighthouse.yaml").read_text())
    world["lore"][0]["secret"] = True
    hidden = world["lore"][0]["id"]
    (worlds_dir / "lighthouse.yaml").write_text(yaml.safe_dump(world))
    engine.worlds.reload()
    await maya.slash(channel, "game start", world="lighthouse")
    seen = (await maya.slash(channel, "lore list")).response.content
    assert f"`{hidden}`" not in seen and "1 more, marked secret, for the game's admins." in seen
    shown = (await admin.slash(channel, "lore list")).response.content
    assert f"`{hidden}`" in shown and "(secret)" in shown


async def test_lore_added_or_edited_as_secret_is_listed_to_admins_only(simcord_env, table, engine):
    channel, maya, _, admin = table
    await maya.slash(channel, "game start", world="lighthouse")
    added = await admin.slash(channel, "lore add", keys="oilcan", content="The oilcan hides the key.", secret=True)
    assert "(secret" in added.response.content
    await admin.slash(channel, "lore add", keys="gull", content="Gulls nest on the gallery.")
    seen = (await maya.slash(channel, "lore list")).response.content
    assert "oilcan" not in seen and "`gull`" in seen and "1 more, marked secret" in seen
    assert "`oilcan` [oilcan] (secret)" in (await admin.slash(channel, "lore list")).response.content

    await admin.slash(channel, "lore edit", entry="gull", secret=True)
    await admin.slash(channel, "lore edit", entry="oilcan", secret=False)
    seen = (await maya.slash(channel, "lore list")).response.content
    assert "`oilcan`" in seen and "`gull`" not in seen
    game = await engine.current_game(f"discord:{channel.id}")
    contents = {i.entry.id: (i.entry.content, i.entry.secret) for i in await engine.lore(game.id)}
    assert contents["gull"] == ("Gulls nest on the gallery.", True), "only the flag changed"
