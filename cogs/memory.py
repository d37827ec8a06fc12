"""The memory in Discord: pins, status, recall, compaction, retries, chapters (F11, F17, F18, F19, F10)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.errors import UserError
from cogs.access import TableCog, is_admin, say_embeds, say_pages, user_key
from cogs.game import GameCog
from cogs.rendering import fit_embed, private_memory_embed, status_embed, trace_embed

if TYPE_CHECKING:
    from bot.discord_client import GameMasterBot


class MemoryCog(TableCog):
    chapter = app_commands.Group(name="chapter", description="The story's chapters")

    @app_commands.command(name="pin", description="Keep a fact in every GM prompt")
    @app_commands.describe(fact="The fact to keep")
    async def pin(self, interaction: discord.Interaction, fact: str) -> None:
        game = await self.game_here(interaction)
        result = await self.engine.pin(game.id, fact, interaction.user.display_name)
        text = f"📌 Pinned: {result.pin.text}"
        if result.moved:
            text += f"\nOver the cap, so the oldest pin moved to the facts library: {result.moved.text}"
        await interaction.response.send_message(text)

    @app_commands.command(name="unpin", description="Stop keeping a pinned fact")
    @app_commands.describe(pin="The pin's number in /pins, or the start of its text")
    async def unpin(self, interaction: discord.Interaction, pin: str) -> None:
        game = await self.game_here(interaction)
        removed = await self.engine.unpin(game.id, pin)
        await interaction.response.send_message(f"Unpinned: {removed.text}")

    @unpin.autocomplete("pin")
    async def _pins(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        game = await self.game_in(interaction.channel)
        if game is None:
            return []
        pins = await self.engine.pins(game.id)
        return [
            app_commands.Choice(name=f"{i}. {p.text}"[:100], value=str(i))
            for i, p in enumerate(pins, 1)
            if current.lower() in p.text.lower()
        ][:25]

    @app_commands.command(name="pins", description="What the GM always keeps in mind")
    async def pins(self, interaction: discord.Interaction) -> None:
        game = await self.game_here(interaction)
        pins = await self.engine.pins(game.id)
        text = "\n".join(f"{i}. {p.text}" for i, p in enumerate(pins, 1)) or "Nothing is pinned."
        await say_pages(interaction, text, ephemeral=True)

    @app_commands.command(name="memory-status", description="What the GM remembers of this game")
    async def memory_status(self, interaction: discord.Interaction) -> None:
        if interaction.guild is None:  # in a DM: the player's own memory, of every game they play
            await self._own_memory(interaction)
            return
        game = await self.game_here(interaction)
        status = await self.engine.memory_status(game.id)
        admin = await is_admin(interaction)
        await interaction.response.send_message(
            embed=fit_embed(status_embed(status, show_secrets=admin)), ephemeral=True
        )

    async def _own_memory(self, interaction: discord.Interaction) -> None:
        who = user_key(interaction.user)
        games = await self.engine.games_of(who)
        if not games:
            raise UserError("You are in no game; /join one in its channel first.")
        embeds = []
        for game in games[:10]:
            player, memory = await self.engine.private_memory(game.id, who)
            notes = await self.engine.notes(game.id, who)
            title = f"{self.engine.world_of(game).title} (#{game.id}): {player.name}'s memory"
            embeds.append(private_memory_embed(title, memory, notes))
        await say_embeds(interaction, embeds, ephemeral=True)

    @app_commands.command(name="recall", description="What the GM was given on the last turn")
    async def recall(self, interaction: discord.Interaction) -> None:
        game = await self.game_here(interaction)
        admin = await is_admin(interaction)
        player = await self.engine.player(game.id, user_key(interaction.user))
        trace = await self.engine.last_trace(game.id, player_id=player.id if player else None, everything=admin)
        if trace is None:
            raise UserError("No turn has been played yet.")
        reveals = await self.engine.uncovered_so_far(game.id) if admin else None
        embed = trace_embed(trace, show_secrets=admin, reveals=reveals)
        await interaction.response.send_message(embed=fit_embed(embed), ephemeral=True)

    @app_commands.command(name="compact", description="Summarize older turns now")
    async def compact(self, interaction: discord.Interaction) -> None:
        game = await self.game_here(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        report = await self.engine.compact(game.id)
        if report.turns is None:  # set whenever a chunk was folded
            text = "Nothing to compact: only the newest turns are unsummarized."
        else:
            first, last = report.turns
            text = (
                f"Folded {report.messages_folded} messages (turns {first}-{last}). "
                f"Short-term summary {report.short_words_before} → {report.short_words_after} words; "
                f"story {report.story_words_before} → {report.story_words_after} words."
            )
        await interaction.followup.send(text, ephemeral=True)

    @app_commands.command(name="retry", description="Answer an unanswered action, or write the GM's last reply again")
    async def retry(self, interaction: discord.Interaction) -> None:
        game_cog = self.bot.get_cog("GameCog")
        if not isinstance(game_cog, GameCog):
            raise RuntimeError("/retry needs the GameCog, which is not loaded")
        await game_cog.answer_again(interaction)

    @chapter.command(name="next", description="Finish the current chapter now")
    async def chapter_next(self, interaction: discord.Interaction) -> None:
        game = await self.game_here(interaction)
        await interaction.response.defer(thinking=True)
        report = await self.engine.next_chapter(game.id)
        after = f"Next: **{report.next}**." if report.next else "That was the last chapter."
        await say_pages(interaction, f"**{report.finished}** is done. {report.recap}\n{after}")


async def setup(bot: GameMasterBot) -> None:
    await bot.add_cog(MemoryCog(bot, bot.engine))
