"""OpStore: durable, idempotent, one writer with group commit, filters, restart, full queue."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from agentlake.errors import UnavailableError, UserError
from agentlake.observe import LLMUsage, ObservedOp, Observer, OpStore, QueueFullError
from agentlake.observe.op_table import MIGRATIONS


def _op(i: int, **fields: object) -> ObservedOp:
    base: dict[str, object] = {
        "id": f"op-{i:05d}",
        "endpoint": "tool.sql",
        "source": "agent",
        "duration_ms": float(i),
    }
    base.update(fields)
    return ObservedOp(**base)


def test_append_is_durable_and_round_trips_every_field(open_ops) -> None:
    op = ObservedOp(
        id="full-1",
        ts=datetime(2026, 11, 21, 8, 0, tzinfo=UTC),
        trace_id="t" * 32,
        span_id="s" * 16,
        parent_span_id="p" * 16,
        endpoint="llm.chat",
        source="llm",
        agent_id="executor",
        input_summary="fill 3 x Welder in Cleveland, OH",
        output_summary="3 workers proposed",
        success=False,
        duration_ms=12.5,
        error="RunError: timeout",
        run_id="run-9",
        labels=dict(
            staffer_id="st-1",
            event_kind="fill",
            role="Welder",
            city="Cleveland",
            state="OH",
            count=3,
            sig_hash="abc",
            rescue_attempted=True,
            rescue_succeeded=False,
        ),
        usage=LLMUsage(
            provider="ollama",
            model="qwen3:4b",
            input_tokens=100,
            output_tokens=20,
            thinking_tokens=5,
            finish_reason="stop",
            attempts=2,
            continuations=1,
            cost_usd=0.001,
        ),
        attributes={"k": [1, 2], "nested": {"a": "b"}},
    )
    with open_ops() as store:
        assert [r.status for r in store.append([op])] == ["stored"]
    # A fresh process-like open, read-only: the op is on disk exactly as sent.
    with open_ops(read_only=True) as reader:
        (back,) = reader.query()
    assert back.model_dump(exclude={"seq"}) == op.model_dump(exclude={"seq"})
    assert back.seq == 1


def test_duplicate_ids_are_stored_once_and_answered_duplicate(open_ops) -> None:
    with open_ops() as store:
        first = store.append([_op(1), _op(2), _op(1, endpoint="other")])
        assert [r.status for r in first] == ["stored", "stored", "duplicate"]
        again = store.append([_op(2), _op(3)])
        assert [r.status for r in again] == ["duplicate", "stored"]
        assert store.count() == 3
        # The first write wins: the repeated id did not overwrite anything.
        assert store.query(endpoint="other") == []


def test_concurrent_appends_share_commits(open_ops) -> None:
    with open_ops() as store:
        errors: list[BaseException] = []

        def worker(base: int) -> None:
            try:
                for i in range(25):
                    assert store.append([_op(base + i)])[0].status == "stored"
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k * 1000,)) for k in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert store.count() == 400
        # 400 single-op appends from 16 threads: group commit puts several in one transaction.
        assert store.committed_batches < 400


def test_query_filters_and_pagination(open_ops) -> None:
    t0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
    ops = [
        _op(
            i,
            ts=t0 + timedelta(minutes=i),
            source="scenario" if i % 2 else "agent",
            success=i % 3 != 0,
            endpoint=f"tool.{'sql' if i < 5 else 'search'}",
            run_id="r1" if i < 6 else "r2",
            labels={"staffer_id": f"st-{i % 2}"},
        )
        for i in range(10)
    ]
    with open_ops() as store:
        store.append(ops)
        ids = lambda found: [op.id for op in found]  # noqa: E731
        assert ids(store.query(limit=3)) == ["op-00009", "op-00008", "op-00007"]
        assert ids(store.query(limit=3, offset=3)) == ["op-00006", "op-00005", "op-00004"]
        assert ids(store.query(order="asc", limit=2)) == ["op-00000", "op-00001"]
        assert {op.source for op in store.query(source="scenario")} == {"scenario"}
        assert ids(store.query(success=False, order="asc")) == [
            "op-00000",
            "op-00003",
            "op-00006",
            "op-00009",
        ]
        assert len(store.query(endpoint="tool.search")) == 5
        assert len(store.query(endpoint="tool.*")) == 10
        assert ids(store.query(since=t0 + timedelta(minutes=8))) == ["op-00009", "op-00008"]
        assert ids(store.query(until=t0 + timedelta(minutes=1))) == ["op-00000"]
        assert ids(store.query(labels={"staffer_id": "st-1"}, run_id="r2", order="asc")) == [
            "op-00007",
            "op-00009",
        ]
        assert store.count(run_id="r1") == 6
        with pytest.raises(UserError):
            store.query(limit=-1)


def test_stats_counts_and_latency(open_ops) -> None:
    with open_ops() as store:
        store.append([_op(i, success=i != 0, source="scenario" if i == 4 else "agent") for i in range(5)])
        stats = store.stats()
    assert (stats.total, stats.successes, stats.failures) == (5, 4, 1)
    assert stats.by_source == {"agent": 4, "scenario": 1}
    assert stats.latency_p50_ms == 2.0
    assert stats.latency_p95_ms == pytest.approx(3.8)
    assert [op.id for op in stats.recent_scenario] == ["op-00004"]


def test_restart_rebuilds_ring_and_counters(open_ops) -> None:
    with Observer(open_ops(), ring_size=3) as observer:
        observer.record_many([_op(i, success=i != 1) for i in range(5)])
    with Observer(open_ops(), ring_size=3) as observer:
        assert [op.id for op in observer.recent()] == ["op-00002", "op-00003", "op-00004"]
        stats = observer.stats()
        assert (stats.total, stats.failures) == (5, 1)
        assert stats.by_endpoint == {"tool.sql": 5}
        observer.record(_op(9))
        assert observer.stats().total == 6
        assert observer.recent(1)[0].id == "op-00009"


class _GatedStore:
    """Mixed into a real store (either backend): its writer waits for the test before
    committing (to fill the queue)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.gate = threading.Event()
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def _commit(self, batch):  # type: ignore[no-untyped-def]
        self.gate.wait(10)
        return super()._commit(batch)


def test_full_queue_refuses_fast_and_loses_nothing_accepted(open_ops) -> None:
    store = open_ops(cls=_GatedStore, queue_max=4)
    try:
        # Ops count against queue_max until their commit is done, in the writer's hands or not.
        first = store.submit([_op(1)])
        queued = store.submit([_op(2), _op(3), _op(4)])
        with pytest.raises(QueueFullError) as info:
            store.submit([_op(5), _op(6)])
        assert info.value.http_status == 503
        assert info.value.retry_after >= 1
        store.gate.set()
        assert [r.status for r in first.wait(10) + queued.wait(10)] == ["stored"] * 4
        assert store.count() == 4
    finally:
        store.gate.set()
        store.close()


def test_read_only_open_while_a_writer_holds_the_file_and_final_schema(tmp_path: Path) -> None:
    path = tmp_path / "o.duckdb"
    with pytest.raises(UserError, match="no observer store"):
        OpStore(path, read_only=True)
    with OpStore(path) as store:
        store.append([_op(1)])
        # Another process cannot open the file while this one writes: it is told to use HTTP.
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                f"from agentlake.observe import OpStore; OpStore({str(path)!r}, read_only=True)",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert probe.returncode != 0
        assert "AGENTLAKE_OBSERVER_SINK=http" in probe.stderr
    with OpStore(path, read_only=True) as reader, pytest.raises(UserError, match="read-only"):
        reader.append([_op(2)])
    conn = duckdb.connect(str(path), read_only=True)
    try:
        names = [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY name").fetchall()]
        columns = [
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'ops' ORDER BY ordinal_position"
            ).fetchall()
        ]
    finally:
        conn.close()
    assert names == [m.name for m in MIGRATIONS]
    assert columns[:3] == ["id", "seq", "ts"]
    assert {"run_id", "labels", "llm_model", "input_tokens", "attributes"} <= set(columns)


_OLD_ROW = (
    "INSERT INTO ops (id, seq, ts, endpoint, source, success, duration_ms, staffer_id, run_id, role, "
    '"count", rescue_attempted, stored_at) VALUES '
    "('old-1', 1, TIMESTAMP '2026-11-01 08:00:00', 'fill.judged', 'scenario', false, 1.5, 'st-1', 'run-1', "
    "'Welder', 3, true, TIMESTAMP '2026-11-01 08:00:01')"
)


@pytest.fixture
def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], OpStore]:
    """An op store written by a release before labels (its first migration only, one row with
    the fields a domain stamped as columns), and how to open it now."""
    if request.param == "postgres":
        from agentlake.migrations import Migration
        from agentlake.observe.pg_store import MIGRATIONS as PG_MIGRATIONS
        from agentlake.observe.pg_store import STORE, PgOpStore
        from agentlake.postgres import Database, apply_pg_migrations

        url = request.getfixturevalue("database_url")
        db = Database(url, name="the old store")
        try:
            apply_pg_migrations(db, STORE, [Migration(m.name, m.sql) for m in PG_MIGRATIONS[:1]])
            with db.transaction() as session:
                session.execute(_OLD_ROW.replace("1, TIMESTAMP", "nextval('ops_seq'), TIMESTAMP", 1))
        finally:
            db.close()
        return lambda: PgOpStore(url)
    conn = duckdb.connect(str(tmp_path / "old.duckdb"))
    try:
        from agentlake.migrations import apply_migrations

        apply_migrations(conn, MIGRATIONS[:1])
        conn.execute(_OLD_ROW)
    finally:
        conn.close()
    return lambda: OpStore(tmp_path / "old.duckdb")


@pytest.mark.parametrize("old_store", ["duckdb", "postgres"], indirect=True)
def test_an_old_stores_stamped_fields_open_as_labels(old_store: Callable[[], OpStore]) -> None:
    with old_store() as store:
        (op,) = store.query()
    assert op.labels == {"staffer_id": "st-1", "role": "Welder", "count": 3, "rescue_attempted": True}


@pytest.mark.parametrize("old_store", ["duckdb", "postgres"], indirect=True)
def test_an_old_stores_run_id_stays_the_run_id(old_store: Callable[[], OpStore]) -> None:
    with old_store() as store:
        (op,) = store.query()
    assert op.run_id == "run-1"


@pytest.mark.parametrize("old_store", ["duckdb", "postgres"], indirect=True)
def test_an_old_stores_ops_are_found_by_their_labels(old_store: Callable[[], OpStore]) -> None:
    with old_store() as store:
        found = store.query(labels={"staffer_id": "st-1", "count": "3"})
    assert [op.id for op in found] == ["old-1"]


def test_closed_store_refuses_writes(open_ops) -> None:
    store = open_ops()
    store.close()
    with pytest.raises(UnavailableError):
        store.append([_op(1)])


def test_checkpoints_run_beside_the_writer_and_lose_nothing(tmp_path: Path) -> None:
    import time

    path = tmp_path / "o.duckdb"
    wal = Path(f"{path}.wal")
    with OpStore(path, checkpoint_mb=1) as store:
        for batch in range(3):  # ~0.5 MB of write-ahead log each
            store.append([_op(batch * 1000 + i, input_summary="x" * 300) for i in range(1000)])
        deadline = time.monotonic() + 10
        while store.checkpoints == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.checkpoints >= 1
        # The log was folded into the file while the store stayed open and writable.
        assert not wal.exists() or wal.stat().st_size < 500_000
        store.append([_op(99_999)])
        assert store.count() == 3001
    with OpStore(path, read_only=True) as reopened:
        assert reopened.count() == 3001


def test_a_committed_op_leaves_no_reference_cycle_behind(open_ops) -> None:
    # Servers await commits through ticket callbacks (the writer resolves a future on the loop).
    # A callback kept after it ran closed a cycle (pending -> callback -> ticket -> pending) per
    # op: only a full collection could free it, and under load those stalled every request.
    import asyncio
    import gc

    from agentlake.observe.append import Pending, Ticket

    async def record(observer: Observer) -> None:
        await asyncio.gather(*(observer.record_many_async([_op(i)]) for i in range(50)))

    with Observer(open_ops()) as observer:
        asyncio.run(record(observer))  # warm up: the loop's and the store's one-time objects
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)  # keep what the collector finds, to look at it
        try:
            asyncio.run(record(observer))
            gc.collect()
            leftovers = [o for o in gc.garbage if isinstance(o, Pending | Ticket)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert observer.sink.count() == 50  # the same 50 ids: the second round is all duplicates
    assert leftovers == []


def test_a_run_id_ending_in_a_star_matches_every_run_id_it_begins(open_ops) -> None:
    run_ids = ["run-7:staffer:b1:day:e1", "run-7:staffer:b2:day:e1", "run-7:staffer:b1:day:e2", "run-70:x"]
    with open_ops() as store:
        store.append([_op(i, run_id=run_id) for i, run_id in enumerate(run_ids)])
        found = store.query(run_id="run-7:staffer:b1:*", order="asc")
    assert [op.id for op in found] == ["op-00000", "op-00002"]
