"""deferred(): ops recorded inside are queued without waiting and are durable when it exits."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from contextvars import copy_context
from pathlib import Path

import pytest

from agentlake.errors import RunError
from agentlake.observe import (
    MemorySink,
    ObservedOp,
    Observer,
    OpStore,
    deferred,
    observe,
    record_op,
    set_observer,
    wrap_tool,
)


@pytest.fixture
def observer(tmp_path: Path) -> Iterator[Observer]:
    obs = Observer(OpStore(tmp_path / "o.duckdb"))
    previous = set_observer(obs)
    try:
        yield obs
    finally:
        set_observer(previous)
        obs.close()


def _count(observer: Observer) -> int:
    return observer.sink.count()  # type: ignore[attr-defined]


def test_ops_inside_are_durable_at_exit_in_one_commit(observer: Observer) -> None:
    store: OpStore = observer.sink  # type: ignore[assignment]
    commits = store.committed_batches
    double = wrap_tool(lambda x: 2 * x, endpoint="tool.double")
    with deferred() as scope:
        for i in range(5):
            with observe("tool.step", input=i) as op:
                op.set_output(double(i))
        record_op(ObservedOp(endpoint="task.fill", source="agent"))
        # Held, not yet stored: nothing was waited for.
        assert _count(observer) == 0
        assert op.op is not None
    assert _count(observer) == 11
    assert scope.recorded == 11
    assert scope.failed == 0
    assert store.committed_batches == commits + 1
    assert observer.stats().by_endpoint == {"tool.step": 5, "tool.double": 5, "task.fill": 1}
    assert [o.input_summary for o in observer.query(endpoint="tool.step", order="asc")] == list("01234")


def test_a_store_failure_surfaces_at_exit(observer: Observer, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(RunError, match=r"2 op\(s\) recorded in a deferred observer scope were not stored"):
        with deferred():
            with observe("tool.a"):
                pass
            with observe("tool.b"):
                pass
            observer.sink.close()  # the store goes away before the scope's commit
    with caplog.at_level(logging.WARNING), deferred(raise_errors=False) as quiet:
        with observe("tool.c"):
            pass
    assert quiet.failed == 1
    assert "closing" in quiet.errors[0]
    assert "were not stored" in caplog.text


def test_an_exception_in_the_block_is_not_masked_and_its_ops_are_kept(observer: Observer) -> None:
    with pytest.raises(KeyError), deferred():
        with observe("tool.ok"):
            pass
        with observe("tool.bad"):
            raise KeyError("w-1")
    assert {op.endpoint: op.success for op in observer.query()} == {"tool.ok": True, "tool.bad": False}


def test_nested_scopes_each_wait_for_their_own_ops(observer: Observer) -> None:
    with deferred() as outer:
        with observe("outer.before"):
            pass
        with deferred() as inner:
            with observe("inner.op"):
                pass
        # The inner scope's op is durable now; the outer one's is still held.
        assert [op.endpoint for op in observer.query()] == ["inner.op"]
        with observe("outer.after"):
            pass
    assert (inner.recorded, outer.recorded) == (1, 2)
    assert _count(observer) == 3


def test_an_inner_failure_not_raised_is_reported_by_the_outer_scope(observer: Observer) -> None:
    with pytest.raises(RunError, match="were not stored"):
        with deferred():
            with deferred(raise_errors=False) as inner:
                with observe("tool.lost"):
                    pass
                observer.sink.close()
            assert inner.failed == 1


def test_threads_that_copy_the_context_record_into_the_scope(observer: Observer) -> None:
    def work(n: int) -> None:
        with observe("tool.threaded", input=n):
            pass

    with deferred() as scope:
        threads = [threading.Thread(target=copy_context().run, args=(work, n)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert _count(observer) == 0
    assert scope.recorded == 4
    assert _count(observer) == 4


def test_async_scope_with_concurrent_tasks(observer: Observer) -> None:
    async def fetch(worker_id: str) -> dict[str, str]:
        await asyncio.sleep(0.001)
        return {"id": worker_id}

    wrapped = wrap_tool(fetch, endpoint="tool.fetch")

    async def main() -> tuple[int, int, list[dict[str, str]]]:
        async with deferred() as scope:
            results = await asyncio.gather(*(wrapped(f"w-{i}") for i in range(20)))
            held = _count(observer)
        return held, scope.recorded, results

    held, recorded, results = asyncio.run(main())
    assert held == 0
    assert recorded == 20
    assert results[3] == {"id": "w-3"}
    assert _count(observer) == 20
    assert observer.stats().by_endpoint == {"tool.fetch": 20}


def test_async_wrap_tool_outside_a_scope_is_durable_when_it_returns(observer: Observer) -> None:
    async def fetch() -> int:
        return 1

    wrapped = wrap_tool(fetch, endpoint="tool.one")

    async def main() -> int:
        await wrapped()
        return _count(observer)

    assert asyncio.run(main()) == 1


def test_a_task_outliving_its_scope_still_records_durably(observer: Observer) -> None:
    async def main() -> int:
        release = asyncio.Event()

        async def slow() -> None:
            await release.wait()

        wrapped = wrap_tool(slow, endpoint="tool.slow")
        async with deferred() as scope:
            task = asyncio.ensure_future(wrapped())  # copies the scope's context
        release.set()
        await task
        return scope.recorded

    assert asyncio.run(main()) == 0
    assert [op.endpoint for op in observer.query()] == ["tool.slow"]


def test_a_sink_without_a_queue_records_at_exit() -> None:
    sink = MemorySink()
    observer = Observer(sink)
    with deferred() as scope:
        with observe("tool.mem", observer=observer):
            pass
        assert sink.ops == []
    assert scope.recorded == 1
    assert [op.endpoint for op in sink.ops] == ["tool.mem"]
