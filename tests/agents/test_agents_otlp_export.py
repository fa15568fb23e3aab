"""An agent run seen from Phoenix or Langfuse: the executor/reviewer loop with scripted models over
the real lake, its ops exported by the OpenTelemetry SDK's OTLP exporter (configured by the
standard OTEL_* variables) to a collector on 127.0.0.1 that decodes the official protobuf."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agents_support import action

from agentlake.agents import LLMPolicy
from agentlake.observe import MemorySink, Observer, install_llm_recording
from agentlake.observe.otlp_collector import OtlpCollector, ReceivedSpan
from agentlake.observe.otlp_export import attach_configured_export

FIND = {"role": "Warehouse Associate", "city": "New York", "state": "NY"}
CLIENT, INTERNAL = 3, 1  # OTLP SpanKind


@pytest.fixture
def exported(make_ctx, order, qualified, models, monkeypatch) -> Iterator[tuple[OtlpCollector, list]]:
    executor, reviewer = models
    executor.enqueue(action("plan", steps=["find warehouse associates", "propose the 3 most reliable"]))
    executor.enqueue(action("tool_call", tool="find_workers", args=FIND, reason="candidates"))
    executor.enqueue(action("propose_done", worker_ids=qualified[:3], spares=[], rationale="reliable"))
    reviewer.enqueue(action("critique", approve=True, notes="verified"))
    with OtlpCollector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=collector-key")
        monkeypatch.setenv("OTEL_SERVICE_NAME", "staffing-agents")
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
        observer = Observer(MemorySink())
        export = attach_configured_export(observer)
        assert export is not None
        uninstall = install_llm_recording(observer)
        try:
            LLMPolicy(executor, reviewer).run(order, make_ctx(observer=observer, agent_id="staffer-1"))
        finally:
            uninstall()
        assert export.flush()
        ops = list(observer.recent(1000))
        observer.close()
        yield collector, ops


def _only(collector: OtlpCollector, prefix: str) -> list[ReceivedSpan]:
    return [span for span in collector.spans if span.name.startswith(prefix)]


def test_every_op_of_the_run_is_one_span(exported) -> None:
    collector, ops = exported
    assert sorted(span.attributes["agentlake.op_id"] for span in collector.spans) == sorted(
        op.id for op in ops
    )


def test_the_task_is_an_invoke_agent_span(exported) -> None:
    collector, _ = exported
    (agent,) = _only(collector, "invoke_agent")
    assert (agent.name, agent.attributes["gen_ai.operation.name"], agent.attributes["gen_ai.agent.name"]) == (
        "invoke_agent staffer-1",
        "invoke_agent",
        "staffer-1",
    )


def test_model_calls_are_chat_client_spans_with_usage(exported) -> None:
    collector, _ = exported
    chats = _only(collector, "chat")
    assert len(chats) == 4  # plan, search, proposal (executor); the review of the proposal
    assert {span.kind for span in chats} == {CLIENT}
    assert all(span.attributes["gen_ai.usage.input_tokens"] > 0 for span in chats)
    assert {span.attributes["gen_ai.request.model"] for span in chats} == {"executor", "reviewer"}


def test_the_tool_call_is_an_execute_tool_span(exported) -> None:
    collector, _ = exported
    (tool,) = _only(collector, "execute_tool")
    assert (tool.name, tool.attributes["gen_ai.tool.name"], tool.kind) == (
        "execute_tool find_workers",
        "find_workers",
        INTERNAL,
    )
    assert "Warehouse Associate" in tool.attributes["gen_ai.tool.call.arguments"]


def test_parent_and_child_are_kept(exported) -> None:
    collector, _ = exported
    (agent,) = _only(collector, "invoke_agent")
    children = [span for span in collector.spans if span is not agent]
    assert {span.parent_span_id for span in children} == {agent.span_id}
    assert {span.trace_id for span in collector.spans} == {agent.trace_id}


def test_the_standard_variables_configure_the_export(exported) -> None:
    collector, _ = exported
    assert {span.resource["service.name"] for span in collector.spans} == {"staffing-agents"}
    assert {headers.get("x-api-key") for headers in collector.headers} == {"collector-key"}
