"""Who may do what: the one table of commands, standings and the permissions the bot needs."""

from __future__ import annotations

from types import SimpleNamespace

from bot.access import (
    COMMANDS,
    STANDINGS,
    Access,
    Standing,
    access_table,
    allows,
    cannot_post,
    missing_permissions,
    needs_game,
)


def test_standings_add_up_and_the_owner_is_asked_of_discord_apart():
    nobody, seated, starter, admin = Standing(), Standing(seated=True), Standing(starter=True), Standing(admin=True)
    assert all(allows(Access.ANYONE, s) for s in (nobody, seated, starter, admin))
    assert [allows(Access.PLAYER, s) for s in (nobody, seated, starter, admin)] == [False, True, False, False]
    assert [allows(Access.PLAYER_OR_ADMIN, s) for s in (nobody, seated, starter, admin)] == [False, True, False, True]
    assert [allows(Access.STARTER_OR_ADMIN, s) for s in (nobody, seated, starter, admin)] == [False, False, True, True]
    assert [allows(Access.ADMIN, s) for s in (nobody, seated, starter, admin)] == [False, False, False, True]
    assert not allows(Access.OWNER, Standing(seated=True, starter=True, admin=True))


def test_only_what_depends_on_the_seats_or_the_starter_needs_the_channels_game():
    assert {access for access in Access if needs_game(access)} == {
        Access.PLAYER,
        Access.PLAYER_OR_ADMIN,
        Access.STARTER_OR_ADMIN,
    }


def test_missing_permissions_are_named_as_discord_shows_them_for_a_channel_or_a_thread():
    granted = SimpleNamespace(view_channel=True, send_messages=False, embed_links=False)
    assert missing_permissions(granted, thread=False) == ["Send Messages", "Embed Links"]
    assert missing_permissions(granted, thread=True) == ["Embed Links", "Send Messages in Threads"]
    everything = SimpleNamespace(view_channel=True, send_messages=True, embed_links=True, send_messages_in_threads=True)
    assert missing_permissions(everything, thread=False) == missing_permissions(everything, thread=True) == []


def test_a_refusal_to_post_names_what_is_missing_in_one_sentence():
    one = cannot_post(["Embed Links"])
    assert one.startswith("I cannot play here: I am missing Embed Links in this channel.") and "allow it" in one
    three = cannot_post(["View Channel", "Send Messages", "Embed Links"])
    assert "missing View Channel, Send Messages and Embed Links" in three and "allow them" in three


def test_the_table_has_a_row_per_command_and_a_column_per_standing():
    lines = access_table().splitlines()
    assert lines[0] == "| command | " + " | ".join(STANDINGS) + " | notes |"
    assert len(lines) == 2 + len(COMMANDS)
    assert lines[2 + list(COMMANDS).index("chapter next")] == "| `/chapter next` | no | no | no | yes |  |"
    assert lines[2 + list(COMMANDS).index("world reload")].startswith("| `/world reload` | no | no | no | no |")
