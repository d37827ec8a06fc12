from __future__ import annotations

from datetime import UTC, datetime

from bot.memory.context import GAME_BEGINS, build_prompt, entry_message, world_brief
from bot.store import EntryKind, LogEntry, Player, Visibility
from bot.worlds import load_world
from tests.conftest import FIXTURES

WORLD = load_world(FIXTURES / "worlds" / "lighthouse.yaml")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def words(text: str) -> int:
    return len(text.split())


def entry(i: int, kind: EntryKind, content: str, author: str = "Maya", **extra) -> LogEntry:
    return LogEntry(id=i, game_id=1, turn=i, kind=kind, author=author, content=content, created_at=NOW, **extra)


def test_the_brief_carries_rules_setting_chapter_npcs_secrets_and_players():
    maya = Player(id=1, game_id=1, user_key="u", name="Maya", description="a diver", joined_at=NOW)
    brief = world_brief(WORLD, 0, [maya], reply_words=80)
    for expected in [
        "The Lighthouse at Gull Rock",
        "under 80 words",
        "- Never reveal a truth until the players find it.",
        "A rock in a cold sea",
        "Current chapter: Arrival. Goal: Reach the tower",
        "- Someone finds the keeper's log book.",
        "- Wren Tally: The boatman",
        "Wren Tally hides: He sold the keeper's oil",
        "The keeper is alive",
        "Players: Maya (a diver).",
    ]:
        assert expected in brief


def test_log_entries_read_as_a_chat():
    assert entry_message(entry(1, EntryKind.GM, "Waves.", author="GM")).role == "assistant"
    assert entry_message(entry(2, EntryKind.ACTION, "I dive.")).content == "Maya: I dive."
    assert entry_message(entry(3, EntryKind.ROLL, "1d20: 12")).content == "[Maya rolls 1d20: 12]"
    private = entry(4, EntryKind.ACTION, "I pocket the key.", visibility=Visibility.PRIVATE, visible_to=(1,))
    assert entry_message(private).content == "(private) Maya: I pocket the key."


def test_everything_fits_when_there_is_room():
    history = [
        entry(1, EntryKind.GM, "The boat lands.", author="GM"),
        entry(2, EntryKind.ACTION, "I step ashore."),
        entry(3, EntryKind.ACTION, "I follow.", author="Tom"),
    ]
    prompt = build_prompt("Be the GM.", history, n_ctx=1000, reply_tokens=100, count_tokens=words)
    assert prompt.entry_ids == (1, 2, 3) and prompt.left_out == ()
    roles = [m.role for m in prompt.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert prompt.messages[1].content == GAME_BEGINS
    assert prompt.messages[-1].content == "Maya: I step ashore.\nTom: I follow."


def test_oldest_entries_go_first_and_the_budget_holds():
    history = [entry(i, EntryKind.ACTION if i % 2 else EntryKind.GM, "word " * 20) for i in range(1, 101)]
    prompt = build_prompt("Be the GM.", history, n_ctx=300, reply_tokens=50, count_tokens=words)
    assert prompt.tokens <= 300 - 50
    kept = prompt.entry_ids
    assert kept == tuple(range(101 - len(kept), 101)), "a contiguous run of the newest entries"
    assert prompt.left_out == tuple(range(1, 101 - len(kept)))


def test_the_new_action_goes_in_even_when_nothing_else_fits():
    history = [entry(1, EntryKind.GM, "old " * 50), entry(2, EntryKind.ACTION, "new " * 50)]
    prompt = build_prompt("Be the GM.", history, n_ctx=80, reply_tokens=10, count_tokens=words)
    assert prompt.entry_ids == (2,)
