"""OTLP/HTTP: the real opentelemetry-sdk exporter (protobuf) and OTLP/JSON against a real server."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

from agentlake.observe import ObservedOp, Observer, ObserverClient, OpStore
from agentlake.observe.service import running_service
from agentlake.settings import load_settings


@pytest.fixture
def observer(tmp_path: Path) -> Iterator[Observer]:
    with Observer(OpStore(tmp_path / "o.duckdb")) as obs:
        yield obs


def test_real_otlp_exporter_spans_become_ops(observer: Observer) -> None:
    settings = load_settings(api_keys="w-key:write")
    with running_service(observer, settings) as url:
        exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers={"X-API-Key": "w-key"}, timeout=5)
        provider = TracerProvider(resource=Resource.create({"service.name": "staffing-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("agentlake-test")
        with tracer.start_as_current_span("invoke_agent executor") as agent_span:
            agent_span.set_attribute("gen_ai.operation.name", "invoke_agent")
            agent_span.set_attribute("gen_ai.agent.name", "executor")
            agent_span.set_attribute("agentlake.run_id", "run-42")
            with tracer.start_as_current_span("chat qwen3:4b") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.provider.name", "ollama")
                chat.set_attribute("gen_ai.request.model", "qwen3:4b")
                chat.set_attribute("gen_ai.usage.input_tokens", 120)
                chat.set_attribute("gen_ai.usage.output_tokens", 30)
                chat.set_attribute("gen_ai.usage.reasoning.output_tokens", 12)
                chat.set_attribute("gen_ai.response.finish_reasons", ["stop"])
            with tracer.start_as_current_span("execute_tool hybrid_search") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "hybrid_search")
                tool.set_attribute("gen_ai.tool.call.arguments", '{"query": "welder cleveland"}')
                tool.set_status(Status(StatusCode.ERROR, "index not built"))
            with tracer.start_as_current_span("GET /workers"):
                pass
        provider.shutdown()

    ops = {op.endpoint: op for op in observer.query(source="otlp")}
    assert set(ops) == {"agent.invoke_agent", "llm.chat", "tool.hybrid_search", "GET /workers"}
    chat_op, tool_op, agent_op = ops["llm.chat"], ops["tool.hybrid_search"], ops["agent.invoke_agent"]
    assert chat_op.usage is not None
    assert chat_op.usage.model == "qwen3:4b"
    assert chat_op.usage.provider == "ollama"
    assert (chat_op.usage.input_tokens, chat_op.usage.output_tokens, chat_op.usage.thinking_tokens) == (
        120,
        30,
        12,
    )
    assert chat_op.usage.finish_reason == "stop"
    assert chat_op.success
    assert not tool_op.success
    assert tool_op.error == "index not built"
    assert "welder" in tool_op.input_summary
    assert agent_op.agent_id == "executor"
    assert agent_op.run_id == "run-42"
    assert chat_op.parent_span_id == agent_op.span_id
    assert chat_op.trace_id == agent_op.trace_id
    assert chat_op.id == f"otlp-{chat_op.trace_id}-{chat_op.span_id}"
    assert len(chat_op.trace_id) == 32
    assert ops["GET /workers"].attributes["service.name"] == "staffing-agent"
    assert ops["GET /workers"].usage is None
    assert agent_op.duration_ms >= chat_op.duration_ms >= 0


def _json_export(spans: list[dict]) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "ext"}}]},
                "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}],
            }
        ]
    }


_SPAN = {
    "traceId": "5b8efff798038103d269b633813fc60c",
    "spanId": "eee19b7ec3c1b174",
    "name": "chat gpt-x",
    "kind": 3,
    "startTimeUnixNano": "1763712000000000000",
    "endTimeUnixNano": "1763712000250000000",
    "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-x"}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "11"}},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 5}},
        {"key": "agentlake.label.staffer_id", "value": {"stringValue": "st-3"}},
    ],
    "status": {"code": 2, "message": "rate limited"},
}


def test_otlp_json_gzip_idempotent_and_bad_bodies(observer: Observer) -> None:
    with running_service(observer, load_settings()) as url, httpx.Client(base_url=url, timeout=5) as http:
        body = json.dumps(_json_export([_SPAN])).encode()
        sent = http.post(
            "/v1/traces",
            content=gzip.compress(body),
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
        assert sent.status_code == 200
        assert sent.headers["content-type"].startswith("application/json")
        assert (
            http.post("/v1/traces", content=body, headers={"Content-Type": "application/json"}).status_code
            == 200
        )
        (op,) = observer.query(source="otlp")
        assert op.endpoint == "llm.chat"
        assert op.duration_ms == pytest.approx(250.0)
        assert not op.success
        assert op.error == "rate limited"
        assert op.usage.input_tokens == 11
        assert op.labels.get("staffer_id") == "st-3"
        assert op.ts.isoformat().startswith("2025-11-21T08:00:00")

        before = observer.stats().total
        garbage = http.post(
            "/v1/traces", content=b"\xff\x00garbage", headers={"Content-Type": "application/x-protobuf"}
        )
        assert garbage.status_code == 400
        assert "protobuf" in garbage.json()["error"]["message"]
        no_ids = http.post("/v1/traces", json=_json_export([{"name": "x"}]))
        assert no_ids.status_code == 400
        assert "traceId" in no_ids.json()["error"]["message"]
        wrong_type = http.post("/v1/traces", content=b"{}", headers={"Content-Type": "text/plain"})
        assert wrong_type.status_code == 415
        bomb = gzip.compress(b"{" + b" " * (6 * 1024 * 1024) + b"}")
        inflated = http.post(
            "/v1/traces",
            content=bomb,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
        assert inflated.status_code == 413
        assert observer.stats().total == before


def test_sse_live_tail_over_a_real_server(observer: Observer) -> None:
    observer.record(ObservedOp(id="old-1", endpoint="tool.sql"))
    with (
        running_service(observer, load_settings()) as url,
        ObserverClient(url, spool_path=Path(observer.sink.path).with_suffix(".spool")) as client,
    ):  # type: ignore[attr-defined]
        received: list[ObservedOp] = []
        ready = threading.Event()

        def follow() -> None:
            for op in client.stream(backlog=1):
                received.append(op)
                ready.set()
                if len(received) == 3:
                    return

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        assert ready.wait(10)  # the backlog op arrived: the subscription is live
        client.send(ObservedOp(id="live-1", endpoint="tool.search", source="agent"))
        observer.record(ObservedOp(id="live-2", endpoint="llm.chat", source="llm"))
        reader.join(10)
    assert [op.id for op in received] == ["old-1", "live-1", "live-2"]
