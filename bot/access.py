"""Who may do what: one table for every command, read by the Discord layer and printed in docs/permissions.md.

A member of a server stands in up to three ways towards the game of a
channel: seated in it (joined with a character), its starter (who typed
``/game start``), and admin of the server (Manage Server, or the GM role).
Standings add up. Someone with none of them is a non-member: they may look,
start a game where there is none, and join.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Access(StrEnum):
    """Who may use a command."""

    ANYONE = "anyone"
    PLAYER = "seated players"  # the command acts as the player's character, so even an admin joins first
    PLAYER_OR_ADMIN = "seated players and admins"  # it changes the game for everyone at the table
    STARTER_OR_ADMIN = "the game's starter and admins"
    ADMIN = "admins"
    OWNER = "the bot's owner"  # the Discord application's owner or team, whatever their standing in a server


@dataclass(frozen=True)
class Standing:
    """How one person stands towards a channel's game."""

    seated: bool = False
    starter: bool = False
    admin: bool = False


@dataclass(frozen=True)
class Rule:
    access: Access
    in_dms: bool = False  # usable in a DM with the bot (everything else belongs to a server's channel)
    note: str = ""
    posts: bool = False  # the bot posts in the channel (an opening, the GM's reply): refused where it cannot


COMMANDS: dict[str, Rule] = {
    "game start": Rule(Access.ANYONE, note="where no game is running", posts=True),
    "game end": Rule(Access.STARTER_OR_ADMIN),
    "game status": Rule(Access.ANYONE),
    "join": Rule(Access.ANYONE),
    "leave": Rule(Access.PLAYER),
    "act": Rule(Access.PLAYER, posts=True),
    "whisper": Rule(Access.PLAYER),
    "roll": Rule(Access.PLAYER),
    "notes": Rule(Access.PLAYER, note="each player's own notes"),
    "pin": Rule(Access.PLAYER_OR_ADMIN),
    "unpin": Rule(Access.PLAYER_OR_ADMIN),
    "pins": Rule(Access.ANYONE),
    "memory-status": Rule(
        Access.ANYONE, in_dms=True, note="GM-only layers to admins only; in a DM, a player's own memory"
    ),
    "recall": Rule(Access.ANYONE, note="GM-only layers to admins only; a secret action's turn to its player"),
    "compact": Rule(Access.PLAYER_OR_ADMIN),
    "retry": Rule(Access.PLAYER_OR_ADMIN, note="a secret action's answer: its player or an admin", posts=True),
    "chapter next": Rule(Access.ADMIN),
    "lore list": Rule(Access.ANYONE, note="entries marked secret to admins only"),
    "lore add": Rule(Access.ADMIN),
    "lore edit": Rule(Access.ADMIN),
    "lore remove": Rule(Access.ADMIN),
    "world list": Rule(Access.ANYONE, in_dms=True, note="also in a DM"),
    "world info": Rule(Access.ANYONE, in_dms=True, note="also in a DM"),
    "world reload": Rule(Access.OWNER, note="the bot's owner only (the Discord application's owner or team)"),
    "world add": Rule(Access.ADMIN, note="Manage Server: a world for this server only"),
    "world remove": Rule(Access.ADMIN, note="Manage Server"),
    "world restore": Rule(Access.ADMIN, note="Manage Server"),
    "config show": Rule(Access.ADMIN, note="scope server: Manage Server"),
    "config set": Rule(Access.ADMIN, note="scope server: Manage Server"),
    "config reset": Rule(Access.ADMIN, note="scope server: Manage Server"),
    "config gm-role": Rule(Access.ADMIN, note="Manage Server"),
}

REFUSALS = {
    Access.PLAYER: "Join the game first with /join.",
    Access.PLAYER_OR_ADMIN: "Only players seated in this game, or admins, can do that; /join first.",
    Access.STARTER_OR_ADMIN: "Only whoever started this game, or an admin, can do that.",
    Access.ADMIN: "That needs the Manage Server permission or the GM role.",
    Access.OWNER: "That is for the bot's owner: every server shares what it changes. /world add adds a world here.",
}
IN_A_SERVER = "That works in a server's channel, not in a DM."

# What the bot needs in a game's channel, by discord.py's name for it: the game is shown there.
CHANNEL_PERMISSIONS = {
    "view_channel": "View Channel",
    "send_messages": "Send Messages",
    "embed_links": "Embed Links",
}
THREAD_PERMISSIONS = {**CHANNEL_PERMISSIONS, "send_messages_in_threads": "Send Messages in Threads"}
del THREAD_PERMISSIONS["send_messages"]
# What the invite link asks for (the link the bot prints at start): what it needs to play in channels and threads,
# Read Message History (a reply to a plain-message action refers to that message) and Add Reactions (the hourglass
# on an action that waits its turn).
INVITE_PERMISSIONS = {
    **CHANNEL_PERMISSIONS,
    "send_messages_in_threads": "Send Messages in Threads",
    "read_message_history": "Read Message History",
    "add_reactions": "Add Reactions",
}
INVITE_SCOPES = ("bot", "applications.commands")


def missing_permissions(granted: object, *, thread: bool) -> list[str]:
    """The names, as Discord's settings show them, of what the bot lacks to play in a channel or thread.

    ``granted`` has a flag per permission name (discord.py's ``Permissions``).
    """
    needed = THREAD_PERMISSIONS if thread else CHANNEL_PERMISSIONS
    return [label for name, label in needed.items() if not getattr(granted, name, False)]


def cannot_post(missing: list[str]) -> str:
    names = " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)
    return (
        f"I cannot play here: I am missing {names} in this channel. An admin can allow "
        f"{'them' if len(missing) > 1 else 'it'} in the channel's settings, under Permissions; nothing was saved."
    )


def allows(access: Access, standing: Standing) -> bool:
    """Whether a standing towards a game may; the bot's owner is none of them, and is asked of Discord apart."""
    if access is Access.ANYONE:
        return True
    if access is Access.OWNER:
        return False
    if access is Access.PLAYER:
        return standing.seated
    if access is Access.PLAYER_OR_ADMIN:
        return standing.seated or standing.admin
    if access is Access.STARTER_OR_ADMIN:
        return standing.starter or standing.admin
    return standing.admin


def needs_game(access: Access) -> bool:
    """Whether deciding needs the channel's game (who is seated, who started it)."""
    return access in (Access.PLAYER, Access.PLAYER_OR_ADMIN, Access.STARTER_OR_ADMIN)


STANDINGS = {
    "non-member": Standing(),
    "seated player": Standing(seated=True),
    "the game's starter": Standing(starter=True),
    "admin": Standing(admin=True),
}


def access_table() -> str:
    """The table as Markdown, for docs/permissions.md (a test keeps the two the same)."""
    columns = list(STANDINGS)
    lines = [
        "| command | " + " | ".join(columns) + " | notes |",
        "|---|" + "---|" * len(columns) + "---|",
    ]
    for name, rule in COMMANDS.items():
        marks = ["yes" if allows(rule.access, standing) else "no" for standing in STANDINGS.values()]
        lines.append(f"| `/{name}` | " + " | ".join(marks) + f" | {rule.note} |")
    return "\n".join(lines)
