"""Plain-text renderings of the memory's reports, for the terminal and the log."""

from __future__ import annotations

from collections.abc import Sequence

from bot.engine.upkeep.ledger import LoreListing
from bot.engine.upkeep.memory import ChapterReport, CompactionReport, SummaryInfo
from bot.engine.upkeep.status import LastTurn, MemoryStatus
from bot.memory.layers import GM_ONLY_LAYERS, ContextTrace, LayerTrace
from bot.store import Fact, PlayerMemory

BAR_WIDTH = 20


def bar(
    used: int, budget: int | None, *, width: int = BAR_WIDTH, marks: str = "#.", ends: tuple[str, str] = ("[", "]")
) -> str:
    """A layer's tokens against its budget: a bar of ``width`` marks (``marks``: filled, then empty) between
    ``ends``, then the numbers; without a budget, the tokens alone."""
    if not budget:
        return f"{used} tokens"
    filled = min(width, round(width * used / budget))
    return f"{ends[0]}{marks[0] * filled}{marks[1] * (width - filled)}{ends[1]} {used}/{budget}"


def _summary_line(label: str, summary: SummaryInfo | None) -> str:
    if summary is None:
        return f"{label}: (none yet)"
    turns = f"turns {summary.first_turn}-{summary.last_turn}" if summary.first_turn is not None else ""
    return f"{label} ({turns}, {summary.words} words): {summary.text}"


def next_compaction(status: MemoryStatus) -> str:
    """When the older turns will be summarized: a chunk closes, then waits for the recent turns to need room."""
    nxt = status.next_compaction
    kept = f"the newest {nxt.protected_tail} messages always kept whole"
    filled = "" if status.room_filled is None else f", now {min(status.room_filled, 1.0):.0%}"
    if nxt.messages_to_go == 0 or nxt.tokens_to_go == 0:
        return (
            f"a chunk is ready; it is folded when the recent turns fill {status.fold_at_percent}% of their room"
            f"{filled} ({kept})"
        )
    return (
        f"a chunk closes in {nxt.messages_to_go} messages or {nxt.tokens_to_go} tokens, and is folded when the "
        f"recent turns fill {status.fold_at_percent}% of their room{filled} ({kept})"
    )


def last_turn(turn: LastTurn) -> str:
    """The last turn's wait and what the model read of its prompt."""
    return (
        f"first text after {turn.first_text_seconds:.1f}s, whole reply {turn.reply_seconds:.1f}s; the model read "
        f"{turn.evaluated_tokens} of {turn.prompt_tokens} prompt tokens ({turn.reuse:.0%} reused from its cache) "
        f"and wrote {turn.generated_tokens}"
    )


def status_text(status: MemoryStatus) -> str:
    chapter = (
        f"{status.chapter_title} ({len(status.beats_done)}/{status.beats_total} beats)"
        if status.chapter_title
        else "every chapter done"
    )
    lines = [
        f"Turn {status.turn}, chapter {status.chapter_index + 1}: {chapter}",
        *(_summary_line(f"Chapter {i + 1} recap", r) for i, r in enumerate(status.chapter_recaps)),
        _summary_line("Story so far", status.story_summary),
        _summary_line("Most recently", status.short_summary),
        f"Messages: {status.messages}, summarized {status.messages_summarized}; "
        f"summaries written {status.summaries_written}; pins {status.pins}/{status.pin_cap}; "
        f"facts {status.facts}; lore entries {status.lore_entries}; glossary {status.glossary}",
    ]
    lines.append(f"Next compaction: {next_compaction(status)}")
    when = status.last_compaction_at.strftime("%Y-%m-%d %H:%M") if status.last_compaction_at else "never"
    lines.append(f"Last compaction: {when}" + (" (upkeep running)" if status.upkeep_running else ""))
    if status.model:
        lines.append(f"Model: {status.model}")
    lines.append(f"Recall: {meaning_line(status)}")
    if status.last_turn is not None:
        lines.append(f"Last turn: {last_turn(status.last_turn)}")
    elif status.cache_reuse is not None:
        lines.append(f"Prompt reused from the previous turn: {status.cache_reuse:.0%}")
    if status.last_error:
        lines.append(f"Last upkeep problem: {status.last_error}")
    lines += [f"Parked: {line}" for line in status.parked]
    if status.layers:
        lines.append("Last prompt, per layer:")
        lines += [f"  {layer.name:<9} {bar(layer.tokens, layer.budget)}" for layer in status.layers]
    return "\n".join(lines)


def shown_items(trace: ContextTrace, layer: LayerTrace, limit: int) -> str:
    """A layer's items as /recall lists them; a recalled fragment says which index found it."""
    names = [f"{ref} ({trace.found_by[ref]})" if ref in trace.found_by else ref for ref in layer.items[:limit]]
    return ", ".join(names) + (" ..." if len(layer.items) > limit else "")


def meaning_line(status: MemoryStatus) -> str:
    """How recall finds fragments: by meaning with which model, and how much of the game is embedded."""
    meaning = status.meaning
    if meaning is None or meaning.model is None:
        why = f" ({meaning.problem})" if meaning is not None and meaning.problem else ""
        return f"by words alone{why}"
    waiting = f", {meaning.waiting} waiting" if meaning.waiting else ""
    problem = f"; {meaning.problem}" if meaning.problem else ""
    return (
        f"by words and by meaning, with {meaning.model} ({meaning.placement}): {meaning.embedded} fragments "
        f"embedded{waiting}{problem}"
    )


def trace_text(trace: ContextTrace | None, *, show_secrets: bool = True) -> str:
    if trace is None:
        return "No turn has been played yet."
    lines = [f"The GM was given {trace.total_tokens} of {trace.limit} tokens (+{trace.reply_tokens} for the reply)."]
    if trace.overflow:
        lines.append(f"Over budget: {trace.overflow}")
    for layer in trace.layers:
        if layer.name in GM_ONLY_LAYERS and not show_secrets:
            continue
        line = f"  {layer.name:<9} {bar(layer.tokens, layer.budget)}"
        if layer.items:
            line += f"  in: {shown_items(trace, layer, 12)}"
        if layer.left_out:
            line += f"  left out: {', '.join(layer.left_out[:12])}" + (" ..." if len(layer.left_out) > 12 else "")
        lines.append(line)
    return "\n".join(lines)


def reveals_text(lines: list[str], limit: int = 30) -> str:
    """What the players' actions uncovered so far (F39), newest last: for a game's admins."""
    if not lines:
        return "Uncovered so far: nothing yet."
    shown = lines[-limit:]
    more = f" (the last {limit} of {len(lines)})" if len(lines) > limit else ""
    return f"Uncovered so far{more}:\n" + "\n".join(f"  {line}" for line in shown)


def compaction_text(report: CompactionReport) -> str:
    if report.turns is None:  # set whenever a chunk was folded
        return "Nothing to compact: the hot window holds only the protected tail."
    first, last = report.turns
    return (
        f"Folded {report.messages_folded} messages (turns {first}-{last}) "
        f"in {report.chunks} chunk(s). Short-term summary {report.short_words_before} -> "
        f"{report.short_words_after} words; story summary {report.story_words_before} -> "
        f"{report.story_words_after} words."
    )


def chapter_text(report: ChapterReport) -> str:
    after = f"Next: {report.next}." if report.next else "That was the last chapter."
    return (
        f"Chapter finished: {report.finished}. Recap: {report.recap}\n{after} "
        f"Story summary {report.story_words_before} -> {report.story_words_after} words."
    )


def facts_text(facts: list[Fact]) -> str:
    if not facts:
        return "No facts recorded yet."
    return "\n".join(
        f"- {f.text} (turn {f.turn}, from messages {', '.join(map(str, f.sources)) or '-'})" for f in facts
    )


def lore_text(listing: list[LoreListing]) -> str:
    if not listing:
        return "The world book is empty."
    lines = []
    for item in listing:
        entry = item.entry
        keys = "always on" if entry.always_on else ", ".join(entry.keys)
        if entry.secondary_keys:
            keys += f" (with {', '.join(entry.secondary_keys)})"
        lines.append(f"{entry.id} [{keys}; priority {entry.priority}; {item.source}]: {entry.content}")
    return "\n".join(lines)


def private_memory_text(name: str, memory: PlayerMemory | None, notes: Sequence[str] = ()) -> str:
    """A player's own memory, for their eyes: what their character knows, and their notes."""
    if memory is None:
        lines = [f"{name} remembers nothing yet: it is written in the background after each GM reply."]
    else:
        lines = [f"What {name} knows: {memory.summary}"]
        lines += [f"- {fact}" for fact in memory.facts]
    if notes:
        lines.append("Your notes:")
        lines += [f"{i}. {note}" for i, note in enumerate(notes, 1)]
    return "\n".join(lines)
