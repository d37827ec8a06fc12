"""No message of the bot's pings anyone (F29): not the GM's words, not a player's, not a character's name."""

from __future__ import annotations

import discord

from bot.engine import Engine
from bot.model import ScriptedModel


def pings(simcord_env, channel) -> list[tuple[str, list[int], list[int], bool]]:
    """Every message in the channel with what it pinged: users, roles, everyone."""
    stored = simcord_env.backend.messages.get(channel.id, {}).values()
    return [(m.content, list(m.ping_user_ids), list(m.ping_role_ids), m.mention_everyone) for m in stored]


async def test_neither_the_gm_nor_a_player_nor_a_name_can_ping(simcord_env, table, engine: Engine, scripted):
    channel, maya, tom, admin = table
    everyone = simcord_env.guild.create_role("Everyone-ish", mentionable=True)
    # The bot may mention everyone in this server: only its own restraint keeps it quiet.
    bot_role = simcord_env.guild.create_role("Bot", permissions=discord.Permissions(mention_everyone=True))
    simcord_env.guild.member(simcord_env.bot.user.id).add_roles(bot_role) if hasattr(
        simcord_env.guild, "member"
    ) else None
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    scripted.enqueue(
        f"@everyone, hear this! <@{tom.id}> and <@&{everyone.id}> come running up the spiral stair, boots ringing "
        "on the iron. @here"
    )
    await maya.slash(channel, "act", action=f"I shout @everyone and <@{tom.id}> and <@&{everyone.id}>!")
    await maya.slash(channel, "pin", fact=f"<@{tom.id}> owes @everyone money")
    await maya.slash(channel, "roll", dice="1d20")
    sent = pings(simcord_env, channel)
    assert any("hear this" in content for content, *_ in sent), "the GM's reply was posted"
    assert [m for m in sent if m[1] or m[2] or m[3]] == [], "nothing pinged"


async def test_an_echoed_action_shows_its_markdown_as_typed(simcord_env, table, scripted: ScriptedModel):
    channel, maya, _, _ = table
    await maya.slash(channel, "game start", world="lighthouse")
    await maya.slash(channel, "join", name="Maya")
    echoed = await maya.slash(channel, "act", action="I whisper **loudly** and ||spoil|| it")
    assert echoed.response.content == "**Maya**: I whisper \\*\\*loudly\\*\\* and \\|\\|spoil\\|\\| it"
