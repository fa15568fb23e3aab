"""The OTLP/gRPC receiver: the official collector services on a grpcio server (default port 4317).

Owns the listener (:class:`OtlpGrpcReceiver`: bind, start, stop) and the three ``Export``
handlers, generated from the official protobuf definitions (``opentelemetry-proto``). Spans
become ops through the same mapping as OTLP/HTTP (``otlp.span_to_op``) and are committed
before the answer; log records and metric data points are counted, not stored, as on
``/v1/logs`` and ``/v1/metrics``. With API keys configured, a write key is read from the
``x-api-key`` or ``authorization: Bearer`` metadata. Status codes follow OTLP: a bad body is
``INVALID_ARGUMENT`` (not retried), a full write queue ``UNAVAILABLE`` (retried by exporters).

It does not own the mapping (``otlp``) or storage; the serve commands start it
(``observe.service.serve``, ``gateway.server.run``).
"""

from __future__ import annotations

import logging
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from agentlake.errors import AgentlakeError, UnavailableError, UserError
from agentlake.http.keys import KeyRing, authorize
from agentlake.observe import otlp
from agentlake.observe.observer import Observer

log = logging.getLogger(__name__)

THREADS = 4
_STATUS = {401: grpc.StatusCode.UNAUTHENTICATED, 403: grpc.StatusCode.PERMISSION_DENIED}


class _Receiver:
    """What the three services share: the observer, the key check and the error mapping."""

    def __init__(self, observer: Observer, ring: KeyRing) -> None:
        self.observer = observer
        self.ring = ring

    def allow(self, context: grpc.ServicerContext, what: str) -> None:
        if not self.ring:
            return
        headers = {key.lower(): value for key, value in context.invocation_metadata()}
        try:
            authorize(headers, self.ring, "write", what)
        except UserError as exc:
            context.abort(_STATUS.get(exc.http_status, grpc.StatusCode.PERMISSION_DENIED), exc.message)

    def record(self, request: Any, context: grpc.ServicerContext) -> None:
        self.allow(context, "OTLP/gRPC trace export")
        try:
            ops = [otlp.span_to_op(span) for span in otlp.spans_of_request(request)]
            if ops:
                # Fail fast when the queue is full: the exporter retries UNAVAILABLE.
                self.observer.record_many(ops, wait_for_space=0)
        except UnavailableError as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, exc.message)
        except UserError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, exc.message)
        except AgentlakeError as exc:
            context.abort(grpc.StatusCode.INTERNAL, exc.message)

    def count(self, request: Any, context: grpc.ServicerContext, signal: otlp.Signal) -> None:
        self.allow(context, f"OTLP/gRPC {signal} export")
        self.observer.acknowledge(signal, otlp.count_records(request, signal))


class _Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: _Receiver) -> None:
        self.receiver = receiver

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:  # the service's name
        self.receiver.record(request, context)
        return trace_service_pb2.ExportTraceServiceResponse()


class _Logs(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, receiver: _Receiver) -> None:
        self.receiver = receiver

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.receiver.count(request, context, "logs")
        return logs_service_pb2.ExportLogsServiceResponse()


class _Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, receiver: _Receiver) -> None:
        self.receiver = receiver

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.receiver.count(request, context, "metrics")
        return metrics_service_pb2.ExportMetricsServiceResponse()


class OtlpGrpcReceiver:
    """An OTLP/gRPC listener over ``observer``: ``start()`` binds and returns the port."""

    def __init__(
        self,
        observer: Observer,
        *,
        host: str = "127.0.0.1",
        port: int = 4317,
        api_keys: dict[str, str] | None = None,
        max_message_bytes: int = 5 * 1024 * 1024,
    ) -> None:
        self.host, self.port = host, port
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="otlp-grpc"),
            # grpcio sets SO_REUSEPORT by default: a second listener would silently share the
            # port (and its calls) with the first instead of failing to bind.
            options=[("grpc.max_receive_message_length", max_message_bytes), ("grpc.so_reuseport", 0)],
        )
        receiver = _Receiver(observer, KeyRing(api_keys or {}))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Traces(receiver), self._server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_Logs(receiver), self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(_Metrics(receiver), self._server)

    def start(self) -> int:
        """Bind and serve; returns the bound port (``port=0``: a free one). Raises ``UserError``
        when the address cannot be bound (in use, or not an address of this machine)."""
        address = f"{self.host}:{self.port}"
        try:
            bound = self._server.add_insecure_port(address)
        except RuntimeError:
            bound = 0
        if not bound:
            raise UserError(
                f"cannot listen for OTLP/gRPC on {address} (in use?): set AGENTLAKE_OTLP_GRPC_PORT "
                "to another port, or 0 to turn the listener off"
            )
        self.port = bound
        self._server.start()
        return bound

    def stop(self, grace_s: float = 2.0) -> None:
        """Stop accepting calls; calls in flight get ``grace_s`` seconds to finish."""
        self._server.stop(grace_s).wait(grace_s + 1)

    def __enter__(self) -> OtlpGrpcReceiver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_receiver(observer: Observer, settings: Any, host: str) -> OtlpGrpcReceiver | None:
    """Start the listener the settings ask for (``otlp_grpc_port``; 0: none) on ``host``. A port
    that cannot be bound is logged, not raised: the HTTP service still runs."""
    if not settings.otlp_grpc_port:
        return None
    receiver = OtlpGrpcReceiver(
        observer,
        host=host,
        port=settings.otlp_grpc_port,
        api_keys=settings.api_key_scopes,
        max_message_bytes=settings.max_body_bytes,
    )
    try:
        receiver.start()
    except UserError as exc:
        log.warning("%s", exc.message)
        return None
    log.info("OTLP/gRPC listening on %s:%s", host, receiver.port)
    return receiver
