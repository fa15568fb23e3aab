"""A minimal OTLP/HTTP trace collector that keeps what it receives in memory: for tests,
benchmarks and demos of the export (``otlp_export``), the way ``llm.fakeserver`` serves models.

Owns one loopback HTTP server answering ``POST /v1/traces`` (protobuf, optionally gzip),
decoded with the official definitions (``opentelemetry-proto``): each span is kept with its
resource's attributes, and each request's headers. It is not the observer's receiver (that
is ``observe.service`` / ``observe.otlp_grpc``, which store spans as ops); it stores nothing.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def attributes_of(items: Any) -> dict[str, Any]:
    """Protobuf ``KeyValue`` attributes as a dict of plain values."""
    out: dict[str, Any] = {}
    for item in items:
        kind = item.value.WhichOneof("value")
        if kind == "array_value":
            out[item.key] = [getattr(v, v.WhichOneof("value")) for v in item.value.array_value.values]
        elif kind is not None:
            out[item.key] = getattr(item.value, kind)
    return out


@dataclass
class ReceivedSpan:
    """One span as the collector received it."""

    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str | None
    start_ns: int
    end_ns: int
    status_code: int
    status_message: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    resource: dict[str, Any]
    scope: str


@dataclass
class OtlpCollector:
    """``with OtlpCollector() as collector:`` serves on ``collector.endpoint`` (an
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` value) until the block exits. ``status`` is what it
    answers (e.g. 503 to play a collector in trouble)."""

    status: int = 200
    spans: list[ReceivedSpan] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "the collector is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _receive(self, body: bytes, headers: dict[str, str]) -> None:
        if headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest.FromString(body)
        received = []
        for resource_spans in request.resource_spans:
            resource = attributes_of(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            name=span.name,
                            kind=span.kind,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex() or None,
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            status_code=span.status.code,
                            status_message=span.status.message,
                            attributes=attributes_of(span.attributes),
                            events=[(e.name, attributes_of(e.attributes)) for e in span.events],
                            resource=resource,
                            scope=scope_spans.scope.name,
                        )
                    )
        with self._lock:
            self.requests += 1
            self.headers.append(headers)
            self.spans.extend(received)

    def __enter__(self) -> OtlpCollector:
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if collector.status != 200 or self.path != "/v1/traces":
                    self.send_response(collector.status if collector.status != 200 else 404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                collector._receive(body, {k.lower(): v for k, v in self.headers.items()})
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="otlp-collector", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
