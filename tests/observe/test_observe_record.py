"""The in-process recording path: observe(), observe_context, wrap_tool, LLM calls, defaults."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.observe import (
    Observer,
    OpStore,
    event,
    get_observer,
    install_llm_recording,
    observe,
    observe_context,
    observing,
    set_observer,
    wrap_provider,
    wrap_tool,
)
from agentlake.observe.client import RemoteSink
from agentlake.settings import load_settings


@pytest.fixture
def observer(tmp_path: Path) -> Iterator[Observer]:
    obs = Observer(OpStore(tmp_path / "o.duckdb"))
    previous = set_observer(obs)
    try:
        yield obs
    finally:
        set_observer(previous)
        obs.close()


def test_observe_records_success_output_and_scrubs_secrets(observer: Observer) -> None:
    with observe(
        "tool.sql", input={"sql": "select 1", "api_key": "sk-abcdefghijklmnop"}, agent_id="executor"
    ) as op:
        op.set_output({"rows": 1})
        op.attributes["rows"] = 1
    (stored,) = observer.query()
    assert stored.id == op.id
    assert stored.success
    assert stored.endpoint == "tool.sql"
    assert stored.source == "agent"
    assert stored.agent_id == "executor"
    assert stored.attributes == {"rows": 1}
    assert "sk-abcdefghijklmnop" not in stored.input_summary
    assert "[REDACTED]" in stored.input_summary
    assert stored.output_summary == '{"rows": 1}'
    assert stored.duration_ms >= 0


def test_observe_records_failure_and_reraises(observer: Observer) -> None:
    with pytest.raises(KeyError), observe("tool.get_worker", input="w-1"):
        raise KeyError("w-1")
    with observe("tool.propose") as op:
        op.fail("reviewer rejected: 2 of 3 workers are not Welders")
    failed = {o.endpoint: o for o in observer.query(success=False)}
    assert failed["tool.get_worker"].error == "KeyError: 'w-1'"
    assert failed["tool.propose"].error.startswith("reviewer rejected")
    assert observer.stats().failures == 2


def test_nesting_links_spans_and_the_contexts_run_and_labels_are_inherited(observer: Observer) -> None:
    with observe_context(run_id="run-1", labels={"staffer_id": "st-7"}, agent_id="executor", batch="b1"):
        with observe("task.fill", source="scenario") as outer:
            outer.set_labels(role="Welder", count=3)
            with observe("tool.search") as inner:
                pass
    ops = {op.endpoint: op for op in observer.query()}
    task, tool = ops["task.fill"], ops["tool.search"]
    assert task.trace_id == tool.trace_id
    assert tool.parent_span_id == task.span_id
    assert task.parent_span_id is None
    assert tool.id == inner.id
    assert tool.run_id == "run-1"
    assert tool.agent_id == "executor"
    assert task.labels.get("role") == "Welder"
    assert task.labels.get("count") == 3
    assert task.attributes == {"batch": "b1"}
    # Outside the context nothing is inherited.
    with observe("tool.alone"):
        pass
    alone = observer.query(endpoint="tool.alone")[0]
    assert alone.run_id is None
    assert alone.trace_id != task.trace_id


def test_observe_as_decorator(observer: Observer) -> None:
    @observe("job.nightly", source="external")
    def nightly() -> int:
        return 7

    assert nightly() == 7
    assert nightly() == 7
    assert observer.stats().by_endpoint == {"job.nightly": 2}


def test_wrap_tool_sync_and_async(observer: Observer) -> None:
    def hybrid_search(query: str, k: int = 5) -> list[str]:
        if k < 0:
            raise ValueError("k must be >= 0")
        return [query] * k

    async def get_worker(worker_id: str) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"id": worker_id}

    search = wrap_tool(hybrid_search)
    fetch = wrap_tool(get_worker, endpoint="tool.worker", agent_id="reviewer")
    assert search("welder", k=2) == ["welder", "welder"]
    assert search.__name__ == "hybrid_search"
    with pytest.raises(ValueError):
        search("x", k=-1)
    assert asyncio.run(fetch("w-9")) == {"id": "w-9"}
    ok, bad = observer.query(endpoint="tool.hybrid_search", order="asc")
    assert ok.input_summary == '{"query": "welder", "k": 2}'
    assert ok.output_summary == '["welder", "welder"]'
    assert not bad.success
    assert bad.error == "ValueError: k must be >= 0"
    (worker,) = observer.query(endpoint="tool.worker")
    assert worker.agent_id == "reviewer"
    assert worker.output_summary == '{"id": "w-9"}'


def test_a_broken_observer_never_breaks_the_operation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = Observer(OpStore(tmp_path / "o.duckdb"))
    broken.close()  # every record now fails
    with caplog.at_level(logging.WARNING):
        with observe("tool.sql", observer=broken) as op:
            op.set_output(1)
        assert wrap_tool(lambda: 3, endpoint="tool.three", observer=broken)() == 3
    assert "could not record op tool.sql" in caplog.text


def test_llm_calls_are_recorded_through_the_accounting_hook(observer: Observer) -> None:
    from agentlake.llm import ScriptedProvider, Usage, call_tags, generate

    provider = ScriptedProvider("exec")
    provider.enqueue('{"ok": true}', usage=Usage(input_tokens=30, output_tokens=7, thinking_tokens=2))
    provider.enqueue("second")
    stop = install_llm_recording()
    try:
        with (
            observe_context(run_id="run-5"),
            observe("task.fill") as task,
            call_tags(agent_id="executor"),
        ):
            generate(provider, [{"role": "user", "content": "fill 3 welders"}])
    finally:
        stop()
    generate(provider, [{"role": "user", "content": "not recorded"}])
    (call,) = observer.query(source="llm")
    assert call.endpoint == "llm.chat"
    assert call.success
    assert call.agent_id == "executor"
    assert call.usage is not None
    assert (
        call.usage.input_tokens,
        call.usage.output_tokens,
        call.usage.thinking_tokens,
    ) == (30, 7, 2)
    assert call.run_id == "run-5"
    assert call.parent_span_id == observer.query(endpoint="task.fill")[0].span_id
    assert call.attributes["gen_ai.request.model"] == call.usage.model
    assert task.op is not None


def test_observing_gives_each_thread_its_own_observer_and_model_calls(observer: Observer) -> None:
    """Scenario days running at once: each thread's ops and model calls go to its own observer,
    the process-wide one sees none of them, and work outside any ``observing`` block is its."""
    import threading

    from agentlake.llm import FunctionProvider, generate
    from agentlake.observe import MemorySink

    provider = FunctionProvider(lambda messages, options: "ok", "echo")
    sinks = {name: MemorySink() for name in ("a", "b")}
    both_inside = threading.Barrier(2)

    def day(name: str) -> None:
        with observing(Observer(sinks[name])) as own:
            assert get_observer() is own
            stop = install_llm_recording(None)
            try:
                both_inside.wait(timeout=10)  # the two hooks are held at once
                with observe_context(run_id=f"day-{name}"):
                    event("fill.judged", source="scenario")
                    generate(provider, [{"role": "user", "content": f"day {name}"}])
                both_inside.wait(timeout=10)
            finally:
                stop()

    threads = [threading.Thread(target=day, args=(name,)) for name in sinks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name, sink in sinks.items():
        assert sorted((op.endpoint, op.run_id) for op in sink.ops) == [
            ("fill.judged", f"day-{name}"),
            ("llm.chat", f"day-{name}"),
        ]
    assert observer.query() == []
    assert get_observer() is observer


def test_wrap_provider_records_direct_calls(observer: Observer) -> None:
    from agentlake.llm import GenerateOptions, Message, ScriptedProvider, Usage

    provider = ScriptedProvider("direct")
    provider.enqueue("hello", usage=Usage(input_tokens=4, output_tokens=1))
    wrapped = wrap_provider(provider, agent_id="reviewer")
    assert wrapped.complete([Message(role="user", content="hi")], GenerateOptions()).text == "hello"
    (call,) = observer.query(source="llm")
    assert call.output_summary == "hello"
    assert call.usage.input_tokens == 4
    assert call.agent_id == "reviewer"


def test_default_observer_follows_the_sink_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    previous = set_observer(None)
    try:
        embedded = get_observer()
        assert embedded.sink.local
        assert embedded is get_observer()
        assert embedded.sink.path == load_settings().observer_path  # type: ignore[attr-defined]
        set_observer(None)
        embedded.close()
        monkeypatch.setenv("AGENTLAKE_OBSERVER_SINK", "http")
        remote = get_observer()
        assert isinstance(remote.sink, RemoteSink)
        assert remote.sink.client.url == load_settings().observer_url
        set_observer(None)
        remote.close()
    finally:
        set_observer(previous)


class _Service:
    def call(self, a: int, b: int = 2) -> int:
        return a + b


def _query(query: str, k: int = 5, *, city: str | None = None) -> str:
    return query


def _positional_only(a: int, /, b: int) -> int:
    return a + b


def _anything(*args: object, **kwargs: object) -> int:
    return 0


@pytest.mark.parametrize(
    ("fn", "args", "kwargs"),
    [
        (_query, ("w",), {}),
        (_query, (), {"k": 3, "query": "w"}),
        (_query, ("w",), {"city": "X", "k": 1}),
        (_query, ("w", 1, 2), {}),
        (_query, ("w",), {"bogus": 1}),
        (_query, ("w",), {"query": "twice"}),
        (_query, (), {"k": 1}),
        (_Service.call, (_Service(), 1), {}),
        (_positional_only, (1, 2), {}),
        (_anything, (1,), {"x": 2}),
    ],
)
def test_wrap_tool_input_is_the_bound_arguments(fn, args, kwargs) -> None:
    import inspect

    from agentlake.observe import MemorySink, summarize

    sink = MemorySink()
    try:
        expected = {
            k: v for k, v in inspect.signature(fn).bind(*args, **kwargs).arguments.items() if k != "self"
        }
    except TypeError:
        expected = {"args": list(args), "kwargs": kwargs}
    with contextlib.suppress(TypeError):
        wrap_tool(fn, observer=Observer(sink))(*args, **kwargs)
    assert sink.ops[0].input_summary == summarize(expected)


def test_event_records_an_op_built_elsewhere_inside_the_observe_context(observer: Observer) -> None:
    with (
        observe_context(run_id="run-9", labels={"staffer_id": "rules"}, agent_id="agent-1"),
        observe("task.fill") as task,
    ):
        judged = event("fill.judged", source="scenario", success=False, labels={"staffer_id": "other"})
    assert judged is not None
    (stored,) = observer.query(endpoint="fill.judged")
    assert stored.id == judged.id
    assert stored.parent_span_id == task.op.span_id
    assert stored.trace_id == task.op.trace_id
    assert stored.agent_id == "agent-1"
    assert stored.run_id == "run-9"
    assert stored.labels.get("staffer_id") == "other", "a given value wins over the context's"


def test_event_never_raises_for_an_op_it_cannot_build(observer: Observer, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        assert event("tool.sql", duration_ms="not a number") is None
    assert "could not record op tool.sql" in caplog.text
