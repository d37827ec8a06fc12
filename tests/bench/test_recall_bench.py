"""bench recall's topical game: each clue's rank by words, by meaning and fused, and whether it reached the
prompt."""

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
