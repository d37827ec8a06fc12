"""The buttons under the game's messages: Retry under a turn the GM did not answer, Join under an opening, and
the form Join opens. Each is bound to its game (and turn), so one left from an earlier turn or game says so and
changes nothing; their ids survive restarts, as discord.py's dynamic items are matched by pattern."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, cast

import discord
from discord import app_commands

from bot.errors import UserError
from cogs.access import bot_of

if TYPE_CHECKING:
    from cogs.game import GameCog

log = logging.getLogger(__name__)

LEGACY_IDS = ("gm:retry", "gm:join")  # buttons posted before ids named their game
STALE = "That button belongs to an earlier {what}; nothing was changed. {instead}"


class RetryButton(discord.ui.DynamicItem[discord.ui.Button], template=r"gm:retry:(?P<game>\d+):(?P<turn>\d+)"):
    """Retry under a turn the GM did not answer: it answers that turn of that game, or says it is stale."""

    def __init__(self, game_id: int, turn: int) -> None:
        super().__init__(
            discord.ui.Button(label="Retry", emoji="🔁", style=discord.ButtonStyle.primary,
                              custom_id=f"gm:retry:{game_id}:{turn}")
        )  # fmt: skip
        self.game_id, self.turn = game_id, turn

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> RetryButton:
        return cls(int(match["game"]), int(match["turn"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        cog = _game_cog(interaction)
        try:
            await cog.check_access(interaction, "retry")
            game = await cog.game_here(interaction)
            if game.id != self.game_id or self.turn not in {e.turn for e in await cog.engine.unanswered(game.id)}:
                await _stale(interaction, "turn", "Use /retry to write the last reply again.")
                return
            await cog.answer_again(interaction)
        except (app_commands.CheckFailure, UserError) as refused:  # told to the presser, as for /retry
            await bot_of(interaction).on_app_command_error(interaction, refused)
            return
        await _take_buttons_off(interaction)  # answered: the button has done its work


class JoinButton(discord.ui.DynamicItem[discord.ui.Button], template=r"gm:join:(?P<game>\d+)"):
    """Join under a game's opening: it asks for a name, as /join does, while that game is the channel's."""

    def __init__(self, game_id: int) -> None:
        super().__init__(
            discord.ui.Button(label="Join", emoji="🎲", style=discord.ButtonStyle.success,
                              custom_id=f"gm:join:{game_id}")
        )  # fmt: skip
        self.game_id = game_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> JoinButton:
        return cls(int(match["game"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        cog = _game_cog(interaction)
        try:
            await cog.check_access(interaction, "join")
            game = await cog.game_here(interaction)  # a game ended since: say so rather than ask for a name
        except (app_commands.CheckFailure, UserError) as refused:
            await bot_of(interaction).on_app_command_error(interaction, refused)
            return
        if game.id != self.game_id:
            await _stale(interaction, "game", "Join this one with /join, or the button under its opening.")
            return
        await interaction.response.send_modal(JoinForm())


class LegacyButtons(discord.ui.View):
    """Buttons posted before their ids named a game: they say to use the command, and change nothing."""

    def __init__(self) -> None:
        super().__init__(timeout=None)

    @discord.ui.button(label="Retry", custom_id=LEGACY_IDS[0])
    async def retry(self, interaction: discord.Interaction, _button: discord.ui.Button) -> None:
        await _stale(interaction, "version of the bot", "Use /retry.")

    @discord.ui.button(label="Join", custom_id=LEGACY_IDS[1])
    async def join(self, interaction: discord.Interaction, _button: discord.ui.Button) -> None:
        await _stale(interaction, "version of the bot", "Use /join.")


def _game_cog(interaction: discord.Interaction) -> GameCog:
    """The GameCog, which adds these buttons to the bot: loaded whenever one can be pressed."""
    cog = bot_of(interaction).get_cog("GameCog")
    if cog is None:
        raise RuntimeError("a game's button was pressed with no GameCog loaded")
    # The cog of that name is a GameCog; its class cannot be imported here to check (cogs.game imports this module).
    return cast("GameCog", cog)


async def _stale(interaction: discord.Interaction, what: str, instead: str) -> None:
    await interaction.response.send_message(STALE.format(what=what, instead=instead), ephemeral=True)


async def _take_buttons_off(interaction: discord.Interaction) -> None:
    message = interaction.message
    if message is None:  # a button's interaction always has the message it is under
        return
    try:
        await message.edit(view=None)
    except discord.HTTPException:
        log.info("Could not take the buttons off message %s", message.id)


def retry_view(game_id: int, turn: int) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(RetryButton(game_id, turn))
    return view


def join_view(game_id: int) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(JoinButton(game_id))
    return view


class JoinForm(discord.ui.Modal, title="Join the game"):
    character: discord.ui.TextInput[JoinForm] = discord.ui.TextInput(
        label="Your character's name", custom_id="character", max_length=40
    )
    about: discord.ui.TextInput[JoinForm] = discord.ui.TextInput(
        label="A few words about them", custom_id="about", style=discord.TextStyle.paragraph, required=False,
        max_length=300,
    )  # fmt: skip

    async def on_submit(self, interaction: discord.Interaction) -> None:
        cog = _game_cog(interaction)
        try:
            await cog.join_as(interaction, self.character.value, self.about.value or "")
        except (app_commands.CheckFailure, UserError) as refused:
            await bot_of(interaction).on_app_command_error(interaction, refused)
