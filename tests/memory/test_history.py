"""A game's values as histories (F40): the value that holds now in place of each superseded one, what each
replaced, and which turns told a value since changed."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.memory.history import ValueHistory
from bot.store.models import Fact, FactKind


def test_a_turn_that_told_the_value_that_holds_now_told_no_older_one():
    """The memory test's long game: "Wren Tally carried the brass key down to the cellar and left it on a barrel"
    gave two places in one turn, one superseding the other, and the turn came back marked as telling a value
    since changed, beside the key's current place it had told itself."""
    now = datetime.now(UTC)

    def fact(id_: int, value: str, turn: int, source: int, by: int | None = None) -> Fact:
        return Fact(
            id=id_,
            game_id=1,
            created_at=now,
            kind=FactKind.ITEM,
            subject="brass key",
            attribute="location",
            value=value,
            sources=(source,),
            turn=turn,
            superseded_by=by,
            superseded_turn=turn if by else None,
        )

    desk, barrel, cellar = fact(1, "on the desk", 5, 13, by=2), fact(2, "on a barrel", 150, 303, by=3), fact(
        3, "in the cellar", 150, 303)  # fmt: skip
    history = ValueHistory([desk, barrel, cellar])
    assert history.told_by(303) == [], "it told the current value"
    assert history.told_by(13) == [cellar], "the desk's turn told an older one"


def test_a_value_leads_to_the_one_that_holds_now_and_a_turn_is_told_the_later_change_of_a_thing_it_names():
    """The brass key moved twice; the oil barrel, which a turn at 60 named, was used up at turn 200."""
    now = datetime.now(UTC)

    def fact(id_: int, subject: str, attribute: str, value: str, turn: int, by: int | None = None) -> Fact:
        return Fact(
            id=id_, game_id=1, created_at=now, kind=FactKind.ITEM, subject=subject, attribute=attribute, value=value,
            sources=(100 + id_,), turn=turn, superseded_by=by, superseded_turn=turn if by else None,
        )  # fmt: skip

    desk, barrel, cellar = (fact(1, "brass key", "location", "on the desk", 5, by=2),
                            fact(2, "brass key", "location", "on a barrel", 40, by=3),
                            fact(3, "brass key", "location", "in the cellar", 150))  # fmt: skip
    used_up = fact(4, "oil barrel", "state", "used up", 200)
    history = ValueHistory([desk, barrel, cellar, used_up])
    assert history.holds_now(desk.id) == cellar and history.holds_now(barrel.id) == cellar
    assert history.holds_now(cellar.id) is None, "a value that holds now has nothing newer"
    assert history.earlier(cellar) == [barrel, desk], "newest first"
    assert history.told_by(50, "Tom rolls the oil barrel into the lamp room.", turn=60) == [used_up]
    assert history.told_by(50, "Tom rolls the cask into the lamp room.", turn=60) == [], "a turn that names neither"
    assert history.told_by(50, "Tom rolls the oil barrel into the lamp room.", turn=250) == [], "told after the change"
