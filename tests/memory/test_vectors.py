"""A game's vectors in memory: the parts of its fragments, their scores, and which part came nearest."""

from __future__ import annotations

from bot.memory.vectors import GameVectors


def test_a_fragment_is_found_by_its_nearest_sentence_even_where_its_whole_came_nearer():
    import numpy as np

    from bot.memory.vectors import nearest_sentence

    similar = np.array([0.2, 0.9, 0.5, 0.7, 0.4], dtype=np.float32)  # fragment A: rows 1-3, B: row 4
    assert nearest_sentence(similar, 1, 4) == 2, "the whole (0.9) is not a sentence: the second sentence (0.7) is"
    assert nearest_sentence(similar, 4, 5) == 0, "a fragment of one sentence is found by itself"


def test_recall_by_meaning_ranks_what_differs_from_the_games_common_talk_and_private_parts_move_nothing():
    """A game whose every turn talks of the same beacon: by plain cosines a filler turn that says "beacon" again
    came nearer the question than the clue, told in other words. Compared as they differ from the mean of the
    game's public parts, the clue comes first; and a witness's private fragment changes no one's scores."""
    import numpy as np

    from bot.memory.vectors import GameVectors

    def unit(*values: float) -> np.ndarray:
        vector = np.array(values, dtype=np.float32)
        return vector / np.linalg.norm(vector)

    topic, filler_way, clue_way = np.eye(4, dtype=np.float32)[:3]
    vectors = GameVectors(epoch=0, dimension=4)
    for n in range(30):
        vectors.add(n + 1, f"entry:{n}", n, None, [unit(*(topic + 0.3 * filler_way))])
    vectors.add(31, "entry:30", 30, None, [unit(*(0.6 * topic + clue_way))])
    question = unit(*(topic + 0.5 * clue_way))
    filler, clue = vectors.parts(0)[0], vectors.parts(30)[0]
    assert float(filler @ question) > float(clue @ question), "the plain cosine prefers the filler"
    scores = vectors.scores(question)
    assert scores[30] > scores[0] and np.isfinite(scores).all()
    vectors.add(32, "entry:31", 31, (7,), [unit(0.0, 0.0, 0.0, 1.0)])
    assert np.allclose(vectors.scores(question)[:31], scores, atol=1e-6)
    vectors.remove(31)  # the clue edited away: the mean is the filler's again
    assert np.isfinite(vectors.scores(question)).all()
    assert abs(vectors.scores(question)[0]) < 1e-3, "a part equal to the mean says nothing either way"


def test_a_fragments_parts_are_kept_as_8_bit_rows_next_to_each_other_and_come_back_close():
    import numpy as np

    rng = np.random.default_rng(3)
    first, second = rng.normal(size=(3, 8)).astype(np.float32), rng.normal(size=(1, 8)).astype(np.float32)
    vectors = GameVectors(epoch=0, dimension=8)
    vectors.add(10, "entry:1", 1, None, list(first))
    vectors.add(13, "entry:2", 2, (4,), list(second))
    assert (vectors.rows, vectors.dimension, vectors.ends()) == (4, 8, [3, 4])
    assert vectors.refs == ["entry:1", "entry:2"] and list(vectors.turns) == [1, 2]
    assert vectors.public.tolist() == [True, False] and vectors.private == {1: (4,)}
    assert np.allclose(vectors.parts(0), first, atol=np.abs(first).max() / 127)
    vectors.fit()
    assert vectors.rows == 4 and vectors.parts(1).shape == (1, 8)
    vectors.remove(99)  # no such fragment: nothing changes
    assert vectors.gone == 0
    vectors.remove(13)
    assert vectors.gone == 1 and vectors.private == {} and vectors.public.tolist() == [True, False]
    vectors.remove(13)
    assert vectors.gone == 1, "a fragment goes once"
