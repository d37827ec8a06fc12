"""The store's hidden information: each player's private memory and its versions, what the world's NPCs
witnessed, private messages, and the leak guard's and reveals' records."""

from __future__ import annotations

from bot.store import EntryKind, NewEntry, NewReveal, Store, Visibility


async def seated(store: Store):
    game = await store.create_game("chan", "lighthouse")
    maya = await store.add_player(game.id, "u1", "Maya")
    tom = await store.add_player(game.id, "u2", "Tom")
    return game, maya, tom


def gm(content: str, turn: int = 1, *, to: int | None = None, npcs: tuple[str, ...] = ()) -> NewEntry:
    if to is None:
        return NewEntry(turn=turn, kind=EntryKind.GM, author="GM", content=content, npcs=npcs)
    return NewEntry(turn=turn, kind=EntryKind.GM, author="GM to you", content=content,
                    visibility=Visibility.PRIVATE, visible_to=(to,))  # fmt: skip


async def test_a_private_memory_is_kept_in_versions_each_replacing_the_last(store: Store):
    game, maya, tom = await seated(store)
    assert await store.player_memory(game.id, maya.id) is None, "no memory before the first update"
    first = await store.save_player_memory(
        game.id, maya.id, "Maya landed.", ["The door is locked"], 3, [1, 2, 3], expect_current=None
    )
    assert first is not None
    assert (first.summary, first.facts, first.through_entry_id, first.sources) == (
        "Maya landed.", ("The door is locked",), 3, (1, 2, 3)
    )  # fmt: skip
    second = await store.save_player_memory(game.id, maya.id, "Maya got in.", [], 5, [4, 5], expect_current=first.id)
    assert second is not None and second.facts == ()
    assert await store.player_memory(game.id, maya.id) == second
    history = await store.player_memory_history(game.id, maya.id)
    assert [m.id for m in history] == [first.id, second.id]
    assert history[0].replaced_by == second.id and history[1].replaced_by is None
    assert await store.player_memory_version(first.id) == history[0]
    assert await store.player_memory_version(9999) is None
    assert await store.player_memory(game.id, tom.id) is None, "one player's memory is not another's"


async def test_an_update_that_lost_the_race_writes_nothing(store: Store):
    game, maya, _ = await seated(store)
    first = await store.save_player_memory(game.id, maya.id, "One.", [], 1, [1], expect_current=None)
    assert first is not None
    late = await store.save_player_memory(game.id, maya.id, "Also one.", [], 1, [1], expect_current=None)
    assert late is None, "another update got there first"
    assert [m.summary for m in await store.player_memory_history(game.id, maya.id)] == ["One."]


async def test_an_update_that_read_a_message_edited_since_writes_nothing(store: Store):
    game, maya, _ = await seated(store)
    (entry,) = await store.append(game.id, gm("The door is open."))
    read_at = (await store.memory_state(game.id)).version
    await store.edit_entry(entry.id, "The door is shut.")
    stale = await store.save_player_memory(
        game.id, maya.id, "The door was open.", [], entry.id, [entry.id], expect_current=None, expect_version=read_at
    )
    assert stale is None
    assert await store.player_memory(game.id, maya.id) is None
    now = (await store.memory_state(game.id)).version
    fresh = await store.save_player_memory(
        game.id, maya.id, "The door was shut.", [], entry.id, [entry.id], expect_current=None, expect_version=now
    )
    assert fresh is not None and fresh.summary == "The door was shut."


async def test_every_players_current_memory_is_listed_by_player(store: Store):
    game, maya, tom = await seated(store)
    old = await store.save_player_memory(game.id, tom.id, "Tom old.", [], 1, [], expect_current=None)
    assert old is not None
    await store.save_player_memory(game.id, tom.id, "Tom new.", [], 2, [], expect_current=old.id)
    await store.save_player_memory(game.id, maya.id, "Maya.", [], 2, [], expect_current=None)
    assert [(m.player_id, m.summary) for m in await store.player_memories(game.id)] == [
        (maya.id, "Maya."), (tom.id, "Tom new.")
    ]  # fmt: skip


async def test_editing_or_deleting_what_a_memory_read_marks_that_memory_for_a_rebuild(store: Store):
    """F19: a player's memory built from a message later edited or deleted is rebuilt, and only theirs."""
    game, maya, tom = await seated(store)
    public, secret = await store.append(game.id, gm("Fog."), gm("A key.", to=maya.id))
    await store.save_player_memory(game.id, maya.id, "M.", [], secret.id, [public.id, secret.id], expect_current=None)
    await store.save_player_memory(game.id, tom.id, "T.", [], public.id, [public.id], expect_current=None)
    assert await store.player_memory_redo(game.id) == {}
    await store.edit_entry(secret.id, "A brass key.")
    assert await store.player_memory_redo(game.id) == {maya.id: [secret.id]}
    await store.delete_entry(public.id)
    assert await store.player_memory_redo(game.id) == {maya.id: [public.id, secret.id], tom.id: [public.id]}

    current = await store.player_memory(game.id, maya.id)
    assert current is not None
    rebuilt = await store.save_player_memory(
        game.id, maya.id, "M again.", [], secret.id, [secret.id], expect_current=current.id,
        done_redo=[public.id, secret.id],
    )  # fmt: skip
    assert rebuilt is not None
    assert await store.player_memory_redo(game.id) == {tom.id: [public.id]}, "the rebuild clears what it redid"


async def test_an_npc_remembers_the_turns_it_was_present_for_and_its_newest_lines(store: Store):
    game, maya, _ = await seated(store)
    await store.append(game.id, gm("Old Tom mends a net.", 1, npcs=("old-tom",)))
    await store.append(game.id, NewEntry(turn=2, kind=EntryKind.ACTION, author="Maya", content="I greet him.",
                                         npcs=("old-tom", "gull")))  # fmt: skip
    await store.append(game.id, gm("The gull screams.", 3, npcs=("gull",)))
    await store.append(game.id, gm("Old Tom nods " + "slowly " * 60, 4, npcs=("old-tom",)))
    await store.append(game.id, gm("Old Tom whispers.", 5, to=maya.id))  # a private message: no NPC witnessed it
    turns, lines = await store.npc_witnessed(game.id, "old-tom")
    assert turns == [1, 2, 4]
    assert lines[0] == "Maya: I greet him."
    assert lines[1].startswith("GM: Old Tom nods slowly") and lines[1].endswith("…") and len(lines[1]) <= 204
    assert await store.npc_witnessed(game.id, "old-tom", turns=2, lines=1) == ([2, 4], [lines[1]])
    assert await store.npc_witnessed(game.id, "gull") == ([2, 3], ["Maya: I greet him.", "GM: The gull screams."])
    assert await store.npc_witnessed(game.id, "nobody") == ([], [])


async def test_the_guard_reads_the_newest_live_private_messages_oldest_first(store: Store):
    game, maya, tom = await seated(store)
    entries = await store.append(
        game.id, gm("Public fog."), gm("To Maya.", to=maya.id), gm("To Tom.", to=tom.id), gm("Gone.", to=tom.id)
    )
    await store.delete_entry(entries[3].id)
    private = await store.private_entries(game.id)
    assert [e.content for e in private] == ["To Maya.", "To Tom."]
    assert private[0].visibility is Visibility.PRIVATE and private[0].visible_to == (maya.id,)
    assert [e.content for e in await store.private_entries(game.id, limit=1)] == ["To Tom."]


async def test_words_said_in_public_are_found_close_together_with_any_ending(store: Store):
    game, maya, _ = await seated(store)
    await store.append(game.id, gm("Silas sniffed the brandy glass and frowned."), gm("Silas's pipe lay cold."))
    await store.append(game.id, gm("The will names Ashby as heir.", to=maya.id))
    assert await store.said_in_public(game.id, ["Silas", "sniff"])
    assert await store.said_in_public(game.id, ["brandies"]), "another ending of the same word"
    assert await store.said_in_public(game.id, ["Silas's", "pipes"]), "a possessive is read as the guard reads it"
    assert not await store.said_in_public(game.id, ["Ashby"]), "told to one player only: not public"
    assert await store.said_in_public(game.id, ["Silas", "frowned"]), "five words apart: close enough by default"
    assert not await store.said_in_public(game.id, ["Silas", "frowned"], within=0), "too far apart"
    assert not await store.said_in_public(game.id, ["..."]), "no words, nothing said"
    other = await store.create_game("other", "lighthouse")
    assert not await store.said_in_public(other.id, ["Silas"]), "another game's record is its own"


async def test_what_the_leak_guard_stopped_is_kept_in_order(store: Store):
    game, _, _ = await seated(store)
    await store.add_leak_hits(game.id, 2, [])
    assert await store.leak_hits(game.id) == []
    hit = {"audience": "public", "ref": "secret:will", "phrase": "Ashby heir", "sentence": "Ashby is the heir.",
           "action": "cut"}  # fmt: skip
    await store.add_leak_hits(game.id, 2, [hit, hit | {"action": "rewritten", "turn": "ignored"}])
    hits = await store.leak_hits(game.id)
    assert [(h.turn, h.ref, h.phrase, h.sentence, h.action) for h in hits] == [
        (2, "secret:will", "Ashby heir", "Ashby is the heir.", "cut"),
        (2, "secret:will", "Ashby heir", "Ashby is the heir.", "rewritten"),
    ]
    assert hits[0].id < hits[1].id and hits[0].game_id == game.id


async def test_what_an_action_uncovered_is_kept_with_why_and_found_by_action(store: Store):
    game, maya, _ = await seated(store)
    first, second = await store.append(
        game.id,
        NewEntry(turn=1, kind=EntryKind.ACTION, author="Maya", content="I read the will."),
        NewEntry(turn=2, kind=EntryKind.ACTION, author="Maya", content="I sniff the glass."),
    )
    await store.add_reveals(game.id, 1, first.id, [])
    assert await store.reveals(game.id) == []
    await store.add_reveals(game.id, 1, first.id, [NewReveal(ref="truth:will", why="read the will")])
    await store.add_reveals(
        game.id, 2, second.id, [NewReveal(ref="clue:bitter", why="sniffed", lasts="player", player_id=maya.id)]
    )
    records = await store.reveals(game.id)
    assert [(r.turn, r.entry_id, r.ref, r.lasts, r.player_id, r.why) for r in records] == [
        (1, first.id, "truth:will", "game", None, "read the will"),
        (2, second.id, "clue:bitter", "player", maya.id, "sniffed"),
    ]
    assert [r.ref for r in await store.reveals(game.id, second.id)] == ["clue:bitter"]
    assert await store.reveals(game.id, 9999) == []
