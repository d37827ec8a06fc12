"""The memory's defaults sized for the model's context."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.memory.compaction import plan_compaction
from bot.memory.config import MemoryConfig, fitted
from bot.store.models import EntryKind, LogEntry, Visibility


def test_a_smaller_context_scales_what_nobody_set_and_keeps_what_an_admin_did():
    small = fitted(MemoryConfig(), 4096)
    assert small.budgets.recall == 200 and small.budgets.lore == 200 and small.story_words == 200
    assert small.budgets.secrets == 600  # the world's truths are never scaled down
    assert small.protected_tail == 2  # the last exchange stays whole; the room is for the turns since the fold
    assert fitted(MemoryConfig(), 1024).protected_tail == 2  # never under one exchange
    assert fitted(MemoryConfig(), 8192) == MemoryConfig() and fitted(MemoryConfig(), 32768) == MemoryConfig()
    chosen = MemoryConfig(protected_tail=6, story_words=300)
    assert fitted(chosen, 4096).protected_tail == 6 and fitted(chosen, 4096).story_words == 300


def test_at_a_small_context_a_fold_keeps_only_the_last_exchange_whole():
    log = [
        LogEntry(
            id=n,
            game_id=1,
            turn=(n + 1) // 2,
            kind=EntryKind.ACTION if n % 2 else EntryKind.GM,
            author="maya" if n % 2 else "GM",
            content=f"message {n}",
            visibility=Visibility.PUBLIC,
            created_at=datetime.now(UTC),
        )
        for n in range(1, 11)
    ]
    chunks = plan_compaction(log, [10] * len(log), fitted(MemoryConfig(), 4096), force=True)
    assert [e.id for c in chunks for e in c.entries] == list(range(1, 9))  # messages 9 and 10 stay whole
