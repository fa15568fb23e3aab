"""MemorySink: the in-memory OpSink behaves like the store for what its users read back."""

from __future__ import annotations

import pytest

from agentlake.errors import UserError
from agentlake.observe import MemorySink, ObservedOp, Observer, OpFilter, observe


def test_memory_sink_is_idempotent_and_answers_queries_like_the_store() -> None:
    sink = MemorySink()
    first = ObservedOp(endpoint="tool.sql", source="agent", run_id="r1")
    failed = ObservedOp(endpoint="tool.search", source="agent", success=False, error="boom")
    llm = ObservedOp(endpoint="llm.chat", source="llm", run_id="r1")
    results = sink.append([first, failed, first])
    assert [r.status for r in results] == ["stored", "stored", "duplicate"]
    sink.append([llm])
    assert [op.id for op in sink.ops] == [first.id, failed.id, llm.id]
    assert [op.id for op in sink.query(endpoint="tool.*", order="asc")] == [first.id, failed.id]
    assert [op.id for op in sink.query(run_id="r1", order="asc")] == [first.id, llm.id]
    assert [op.id for op in sink.query(success=False)] == [failed.id]
    assert sink.query(limit=1, order="asc")[0].id == first.id
    with pytest.raises(UserError, match="unknown op filter"):
        sink.query(colour="red")
    stats = sink.stats()
    assert (stats.total, stats.failures, stats.by_source) == (3, 1, {"agent": 2, "llm": 1})


def test_a_query_takes_an_op_filter_and_keywords_replace_its_fields() -> None:
    sink = MemorySink()
    tool = ObservedOp(endpoint="tool.sql", source="agent", run_id="r1")
    other = ObservedOp(endpoint="tool.sql", source="agent", run_id="r2")
    sink.append([tool, other])
    wanted = OpFilter(endpoint="tool.*", run_id="r1")
    assert [op.id for op in sink.query(wanted)] == [tool.id]
    assert [op.id for op in sink.query(wanted, run_id="r2")] == [other.id]
    assert [op.id for op in Observer(sink, ring_size=10).query(wanted)] == [tool.id]
    with pytest.raises(UserError, match="bad op filter"):
        sink.query(wanted, limit=-1)


def test_an_observer_over_a_memory_sink_records_observe_blocks() -> None:
    sink = MemorySink()
    observer = Observer(sink, ring_size=10)
    with observe("tool.echo", input="hi", observer=observer) as op:
        op.set_output("HI")
    (recorded,) = sink.endpoint("tool.echo")
    assert recorded.id == op.id
    assert recorded.output_summary == "HI"
    assert observer.stats().total == 1
    assert observer.recent(5)[0].id == op.id


def test_a_run_id_ending_in_a_star_matches_a_prefix_as_in_the_store() -> None:
    sink = MemorySink()
    ops = [ObservedOp(endpoint="x", run_id=run_id) for run_id in ("r-1:b1:e1", "r-1:b2:e1", "r-10")]
    sink.append(ops)
    assert [op.id for op in sink.query(run_id="r-1:b1:*")] == [ops[0].id]
