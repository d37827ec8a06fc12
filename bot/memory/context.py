"""The GM's prompt: one pure function of the world, the memory, the budgets and the new action.

A prompt is built so that the next one begins with all of it, and llama.cpp
reads only what is new. The front (the system message) holds what stays put
between compactions:

    frozen (rules, world, players, chapter) -> GM-only secrets -> completed
    chapters -> pinned facts -> glossary -> story summary -> short-term
    summary -> each player's private memory (GM-only)

Then come the recent turns in full (the hot window). What a turn adds for
the GM, the lore that fired, fragments recalled from earlier and the NPCs
that entered the scene (GM-only), is written into that turn's message with
its action and stored, so later prompts show it at the same place until a
compaction folds the turn. A later turn adds only what is not there yet,
within what its layer's budget has left in the prompt; once that is spent, a
turn still adds its single most relevant new item, so a clue mentioned now
comes back.

The front changes only when the memory does: a compaction (new summaries,
the glossary and private memories as of then; or, while the short-term
summaries fit their budget, only its chunk summary added after them and
the private memories if it folded a whisper), a chapter's end, a pin, a
player joining or leaving, an admin's edit of lore, a setting or a world.
Over budget, the oldest recent turns go first, in blocks whose borders do
not move, so the prompts after a cut begin alike again; then this turn's
additions (recall, then the scene, then lore by priority). The frozen layer,
the summaries and the pins are never dropped; if they alone overflow, the
trace says so. Every layer's tokens and every candidate left out are
recorded in the trace.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace

from bot.memory.brief import EXAMPLE_REPLY, frozen_tokens, scene_notes, world_brief, world_hints, world_secrets
from bot.memory.layers import (
    FOLLOWING,
    FRONT,
    GM_ONLY_LAYERS,
    HEADERS,
    LAYERS,
    NEWER,
    NOTES,
    Budget,
    Context,
    ContextTrace,
    CountTokens,
    LayerTrace,
    MemoryItem,
    MemoryView,
)
from bot.memory.transcript import GAME_BEGINS, alternate, entry_message
from bot.model.base import TEMPLATE_TOKENS_PER_MESSAGE, ChatMessage
from bot.store.models import LogEntry, TurnNote
from bot.worlds import World

# What the engine, the reports and the benches read from here; the pieces live in the modules above.
__all__ = [
    "EXAMPLE_REPLY", "FOLLOWING", "GAME_BEGINS", "GM_ONLY_LAYERS", "HEADERS", "LAYERS", "NEWER", "Budget", "Context",
    "ContextTrace", "CountTokens", "LayerTrace", "MemoryItem", "MemoryView", "build_context", "entry_message",
    "frozen_tokens", "shared_prefix_share", "squeeze_to_fit",
]  # fmt: skip

# The recent turns leave the prompt in blocks of this share of the prompt's limit, counted from the
# oldest recent turn: a cut lands on the same border whichever turn makes it.
HOT_BLOCKS = 8
# Once a layer's notes fill its budget, a turn still adds up to this fraction of it, the most relevant first.
NEW_SHARE = 4
# The new action's best recalled matches always get room, within the whole recall budget, whatever earlier
# turns' notes already hold: appending never starves the question at hand. Measured on a 300-turn game with
# ten clues asked about in other words (tests/bench/test_long_game.py): 5 found with none guaranteed, 9 with three,
# for about one point of prefix reuse (89.4% to 89.1%).
BEST_MATCHES = 3
# A fragment an earlier turn's notes hold is not said again beside the new action: a turn is shown once in a
# prompt (F40: the same older value shown twice, as plainly as the newer, outweighed it). What a small model needs
# beside the question, the memory's brief says (see bot.memory.recall.memory_brief).


@dataclass
class _Layer:
    name: str
    items: list[MemoryItem] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    budget: int | None = None
    header: str | None = None  # another heading than its name's (the secrets' when the engine holds them)

    def block(self) -> str:
        if not self.items:
            return ""
        if self.name in ("frozen", "action"):
            return "\n".join(item.text for item in self.items)
        header = HEADERS[self.header or self.name]
        if self.name in ("story", "short"):
            return header + "\n" + "\n\n".join(item.text for item in self.items)
        return header + "\n" + "\n".join(f"- {item.text}" for item in self.items)


def _cap(
    name: str, items: Sequence[MemoryItem], budget: int, count: CountTokens, *,
    best: Set[str] = frozenset(), best_room: int = 0,
) -> _Layer:  # fmt: skip
    """Items in the given order while they fit the layer's budget (``best`` ones: ``best_room``); the rest are
    left out."""
    layer = _Layer(name, budget=budget)
    used = count(HEADERS[name])
    for item in items:
        cost = count(item.text) + 2
        if used + cost <= (max(budget, best_room) if item.ref in best else budget):
            layer.items.append(item)
            used += cost
        else:
            layer.left_out.append(item.ref)
    return layer


def best_matches(items: Sequence[MemoryItem]) -> set[str]:
    """What always gets room: the first ``BEST_MATCHES`` fragments the action itself matched (not the turns they
    brought along), the first ones recall by meaning ranked (``lead``), and every fact that supersedes one the
    prompt shows, so a newer value never loses to an older one."""
    matched = [item for item in items if item.found_by not in (FOLLOWING, NEWER)][:BEST_MATCHES]
    return {item.ref for item in matched} | {item.ref for item in items if item.found_by == NEWER or item.lead}


def _bring_back(layer: _Layer, recall: Sequence[MemoryItem], held: Mapping[int, Sequence[TurnNote]],
                kept: Sequence[LogEntry], dropped: Sequence[LogEntry]) -> None:  # fmt: skip
    """Best matches left out of this turn's additions because an earlier turn's note held them, where that turn
    has just been cut from the prompt: added again, in their place by relevance, so they are never in neither."""
    shown = {note.ref for entry in kept for note in held.get(entry.id, ())}
    lost = {note.ref for entry in dropped for note in held.get(entry.id, ())} - shown
    have = {item.ref for item in layer.items}
    best = best_matches(recall)
    back = [item for item in recall if item.ref in best and item.ref in lost and item.ref not in have]
    if not back:
        return
    order = {item.ref: n for n, item in enumerate(recall)}
    layer.items = sorted([*layer.items, *back], key=lambda item: order.get(item.ref, len(order)))
    taken = {item.ref for item in back}
    layer.left_out = [ref for ref in layer.left_out if ref not in taken]


def _with_cut_turns(
    recall: Sequence[MemoryItem], recent: Sequence[tuple[str, MemoryItem]], dropped: Sequence[LogEntry]
) -> Sequence[MemoryItem]:
    """``recall`` with the fragments of the ``dropped`` recent turns put back at their rank (``recent``: each with
    the ref it ranks before); ``recall`` itself where there are none."""
    cut = {f"entry:{entry.id}" for entry in dropped}
    back: dict[str, list[MemoryItem]] = {}
    for before, item in recent:
        if item.ref in cut:
            back.setdefault(before, []).append(item)
    if not back:
        return recall
    merged = []
    for item in recall:
        merged += back.pop(item.ref, [])
        merged.append(item)
    return merged + [item for items in back.values() for item in items]


def build_context(
    world: World,
    view: MemoryView,
    action: LogEntry,
    budget: Budget,
    count_tokens: CountTokens,
    *,
    reply_words: int = 120,
    full_guide: bool = True,
) -> Context:
    """The prompt messages for the GM's next reply, the trace of what went in, and this turn's notes."""
    front = _front(world, view, budget, count_tokens, reply_words, full_guide)
    system = ChatMessage(role="system", content="\n\n".join(b for name in FRONT if (b := front[name].block())))
    bracketed = not full_guide  # a small model reads joins and rolls as it was measured with them
    hot = list(view.hot)
    held = {e.id: _restated(view.notes[e.id], view.restated) for e in hot if view.notes.get(e.id)}
    own = view.notes.get(action.id)
    if own is not None:  # answered again (a retry, or a turn the model failed): the notes it was given
        added = {name: _Layer(name, [MemoryItem(n.ref, n.text) for n in own if n.layer == name]) for name in NOTES}
    else:
        added = _new_notes(world, view, action.turn, held, budget, count_tokens, grouped=full_guide)

    def total(kept: Sequence[LogEntry], additions: Mapping[str, _Layer] = added) -> int:
        messages = _assemble(system, kept, held, action, additions, bracketed)
        return sum(count_tokens(m.content) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)

    limit = budget.limit
    bare = total([], {name: _Layer(name) for name in NOTES})  # what is never dropped
    overflow = None
    if bare > limit:
        overflow = (
            f"the frozen layer, summaries, pins and the action need {bare - limit} tokens "
            f"more than the {limit} available"
        )
    # Over budget: the oldest recent turns go first, a block at a time; then this turn's additions.
    kept, dropped = _fit_hot(
        hot, held, lambda rest: total(rest) <= limit, max(1, limit // HOT_BLOCKS), count_tokens, bracketed
    )
    recall = view.recall
    if own is None and dropped:
        recall = _with_cut_turns(recall, view.recent_recall, dropped)
        if recall is not view.recall:  # a turn cut from the recent ones competes for recall's room in its place
            added.update(_new_notes(world, replace(view, recall=recall), action.turn, held, budget, count_tokens,
                                    grouped=full_guide))  # fmt: skip
        _bring_back(added["recall"], recall, held, kept, dropped)
    if total(kept) > limit:
        _trim_added(added, lambda: total(kept) > limit)
    notes = tuple(TurnNote(layer=name, ref=item.ref, text=item.text) for name in NOTES for item in added[name].items)
    messages = _assemble(system, kept, held, action, added, bracketed)
    tokens = sum(count_tokens(m.content) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)
    trace = _trace(front, kept, dropped, held, added, action, tokens, budget, count_tokens, overflow)
    return Context(messages=messages, trace=trace, notes=notes)


def _front(
    world: World, view: MemoryView, budget: Budget, count: CountTokens, reply_words: int, full_guide: bool
) -> dict[str, _Layer]:
    """The system message's layers: what stays put from turn to turn, between compactions. With the world's
    secrets held by the engine (``view.uncovered``), the GM-only layer holds what the players uncovered and the
    hints of the rest, and the chapter's beats are shown by their steers (F39)."""
    held = view.uncovered is not None
    brief = world_brief(
        world, view.chapter_index, view.players, reply_words, full=full_guide, held=held, example=view.example
    )
    if view.uncovered is not None:
        secrets = _cap("secrets", world_hints(world, view.uncovered), budget.secrets, count)
        secrets.header = "hints"
    else:
        secrets = _cap("secrets", world_secrets(world, view.chapter_index, full=full_guide), budget.secrets, count)
    return {
        "frozen": _Layer("frozen", [MemoryItem("world", brief)]),
        "secrets": secrets,
        "chapters": _Layer("chapters", list(view.chapters), budget=budget.chapters),
        "pins": _Layer("pins", list(view.pins), budget=budget.pins),
        "glossary": _cap("glossary", view.glossary, budget.glossary, count),
        "story": _Layer("story", [view.story] if view.story else [], budget=budget.story),
        "short": _Layer("short", list(view.short), budget=budget.short),
        "private": _cap("private", view.threads, budget.private, count),
    }


def _new_notes(
    world: World,
    view: MemoryView,
    turn: int,
    held: Mapping[int, Sequence[TurnNote]],
    budget: Budget,
    count: CountTokens,
    *,
    grouped: bool = True,
) -> dict[str, _Layer]:
    """This turn's additions: what is not in the prompt yet, each layer within what its budget has left."""
    notes = [note for entry_notes in held.values() for note in entry_notes]
    refs = {note.ref for note in notes}
    briefed = {item.ref for item in view.brief}

    def left(layer: str, limit: int) -> int:
        # A layer's notes share its budget across the prompt, but a turn may always add its most relevant
        # quarter of a budget: otherwise a long stretch between compactions would recall nothing new.
        return max(limit // NEW_SHARE, limit - sum(count(note.text) + 2 for note in notes if note.layer == layer))

    present, hidden = scene_notes(world, view.scene, turn, refs, grouped=grouped, uncovered=view.uncovered)
    candidates = {
        "scene": hidden,
        "lore": sorted((i for i in view.lore if i.ref not in refs), key=lambda item: -item.priority),
        # What the brief tells beside the action is not also told before it: a turn is shown once in a prompt.
        "recall": [i for i in view.recall if i.ref not in refs and i.ref not in briefed],
    }
    limits = {"scene": budget.private, "lore": budget.lore, "recall": budget.recall}
    # What the action uncovers is never left out (it is the engine's decision for this reply); the brief is short.
    added = {"reveal": _Layer("reveal", list(view.reveals)), "brief": _Layer("brief", list(view.brief))}
    for name in candidates:
        # What each NPC entering witnessed is never left out (F6); what it hides and knows fits the budget.
        room = left(name, limits[name]) - sum(count(item.text) + 2 for item in present) * (name == "scene")
        best = best_matches(candidates[name]) if name == "recall" else set()
        layer = _cap(name, candidates[name], room, count, best=best, best_room=limits[name])
        if name == "scene":
            layer.items[:0] = present
        layer.budget = limits[name]
        added[name] = layer
    return added


def _restated(notes: Sequence[TurnNote], restated: Mapping[str, str]) -> tuple[TurnNote, ...]:
    """An earlier turn's notes as the prompt shows them now: a value since changed is marked older where it
    stands ("[fact, until turn 230]", "[turn 70, since changed]"), so no older value is shown as current."""
    return tuple(n.model_copy(update={"text": restated[n.ref]}) if n.ref in restated else n for n in notes)


def _trim_added(added: dict[str, _Layer], too_big: Callable[[], bool]) -> None:
    """Drop this turn's additions while ``too_big()``: recall from the least relevant, the scene, lore by priority."""
    for name, drop_order in (
        ("recall", lambda items: items[::-1]),
        ("scene", lambda items: [i for i in items[::-1] if not i.ref.startswith("scene:")]),
        ("lore", lambda items: sorted(items, key=lambda i: i.priority)),
    ):
        layer = added[name]
        for item in drop_order(list(layer.items)):
            if not too_big():
                return
            layer.items.remove(item)
            layer.left_out.append(item.ref)


def _trace(
    front: dict[str, _Layer],
    kept: Sequence[LogEntry],
    dropped: Sequence[LogEntry],
    held: Mapping[int, Sequence[TurnNote]],
    added: dict[str, _Layer],
    action: LogEntry,
    total: int,
    budget: Budget,
    count: CountTokens,
    overflow: str | None,
) -> ContextTrace:
    shown = [note for e in kept for note in held.get(e.id, ())]
    front_tokens = sum(count(layer.block()) + 2 for layer in front.values() if layer.items)
    layers = []
    for name in LAYERS:
        if name in front:
            layer = front[name]
            layers.append(
                LayerTrace(
                    name=name, tokens=count(layer.block()) if layer.items else 0, budget=layer.budget,
                    items=[i.ref for i in layer.items], left_out=layer.left_out,
                )
            )  # fmt: skip
        elif name == "hot":
            layers.append(
                LayerTrace(
                    name="hot",
                    tokens=sum(count(entry_message(e).content) + TEMPLATE_TOKENS_PER_MESSAGE for e in kept),
                    budget=max(0, budget.limit - front_tokens - count(entry_message(action).content)),
                    items=[f"entry:{e.id}" for e in kept],
                    left_out=[f"entry:{e.id}" for e in dropped],
                )
            )
        elif name in NOTES:
            earlier = [note for note in shown if note.layer == name]
            layer = added[name]
            layers.append(
                LayerTrace(
                    name=name,
                    tokens=sum(count(n.text) + 2 for n in earlier) + sum(count(i.text) + 2 for i in layer.items),
                    budget=layer.budget,
                    items=[n.ref for n in earlier] + [i.ref for i in layer.items],
                    left_out=layer.left_out,
                )
            )
        else:
            layers.append(LayerTrace(name="action", tokens=count(entry_message(action).content), budget=None,
                                     items=[f"entry:{action.id}"]))  # fmt: skip
    found = {item.ref: item.found_by for name in ("recall", "brief") for item in added[name].items if item.found_by}
    return ContextTrace(
        layers=layers, total_tokens=total, limit=budget.limit, reply_tokens=budget.reply_tokens, overflow=overflow,
        found_by=found,
    )  # fmt: skip


def _fit_hot(
    hot: Sequence[LogEntry],
    held: Mapping[int, Sequence[TurnNote]],
    fits: Callable[[Sequence[LogEntry]], bool],
    block: int,
    count: CountTokens,
    bracketed: bool = False,
) -> tuple[list[LogEntry], list[LogEntry]]:
    """The recent turns that fit, and the older ones cut off, oldest first.

    Cuts fall only where the tokens counted from the oldest recent entry
    pass a multiple of ``block``: until the next cut, every prompt starts
    its recent turns at the same entry, so each begins with the last one.
    """
    if fits(hot):
        return list(hot), []
    starts, position = [], 0
    for entry in hot:
        starts.append(position)
        position += count(entry_message(entry, held.get(entry.id, ()), bracketed=bracketed).content)
        position += TEMPLATE_TOKENS_PER_MESSAGE
    borders = [i for i in range(1, len(hot)) if starts[i] // block != starts[i - 1] // block]
    for border in [*borders, len(hot)]:
        if fits(hot[border:]):
            return list(hot[border:]), list(hot[:border])
    return [], list(hot)


def _assemble(
    system: ChatMessage,
    hot: Sequence[LogEntry],
    held: Mapping[int, Sequence[TurnNote]],
    action: LogEntry,
    added: Mapping[str, _Layer],
    bracketed: bool = False,
) -> list[ChatMessage]:
    notes = [TurnNote(layer=name, ref=item.ref, text=item.text) for name in NOTES for item in added[name].items]
    chat = [entry_message(e, held.get(e.id, ()), bracketed=bracketed) for e in hot]
    chat.append(entry_message(action, notes, bracketed=bracketed))
    return [system, *alternate(chat)]


def shared_prefix_share(
    previous: Sequence[ChatMessage], current: Sequence[ChatMessage], count_tokens: CountTokens
) -> float:
    """The share of ``current``'s tokens that repeat ``previous``'s beginning: what a prompt cache can reuse.

    Counted message by message (whole identical messages, then the common
    start of the first one that differs), so a caching tokenizer counts each
    message once however long the game.
    """
    total = sum(count_tokens(m.content) + TEMPLATE_TOKENS_PER_MESSAGE for m in current)
    if not total:
        return 0.0
    same = 0
    for before, now in zip(previous, current, strict=False):
        if before == now:
            same += count_tokens(now.content) + TEMPLATE_TOKENS_PER_MESSAGE
            continue
        if before.role == now.role:
            same += count_tokens(os.path.commonprefix([before.content, now.content]))
        break
    return min(1.0, same / total)


MIN_REPLY_TOKENS = 16


def squeeze_to_fit(context: Context, n_ctx: int, count_tokens: CountTokens) -> Context:
    """Last resort when the never-dropped layers alone overflow: cut the system message's end to fit.

    The turn is still played (the spec: say so, do not fail the turn); the
    trace keeps the overflow sentence and says how much was cut.
    """
    room = n_ctx - MIN_REPLY_TOKENS
    if context.trace.total_tokens <= room:
        return context
    system, *rest = context.messages
    others = sum(count_tokens(m.content) + TEMPLATE_TOKENS_PER_MESSAGE for m in rest)
    keep_tokens = room - others - TEMPLATE_TOKENS_PER_MESSAGE
    text = system.content
    while text and count_tokens(text) > keep_tokens:
        text = text[: int(len(text) * max(0.5, keep_tokens / max(1, count_tokens(text)))) - 1]
    cut = count_tokens(system.content) - count_tokens(text)
    messages = [ChatMessage(role="system", content=text), *rest]
    total = sum(count_tokens(m.content) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)
    note = f"{context.trace.overflow or 'over budget'}; the end of the system message ({cut} tokens) was cut to fit"
    trace = context.trace.model_copy(update={"total_tokens": total, "overflow": note})
    return Context(messages=messages, trace=trace)
