"""The scheduled learner reads the op log by commit sequence: every op once, however many arrive."""

from __future__ import annotations

import threading

import pytest

from agentlake.learn import LearningScheduler, LessonStore
from agentlake.observe import MemorySink, ObservedOp, Observer, OpStore


def _failing_sql(n: int) -> ObservedOp:
    return ObservedOp(
        id=f"sql-{n}",
        endpoint="tool.sql",
        source="agent",
        success=False,
        error='Binder Error: Referenced column "x" not found',
    )


def _noise(n: int) -> ObservedOp:
    return ObservedOp(id=f"get-{n}", endpoint="GET /health", source="gateway")


def test_cycles_page_through_the_log_reading_each_op_once(store: LessonStore) -> None:
    observer = Observer(MemorySink(), ring_size=10)
    observer.record_many([_noise(n) for n in range(2500)])
    scheduler = LearningScheduler(store, observer, interval_s=3600, page=1000, max_pages=1)

    reads = [scheduler.run_once().ops_read for _ in range(4)]  # type: ignore[union-attr]

    assert reads == [1000, 1000, 500, 0]


def test_the_cursor_is_kept_in_the_lesson_store(store: LessonStore) -> None:
    observer = Observer(MemorySink(), ring_size=10)
    observer.record_many([_noise(n) for n in range(30)])
    LearningScheduler(store, observer, interval_s=3600).run_once()

    again = LearningScheduler(store, observer, interval_s=3600)

    assert (again.cursor, again.run_once().ops_read) == (30, 0)  # type: ignore[union-attr]


def test_each_cycle_says_what_it_read_and_changed_in_one_line(store: LessonStore) -> None:
    observer = Observer(MemorySink(), ring_size=10)
    observer.record_many([_failing_sql(n) for n in range(3)] + [_noise(n) for n in range(5)])
    scheduler = LearningScheduler(store, observer, interval_s=3600)

    scheduler.run_once()

    assert scheduler.history[-1].line() == (
        "learn: 8 ops read (3 learnable) up to seq 8; lessons 1 added, 0 revised, 0 retired; 0 outcomes"
    )


@pytest.mark.slow
def test_ops_arriving_while_cycles_run_are_each_learned_from_once(tmp_path, store: LessonStore) -> None:
    observer = Observer(OpStore(tmp_path / "ops.duckdb"), ring_size=10)
    scheduler = LearningScheduler(store, observer, interval_s=0.02, page=500, max_pages=2).start()
    learnable = 0
    try:
        writers = []
        for w in range(3):

            def write(w: int = w) -> None:
                nonlocal learnable
                for batch in range(20):
                    ops = [_noise(w * 100_000 + batch * 100 + n) for n in range(99)]
                    ops.append(_failing_sql(w * 100_000 + batch))
                    observer.record_many(ops)

            writers.append(threading.Thread(target=write))
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join()
        learnable = 3 * 20
        total = 3 * 20 * 100
        while scheduler.ops_read < total:
            assert scheduler.errors == 0, scheduler.last_error
            threading.Event().wait(0.05)
    finally:
        scheduler.stop()
        observer.close()
    assert scheduler.ops_read == total
    assert store.query("SELECT count(*) FROM learned_ops")[0][0] == learnable
