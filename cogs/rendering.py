"""How the GM's words look in Discord: split at the message limit, streamed by edits."""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable

import discord

from bot.engine import GM_ONLY_LAYERS
from bot.reports import bar, last_turn, meaning_line, next_compaction, shown_items

# Discord's limits (https://discord.com/developers/docs/resources/message, embed limits).
LIMIT = 2000  # characters in a message's content
EMBED_DESCRIPTION = 4096
FIELD_VALUE = 1024
FIELD_NAME = 256
FIELDS = 25
EMBEDS_TOTAL = 6000  # characters across all of one message's embeds
EMBEDS_PER_MESSAGE = 10
EDIT_INTERVAL = 1.0  # Discord allows about five edits per five seconds per channel.
MORE = " …"  # marks a streaming preview, or text shortened to fit

_FENCE = "```"


def plain(text: str) -> str:
    """Text a player typed, shown as typed: no bold, links or spoilers of its own."""
    return discord.utils.escape_markdown(text)


def echo(name: str, action: str) -> str:
    """A player's action as the channel sees it."""
    return f"**{plain(name)}**: {plain(action.strip())}"


def split_message(text: str, limit: int = LIMIT) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at paragraph, line, sentence or word ends.

    A code fence left open by a cut is closed at the end of the piece and
    opened again at the start of the next, so Markdown renders the same.
    """
    pieces: list[str] = []
    rest = text.strip()
    reopen = ""
    while rest:
        room = limit - len(reopen) - len(_FENCE) - 1
        if len(reopen) + len(rest) <= limit:
            pieces.append(reopen + rest)
            break
        cut = _cut_point(rest, room)
        piece, rest = reopen + rest[:cut].rstrip(), rest[cut:].lstrip()
        if piece.count(_FENCE) % 2:
            language = re.search(r"```(\w*)[^`]*$", piece)
            piece += "\n" + _FENCE
            reopen = _FENCE + (language.group(1) if language else "") + "\n"
        else:
            reopen = ""
        pieces.append(piece)
    return pieces or [""]


def _cut_point(text: str, room: int) -> int:
    window = text[:room]
    for separator in ("\n\n", "\n", ". ", "! ", "? ", " "):
        at = window.rfind(separator)
        if at > room // 2:
            return at + len(separator)
    return room  # one enormous word: cut it


class StreamedReply:
    """Shows a reply as it is written, by editing one message at most once a second.

    ``send`` posts a new message; the text is finally split at the limit and
    the pieces after the first are posted in order.
    """

    def __init__(
        self,
        send: Callable[[str], Awaitable[discord.Message]],
        *,
        interval: float = EDIT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._send = send
        self._interval = interval
        self._clock = clock
        self._text = ""
        self._message: discord.Message | None = None
        self._shown = ""
        self._last_edit = 0.0
        self.messages: list[discord.Message] = []

    async def feed(self, piece: str) -> None:
        self._text += piece
        if self._clock() - self._last_edit < self._interval:
            return
        room = LIMIT - len(MORE)
        preview = split_message(self._text, room)[0] if len(self._text) > room else self._text
        await self._show(preview + MORE)

    async def finish(self, text: str) -> list[discord.Message]:
        pieces = split_message(text)
        await self._show(pieces[0])
        for piece in pieces[1:]:
            self.messages.append(await self._send(piece))
        return self.messages

    async def _show(self, text: str) -> None:
        if text == self._shown or not text.strip():
            return
        if self._message is None:
            self._message = await self._send(text)
            self.messages.append(self._message)
        else:
            await self._message.edit(content=text)
        self._shown = text
        self._last_edit = self._clock()


def pages(text: str, limit: int = LIMIT) -> list[str]:
    """A long listing as several messages, each saying which of how many it is: nothing is cut."""
    marker = " (99/99)"
    pieces = split_message(text, limit - len(marker) - 1)
    if len(pieces) == 1:
        return pieces
    return [f"{piece}\n({n}/{len(pieces)})" for n, piece in enumerate(pieces, 1)]


def fit_embed(embed: discord.Embed) -> discord.Embed:
    """One embed within Discord's limits: over-long texts are shortened with a visible "…", longest first."""
    if embed.description and len(embed.description) > EMBED_DESCRIPTION:
        embed.description = _clip(embed.description, EMBED_DESCRIPTION)
    if len(embed.fields) > FIELDS:
        hidden = len(embed.fields) - FIELDS + 1
        for _ in range(hidden):
            embed.remove_field(FIELDS - 1)
        embed.add_field(name="…", value=f"{hidden} more not shown here", inline=False)
    # A field's name and value are typed optional (an embed read from Discord); add_field makes them text.
    for i, field in enumerate(embed.fields):
        name, value = field.name or "", field.value or ""
        if len(value) > FIELD_VALUE or len(name) > FIELD_NAME:
            embed.set_field_at(i, name=_clip(name, FIELD_NAME), value=_clip(value, FIELD_VALUE), inline=field.inline)
    while len(embed) > EMBEDS_TOTAL:
        longest = max(range(len(embed.fields)), key=lambda i: len(embed.fields[i].value or ""), default=None)
        over = len(embed) - EMBEDS_TOTAL
        if longest is not None and len(value := embed.fields[longest].value or "") > 2 * over:
            field = embed.fields[longest]
            embed.set_field_at(longest, name=field.name, value=_clip(value, len(value) - over), inline=field.inline)
        elif embed.description and len(embed.description) > 2 * over:
            embed.description = _clip(embed.description, len(embed.description) - over)
        elif longest is not None:
            embed.remove_field(longest)
        else:
            break
    return embed


def embed_pages(embeds: list[discord.Embed]) -> list[list[discord.Embed]]:
    """Embeds grouped into messages that each keep within 6,000 characters and 10 embeds."""
    grouped: list[list[discord.Embed]] = []
    size = 0
    for embed in map(fit_embed, embeds):
        if not grouped or size + len(embed) > EMBEDS_TOTAL or len(grouped[-1]) == EMBEDS_PER_MESSAGE:
            grouped.append([])
            size = 0
        grouped[-1].append(embed)
        size += len(embed)
    return grouped


BAR = 12


def _bar(used: int, budget: int | None) -> str:
    return bar(used, budget, width=BAR, marks="█░", ends=("`", "`"))  # as code: a monospaced bar


def _clip(text: str, limit: int = FIELD_VALUE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_embed(status, *, show_secrets: bool) -> discord.Embed:
    """/memory-status: summaries, counts, the budget per layer, the next compaction."""
    chapter = (
        f"{status.chapter_title} ({len(status.beats_done)}/{status.beats_total} beats)"
        if status.chapter_title
        else "every chapter done"
    )
    embed = discord.Embed(
        title=f"Memory at turn {status.turn}", description=f"Chapter {status.chapter_index + 1}: {chapter}"
    )
    for recap in status.chapter_recaps[-3:]:
        embed.add_field(name="Chapter recap", value=_clip(recap.text), inline=False)
    for label, summary in (("Story so far", status.story_summary), ("Most recently", status.short_summary)):
        if summary is not None:
            embed.add_field(
                name=f"{label} (turns {summary.first_turn}-{summary.last_turn})",
                value=_clip(summary.text),
                inline=False,
            )
    embed.add_field(
        name="Counts",
        value=f"{status.messages} messages, {status.messages_summarized} summarized; "
        f"pins {status.pins}/{status.pin_cap}; facts {status.facts}; lore {status.lore_entries}; "
        f"glossary {status.glossary}",
        inline=False,
    )
    last = discord.utils.format_dt(status.last_compaction_at, "R") if status.last_compaction_at else "never"
    embed.add_field(name="Compaction", value=_clip(f"Next: {next_compaction(status)}. Last: {last}."), inline=False)
    if status.model:
        embed.add_field(name="Model", value=_clip(status.model), inline=False)
    embed.add_field(name="Recall", value=_clip(meaning_line(status)), inline=False)
    if status.last_turn is not None:
        embed.add_field(name="Last turn", value=_clip(last_turn(status.last_turn)), inline=False)
    if status.parked:
        embed.add_field(name="Parked background jobs", value=_clip("\n".join(status.parked)), inline=False)
    layers = [layer for layer in status.layers if show_secrets or layer.name not in GM_ONLY_LAYERS]
    if layers:
        embed.add_field(
            name="Last prompt per layer",
            value=_clip("\n".join(f"{layer.name}: {_bar(layer.tokens, layer.budget)}" for layer in layers)),
            inline=False,
        )
    return embed


def trace_embed(trace, *, show_secrets: bool, reveals: list[str] | None = None) -> discord.Embed:
    """/recall: each layer's tokens, what went in and what was left out for lack of room; for admins
    (``reveals``), what the players' actions uncovered so far and why."""
    embed = discord.Embed(
        title="What the GM was given last turn",
        description=f"{trace.total_tokens} of {trace.limit} tokens, {trace.reply_tokens} kept for the reply."
        + (f"\n⚠️ {trace.overflow}" if trace.overflow else ""),
    )
    for layer in trace.layers:
        if layer.name in GM_ONLY_LAYERS and not show_secrets:
            continue
        if not layer.tokens and not layer.left_out:
            continue
        value = _bar(layer.tokens, layer.budget)
        if layer.items:
            value += f"\nin: {shown_items(trace, layer, 15)}"
        if layer.left_out:
            value += f"\nleft out: {', '.join(layer.left_out[:15])}" + (" …" if len(layer.left_out) > 15 else "")
        embed.add_field(name=layer.name, value=_clip(value), inline=False)
    if reveals is not None:
        newest = "\n".join(reveals[-8:]) if reveals else "nothing yet"
        embed.add_field(name="uncovered so far (newest last)", value=_clip(newest), inline=False)
    return embed


def private_memory_embed(title: str, memory, notes: list[str]) -> discord.Embed:
    """/memory-status in a DM: what the player's character knows, and their notes."""
    if memory is None:
        embed = discord.Embed(
            title=title, description="Nothing yet: it is written in the background after each GM reply."
        )
    else:
        embed = discord.Embed(title=title, description=_clip(memory.summary, 4000))
        if memory.facts:
            embed.add_field(name="Key facts", value=_clip("\n".join(f"• {f}" for f in memory.facts)), inline=False)
    if notes:
        embed.add_field(
            name="Your notes", value=_clip("\n".join(f"{i}. {n}" for i, n in enumerate(notes, 1))), inline=False
        )
    return embed


_HOST_PATH = re.compile(r"(?<![\w/.:])/(?:[^\s/:`'\"]+/)+(?=[^\s/:`'\"]+)")


def without_host_paths(text: str) -> str:
    """``text`` with the folders of absolute paths taken out (``/srv/bot/worlds/x.yaml`` reads ``x.yaml``): members
    never see where the bot's files live."""
    return _HOST_PATH.sub("", text)
