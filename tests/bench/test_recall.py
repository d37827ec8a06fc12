"""bench recall: the topical game (each clue's rank by words, by meaning and fused, and whether it reached the
prompt), and the search times over every vector of a game."""

from __future__ import annotations

import pytest

from bot.bench.long_game import CLUES
from bot.bench.recall import _topical


@pytest.mark.llm
async def test_the_topical_game_ranks_each_clue_by_words_by_meaning_and_fused(real_embedder):
    ranks = await _topical(real_embedder, 60)
    assert len(ranks) == len(CLUES)
    for words, meaning, fused, reached in ranks:
        assert all(rank is None or rank >= 0 for rank in (words, meaning, fused))
        assert isinstance(reached, bool)
    # 60 turns of talk on the clues' subjects: the clues asked about in other words still come first, fused
    assert sum(fused is not None and fused < 3 for _, _, fused, _ in ranks) >= 7, ranks
    assert sum(reached for *_, reached in ranks) >= 7, ranks


async def test_bench_recalls_search_times_cover_every_vector_of_a_game(real_embedder):
    """bench recall's search figures: a game of fragments of one vector and of four, read once, then searched."""
    from bot.bench.recall import PARTS, _search

    (search_p50, search_p95), (query_p50, _), first_read, rows, held = await _search(real_embedder, 300)
    assert rows == 150 * sum(PARTS), "half the fragments one vector (an action), half four (a reply)"
    assert 0 < search_p50 <= search_p95 and query_p50 > 0 and first_read > 0
    assert rows * 384 <= held, "the bytes held in memory: a byte a dimension of each vector, at the least"
