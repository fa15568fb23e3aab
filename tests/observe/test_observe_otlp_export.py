"""OTLP export of agentlake's own ops: configured by the standard OTEL_* variables, batched off the
recording path, harmless when the collector is down. The collector is a real HTTP server on
127.0.0.1 decoding the official protobuf (``observe.otlp_collector``), or agentlake's own
OTLP/gRPC receiver."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

from agentlake.observe import MemorySink, ObservedOp, Observer, OpStore, observe, open_observer
from agentlake.observe.otel_env import export_configured
from agentlake.observe.otlp_collector import OtlpCollector
from agentlake.observe.otlp_export import OtlpExport, attach_configured_export, export_resource, op_to_span
from agentlake.observe.otlp_grpc import OtlpGrpcReceiver
from agentlake.settings import load_settings


@pytest.fixture(autouse=True)
def _fast_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")


def test_the_default_observer_exports_when_the_endpoint_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    with OtlpCollector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        observer = open_observer(load_settings())
        with observe("tool.sql", observer=observer, input={"sql": "SELECT 1"}):
            pass
        observer.close()  # exports what is queued before the store closes
    assert [span.name for span in collector.spans] == ["execute_tool sql"]


def test_the_traces_endpoint_variable_is_used_as_is(monkeypatch: pytest.MonkeyPatch) -> None:
    with OtlpCollector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{collector.endpoint}/v1/traces")
        observer = Observer(MemorySink())
        attach_configured_export(observer)
        observer.record(ObservedOp(endpoint="fill.judged", source="scenario"))
        observer.close()
    assert [span.name for span in collector.spans] == ["fill.judged"]


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
    ],
)
def test_export_stays_off_unless_asked(environ: dict[str, str]) -> None:
    assert not export_configured(environ)


def test_an_unsupported_protocol_is_logged_and_export_stays_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with Observer(MemorySink()) as observer, caplog.at_level(logging.WARNING):
        assert attach_configured_export(observer) is None
    assert "http/protobuf" in caplog.text


def test_grpc_protocol_reaches_an_otlp_grpc_receiver(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with Observer(OpStore(tmp_path / "received.duckdb")) as receiving:
        with OtlpGrpcReceiver(receiving, port=0) as receiver:
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{receiver.port}")
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
            sending = Observer(MemorySink())
            export = attach_configured_export(sending)
            with observe("llm.chat", source="llm", observer=sending) as op:
                op.set_usage({"provider": "ollama", "model": "qwen3:4b", "input_tokens": 9})
            assert export is not None
            assert export.flush()
            sending.close()
        (received,) = receiving.query(source="otlp")
    assert (received.endpoint, received.usage.model, received.usage.input_tokens) == (
        "llm.chat",
        "qwen3:4b",
        9,
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_collector_that_is_down_fails_no_operation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    sink = MemorySink()
    observer = Observer(sink)
    attach_configured_export(observer)
    for index in range(200):
        with observe("tool.sql", observer=observer, input={"n": index}):
            pass
    observer.close()
    assert len(sink.endpoint("tool.sql")) == 200


def test_while_the_collector_is_down_ops_are_not_turned_into_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    observer = Observer(MemorySink())
    export = attach_configured_export(observer)
    assert export is not None
    observer.record(ObservedOp(endpoint="tool.sql"))
    export.flush()  # the export fails: the collector is down
    observer.record_many([ObservedOp(endpoint="tool.sql") for _ in range(50)])
    export.flush()
    observer.close()
    assert export.skipped_while_down == 50


def test_a_collector_answering_503_fails_no_operation(monkeypatch: pytest.MonkeyPatch) -> None:
    with OtlpCollector(status=503) as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
        sink = MemorySink()
        observer = Observer(sink)
        attach_configured_export(observer)
        for _ in range(20):
            observer.record(ObservedOp(endpoint="tool.sql"))
        observer.close()
    assert len(sink.endpoint("tool.sql")) == 20


def test_a_full_queue_drops_spans_not_operations() -> None:
    class Stuck:
        """An exporter that never finishes: everything queues up behind it."""

        def export(self, spans):
            import time

            time.sleep(3600)

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 0) -> bool:
            return False

    sink = MemorySink()
    observer = Observer(sink)
    export = OtlpExport(observer, Stuck(), queue_size=8, close_timeout_s=0.2)  # type: ignore[arg-type]
    observer.attach(export)
    observer.record_many([ObservedOp(endpoint="tool.sql") for _ in range(500)])
    observer.close()
    assert len(sink.endpoint("tool.sql")) == 500


def test_spans_received_over_otlp_are_not_sent_back_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with OtlpCollector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        observer = Observer(MemorySink())
        attach_configured_export(observer)
        observer.record(ObservedOp(endpoint="llm.chat", source="otlp"))
        observer.record(ObservedOp(endpoint="tool.sql", source="agent"))
        observer.close()
    assert [span.name for span in collector.spans] == ["execute_tool sql"]


def test_content_capture_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    with OtlpCollector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
        observer = Observer(MemorySink())
        attach_configured_export(observer)
        observer.record(ObservedOp(endpoint="tool.sql", input_summary="SELECT secret_plan"))
        observer.close()
    assert "input.value" not in collector.spans[0].attributes


RESOURCE = export_resource()


def test_ids_that_are_not_hex_still_link_child_to_parent() -> None:
    parent = op_to_span(ObservedOp(endpoint="task.fill", trace_id="run-7", span_id="task-1"), RESOURCE)
    child = op_to_span(
        ObservedOp(endpoint="tool.sql", trace_id="run-7", span_id="call-1", parent_span_id="task-1"), RESOURCE
    )
    assert child.parent.span_id == parent.context.span_id


def test_a_failed_op_is_an_error_span() -> None:
    span = op_to_span(
        ObservedOp(endpoint="tool.sql", success=False, error="BinderError: no column"), RESOURCE
    )
    assert (span.status.status_code.name, span.attributes["error.type"]) == ("ERROR", "BinderError")


def test_a_stated_outcome_is_an_evaluation_event() -> None:
    op = ObservedOp(
        endpoint="fill.judged",
        source="scenario",
        attributes={"outcome": {"task": {"task_kind": "fill"}, "success": False, "score": 0.5}},
    )
    (event,) = op_to_span(op, RESOURCE).events
    assert (event.name, event.attributes["gen_ai.evaluation.score.value"]) == (
        "gen_ai.evaluation.result",
        0.5,
    )


def test_provenance_and_attributes_become_agentlake_attributes() -> None:
    op = ObservedOp(
        endpoint="fill.judged",
        run_id="run-9",
        labels={"role": "Welder"},
        attributes={"client_id": "riverfront", "rejections": [{"rule": "min_reliability"}]},
    )
    attributes = op_to_span(op, RESOURCE).attributes
    assert (attributes["agentlake.run_id"], attributes["agentlake.client_id"]) == ("run-9", "riverfront")
    assert "min_reliability" in attributes["agentlake.rejections"]


def test_exported_spans_carry_no_secret_of_the_corpus() -> None:
    """A span is built from a stored op, which the one scrubber has cleaned: every text of the
    op (name, summaries, error, provenance, model, attributes) reaches the span masked."""
    import json

    from secret_corpus import CORPUS

    for name, text, secret in CORPUS:
        op = ObservedOp(
            endpoint="llm.chat",
            agent_id=text[:120],
            input_summary=text,
            output_summary=text,
            error=text,
            success=False,
            provenance={"run_id": text, "role": text},
            usage={"provider": "ollama", "model": text[:120], "finish_reason": text},
            attributes={"note": text, "headers": {"authorization": text}},
        )
        span = op_to_span(op, RESOURCE)
        exported = json.dumps(
            [span.name, dict(span.attributes or {}), [dict(event.attributes or {}) for event in span.events]],
            default=str,
        )
        assert secret not in exported, name
        assert json.dumps(secret)[1:-1] not in exported, name  # as JSON escapes it
