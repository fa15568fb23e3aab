"""``PgOpStore``: the op log in PostgreSQL (setting ``database_url``), for several writers at once.

Owns the PostgreSQL schema of ``ops`` (its own named, add-only migrations) and the group commit
into it; everything else (the queue, the writer thread, tickets, the read queries) is
``OpStore``'s, unchanged: the reads are the same SQL text on both backends.

Durability contract, as ``OpStore``'s: ``append`` returns only after the transaction holding
the ops has committed (PostgreSQL flushes its write-ahead log on commit with the default
``synchronous_commit``). Each batch is COPYed into a temporary table, then moved into ``ops``
with ``ON CONFLICT (id) DO NOTHING RETURNING id`` in the same transaction: the ids returned are
the ones stored now, every other one is a duplicate, whichever process stored it first. Many
processes may hold a ``PgOpStore`` on the same database; ``seq`` comes from a database sequence,
so it is unique across them, and it orders commits across them too: a batch takes a lock held
to its commit (``pg_advisory_xact_lock(SEQ_LOCK)``) before its rows get their ``seq``, so no row
commits after one with a higher ``seq`` and a reader that reads by ``seq`` (the scheduled
learner's cursor) never passes a row that commits later. The COPY runs before the lock: writers
wait on each other only for the move into ``ops``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from agentlake.errors import UserError
from agentlake.migrations import Migration
from agentlake.observe.model import ObservedOp
from agentlake.observe.store import _COLUMNS, _USAGE, AppendResult, OpStore, _naive_utc, _Pending
from agentlake.observe.store import MIGRATIONS as DUCKDB_MIGRATIONS
from agentlake.postgres import Database, Session, apply_pg_migrations

STORE = "ops"
# The transaction-scoped advisory lock every writer takes before its rows get their seq.
SEQ_LOCK = 0x61676C6B  # "aglk"

# The DuckDB schema's text in PostgreSQL's spelling (a released migration is never edited, so
# the derived text is as fixed as the original), seq from a sequence shared by every writer, and
# the indexes the reads' ORDER BY ts / seq use (DuckDB scans by zone maps instead).
MIGRATIONS = [
    Migration(
        "0001_ops",
        "CREATE SEQUENCE ops_seq;"
        + DUCKDB_MIGRATIONS[0]
        .sql.replace("DOUBLE", "DOUBLE PRECISION")
        .replace("seq BIGINT NOT NULL,", "seq BIGINT NOT NULL DEFAULT nextval('ops_seq'),")
        + """;
        CREATE INDEX ops_seq_idx ON ops (seq);
        CREATE INDEX ops_ts_idx ON ops (ts, seq);
        """,
    ),
    # The DuckDB migration's labels in PostgreSQL's spelling (nulls stripped).
    Migration(
        "0002_labels",
        DUCKDB_MIGRATIONS[1]
        .sql.replace("CAST(json_object(", "CAST(jsonb_strip_nulls(jsonb_build_object(")
        .replace(") AS VARCHAR)", ")) AS VARCHAR)"),
    ),
]

# Every column but seq, which the database's sequence assigns.
_COPIED = [name for name in _COLUMNS if name != "seq"]
_COPIED_SQL = ", ".join(f'"{name}"' for name in _COPIED)


def _row(op: ObservedOp, stored_at: datetime) -> tuple[Any, ...]:
    usage = op.usage
    values: dict[str, Any] = {
        "id": op.id,
        "ts": op.ts.replace(tzinfo=None) if op.ts.tzinfo is UTC else _naive_utc(op.ts),
        "trace_id": op.trace_id,
        "span_id": op.span_id,
        "parent_span_id": op.parent_span_id,
        "endpoint": op.endpoint,
        "source": op.source,
        "agent_id": op.agent_id,
        "input_summary": op.input_summary,
        "output_summary": op.output_summary,
        "success": op.success,
        "duration_ms": op.duration_ms,
        "error": op.error,
        "run_id": op.run_id,
        "labels": json.dumps(op.labels, ensure_ascii=False) if op.labels else None,
        "attributes": json.dumps(op.attributes, default=str, ensure_ascii=False) if op.attributes else None,
        "stored_at": stored_at,
    }
    for name, column in _USAGE.items():
        values[column] = None if usage is None else getattr(usage, name)
    return tuple(values[name] for name in _COPIED)


class PgOpStore(OpStore):
    """The op log in the PostgreSQL database at ``url``; see the module docstring.

    Opening migrates the schema (``read_only``: never; a database without the schema is a
    ``UserError``). An unreachable server or a schema written by a newer agentlake raises
    ``UserError`` before anything is written.
    """

    _LABEL_SQL = "(CAST(labels AS jsonb) ->> ?) = ?"

    @staticmethod
    def _label_param(key: str) -> str:
        return key

    _LATENCY_SQL = (
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms), "
        "percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms), count(*) "
        "FROM (SELECT duration_ms FROM ops ORDER BY seq DESC LIMIT ?) AS last"
    )

    def __init__(
        self,
        url: str,
        *,
        queue_max: int = 100_000,
        batch_max: int = 20_000,
        read_only: bool = False,
    ) -> None:
        # Other processes write the same log: this process's counters would be its own share
        # only, so an Observer asks the store (the database) for stats instead of keeping them.
        self.local = False
        self.kind = "postgres"
        self.queue_max = queue_max
        self.batch_max = batch_max
        self.read_only = read_only
        self.checkpoint_mb = None
        self.checkpoints = 0
        self.checkpoint_seconds = 0.0
        # The writer keeps one connection; readers (the gateway's /ops, stats) share the rest.
        self._conn = Database(url, name="the observer store", max_size=4)
        self.path = self._conn.where  # what messages name
        try:
            if read_only:
                found = self._conn.execute("SELECT to_regclass('ops') IS NOT NULL").fetchone()
                if not (found and found[0]):
                    raise UserError(
                        f"no observer store in PostgreSQL at {self.path}: record some ops first or check "
                        "AGENTLAKE_DATABASE_URL"
                    )
            else:
                apply_pg_migrations(self._conn, STORE, MIGRATIONS)
        except BaseException:
            self._conn.close()
            raise
        self._prepared: set[tuple[int, int]] = set()  # connections holding the temporary table
        self._start()

    def _cursor(self) -> Database:  # type: ignore[override]
        if self._closed:
            raise UserError("the observer store is closed")
        return self._conn

    def _commit(self, batch: list[_Pending]) -> list[list[AppendResult]]:
        seen: set[str] = set()
        rows: list[tuple[Any, ...]] = []
        now = datetime.now(UTC).replace(tzinfo=None)
        for pending in batch:
            for op in pending.ops:
                if op.id not in seen:
                    seen.add(op.id)
                    rows.append(_row(op, now))
        created = None
        with self._conn.transaction() as session:
            created = self._prepare(session)
            with session.conn.cursor() as cur:
                with cur.copy(f"COPY incoming_ops ({_COPIED_SQL}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                # Commits in seq order across writers (see the module docstring).
                cur.execute("SELECT pg_advisory_xact_lock(%s)", [SEQ_LOCK])
                cur.execute(
                    f"INSERT INTO ops ({_COPIED_SQL}) SELECT {_COPIED_SQL} FROM incoming_ops "
                    "ON CONFLICT (id) DO NOTHING RETURNING id"
                )
                stored = {row[0] for row in cur.fetchall()}
        # Leaving the block committed (with the temporary table, if this made it): only now
        # are the answers true.
        if created is not None:
            self._prepared.add(created)
        return self._answers(batch, stored)

    def _prepare(self, session: Session) -> tuple[int, int] | None:
        """Make the session's temporary table (emptied at every commit) once per connection;
        returns the connection's key when it made it now (it exists once that commits)."""
        # The object and its server process: a pool's replacement connection differs in both.
        key = (id(session.conn), session.conn.info.backend_pid)
        if key not in self._prepared:
            session.conn.execute(
                "CREATE TEMPORARY TABLE IF NOT EXISTS incoming_ops ON COMMIT DELETE ROWS AS "
                f"SELECT {_COPIED_SQL} FROM ops WITH NO DATA"
            )
            return key
        return None
