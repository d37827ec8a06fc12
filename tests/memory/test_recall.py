"""Which recalled fragments a turn is offered, and in which order."""

from __future__ import annotations

from bot.engine.ledger import _meaning_leads
from bot.memory.context import BEST_MATCHES
from bot.memory.recall import fragments
from bot.store.models import RecallHit


def hit(n: int, text: str = "") -> RecallHit:
    return RecallHit(ref=f"entry:{n}", text=text or f"GM: line {n}.", turn=n, score=0.0)


def test_a_text_told_again_at_another_turn_is_offered_once():
    mucking, clue = "GM: Pip is mucking out the stables.", "GM: Pip swears he saw a rider at midnight."
    hits = [hit(174, mucking), hit(141, mucking), hit(3, clue), hit(102, mucking)]
    items = fragments(hits, set(), {"entry"})
    assert [item.ref for item in items] == ["entry:174", "entry:3"]


def test_the_first_fragment_recall_by_meaning_ranked_gets_a_place_among_the_best_matches():
    fused = [hit(n) for n in (110, 304, 10, 106, 44, 12, 143)]
    by_meaning = [hit(999), hit(12), hit(110)]  # its first is one the turn may not see, its second the clue
    order = [h.turn for h in _meaning_leads(fused, by_meaning)]
    assert order[:BEST_MATCHES] == [110, 304, 12] and sorted(order) == sorted(h.turn for h in fused)
    assert order[BEST_MATCHES:] == [10, 106, 44, 143], "the rest keep their fused order"

    already = [h.turn for h in _meaning_leads(fused, [hit(304)])]
    assert already == [h.turn for h in fused], "one that is among the best already stays where it is"
    assert [h.turn for h in _meaning_leads(fused, [])] == [h.turn for h in fused]
