"""How the GM's words look in Discord: messages split at the limit, streamed by edits, embeds made to fit."""

from __future__ import annotations

import discord

from cogs.rendering import (
    EMBEDS_TOTAL,
    LIMIT,
    StreamedReply,
    echo,
    embed_pages,
    fit_embed,
    pages,
    split_message,
    without_host_paths,
)


def test_split_message_keeps_fences_balanced_and_cuts_at_spaces():
    text = "Intro.\n```python\n" + "\n".join(f"line = {i}" for i in range(400)) + "\n```\nDone."
    pieces = split_message(text, limit=500)
    assert all(len(p) <= 500 for p in pieces)
    assert all(p.count("```") % 2 == 0 for p in pieces), "each piece renders on its own"
    assert pieces[1].startswith("```python\n")
    words = split_message("word " * 300, limit=100)
    assert all(not p.endswith("wor") for p in words) and " ".join(words).split() == ["word"] * 300


class _Posted:
    """Stands in for a posted discord.Message: records its edits."""

    def __init__(self, content: str):
        self.content = content
        self.edits: list[str] = []

    async def edit(self, *, content: str) -> None:
        self.content = content
        self.edits.append(content)


async def test_streamed_reply_edits_at_most_once_a_second_then_shows_the_whole_text():
    from cogs.rendering import StreamedReply

    now = [0.0]
    posted: list[_Posted] = []

    async def send(text: str) -> _Posted:
        posted.append(_Posted(text))
        return posted[-1]

    reply = StreamedReply(send, clock=lambda: now[0])
    for i in range(30):  # thirty pieces over three seconds
        now[0] = 1.0 + i * 0.1
        await reply.feed(f"word{i} ")
    assert len(posted) == 1
    assert len(posted[0].edits) <= 3, "one edit a second at most"
    text = " ".join(f"word{i}" for i in range(30))
    await reply.finish(text)
    assert posted[0].content == text and len(posted) == 1


async def test_the_streaming_preview_never_exceeds_a_message():
    posted: list[str] = []

    class Posted:
        async def edit(self, *, content: str) -> None:
            posted.append(content)

    async def send(text: str) -> Posted:
        posted.append(text)
        return Posted()

    now = [0.0]
    reply = StreamedReply(send, clock=lambda: now[0])
    for size in (1990, 9, 1, 1, 500):
        now[0] += 2
        await reply.feed("y" * size)
    assert posted and max(map(len, posted)) <= LIMIT


def test_an_oversized_embed_is_shortened_visibly_and_grouped_to_fit():
    embed = discord.Embed(title="Memory", description="d" * 5000)
    for n in range(30):
        embed.add_field(name=f"field {n}", value="v" * 2000, inline=False)
    fitted = fit_embed(embed)
    assert len(fitted) <= EMBEDS_TOTAL and len(fitted.fields) <= 25
    assert len(fitted.description) <= 4096 and fitted.description.endswith("…")
    assert all(len(f.value) <= 1024 for f in fitted.fields)
    groups = embed_pages([discord.Embed(title=str(n), description="z" * 2500) for n in range(7)])
    assert [len(g) for g in groups] == [2, 2, 2, 1]
    assert all(sum(len(e) for e in g) <= EMBEDS_TOTAL for g in groups)


def test_an_echoed_action_shows_the_players_words_as_typed_under_their_name_in_bold():
    assert echo("*Maya*", "  I take the __key__.  ") == "**\\*Maya\\***: I take the \\_\\_key\\_\\_."


def test_a_long_listing_is_paged_whole_with_each_page_numbered_and_a_short_one_is_left_as_it_is():
    text = "word " * 1000
    listed = pages(text, limit=300)
    assert len(listed) > 1 and all(len(page) <= 300 for page in listed)
    assert [page.rsplit("\n", 1)[1] for page in listed] == [f"({n}/{len(listed)})" for n in range(1, len(listed) + 1)]
    assert " ".join(page.rsplit("\n", 1)[0] for page in listed).split() == text.split()
    assert pages("A short note.") == ["A short note."]


def test_absolute_paths_lose_their_folders_and_links_and_relative_paths_are_kept():
    text = "Could not read /srv/bot/worlds/x.yaml: bad; see https://example.com/a/b and ./rel/path.yaml"
    assert without_host_paths(text) == "Could not read x.yaml: bad; see https://example.com/a/b and ./rel/path.yaml"
