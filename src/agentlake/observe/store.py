"""``OpStore``: the durable, append-only operation log (one DuckDB file, one writer thread).

This module owns the DuckDB file, the write queue and group commit, outages, and the read
queries (``query``, ``recent``, ``stats``). The ``ops`` table's shape and migrations, and an op
as a row, are ``op_table``'s; what an append answers (results, tickets, the two refusals) is
``append``'s. It does not own the in-memory ring, live stats or subscribers
(``record.Observer``) nor any HTTP (``service``, ``client``).

Durability contract: ``append`` returns only after the DuckDB transaction holding the ops has
committed (DuckDB syncs its write-ahead log on commit), so an acknowledged op survives a
SIGKILL. The writer thread drains whatever is queued, up to ``batch_max`` ops, into ONE
transaction and wakes every waiter of that batch: concurrent appends share one fsync.
Idempotency: the op id is the primary key; an id already stored (or repeated inside a batch) is
answered ``duplicate`` and stored once.

Outages: when the database cannot commit (its disk full; for PostgreSQL, the server stopped or
unreachable), the batch's callers get ``StoreUnavailableError`` (503 with ``Retry-After``) and
the store is *unavailable*: new ops are refused at once with the same error, and the writer
thread tries the database again with a growing back-off until a commit can go through, then
takes ops again. Nothing refused was acknowledged, and a retry with the same ids stores each
once, also when the failed commit had in fact gone through (then answered ``duplicate``).
"""

from __future__ import annotations

import errno
import logging
import shutil
import threading
import time
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import duckdb
import pyarrow as pa
from pydantic import BaseModel, Field

from agentlake.errors import RunError, UnavailableError, UserError
from agentlake.migrations import apply_migrations
from agentlake.observe.append import AppendResult, Pending, QueueFullError, StoreUnavailableError, Ticket
from agentlake.observe.filters import OpFilter
from agentlake.observe.model import ObservedOp
from agentlake.observe.op_table import (
    MIGRATIONS,
    OPS_SELECT,
    naive_utc,
    op_of_row,
    op_rows,
)
from agentlake.serving import held_by

log = logging.getLogger(__name__)


DEFAULT_BATCH_MAX = 20000
DEFAULT_CHECKPOINT_MB = 64.0
CHECKPOINT_POLL_S = 0.1
# While the store is unavailable the writer tries the database again after this back-off,
# doubled at each failure up to RECOVER_MAX_S: a restart of a few seconds is noticed within a
# fraction of a second, and a long outage costs one attempt every few seconds.
RECOVER_FIRST_S = 0.05
RECOVER_MAX_S = 0.5
# Room a DuckDB store wants on its disk, beyond twice the batch that did not fit, before it
# takes ops again after its disk was full.
RECOVER_FREE_BYTES = 1_000_000


class Stats(BaseModel):
    """Counts and latency over the operation log."""

    total: int = 0
    successes: int = 0
    failures: int = 0
    by_source: dict[str, int] = Field(default_factory=dict)
    by_endpoint: dict[str, int] = Field(default_factory=dict)
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    latency_window: int = Field(0, description="How many ops the latency percentiles were computed over.")
    recent_scenario: list[ObservedOp] = Field(default_factory=list)
    acknowledged: dict[str, int] = Field(
        default_factory=dict,
        description="OTLP log records ('logs') and metric data points ('metrics') acknowledged and "
        "counted since the process started; they are not stored (ops come from spans).",
    )


_DISK_FULL = ("no space left on device", "disk quota exceeded")


def _is_fatal(exc: BaseException) -> bool:
    """DuckDB invalidated the database: every statement fails until it is opened again."""
    return isinstance(exc, duckdb.FatalException) or "database has been invalidated" in str(exc)


def _duckdb_outage(exc: BaseException, path: Path) -> StoreUnavailableError | None:
    """``exc`` as the one-line 503 of a full disk under ``path`` (or of a database DuckDB
    invalidated, which the writer reopens), else ``None``."""
    full = (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)) or (
        isinstance(exc, duckdb.Error) and any(text in str(exc).lower() for text in _DISK_FULL)
    )
    if full:
        return StoreUnavailableError(
            f"the observer store cannot commit: the disk holding {path} is full; free space there "
            "(ops are taken again as soon as a commit fits)",
            reason="disk_full",
        )
    if _is_fatal(exc):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StoreUnavailableError(
            f"the observer store {path} stopped after a fatal DuckDB error ({first}); reopening it",
            reason="invalidated",
        )
    return None


def _close_quietly(cursor: duckdb.DuckDBPyConnection) -> None:
    try:
        cursor.close()
    except duckdb.Error:
        pass  # a cursor of an invalidated database


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set lock" in text)


def _one(result: Any) -> tuple[Any, ...]:
    """The one row an aggregate query returns (the driver's type allows none)."""
    return cast(tuple[Any, ...], result.fetchone())


class OpStore:
    """The durable op log in one DuckDB file, written by ONE thread (an ``OpSink``).

    ``OpStore(path)`` opens (creating) the file read-write and starts the writer; at most one
    process may do that per file (a DuckDB rule): others send ops over HTTP (see
    ``settings.observer_sink``). ``OpStore(path, read_only=True)`` only reads and fails with
    ``UnavailableError`` while another process holds the file.

    ``threads``: DuckDB threads of this database. One suits the writer: its statements are
    small inserts, for which a second thread only adds scheduling (about 20% more CPU per
    commit), and reads of a 500k-op log took the same time with one or two.

    ``checkpoint_mb``: a second thread checkpoints (folds the write-ahead log into the file)
    once the log holds that many MB, so that commits never stall on a checkpoint of their own;
    DuckDB's inline checkpoint stays as a safety net at four times the size. ``None`` leaves
    checkpoints to DuckDB (inline, at its ``checkpoint_threshold``).
    """

    _LATENCY_SQL = (
        "SELECT quantile_cont(duration_ms, 0.5), quantile_cont(duration_ms, 0.95), count(*) "
        "FROM (SELECT duration_ms FROM ops ORDER BY seq DESC LIMIT ?) AS last"
    )

    def __init__(
        self,
        path: Path,
        *,
        queue_max: int = 100_000,
        batch_max: int = DEFAULT_BATCH_MAX,
        read_only: bool = False,
        threads: int = 1,
        checkpoint_mb: float | None = DEFAULT_CHECKPOINT_MB,
    ) -> None:
        self.local = True
        self.path = Path(path)
        self.queue_max = queue_max
        self.batch_max = batch_max
        self.read_only = read_only
        self.checkpoint_mb = None if read_only else checkpoint_mb
        self.checkpoints = 0  # made by the checkpoint thread
        if read_only and not self.path.exists():
            raise UserError(
                f"no observer store at {self.path}: record some ops first or check AGENTLAKE_DATA_DIR"
            )
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = duckdb.connect(str(self.path), read_only=read_only, config={"threads": threads})
        except duckdb.Error as exc:
            if _is_lock_error(exc):
                raise UnavailableError(
                    held_by(self.path, "the observer store")
                    or f"the observer store {self.path} is held by another process (DuckDB allows one writer); "
                    "send ops over HTTP (AGENTLAKE_OBSERVER_SINK=http) or query the running observer service"
                ) from None
            raise RunError(f"cannot open the observer store {self.path}: {exc}") from None
        self._threads = threads
        if not read_only:
            apply_migrations(self._conn, MIGRATIONS)
            self._configure()
        self._next_seq = int(_one(self._conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM ops"))[0])
        self._start()

    def _configure(self) -> None:
        if self.checkpoint_mb:
            safety_net_kb = max(1, round(4 * self.checkpoint_mb * 1000))
            self._conn.execute(f"SET checkpoint_threshold = '{safety_net_kb}KB'")

    def _start(self) -> None:
        """The queue, the writer thread and (when asked) the checkpoint thread, once the
        database is open: the same for every backend."""
        read_only = self.read_only
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[Pending] = deque()
        self._queued_ops = 0
        self._closing = False
        self._closed = False
        self.committed_batches = 0
        # Set by the writer while the database cannot commit (see the module docstring).
        self._unavailable: StoreUnavailableError | None = None
        self._retry_after = RECOVER_FIRST_S
        self._last_batch_bytes = 0
        self._invalid = False  # DuckDB refuses every statement until the database is reopened
        self.outages = 0
        self.reopened = 0
        self._writer: threading.Thread | None = None
        self._checkpointer: threading.Thread | None = None
        self._stop_checkpoints = threading.Event()
        if not read_only:
            self._writer = threading.Thread(target=self._write_loop, name="observer-writer", daemon=True)
            self._writer.start()
        if self.checkpoint_mb and not read_only:
            self._checkpointer = threading.Thread(
                target=self._checkpoint_loop, name="observer-checkpointer", daemon=True
            )
            self._checkpointer.start()

    # --- writing ------------------------------------------------------------------------

    def submit(self, ops: Sequence[ObservedOp], *, wait_for_space: float = 0.0) -> Ticket:
        """Queue ``ops`` for the next group commit and return a :class:`Ticket` at once.

        Raises ``QueueFullError`` (503) when ``queue_max`` ops are already waiting, after waiting
        up to ``wait_for_space`` seconds for room; ``StoreUnavailableError`` (503) at once while
        the database cannot commit; ``UserError`` on a read-only or closed store.
        """
        if self.read_only:
            raise UserError(f"the observer store {self.path} was opened read-only")
        ops = list(ops)
        pending = Pending(ops)
        deadline = time.monotonic() + wait_for_space
        with self._cond:
            while True:
                if self._closing:
                    raise UnavailableError("the observer store is closing")
                if self._unavailable is not None:
                    raise self._unavailable.again(self._retry_after)
                # An empty queue always takes the batch, however large: it cannot starve.
                if self._queued_ops == 0 or self._queued_ops + len(ops) <= self.queue_max:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise QueueFullError(
                        f"observer write queue is full ({self._queued_ops} ops waiting, limit {self.queue_max})",
                        retry_after=1.0,
                    )
                self._cond.wait(min(left, 0.05))
            self._queue.append(pending)
            self._queued_ops += len(ops)
            self._cond.notify_all()
        return Ticket(pending, self._lock)

    def append(
        self, ops: Sequence[ObservedOp], *, timeout: float | None = None, wait_for_space: float = 0.0
    ) -> list[AppendResult]:
        """Store ``ops``; returns one :class:`AppendResult` per op, in order, once they are DURABLE.

        Duplicated ids (already stored, or repeated in ``ops``) are stored once and answered
        ``duplicate``. Raises ``QueueFullError`` when the queue is full (see :meth:`submit`),
        ``RunError`` if the commit fails or ``timeout`` seconds pass first.
        """
        if not ops:
            return []
        return self.submit(ops, wait_for_space=wait_for_space).wait(timeout)

    @property
    def queued_ops(self) -> int:
        """Ops waiting for a commit (the store's lag)."""
        return self._queued_ops

    def oldest_pending_age(self) -> float:
        """Seconds the oldest queued batch has waited; 0 when nothing waits."""
        with self._lock:
            return time.monotonic() - self._queue[0].enqueued_at if self._queue else 0.0

    def _take_batch(self) -> list[Pending] | None:
        with self._cond:
            while not self._queue:
                if self._closing:
                    return None
                if self._unavailable is not None:
                    return []  # marked by the checkpoint thread: recover before taking ops
                self._cond.wait()
            batch: list[Pending] = []
            count = 0
            while self._queue and (not batch or count + len(self._queue[0].ops) <= self.batch_max):
                pending = self._queue.popleft()
                batch.append(pending)
                count += len(pending.ops)
            return batch

    @property
    def unavailable(self) -> str | None:
        """Why the store cannot commit right now (one line), or ``None`` while it can."""
        down = self._unavailable
        return None if down is None else down.message

    def _write_loop(self) -> None:
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            if batch:
                self._settle(batch, self._commit_isolated(batch))
            if self._unavailable is not None:
                self._recover()

    def _settle(
        self, batch: list[Pending], outcomes: list[tuple[list[AppendResult] | None, BaseException | None]]
    ) -> None:
        """Hand each caller of ``batch`` its results or error and wake it."""
        with self._cond:
            for pending, (results, error) in zip(batch, outcomes, strict=True):
                self._queued_ops -= len(pending.ops)
                pending.results = results
                pending.error = error
                pending.done = True
                if pending.event is not None:
                    pending.event.set()
            callbacks = [(pending, cb) for pending in batch for cb in pending.callbacks]
            for pending in batch:
                # A callback holds its Ticket, which holds this Pending: dropping them here
                # leaves no reference cycle per op for the garbage collector to sweep (under
                # load those sweeps were full collections stalling the event loop ~150 ms).
                pending.callbacks = []
            self._cond.notify_all()
        for pending, callback in callbacks:
            try:
                callback(pending)
            except Exception:  # a waiter's callback must not kill the writer
                log.exception("observer ticket callback failed")

    def _commit_isolated(
        self, batch: list[Pending]
    ) -> list[tuple[list[AppendResult] | None, BaseException | None]]:
        """Commit ``batch`` as one group; if that fails, commit each caller's ops on their own,
        so one caller's bad op fails that caller alone, never the others sharing the commit
        (a failed INSERT leaves nothing behind, so retrying the rest stores each op once).
        An outage fails the whole batch with ``StoreUnavailableError`` and marks the store
        unavailable: retrying each caller could not help."""
        try:
            return [(results, None) for results in self._commit_or_retry(batch)]
        except StoreUnavailableError as exc:
            return self._went_down(batch, exc)
        except BaseException as exc:  # the waiters must hear about any failure
            if len(batch) == 1:
                log.exception("observer store commit failed")
                return [(None, RunError(f"observer store commit of {len(batch[0].ops)} ops failed: {exc}"))]
        outcomes: list[tuple[list[AppendResult] | None, BaseException | None]] = []
        for pending in batch:
            try:
                outcomes.append((self._commit_or_retry([pending])[0], None))
            except StoreUnavailableError as exc:
                return outcomes + self._went_down(batch[len(outcomes) :], exc)
            except BaseException as exc:
                log.exception("observer store commit failed for one caller's %d ops", len(pending.ops))
                outcomes.append(
                    (None, RunError(f"observer store commit of {len(pending.ops)} ops failed: {exc}"))
                )
        return outcomes

    def _commit_or_retry(self, batch: list[Pending]) -> list[list[AppendResult]]:
        """``_commit``; after an outage, reconnect once and commit again at once (a connection
        that died in a restart the database has already finished fails only its first use).
        Raises ``StoreUnavailableError`` when that fails too."""
        try:
            return self._commit(batch)
        except Exception as exc:
            if self._outage(exc) is None:
                raise
        try:
            self._make_ready()
            return self._commit(batch)
        except StoreUnavailableError:
            raise
        except Exception as exc:
            down = self._outage(exc)
            if down is None:
                raise
            raise down from exc

    def _went_down(
        self, batch: list[Pending], error: StoreUnavailableError
    ) -> list[tuple[list[AppendResult] | None, BaseException | None]]:
        self._mark_unavailable(error)
        return [(None, error.again(error.retry_after)) for _ in batch]

    def _mark_unavailable(self, error: StoreUnavailableError) -> None:
        """Refuse ops from now on with ``error`` and have the writer recover (any thread)."""
        with self._cond:
            if self._unavailable is not None:
                return
            self._unavailable = error
            self._retry_after = RECOVER_FIRST_S
            self.outages += 1
            self._cond.notify_all()
        log.error("observer store unavailable: %s; answering 503 until it can commit again", error.message)

    def _recover(self) -> None:
        """While the store is unavailable: refuse what was queued meanwhile, wait the back-off,
        try the database again; return once it can commit (or the store is closing)."""
        began = time.monotonic()
        delay = RECOVER_FIRST_S
        while True:
            with self._cond:
                refused = list(self._queue)
                self._queue.clear()
                down = self._unavailable
                assert down is not None
            if refused:
                self._settle(refused, [(None, down.again(delay)) for _ in refused])
            with self._cond:
                if self._closing:
                    return
                self._cond.wait(delay)
                if self._closing:
                    continue  # refuse what came in meanwhile, then stop
            try:
                self._make_ready()
            except Exception as exc:
                again = self._outage(exc)
                if again is None:
                    log.warning("observer store: reconnecting failed: %s", exc)
                delay = min(delay * 2, RECOVER_MAX_S)
                with self._cond:
                    if again is not None:
                        self._unavailable = again
                    self._retry_after = delay
                continue
            with self._cond:
                self._unavailable = None
            log.warning(
                "observer store available again after %.1f s; committing ops", time.monotonic() - began
            )
            return

    def _outage(self, exc: BaseException) -> StoreUnavailableError | None:
        """``exc`` as ``StoreUnavailableError`` when it says the database cannot commit right
        now (a backend's connection lost, a full disk); ``None`` for any other failure."""
        if _is_fatal(exc):
            self._invalid = True
        return _duckdb_outage(exc, self.path)

    def _make_ready(self) -> None:
        """Ready the database to commit again after an outage; raises while it cannot.

        DuckDB keeps its connection through a full disk (a commit that did not fit left
        nothing behind: tests/observe/test_observe_disk_full.py), so it is ready once the disk
        has room for the batch that did not fit, twice over, and a megabyte more. A quota
        (``EDQUOT``) is not seen here: the next commit tries and fails again if it still applies.
        """
        needed = RECOVER_FREE_BYTES + 2 * self._last_batch_bytes
        free = shutil.disk_usage(self.path.parent).free
        if free < needed:
            raise OSError(errno.ENOSPC, f"{free} bytes free under {self.path.parent}, {needed} wanted")
        if not self._invalid:
            try:
                self._conn.execute("SELECT 1")
            except duckdb.Error as exc:
                if not _is_fatal(exc):
                    raise
                self._invalid = True
        if self._invalid:
            self._reopen()

    def _reopen(self) -> None:
        """Open the file anew after DuckDB invalidated the database (a checkpoint that met a
        full disk does that): what was committed is read back from the write-ahead log."""
        _close_quietly(self._conn)
        self._conn = duckdb.connect(str(self.path), config={"threads": self._threads})
        self._configure()
        stored = int(_one(self._conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM ops"))[0])
        self._next_seq = max(self._next_seq, stored)
        self._invalid = False
        self.reopened += 1
        log.warning("observer store %s reopened after a fatal DuckDB error", self.path)

    def _commit(self, batch: list[Pending]) -> list[list[AppendResult]]:
        seen: set[str] = set()
        fresh: list[ObservedOp] = []
        for pending in batch:
            for op in pending.ops:
                if op.id not in seen:
                    seen.add(op.id)
                    fresh.append(op)
        now = datetime.now(UTC).replace(tzinfo=None)
        first_seq = self._next_seq
        table = op_rows(fresh, first_seq, now)
        self._last_batch_bytes = table.nbytes
        # One INSERT statement = one auto-committed transaction: atomic and, once execute()
        # returns, durable. No explicit BEGIN/COMMIT and no register/unregister round trips:
        # together about 35% less CPU per group commit than a transaction around a registered
        # table, which is what small commits (single POSTs) pay for.
        inserted: set[str] | None = None
        try:
            # Fast path: a plain INSERT, the primary key refusing any duplicate. The usual
            # batch has none, and a plain INSERT is cheaper than INSERT OR IGNORE.
            self._insert(table, "INSERT")
        except duckdb.ConstraintException:
            # Some id is already stored (the failed statement left nothing behind): insert the
            # others, then see which went in by the seq range this batch was given (a cheap
            # zone-map scan; this thread is the only writer, so nothing else can be there).
            self._insert(table, "INSERT OR IGNORE")
            inserted = {
                row[0]
                for row in self._conn.execute(
                    "SELECT id FROM ops WHERE seq >= ? AND seq < ?", [first_seq, first_seq + len(fresh)]
                ).fetchall()
            }
        # seq values of ops that turned out to be duplicates are simply skipped: seq orders
        # commits, it does not need to be dense.
        self._next_seq += len(fresh)
        return self._answers(batch, inserted if inserted is not None else {op.id for op in fresh})

    def _answers(self, batch: list[Pending], stored_now: set[str]) -> list[list[AppendResult]]:
        """Each caller's results once ``stored_now`` (the ids this commit inserted) is durable:
        any other id, or a repeat after the first, is a duplicate."""
        self.committed_batches += 1
        results: list[list[AppendResult]] = []
        for pending in batch:
            per: list[AppendResult] = []
            for op in pending.ops:
                if op.id in stored_now:
                    stored_now.discard(op.id)  # a repeat later in the same batch is a duplicate
                    per.append(AppendResult(op.id, "stored"))
                else:
                    per.append(AppendResult(op.id, "duplicate"))
            results.append(per)
        return results

    def _insert(self, table: pa.Table, verb: str) -> None:
        """Insert ``table`` in one auto-committed statement."""
        _incoming = table  # read by DuckDB's replacement scan in the statement
        # BY NAME instead of two 35-column lists: the statement is parsed at every commit.
        self._conn.execute(f"{verb} INTO ops BY NAME SELECT * FROM _incoming")

    def _checkpoint_loop(self) -> None:
        # CHECKPOINT on its own cursor runs beside the writer's commits (DuckDB lets them go
        # on meanwhile): the checkpoint's CPU goes to the other core instead of stalling the
        # commit that happened to cross the threshold, and everyone waiting on it.
        assert self.checkpoint_mb is not None
        wal = Path(f"{self.path}.wal")
        limit = self.checkpoint_mb * 1_000_000
        conn = self._conn
        cursor = conn.cursor()
        try:
            failures = 0
            # After a failed checkpoint (a full disk, another transaction in the way) the next
            # waits longer, up to 6.4 s, and only the first of a run is logged.
            while not self._stop_checkpoints.wait(CHECKPOINT_POLL_S * 2**failures):
                if self._unavailable is not None:
                    continue  # its disk is full: a checkpoint needs room too
                try:
                    if wal.stat().st_size < limit:
                        continue
                except FileNotFoundError:
                    continue
                if conn is not self._conn:  # reopened by the writer
                    _close_quietly(cursor)
                    conn, cursor = self._conn, self._conn.cursor()
                try:
                    cursor.execute("CHECKPOINT")
                except duckdb.Error as exc:
                    if not failures:
                        log.warning("observer store checkpoint failed (will retry): %s", exc)
                    failures = min(failures + 1, 6)
                    down = self._outage(exc)
                    if down is not None and self._invalid:
                        self._mark_unavailable(down)  # no commit can go through until reopened
                    continue
                failures = 0
                self.checkpoints += 1
        finally:
            _close_quietly(cursor)

    # --- reading ------------------------------------------------------------------------

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        if self._closed:
            raise UserError("the observer store is closed")
        down = self._unavailable
        if self._invalid and down is not None:
            raise down.again(self._retry_after)  # until the writer has reopened it
        return self._conn.cursor()

    # A label compared as text: DuckDB reads it by JSON path (the name is checked to be plain).
    _LABEL_SQL = "json_extract_string(labels, ?) = ?"

    @staticmethod
    def _label_param(key: str) -> str:
        return f'$."{key}"'

    def query(self, wanted: OpFilter | None = None, /, **filters: Any) -> list[ObservedOp]:
        """Committed ops matching ``wanted`` (an ``OpFilter``, ``observe.filters``; or its
        fields as keywords, which replace its own), newest first (``order="asc"``: oldest
        first; with ``after_seq``: by commit sequence).

        ``endpoint`` or ``run_id`` ending in ``*`` matches a prefix (``tool.*``, ``run-7:*``).
        ``since`` is inclusive, ``until`` exclusive; naive datetimes are taken as UTC; labels
        compare as text. Raises ``UserError`` for an unknown or bad filter.
        """
        wanted = OpFilter.of(wanted, **filters)
        where, params = self._filters(wanted)
        direction = "DESC" if wanted.order == "desc" else "ASC"
        by = f"seq {direction}" if wanted.after_seq is not None else f"ts {direction}, seq {direction}"
        sql = f"SELECT {OPS_SELECT} FROM ops {where} ORDER BY {by} LIMIT ? OFFSET ?"
        rows = self._cursor().execute(sql, [*params, wanted.limit, wanted.offset]).fetchall()
        return [op_of_row(row) for row in rows]

    def count(self, wanted: OpFilter | None = None, /, **filters: Any) -> int:
        """How many committed ops match the same filters as :meth:`query`."""
        where, params = self._filters(OpFilter.of(wanted, **filters))
        return int(_one(self._cursor().execute(f"SELECT count(*) FROM ops {where}", params))[0])

    def last_seq(self) -> int:
        """The highest commit sequence stored (0 for an empty log)."""
        return int(_one(self._cursor().execute("SELECT coalesce(max(seq), 0) FROM ops"))[0])

    def _filters(self, wanted: OpFilter) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for column in ("id", "source", "success", "agent_id", "trace_id"):
            value = getattr(wanted, column)
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        for column in ("endpoint", "run_id"):
            value = getattr(wanted, column)
            if value is None:
                continue
            if value.endswith("*"):
                clauses.append(f"starts_with({column}, ?)")
                params.append(value[:-1])
            else:
                clauses.append(f"{column} = ?")
                params.append(value)
        for key, value in wanted.labels.items():
            clauses.append(self._LABEL_SQL)
            params += [self._label_param(key), value]
        if wanted.since is not None:
            clauses.append("ts >= ?")
            params.append(naive_utc(wanted.since))
        if wanted.until is not None:
            clauses.append("ts < ?")
            params.append(naive_utc(wanted.until))
        if wanted.after_seq is not None:
            clauses.append("seq > ?")
            params.append(wanted.after_seq)
        return ("WHERE " + " AND ".join(clauses) if clauses else ""), params

    def recent(self, n: int = 100) -> list[ObservedOp]:
        """The last ``n`` ops in commit order, oldest first (what rebuilds the ring)."""
        rows = (
            self._cursor()
            .execute(
                f"SELECT {OPS_SELECT} FROM (SELECT {OPS_SELECT} FROM ops ORDER BY seq DESC LIMIT ?) AS last ORDER BY seq",
                [n],
            )
            .fetchall()
        )
        return [op_of_row(row) for row in rows]

    def stats(self, *, latency_window: int = 10000, recent_scenario: int = 20) -> Stats:
        """Exact counts over the whole log; latency percentiles over the last ``latency_window`` ops."""
        cur = self._cursor()
        total, successes = _one(cur.execute("SELECT count(*), count(*) FILTER (WHERE success) FROM ops"))
        by_source = dict(
            cur.execute("SELECT source, count(*) FROM ops GROUP BY source ORDER BY 2 DESC").fetchall()
        )
        by_endpoint = dict(
            cur.execute("SELECT endpoint, count(*) FROM ops GROUP BY endpoint ORDER BY 2 DESC").fetchall()
        )
        p50, p95, window = _one(cur.execute(self._LATENCY_SQL, [latency_window]))
        return Stats(
            total=total,
            successes=successes,
            failures=total - successes,
            by_source=by_source,
            by_endpoint=by_endpoint,
            latency_p50_ms=p50,
            latency_p95_ms=p95,
            latency_window=window,
            recent_scenario=self.query(source="scenario", limit=recent_scenario),
        )

    def counters(self) -> tuple[int, int, dict[str, int], dict[str, int]]:
        """(total, successes, by_source, by_endpoint): the seed of an Observer's live counters."""
        stats = self.stats(latency_window=1, recent_scenario=0)
        return stats.total, stats.successes, stats.by_source, stats.by_endpoint

    # --- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Commit everything already queued, stop the writer and close the file. Idempotent."""
        if self._closed:
            return
        self._stop_checkpoints.set()
        if self._checkpointer is not None:
            self._checkpointer.join()
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._writer is not None:
            self._writer.join()
        self._closed = True
        self._conn.close()

    def __enter__(self) -> OpStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
