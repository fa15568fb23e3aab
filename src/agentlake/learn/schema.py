"""The lesson store's tables: named, add-only migrations for each backend.

Owns the schema of both backends: ``MIGRATIONS`` for the DuckDB file (recorded in its
``_migrations`` table) and ``PG_MIGRATIONS`` for PostgreSQL (recorded under ``PG_STORE`` in
``agentlake_migrations``), the same tables in the same order, plus in PostgreSQL the head row
every writing transaction locks (``db.LessonDB.transaction``). A released migration is never
edited: a change of schema is a new one, appended to both lists. It does not open, read or
write a store (``db``).
"""

from __future__ import annotations

from agentlake.migrations import Migration

MIGRATIONS = [
    Migration(
        "001_lessons",
        """
        CREATE SEQUENCE lesson_event_seq START 1;
        CREATE TABLE lesson_events (
            seq BIGINT PRIMARY KEY DEFAULT nextval('lesson_event_seq'),
            lesson_id VARCHAR NOT NULL,
            version INTEGER NOT NULL,
            kind VARCHAR NOT NULL,
            event_at TIMESTAMP NOT NULL,
            actor VARCHAR NOT NULL,
            reason VARCHAR NOT NULL,
            data VARCHAR NOT NULL,
            snapshot VARCHAR NOT NULL,
            UNIQUE (lesson_id, version)
        );
        CREATE TABLE lessons (
            id VARCHAR PRIMARY KEY,
            status VARCHAR NOT NULL,
            domain VARCHAR NOT NULL,
            scope VARCHAR NOT NULL,
            project_id VARCHAR,
            confidence DOUBLE NOT NULL,
            task_kind VARCHAR,
            role VARCHAR,
            client_id VARCHAR,
            city VARCHAR,
            state VARCHAR,
            tool VARCHAR,
            source VARCHAR NOT NULL,
            version INTEGER NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            last_used_at TIMESTAMP,
            body VARCHAR NOT NULL
        );
        CREATE TABLE citations (
            run_id VARCHAR NOT NULL,
            lesson_id VARCHAR NOT NULL,
            agent_id VARCHAR,
            sig_hash VARCHAR,
            given_at TIMESTAMP NOT NULL,
            used BOOLEAN NOT NULL DEFAULT false,
            PRIMARY KEY (run_id, lesson_id)
        );
        CREATE TABLE outcomes (
            run_id VARCHAR PRIMARY KEY,
            sig_hash VARCHAR NOT NULL,
            task VARCHAR NOT NULL,
            success BOOLEAN NOT NULL,
            score DOUBLE,
            recorded_at TIMESTAMP NOT NULL
        );
        CREATE TABLE effects (
            lesson_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            delta DOUBLE NOT NULL,
            verdict VARCHAR NOT NULL,
            measured_at TIMESTAMP NOT NULL,
            PRIMARY KEY (lesson_id, run_id)
        );
        CREATE TABLE learned_ops (
            op_id VARCHAR PRIMARY KEY,
            learned_at TIMESTAMP NOT NULL
        );
        """,
    ),
    Migration(
        "002_evidence",
        """
        CREATE TABLE evidence_ops (
            op_id VARCHAR PRIMARY KEY,
            project_id VARCHAR,
            scope VARCHAR NOT NULL,
            shape VARCHAR NOT NULL,
            features VARCHAR NOT NULL,
            recorded_at TIMESTAMP NOT NULL
        );
        CREATE TABLE evidence (
            op_id VARCHAR NOT NULL,
            item_id BIGINT NOT NULL,
            accepted BOOLEAN NOT NULL,
            explained BOOLEAN NOT NULL,
            said VARCHAR NOT NULL,
            item_values VARCHAR NOT NULL,
            PRIMARY KEY (op_id, item_id)
        );
        """,
    ),
]


# 003: a lesson's key fields as one JSON object (the domain's: ``LessonMatch.fields``). The
# columns that held the first domain's fields before (releases up to 0.1) are read into it
# and left as they were since; the lesson's body is the truth either way.
MIGRATIONS.append(
    Migration(
        "003_match_fields",
        """
        ALTER TABLE lessons ADD COLUMN match_fields VARCHAR;
        UPDATE lessons SET match_fields = CAST(json_object(
            'role', role, 'client_id', client_id, 'city', city, 'state', state) AS VARCHAR)
        WHERE role IS NOT NULL OR client_id IS NOT NULL OR city IS NOT NULL OR state IS NOT NULL;
        """,
    )
)

# 004: how far the scheduled learner has read each op log (by the log's commit sequence), so
# a restart goes on where it stopped and no op is read twice or skipped.
MIGRATIONS.append(
    Migration(
        "004_learn_cursor",
        """
        CREATE TABLE learn_cursor (
            source VARCHAR PRIMARY KEY,
            seq BIGINT NOT NULL,
            updated_at TIMESTAMP NOT NULL
        );
        """,
    )
)

# 005: every judged op's evidence is kept, those whose rejections name their rule too (flagged
# ``rules_stated``): induction reads only the others; the gatekeeper replays them all.
MIGRATIONS.append(
    Migration(
        "005_evidence_rules_stated",
        """
        ALTER TABLE evidence_ops ADD COLUMN rules_stated BOOLEAN DEFAULT false;
        """,
    )
)


# The same schema in PostgreSQL (named, add-only, recorded per store in agentlake_migrations),
# plus the head row every writing transaction locks (see db.LessonDB.transaction).
PG_STORE = "lessons"
PG_MIGRATIONS = [
    Migration(
        "001_lessons",
        MIGRATIONS[0].sql.replace("DOUBLE", "DOUBLE PRECISION")
        + """
        CREATE INDEX citations_given_at_idx ON citations (given_at);
        CREATE TABLE lesson_store_head (id INTEGER PRIMARY KEY, changes BIGINT NOT NULL);
        INSERT INTO lesson_store_head VALUES (1, 0);
        """,
    ),
    Migration("002_evidence", MIGRATIONS[1].sql),
    Migration(
        "003_match_fields",
        MIGRATIONS[2]
        .sql.replace("CAST(json_object(", "CAST(jsonb_strip_nulls(jsonb_build_object(")
        .replace(") AS VARCHAR)", ")) AS VARCHAR)"),
    ),
    Migration("004_learn_cursor", MIGRATIONS[3].sql),
    Migration("005_evidence_rules_stated", MIGRATIONS[4].sql),
]
