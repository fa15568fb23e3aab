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

The writer thread commits through a connection of its own; readers share the pool's. When the
server goes away (stopped, restarting, unreachable, out of disk), the commit's callers get
``StoreUnavailableError`` (503, ``Retry-After``) and ``OpStore``'s writer reconnects with a
growing back-off (``_make_ready``), refusing ops at once meanwhile; a connection that died in a
restart already over is replaced at its first failure and the commit made again at once, so
nobody is refused. Ops whose commit was cut off between COMMIT and its answer may have been
stored: a retry with their ids is answered ``duplicate``, and each is stored once.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentlake.errors import UnavailableError, UserError
from agentlake.migrations import Migration
from agentlake.observe.append import AppendResult, Pending, StoreUnavailableError
from agentlake.observe.model import ObservedOp
from agentlake.observe.op_table import MIGRATIONS as DUCKDB_MIGRATIONS
from agentlake.observe.op_table import OPS_COLUMNS, USAGE_COLUMNS, naive_utc
from agentlake.observe.store import OpStore
from agentlake.postgres import Database, apply_pg_migrations, outage

if TYPE_CHECKING:
    import psycopg

STORE = "ops"
# The transaction-scoped advisory lock every writer takes before its rows get their seq.
SEQ_LOCK = 0x61676C6B  # "aglk"
DISK_FULL_STATE = "53100"

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
_COPIED = [name for name in OPS_COLUMNS if name != "seq"]
_COPIED_SQL = ", ".join(f'"{name}"' for name in _COPIED)


def _row(op: ObservedOp, stored_at: datetime) -> tuple[Any, ...]:
    usage = op.usage
    values: dict[str, Any] = {
        "id": op.id,
        "ts": op.ts.replace(tzinfo=None) if op.ts.tzinfo is UTC else naive_utc(op.ts),
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
    for name, column in USAGE_COLUMNS.items():
        values[column] = None if usage is None else getattr(usage, name)
    return tuple(values[name] for name in _COPIED)


class PgOpStore(OpStore):
    """The op log in the PostgreSQL database at ``url``; see the module docstring.

    Opening migrates the schema (``read_only``: never; a database without the schema is a
    ``UserError``). An unreachable server or a schema written by a newer agentlake raises
    ``UserError`` before anything is written.
    """

    _LABEL_SQL = "(CAST(labels AS jsonb) ->> ?) = ?"
    # The same place as the DuckDB store's connection, holding the pool instead.
    _conn: Database  # type: ignore[assignment]

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
        # The writer thread keeps a connection of its own (made again after an outage);
        # readers (the gateway's /ops, stats) share the pool's.
        self._conn = Database(url, name="the observer store", max_size=4)
        self.path = self._conn.where  # type: ignore[assignment]  # what messages name: the database
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
        self._writer_conn: psycopg.Connection | None = None  # the writer thread's own (see _commit)
        self._start()

    def _cursor(self) -> Database:  # type: ignore[override]
        if self._closed:
            raise UserError("the observer store is closed")
        return self._conn

    def _commit(self, batch: list[Pending]) -> list[list[AppendResult]]:
        seen: set[str] = set()
        rows: list[tuple[Any, ...]] = []
        now = datetime.now(UTC).replace(tzinfo=None)
        for pending in batch:
            for op in pending.ops:
                if op.id not in seen:
                    seen.add(op.id)
                    rows.append(_row(op, now))
        if self._writer_conn is None:
            self._make_ready()
        conn = self._writer_conn
        assert conn is not None
        with conn.transaction(), conn.cursor() as cur:
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
        # Leaving the block committed: only now are the answers true.
        return self._answers(batch, stored)

    def _make_ready(self) -> None:
        """A new connection for the writer, with its temporary table (emptied at every
        commit); the pool's idle connections are checked too, so readers drop the dead ones."""
        self._drop_writer()
        conn = self._conn.connect()
        try:
            conn.execute(
                "CREATE TEMPORARY TABLE incoming_ops ON COMMIT DELETE ROWS AS "
                f"SELECT {_COPIED_SQL} FROM ops WITH NO DATA"
            )
            conn.commit()
        except BaseException:
            conn.close()
            raise
        self._writer_conn = conn
        self._conn._check_idle()

    def _drop_writer(self) -> None:
        conn, self._writer_conn = self._writer_conn, None
        if conn is not None:
            conn.close()

    def _outage(self, exc: BaseException) -> StoreUnavailableError | None:
        if isinstance(exc, StoreUnavailableError):
            return exc
        reason = outage(exc)
        if reason is not None:
            message = self._conn.unavailable(reason)
        elif isinstance(exc, UnavailableError):  # Database.connect's own
            message = exc.message
        else:
            return None
        full = getattr(exc, "sqlstate", None) == DISK_FULL_STATE
        return StoreUnavailableError(message, reason="disk_full" if full else "unreachable")

    def close(self) -> None:
        super().close()
        self._drop_writer()
