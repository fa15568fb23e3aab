"""What people send: OpenInference and Langfuse spans, resource attributes, OTLP/JSON enum names,
OTLP/gRPC, and logs and metrics, each through the OpenTelemetry SDK's own exporters to a real
receiver on 127.0.0.1."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from importlib.metadata import requires
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

from agentlake.observe import ObservedOp, Observer, OpStore
from agentlake.observe.otlp_grpc import OtlpGrpcReceiver, start_receiver
from agentlake.observe.service import running_service
from agentlake.settings import load_settings


@pytest.fixture
def observer(tmp_path: Path) -> Iterator[Observer]:
    with Observer(OpStore(tmp_path / "o.duckdb")) as obs:
        yield obs


def _export(exporter: SpanExporter, resource: dict, build) -> None:
    provider = TracerProvider(resource=Resource.create(resource))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("conventions-test"))
    provider.shutdown()


def _by_endpoint(observer: Observer) -> dict[str, ObservedOp]:
    return {op.endpoint: op for op in observer.query(source="otlp")}


def _openinference(tracer) -> None:
    with tracer.start_as_current_span("agent run") as agent:
        agent.set_attribute("openinference.span.kind", "AGENT")
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.model_name", "gpt-4o-mini")
            llm.set_attribute("llm.provider", "openai")
            llm.set_attribute("llm.token_count.prompt", 321)
            llm.set_attribute("llm.token_count.completion", 45)
            llm.set_attribute("input.value", "Which welders are free?")
            llm.set_attribute("output.value", "Three are free.")
        with tracer.start_as_current_span("lookup") as tool:
            tool.set_attribute("openinference.span.kind", "TOOL")
            tool.set_attribute("tool.name", "get_weather")
            tool.set_attribute("input.value", '{"city": "Cleveland"}')


def test_openinference_spans_carry_model_tokens_and_resource_provenance(observer: Observer) -> None:
    with running_service(observer, load_settings()) as url:
        _export(
            OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=5),
            {"service.name": "phoenix-app", "agentlake.run_id": "run-oi"},
            _openinference,
        )
    ops = _by_endpoint(observer)
    assert set(ops) == {"agent.invoke_agent", "llm.chat", "tool.get_weather"}
    llm = ops["llm.chat"]
    assert llm.usage is not None
    assert llm.usage.model == "gpt-4o-mini"
    assert llm.usage.provider == "openai"
    assert (llm.usage.input_tokens, llm.usage.output_tokens) == (321, 45)
    assert llm.input_summary == "Which welders are free?"
    assert llm.output_summary == "Three are free."
    assert "Cleveland" in ops["tool.get_weather"].input_summary
    assert ops["agent.invoke_agent"].agent_id == "agent run"
    assert llm.run_id == "run-oi"  # a resource attribute
    assert llm.attributes["service.name"] == "phoenix-app"


def _langfuse(tracer) -> None:
    with tracer.start_as_current_span("generate answer") as generation:
        generation.set_attribute("langfuse.observation.type", "generation")
        generation.set_attribute("langfuse.observation.model.name", "claude-x")
        generation.set_attribute(
            "langfuse.observation.usage_details", json.dumps({"input": 100, "output": 20, "total": 120})
        )
        generation.set_attribute("langfuse.observation.input", "prompt text")
        generation.set_attribute("langfuse.observation.output", "answer text")
        generation.set_attribute("langfuse.observation.level", "ERROR")
        generation.set_attribute("langfuse.observation.status_message", "upstream overloaded")
        generation.set_attribute("agentlake.run_id", "run-span-wins")


def test_langfuse_spans_carry_model_tokens_and_errors(observer: Observer) -> None:
    with running_service(observer, load_settings()) as url:
        _export(
            OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=5),
            {"service.name": "langfuse-app", "agentlake.run_id": "run-resource"},
            _langfuse,
        )
    (op,) = observer.query(source="otlp")
    assert op.endpoint == "llm.chat"
    assert op.usage is not None
    assert op.usage.model == "claude-x"
    assert (op.usage.input_tokens, op.usage.output_tokens) == (100, 20)
    assert (op.input_summary, op.output_summary) == ("prompt text", "answer text")
    assert not op.success
    assert op.error == "upstream overloaded"
    assert op.run_id == "run-span-wins"


def test_otlp_json_enum_names(observer: Observer) -> None:
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "POST /charge",
        "kind": "SPAN_KIND_CLIENT",
        "startTimeUnixNano": "1763712000000000000",
        "endTimeUnixNano": "1763712000100000000",
        "status": {"code": "STATUS_CODE_ERROR", "message": "card declined"},
    }
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [span]}]}]}
    with running_service(observer, load_settings()) as url:
        assert httpx.post(f"{url}/v1/traces", json=body, timeout=5).status_code == 200
    (op,) = observer.query(source="otlp")
    assert op.attributes["otel.span.kind"] == "client"
    assert op.error == "card declined"


def _two_spans(tracer) -> None:
    with tracer.start_as_current_span("invoke_agent planner", kind=SpanKind.INTERNAL) as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.agent.name", "planner")
        with tracer.start_as_current_span("chat m", kind=SpanKind.CLIENT) as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", "m")
            chat.set_attribute("gen_ai.usage.input_tokens", 7)


def test_the_sdks_grpc_exporter_reaches_the_grpc_receiver(observer: Observer) -> None:
    with OtlpGrpcReceiver(observer, port=0, api_keys={"w-key": "write"}) as receiver:
        exporter = GrpcSpanExporter(
            endpoint=f"127.0.0.1:{receiver.port}", insecure=True, headers={"x-api-key": "w-key"}, timeout=5
        )
        _export(exporter, {"service.name": "grpc-app"}, _two_spans)
    ops = _by_endpoint(observer)
    assert ops["llm.chat"].usage.input_tokens == 7
    assert ops["llm.chat"].parent_span_id == ops["agent.invoke_agent"].span_id
    assert ops["agent.invoke_agent"].agent_id == "planner"


def test_the_grpc_receiver_refuses_a_wrong_key(observer: Observer) -> None:
    with OtlpGrpcReceiver(observer, port=0, api_keys={"w-key": "write"}) as receiver:
        exporter = GrpcSpanExporter(
            endpoint=f"127.0.0.1:{receiver.port}", insecure=True, headers={"x-api-key": "nope"}, timeout=5
        )
        provider = TracerProvider()
        results: list[SpanExportResult] = []

        class Recording(SimpleSpanProcessor):
            def on_end(self, span) -> None:
                results.append(exporter.export([span]))

        provider.add_span_processor(Recording(exporter))
        with provider.get_tracer("t").start_as_current_span("x"):
            pass
        provider.shutdown()
    assert results == [SpanExportResult.FAILURE]
    assert observer.query(source="otlp") == []


def _emit_log_and_metric(url_or_endpoint: str, *, grpc: bool = False) -> None:
    if grpc:
        log_exporter = GrpcLogExporter(endpoint=url_or_endpoint, insecure=True, timeout=5)
    else:
        log_exporter = OTLPLogExporter(endpoint=f"{url_or_endpoint}/v1/logs", timeout=5)
    logs = LoggerProvider(resource=Resource.create({"service.name": "signals"}))
    logs.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    logger = logging.getLogger(f"signals-test-{grpc}")
    handler = LoggingHandler(logger_provider=logs)
    logger.addHandler(handler)
    try:
        logger.warning("one")
        logger.warning("two")
    finally:
        logger.removeHandler(handler)
        logs.shutdown()
    if not grpc:
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{url_or_endpoint}/v1/metrics", timeout=5),
            export_interval_millis=60_000,
        )
        meters = MeterProvider(metric_readers=[reader])
        counter = meters.get_meter("signals").create_counter("fills")
        counter.add(1, {"client": "a"})
        counter.add(1, {"client": "b"})
        meters.shutdown()


def test_logs_and_metrics_are_acknowledged_and_counted(observer: Observer) -> None:
    with running_service(observer, load_settings()) as url:
        _emit_log_and_metric(url)
        stats = httpx.get(f"{url}/stats", timeout=5).json()
    assert stats["acknowledged"] == {"logs": 2, "metrics": 2}
    assert observer.stats().total == 0  # counted, not stored


def test_logs_over_grpc_are_counted(observer: Observer) -> None:
    with OtlpGrpcReceiver(observer, port=0) as receiver:
        _emit_log_and_metric(f"127.0.0.1:{receiver.port}", grpc=True)
    assert observer.stats().acknowledged == {"logs": 2}


def test_a_malformed_logs_body_is_a_400(observer: Observer) -> None:
    with running_service(observer, load_settings()) as url:
        answer = httpx.post(
            f"{url}/v1/logs", content=b"\xff\x00", headers={"Content-Type": "application/x-protobuf"}
        )
    assert answer.status_code == 400


def test_protobuf_decoding_and_grpc_are_runtime_dependencies() -> None:
    # A plain `pip install agentlake` must answer the SDK's default (protobuf) exporter.
    runtime = [req.split(";")[0] for req in requires("agentlake") or [] if "extra ==" not in req]
    names = {req.split(">")[0].split("<")[0].split("=")[0].strip() for req in runtime}
    assert {"opentelemetry-proto", "grpcio"} <= names


def test_a_grpc_port_in_use_is_logged_and_skipped(
    observer: Observer, caplog: pytest.LogCaptureFixture
) -> None:
    with OtlpGrpcReceiver(observer, port=0) as taken:
        settings = load_settings(otlp_grpc_port=taken.port)
        with caplog.at_level(logging.WARNING, logger="agentlake.observe.otlp_grpc"):
            assert start_receiver(observer, settings, "127.0.0.1") is None
    assert "AGENTLAKE_OTLP_GRPC_PORT" in caplog.text
