"""What recall searches with: the scene's query, and the rankings fused with their weights."""

from __future__ import annotations

from bot.engine.upkeep.indexes import ActionRecall, FullTextRecall, MeaningRecall, Scene, recall_indexes


class _Meaning:
    """A meaning index that is on, searched by nothing here."""

    on = True


class _Off:
    on = False


def test_the_actions_words_count_twice_and_its_meaning_as_often_as_weighted():
    store = object()
    plain = recall_indexes(store, None)  # type: ignore[arg-type]
    assert [type(i) for i in plain] == [ActionRecall, ActionRecall, FullTextRecall]
    assert plain[0] is plain[1], "one index counted twice: searched once"
    weighted = recall_indexes(store, _Meaning(), meaning_weight=3)  # type: ignore[arg-type]
    assert [type(i) for i in weighted].count(MeaningRecall) == 3
    assert [type(i) for i in recall_indexes(store, _Off(), meaning_weight=3)].count(MeaningRecall) == 0  # type: ignore[arg-type]


def test_the_query_by_meaning_is_the_action_alone():
    scene = Scene(action="I follow him.", recent=["Ashby slips out through the garden door."])
    assert scene.meaning == "I follow him."
