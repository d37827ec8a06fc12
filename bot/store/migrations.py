"""The schema as an ordered list of named steps, each applied once and recorded."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import aiosqlite

from bot.errors import UserError

log = logging.getLogger(__name__)

MIGRATIONS: list[tuple[str, str]] = [
    (
        "m001_initial",
        """
        CREATE TABLE games (
            id INTEGER PRIMARY KEY,
            channel_key TEXT NOT NULL,
            world_id TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended')),
            turn INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            ended_at TEXT
        );
        CREATE UNIQUE INDEX games_one_active_per_channel
            ON games (channel_key) WHERE status = 'active';

        CREATE TABLE players (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            user_key TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            joined_at TEXT NOT NULL,
            left_at TEXT
        );
        CREATE UNIQUE INDEX players_one_seat_per_user
            ON players (game_id, user_key) WHERE left_at IS NULL;

        CREATE TABLE turn_log (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            turn INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('action', 'gm', 'roll', 'system')),
            author TEXT NOT NULL,
            player_id INTEGER REFERENCES players (id),
            visibility TEXT NOT NULL CHECK (visibility IN ('public', 'private')),
            visible_to TEXT NOT NULL DEFAULT '[]',
            content TEXT NOT NULL,
            created_at TEXT NOT NULL,
            message_id TEXT,
            edited_at TEXT,
            deleted INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX turn_log_by_game ON turn_log (game_id, id);
        CREATE INDEX turn_log_by_message ON turn_log (message_id) WHERE message_id IS NOT NULL;

        CREATE TABLE settings (
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (scope, key)
        );
        """,
    ),
    (
        "m002_memory",
        """
        CREATE TABLE summaries (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            kind TEXT NOT NULL CHECK (kind IN ('chunk', 'story', 'recap')),
            content TEXT NOT NULL,
            first_entry_id INTEGER,
            last_entry_id INTEGER,
            first_turn INTEGER,
            last_turn INTEGER,
            source_id INTEGER REFERENCES summaries (id),
            previous_id INTEGER REFERENCES summaries (id),
            chapter_index INTEGER,
            created_at TEXT NOT NULL,
            replaced_by INTEGER REFERENCES summaries (id),
            stale INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX summaries_by_game ON summaries (game_id, kind, id);

        CREATE TABLE memory_state (
            game_id INTEGER PRIMARY KEY REFERENCES games (id),
            folded_through INTEGER NOT NULL DEFAULT 0,
            short_id INTEGER REFERENCES summaries (id),
            story_id INTEGER REFERENCES summaries (id),
            chapter_index INTEGER NOT NULL DEFAULT 0,
            chapter_started_after INTEGER NOT NULL DEFAULT 0,
            beats_done TEXT NOT NULL DEFAULT '[]',
            version INTEGER NOT NULL DEFAULT 0,
            last_compaction_at TEXT,
            last_error TEXT
        );

        CREATE TABLE turn_traces (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            turn INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            trace TEXT NOT NULL
        );
        CREATE INDEX turn_traces_by_game ON turn_traces (game_id, id);
        """,
    ),
    (
        "m003_pins_facts_lore_glossary_recall",
        """
        CREATE TABLE pins (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            text TEXT NOT NULL,
            author TEXT NOT NULL,
            created_at TEXT NOT NULL,
            removed_at TEXT,
            moved_to_fact INTEGER
        );
        CREATE INDEX pins_by_game ON pins (game_id, id);

        CREATE TABLE facts (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            kind TEXT NOT NULL,
            subject TEXT NOT NULL,
            attribute TEXT NOT NULL,
            value TEXT NOT NULL,
            sources TEXT NOT NULL DEFAULT '[]',
            turn INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            superseded_by INTEGER REFERENCES facts (id),
            superseded_turn INTEGER,
            retracted_at TEXT
        );
        CREATE INDEX facts_by_game ON facts (game_id, subject, attribute);

        CREATE TABLE lore (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            entry TEXT NOT NULL,
            removed_at TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX lore_by_game ON lore (game_id, id);

        CREATE TABLE glossary (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            term TEXT NOT NULL,
            definition TEXT NOT NULL,
            source_entry_id INTEGER,
            created_at TEXT NOT NULL,
            edited INTEGER NOT NULL DEFAULT 0,
            removed_at TEXT
        );
        CREATE UNIQUE INDEX glossary_term ON glossary (game_id, term COLLATE NOCASE) WHERE removed_at IS NULL;

        CREATE VIRTUAL TABLE recall_index USING fts5(
            text, ref UNINDEXED, game_id UNINDEXED, turn UNINDEXED, tokenize = 'porter unicode61'
        );
        CREATE TABLE glossary_checked (game_id INTEGER PRIMARY KEY, through_entry_id INTEGER NOT NULL);
        CREATE TABLE facts_checked (game_id INTEGER PRIMARY KEY, through_entry_id INTEGER NOT NULL);
        CREATE TABLE facts_redo (game_id INTEGER NOT NULL, entry_id INTEGER NOT NULL, PRIMARY KEY (game_id, entry_id));
        """,
    ),
    (
        "m004_hidden_information",
        """
        ALTER TABLE turn_log ADD COLUMN npcs TEXT NOT NULL DEFAULT '[]';

        CREATE TABLE player_memory (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            player_id INTEGER NOT NULL REFERENCES players (id),
            summary TEXT NOT NULL,
            facts TEXT NOT NULL DEFAULT '[]',
            through_entry_id INTEGER NOT NULL,
            sources TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL,
            replaced_by INTEGER REFERENCES player_memory (id)
        );
        CREATE INDEX player_memory_by_player ON player_memory (game_id, player_id, id);
        CREATE TABLE player_memory_redo (
            game_id INTEGER NOT NULL,
            player_id INTEGER NOT NULL,
            entry_id INTEGER NOT NULL,
            PRIMARY KEY (game_id, player_id, entry_id)
        );

        CREATE TABLE leak_hits (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            turn INTEGER NOT NULL,
            audience TEXT NOT NULL,
            ref TEXT NOT NULL,
            phrase TEXT NOT NULL,
            sentence TEXT NOT NULL,
            action TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX leak_hits_by_game ON leak_hits (game_id, id);

        -- Recall feeds prompts and public reports: private messages stay out of it.
        DELETE FROM recall_index WHERE ref IN (SELECT 'entry:' || id FROM turn_log WHERE visibility = 'private');
        """,
    ),
    (
        "m005_npc_witnesses_and_public_only_memory",
        """
        CREATE TABLE npc_witness (
            game_id INTEGER NOT NULL,
            npc_id TEXT NOT NULL,
            entry_id INTEGER NOT NULL REFERENCES turn_log (id),
            turn INTEGER NOT NULL,
            PRIMARY KEY (game_id, npc_id, entry_id)
        );
        INSERT OR IGNORE INTO npc_witness (game_id, npc_id, entry_id, turn)
            SELECT t.game_id, n.value, t.id, t.turn FROM turn_log t, json_each(t.npcs) n;

        -- Facts, glossary terms and recaps once read private messages too: what came from them goes.
        UPDATE facts SET retracted_at = strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')
            WHERE retracted_at IS NULL AND id IN (
                SELECT f.id FROM facts f, json_each(f.sources) s
                JOIN turn_log t ON t.id = s.value WHERE t.visibility = 'private'
            );
        DELETE FROM recall_index WHERE ref IN (SELECT 'fact:' || id FROM facts WHERE retracted_at IS NOT NULL);
        UPDATE glossary SET removed_at = strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')
            WHERE removed_at IS NULL
            AND source_entry_id IN (SELECT id FROM turn_log WHERE visibility = 'private');
        UPDATE summaries SET stale = 1
            WHERE kind = 'recap' AND replaced_by IS NULL AND EXISTS (
                SELECT 1 FROM turn_log t WHERE t.game_id = summaries.game_id AND t.visibility = 'private'
                AND t.id BETWEEN summaries.first_entry_id AND summaries.last_entry_id
            );
        """,
    ),
    (
        "m006_game_starter",
        """
        -- Who typed /game start: they may end the game (bot.access). Older games have none; admins end those.
        ALTER TABLE games ADD COLUMN started_by TEXT;
        """,
    ),
    (
        "m007_turn_notes_and_the_front",
        """
        -- What each turn's prompt added beside its action (lore, recall, NPCs entering), shown again
        -- at that place in later prompts until a compaction folds the turn.
        CREATE TABLE turn_notes (
            entry_id INTEGER PRIMARY KEY REFERENCES turn_log (id),
            game_id INTEGER NOT NULL REFERENCES games (id),
            notes TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX turn_notes_by_game ON turn_notes (game_id, entry_id);

        -- The last entry the beat judge read: it is not asked again until something new happened in public.
        CREATE TABLE beats_checked (
            game_id INTEGER PRIMARY KEY REFERENCES games (id),
            through_entry_id INTEGER NOT NULL
        );

        -- A background job that failed on what it would read next; parked after three failures on the same.
        CREATE TABLE job_failures (
            game_id INTEGER NOT NULL REFERENCES games (id),
            job TEXT NOT NULL,
            input TEXT NOT NULL,
            failures INTEGER NOT NULL,
            reason TEXT NOT NULL,
            parked_at_turn INTEGER,
            PRIMARY KEY (game_id, job)
        );

        -- Which private memories and glossary terms the prompt's front shows, fixed at each compaction.
        ALTER TABLE memory_state ADD COLUMN front TEXT NOT NULL DEFAULT '{}';
        UPDATE memory_state SET front = json_object(
            'glossary_through', coalesce((SELECT max(id) FROM glossary g WHERE g.game_id = memory_state.game_id), 0),
            'memories', json(coalesce((SELECT json_group_object(m.player_id, m.id) FROM player_memory m
                WHERE m.game_id = memory_state.game_id AND m.replaced_by IS NULL), '{}'))
        );
        """,
    ),
    (
        "m008_embeddings",
        """
        -- Recall by meaning (F31): vectors for each fragment recall can return (the whole, then each sentence:
        -- its parts), tagged with the model that made them (vectors of two models are never compared). The
        -- fragment's text is kept with its first part, so a hit is shown as it was embedded; an edit or a
        -- delete removes them all.
        CREATE TABLE vectors (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL,
            ref TEXT NOT NULL,
            part INTEGER NOT NULL,
            model TEXT NOT NULL,
            dim INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            audience TEXT,
            text TEXT NOT NULL,
            vector BLOB NOT NULL
        );
        CREATE UNIQUE INDEX vectors_by_game ON vectors (game_id, model, ref, part);
        CREATE INDEX vectors_by_ref ON vectors (ref);

        -- What is still to embed, oldest first: filled with each fragment as it is indexed, emptied as its
        -- vector is written (in the same transaction), so a kill -9 loses nothing.
        CREATE TABLE vector_todo (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a text queued again is told from the old
            game_id INTEGER NOT NULL,
            ref TEXT NOT NULL,
            turn INTEGER NOT NULL,
            audience TEXT,
            text TEXT NOT NULL
        );
        CREATE UNIQUE INDEX vector_todo_by_ref ON vector_todo (ref);
        CREATE INDEX vector_todo_by_game ON vector_todo (game_id, id);

        -- A database from before: everything recall can return is embedded in the background.
        INSERT OR IGNORE INTO vector_todo (game_id, ref, turn, text)
            SELECT game_id, ref, turn, text FROM recall_index;
        INSERT OR IGNORE INTO vector_todo (game_id, ref, turn, audience, text)
            SELECT game_id, 'entry:' || id, turn, visible_to,
                   (CASE kind WHEN 'gm' THEN 'GM' ELSE author END) || ': ' || content
            FROM turn_log WHERE visibility = 'private' AND deleted = 0;
        """,
    ),
    (
        "m009_reveals",
        """
        -- What each action uncovered (F39), and why: a truth, what an NPC hides, a clue, a beat. The narrator's
        -- prompt holds a secret only once it is here; a game's admins see them with /recall.
        CREATE TABLE reveals (
            id INTEGER PRIMARY KEY,
            game_id INTEGER NOT NULL REFERENCES games (id),
            turn INTEGER NOT NULL,
            entry_id INTEGER NOT NULL,  -- the action that uncovered it
            ref TEXT NOT NULL,
            lasts TEXT NOT NULL CHECK (lasts IN ('game', 'reply', 'player')),
            player_id INTEGER,
            why TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX reveals_by_game ON reveals (game_id, id);
        """,
    ),
]


async def migrate(db: aiosqlite.Connection) -> list[str]:
    """Apply the steps not yet recorded, each in its own transaction; return their names."""
    await db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    await db.commit()
    async with db.execute("SELECT name FROM migrations") as cursor:
        done = {row[0] async for row in cursor}
    unknown = done - {name for name, _ in MIGRATIONS}
    if unknown:  # a newer release wrote it: this one would write what that one does not expect
        raise UserError(
            f"This database was written by a newer release of the bot (its schema is at {max(unknown)}; this "
            f"release knows up to {MIGRATIONS[-1][0]}). Run the newer release, or open a backup this one made; "
            "nothing was changed."
        )
    applied = []
    for name, script in MIGRATIONS:
        if name in done:
            continue
        # executescript commits first, so the step and its record go in one
        # explicit transaction of their own.
        try:
            await db.executescript(
                f"BEGIN;\n{script}\nINSERT INTO migrations (name, applied_at) "
                f"VALUES ('{name}', '{datetime.now(UTC).isoformat()}');\nCOMMIT;"
            )
        except Exception:
            await db.rollback()
            raise
        log.info("Applied migration %s", name)
        applied.append(name)
    return applied
