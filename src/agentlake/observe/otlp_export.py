"""agentlake's own ops as OpenTelemetry spans, exported over OTLP (Phoenix, Langfuse, any collector).

Owns the mapping of an op to a span in the OpenTelemetry GenAI semantic conventions (a model
call is a ``chat`` CLIENT span with ``gen_ai.*`` usage, a tool call ``execute_tool``, an agent's
task ``invoke_agent``; OpenInference's ``openinference.span.kind``, ``input.value`` and
``output.value`` are set beside them, which Phoenix and Langfuse display), and
:class:`OtlpExport`: a subscriber of the :class:`~agentlake.observe.observer.Observer` that
turns every op it records into a span and hands it to the SDK's ``BatchSpanProcessor``.

Configuration is the standard ``OTEL_*`` environment, read by the SDK itself: export is on when
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, unless
``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``; ``OTEL_EXPORTER_OTLP_(TRACES_)
PROTOCOL`` picks ``http/protobuf`` (default) or ``grpc``; ``..._HEADERS``, ``..._TIMEOUT``,
``..._COMPRESSION``, ``OTEL_SERVICE_NAME`` (default ``agentlake``), ``OTEL_RESOURCE_ATTRIBUTES``
and the ``OTEL_BSP_*`` batch settings apply as documented by OpenTelemetry.
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false`` leaves inputs and outputs out
(they are on by default: an op's summaries are already scrubbed of secrets and capped).

Off the hot path: recording an op only offers it to a bounded queue (drop-oldest, counted);
a daemon thread builds the spans and the processor's own thread exports them in batches. A
collector that is down costs dropped spans, never a slower or failed operation. Ops received
over OTLP (source ``otlp``) are not sent back out. It does not own recording or storage.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from agentlake import __version__
from agentlake.errors import UserError
from agentlake.observe.model import LABEL_PREFIX, ObservedOp
from agentlake.observe.otel_env import capture_content, export_configured, export_protocol

if TYPE_CHECKING:
    from agentlake.observe.observer import Observer, Subscription

log = logging.getLogger(__name__)

SCOPE = InstrumentationScope("agentlake", __version__)
# Ops that came in over OTLP are someone else's spans: never exported back.
NOT_EXPORTED_SOURCES = frozenset({"otlp"})
DEFAULT_QUEUE = 2048
# Smaller than the SDK's 512: the SDK encodes a batch in pure Python (~35 us a span) holding
# the GIL, and an operation recorded meanwhile waits for it; 64 spans bound that wait to ~2 ms
# (p99 added to an operation 2.0 -> 0.6 ms at saturation, docs/benchmarks.md).
DEFAULT_BATCH = 64
# After a failed export, ops are dropped without being turned into spans for this long: a
# collector that is down costs a queue offer per op, not the encoding of spans nobody gets.
DOWN_COOLDOWN_S = 5.0
CLOSE_TIMEOUT_S = 5.0
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def span_exporter(environ: Mapping[str, str] | None = None) -> SpanExporter:
    """The SDK's OTLP span exporter for the protocol the environment names (the exporter reads
    its endpoint, headers, timeout and compression from the environment itself). Raises
    ``UserError`` for a protocol the Python SDK does not export with."""
    protocol = export_protocol(environ)
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

        return Grpc()
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

        return Http()
    raise UserError(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: use http/protobuf (default) or grpc"
    )


def export_resource() -> Resource:
    """``service.name`` agentlake and its version, under what ``OTEL_SERVICE_NAME`` and
    ``OTEL_RESOURCE_ATTRIBUTES`` say (they win)."""
    base = Resource.create({"service.name": "agentlake", "service.version": __version__})
    return base.merge(OTELResourceDetector().detect())


# --- op -> span -------------------------------------------------------------------------


def _id(value: str | None, hex_chars: int, fallback: str) -> int:
    """An id as OTel's integer: ``value`` when it is hex of the right size (ours and OTLP's
    are), else a stable hash of it (or of ``fallback``), so links survive the conversion."""
    if value and len(value) == hex_chars:
        try:
            number = int(value, 16)
        except ValueError:
            number = 0
        if number:
            return number
    digest = hashlib.sha256((value or fallback).encode()).hexdigest()[:hex_chars]
    return int(digest, 16) or 1


def _value(value: Any) -> Any:
    """An attribute value OTel accepts: primitives and lists of one primitive type as they
    are; anything else as JSON text."""
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and value:
        kinds = {type(item) for item in value}
        if len(kinds) == 1 and kinds <= {str, bool, int, float}:
            return list(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def _shape(op: ObservedOp) -> tuple[str, SpanKind, dict[str, Any]]:
    """The span's name, kind and convention attributes for ``op``."""
    endpoint = op.endpoint
    if endpoint.startswith("llm."):
        operation = endpoint[len("llm.") :] or "chat"
        usage = op.usage
        model = usage.model if usage is not None else None
        attributes: dict[str, Any] = {"gen_ai.operation.name": operation, "openinference.span.kind": "LLM"}
        if usage is not None:
            for key, value in (
                ("gen_ai.provider.name", usage.provider),
                ("gen_ai.request.model", usage.model),
                ("gen_ai.usage.input_tokens", usage.input_tokens),
                ("gen_ai.usage.output_tokens", usage.output_tokens),
                ("gen_ai.usage.reasoning.output_tokens", usage.thinking_tokens),
                ("llm.model_name", usage.model),
                ("llm.token_count.prompt", usage.input_tokens),
                ("llm.token_count.completion", usage.output_tokens),
            ):
                if value is not None:
                    attributes[key] = value
            if usage.finish_reason:
                attributes["gen_ai.response.finish_reasons"] = usage.finish_reason.split(",")
        return (f"{operation} {model}" if model else operation), SpanKind.CLIENT, attributes
    if endpoint.startswith("tool."):
        tool = endpoint[len("tool.") :]
        return (
            f"execute_tool {tool}",
            SpanKind.INTERNAL,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.type": "function",
                "tool.name": tool,
                "openinference.span.kind": "TOOL",
            },
        )
    if endpoint.startswith("task."):
        agent = op.agent_id or "agent"
        return (
            f"invoke_agent {agent}",
            SpanKind.INTERNAL,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "agentlake.task": endpoint[len("task.") :],
                "openinference.span.kind": "AGENT",
            },
        )
    if op.source == "gateway":
        method, _, route = endpoint.partition(" ")
        return endpoint, SpanKind.SERVER, {"http.request.method": method, "http.route": route}
    return endpoint, SpanKind.INTERNAL, {"openinference.span.kind": "CHAIN"}


def op_to_span(op: ObservedOp, resource: Resource, *, content: bool = True) -> ReadableSpan:
    """The span for ``op``: its trace, span and parent ids (hashed when not hex), start and
    duration, status, the GenAI convention attributes, ``agentlake.run_id`` and ``agentlake.label.*`` and the op's
    own attributes; an op stating an outcome (``attributes.outcome``) carries a
    ``gen_ai.evaluation.result`` event."""
    name, kind, attributes = _shape(op)
    trace_id = _id(op.trace_id, 32, op.id)
    context = SpanContext(trace_id, _id(op.span_id, 16, op.id), is_remote=False, trace_flags=_SAMPLED)
    parent = (
        SpanContext(trace_id, _id(op.parent_span_id, 16, op.id), is_remote=False, trace_flags=_SAMPLED)
        if op.parent_span_id
        else None
    )
    attributes.update(
        {
            "agentlake.op_id": op.id,
            "agentlake.source": op.source,
            "agentlake.endpoint": op.endpoint,
        }
    )
    if op.agent_id and "gen_ai.agent.name" not in attributes:
        attributes["gen_ai.agent.id"] = op.agent_id
    if op.run_id:
        attributes["agentlake.run_id"] = op.run_id
    for key, value in op.labels.items():
        attributes[f"{LABEL_PREFIX}{key}"] = value
    for key, value in op.attributes.items():
        if key == "outcome":
            continue
        # Keys that already name a convention (gen_ai.*, http.*) keep their name.
        attributes.setdefault(key if "." in key else f"agentlake.{key}", _value(value))
    if content:
        if op.input_summary:
            attributes["input.value"] = op.input_summary
            if kind is SpanKind.INTERNAL and op.endpoint.startswith("tool."):
                attributes["gen_ai.tool.call.arguments"] = op.input_summary
        if op.output_summary:
            attributes["output.value"] = op.output_summary
            if op.endpoint.startswith("tool."):
                attributes["gen_ai.tool.call.result"] = op.output_summary
    status = Status(StatusCode.OK)
    if not op.success:
        error = op.error or "failed"
        status = Status(StatusCode.ERROR, error)
        attributes["error.type"] = error.split(":", 1)[0].strip()[:128] or "error"
    start = int(op.ts.timestamp() * 1e9)
    end = start + int(op.duration_ms * 1e6)
    return ReadableSpan(
        name=name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=attributes,
        events=_evaluation(op, end),
        kind=kind,
        status=status,
        start_time=start,
        end_time=end,
        instrumentation_scope=SCOPE,
    )


def _evaluation(op: ObservedOp, at: int) -> tuple[Event, ...]:
    outcome = op.attributes.get("outcome")
    if not isinstance(outcome, dict) or "success" not in outcome:
        return ()
    attributes: dict[str, Any] = {
        "gen_ai.evaluation.name": op.endpoint,
        "gen_ai.evaluation.score.label": "pass" if outcome.get("success") else "fail",
    }
    score = outcome.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        attributes["gen_ai.evaluation.score.value"] = float(score)
    return (Event("gen_ai.evaluation.result", attributes, timestamp=at),)


# --- the exporter -------------------------------------------------------------------------


class _Watched(SpanExporter):
    """The exporter, remembering when an export last failed."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        self.failed_at = 0.0

    def export(self, spans: Any) -> Any:
        result = self.exporter.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.failed_at = 0.0
        else:
            self.failed_at = time.monotonic()
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)

    def down(self) -> bool:
        return bool(self.failed_at) and time.monotonic() - self.failed_at < DOWN_COOLDOWN_S


class OtlpExport:
    """Every op ``observer`` records from now on, as a span, batched to ``exporter``.

    ``exporter`` defaults to the one the ``OTEL_*`` environment configures. :meth:`close`
    exports what is queued (waiting at most ``CLOSE_TIMEOUT_S``) and stops; the observer
    calls it when it closes. ``seen`` counts ops turned into spans, ``dropped`` ops lost
    because the queue was full (a collector slower than the ops), ``skipped_while_down`` ops
    not exported for ``DOWN_COOLDOWN_S`` after a failed export (the SDK's processor drops
    spans past its own queue too, and logs it).
    """

    def __init__(
        self,
        observer: Observer,
        exporter: SpanExporter | None = None,
        *,
        resource: Resource | None = None,
        queue_size: int | None = None,
        content: bool | None = None,
        close_timeout_s: float = CLOSE_TIMEOUT_S,
    ) -> None:
        self.resource = resource or export_resource()
        self.content = capture_content() if content is None else content
        self.close_timeout_s = close_timeout_s
        size = queue_size or _env_int("OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_QUEUE)
        self._exporter = _Watched(exporter or span_exporter())
        # The processor reads OTEL_BSP_SCHEDULE_DELAY and OTEL_BSP_EXPORT_TIMEOUT itself.
        self.processor = BatchSpanProcessor(
            self._exporter,
            max_queue_size=size,
            max_export_batch_size=min(size, _env_int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", DEFAULT_BATCH)),
        )
        self.seen = 0
        self.skipped_while_down = 0
        self._taken = 0
        self._subscription: Subscription = observer.subscribe(maxsize=size)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otlp-export", daemon=True)
        self._thread.start()

    @property
    def dropped(self) -> int:
        return self._subscription.dropped

    def _run(self) -> None:
        while not (self._stop.is_set() and self._pending() == 0):
            op = self._subscription.get(timeout=0.05)
            if op is None:
                continue
            try:
                if op.source in NOT_EXPORTED_SOURCES:
                    pass
                elif self._exporter.down():
                    self.skipped_while_down += 1
                else:
                    self.processor.on_end(op_to_span(op, self.resource, content=self.content))
                    self.seen += 1
            except Exception:  # one odd op must not stop the export of the others
                log.warning("could not export op %s as a span", op.id, exc_info=True)
            finally:
                self._taken += 1

    def _pending(self) -> int:
        subscription = self._subscription
        return subscription.offered - subscription.dropped - self._taken

    def flush(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Export every op recorded so far; ``False`` if that took longer than ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self._pending() > 0 and self._thread.is_alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        left = max(0.0, deadline - time.monotonic())
        return self.processor.force_flush(max(1, int(left * 1000)))

    def close(self) -> None:
        """Stop listening, export what is queued, stop; never blocks much longer than
        ``close_timeout_s`` (a collector that is down loses those spans instead of holding
        the process)."""
        self._subscription.close()
        self._stop.set()
        self._thread.join(self.close_timeout_s)
        closer = threading.Thread(target=self.processor.shutdown, name="otlp-export-close", daemon=True)
        closer.start()
        closer.join(self.close_timeout_s)


def _env_int(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def attach_configured_export(observer: Observer) -> OtlpExport | None:
    """Attach an :class:`OtlpExport` to ``observer`` when the environment asks for one (closed
    with the observer). A bad ``OTEL_*`` value is logged and export stays off: telemetry never
    stops agentlake from running."""
    if not export_configured():
        return None
    try:
        export = OtlpExport(observer)
    except UserError as exc:
        log.warning("OTLP export is off: %s", exc.message)
        return None
    except ValueError as exc:  # the SDK refusing an OTEL_BSP_* combination
        log.warning("OTLP export is off: %s", exc)
        return None
    observer.attach(export)
    return export
