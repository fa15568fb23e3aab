"""OTLP export requests -> ops: decoding (protobuf or JSON, optionally gzip) and mapping.

Owns how a span becomes an ``ObservedOp``. Model calls, tool calls and agents are recognised
in three conventions, read beside each other (GenAI first): the OpenTelemetry GenAI semantic
conventions (``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``,
``gen_ai.tool.name``, ``gen_ai.agent.name``), OpenInference (``openinference.span.kind``,
``llm.model_name``, ``llm.token_count.*``, ``input.value``, ``tool.name``) and Langfuse
(``langfuse.observation.*``); they become ``llm.<operation>``, ``tool.<tool name>`` or
``agent.<operation>`` ops with usage filled; any other span keeps its name as the endpoint.
Every op gets ``source="otlp"`` and the id ``otlp-<trace id>-<span id>``, so a re-sent export
is stored once. The attributes ``agentlake.run_id`` and ``agentlake.label.<name>`` of the
span, else of its resource, fill the op's run id and labels. Logs and metrics are decoded and counted
(``count_export``), not stored. It does not own the routes (``service``, ``otlp_grpc``) nor
storage.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ValidationError

from agentlake.errors import UserError
from agentlake.observe.model import LABEL_PREFIX, LLMUsage, ObservedOp, cap

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_STATUS_ERROR = 2
_LLM_OPERATIONS = {"chat", "text_completion", "generate_content", "embeddings"}
_SPAN_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass
class Span:
    """A span in a wire-neutral shape (both decoders produce it)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    events: list[tuple[str, dict[str, Any]]]
    resource: dict[str, Any]
    scope: str | None


def decode_body(
    body: bytes, content_type: str | None, content_encoding: str | None, max_bytes: int
) -> list[Span]:
    """Spans of one OTLP/HTTP export request. ``content_type`` picks protobuf or JSON; gzip and
    deflate bodies are inflated up to ``max_bytes``. Raises ``UserError`` (400) with what is
    wrong, or ``UserError`` (413/415) for an oversized inflated body or an unknown type."""
    body = _decoded_body(body, content_encoding, max_bytes)
    media = (content_type or JSON).split(";")[0].strip().lower()
    if media == PROTOBUF:
        return list(_from_protobuf(body))
    if media == JSON:
        return list(_from_json(body))
    raise UserError(f"unsupported Content-Type {media!r}: send {PROTOBUF} or {JSON}", http_status=415)


def _decoded_body(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("gzip", "deflate"):
        return _inflate(body, encoding, max_bytes)
    if encoding not in ("", "identity"):
        raise UserError(
            f"unsupported Content-Encoding {encoding!r}: send gzip, deflate or none", http_status=415
        )
    return body


def _inflate(body: bytes, encoding: str, max_bytes: int) -> bytes:
    # Inflate incrementally so a small bomb cannot allocate gigabytes before we notice.
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise UserError(f"the {encoding} body cannot be inflated: {exc}") from None
    if len(out) > max_bytes or inflater.unconsumed_tail:
        raise UserError(
            f"the inflated body is larger than the limit of {max_bytes} bytes (max_body_bytes)",
            http_status=413,
        )
    return out


# --- protobuf ---------------------------------------------------------------------------


def _any_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def _from_protobuf(body: bytes) -> Iterator[Span]:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        request = ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        raise UserError(f"malformed OTLP protobuf body: {exc}") from None
    return spans_of_request(request)


def spans_of_request(request: Any) -> Iterator[Span]:
    """The spans of a decoded ``ExportTraceServiceRequest`` (the HTTP and gRPC receivers')."""
    for resource_spans in request.resource_spans:
        resource = {kv.key: _any_value(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name or None
            for span in scope_spans.spans:
                yield Span(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex() or None,
                    name=span.name,
                    kind=span.kind,
                    start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano,
                    attributes={kv.key: _any_value(kv.value) for kv in span.attributes},
                    status_code=span.status.code,
                    status_message=span.status.message,
                    events=[
                        (event.name, {kv.key: _any_value(kv.value) for kv in event.attributes})
                        for event in span.events
                    ],
                    resource=resource,
                    scope=scope,
                )


# --- JSON (OTLP/JSON: hex ids, lowerCamelCase, 64-bit integers may be strings) -------------


# OTLP/JSON may spell enums by name (the protobuf JSON mapping) as well as by number.
_KIND_NAMES = {f"SPAN_KIND_{name.upper()}": number for number, name in _SPAN_KINDS.items()}
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def _enum(value: Any, names: dict[str, int]) -> int:
    """An OTLP/JSON enum given by number, numeric text or name; unknown names are 0 (unset)."""
    if value is None or value == "":
        return 0
    if isinstance(value, str):
        text = value.strip()
        return int(text) if text.lstrip("-").isdigit() else names.get(text.upper(), 0)
    return int(value)


def _json_value(value: Any) -> Any:
    if not isinstance(value, dict) or not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "arrayValue":
        return [_json_value(item) for item in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return _json_attributes((inner or {}).get("values", []))
    if kind == "intValue":
        return int(inner)
    if kind == "doubleValue":
        return float(inner)
    return inner


def _json_attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        raise UserError("attributes must be a list of {key, value} objects")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or "key" not in item:
            raise UserError("each attribute must be an object with 'key' and 'value'")
        out[str(item["key"])] = _json_value(item.get("value"))
    return out


def _json_list(container: dict[str, Any], *names: str) -> list[Any]:
    for name in names:
        if name in container:
            value = container[name]
            if not isinstance(value, list):
                raise UserError(f"'{name}' must be a list")
            return value
    return []


def _from_json(body: bytes) -> Iterator[Span]:
    try:
        document = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"malformed JSON: {exc}") from None
    if not isinstance(document, dict):
        raise UserError("an OTLP JSON export is an object with 'resourceSpans'")
    try:
        for resource_spans in _json_list(document, "resourceSpans", "resource_spans"):
            resource = _json_attributes((resource_spans.get("resource") or {}).get("attributes", []))
            for scope_spans in _json_list(resource_spans, "scopeSpans", "scope_spans"):
                scope = (scope_spans.get("scope") or {}).get("name") or None
                for span in _json_list(scope_spans, "spans"):
                    status = span.get("status") or {}
                    trace_id, span_id = span.get("traceId"), span.get("spanId")
                    if not trace_id or not span_id:
                        raise UserError(f"span {span.get('name')!r} has no traceId or spanId")
                    yield Span(
                        trace_id=str(trace_id).lower(),
                        span_id=str(span_id).lower(),
                        parent_span_id=str(span.get("parentSpanId") or "").lower() or None,
                        name=str(span.get("name") or ""),
                        kind=_enum(span.get("kind"), _KIND_NAMES),
                        start_ns=int(span.get("startTimeUnixNano") or 0),
                        end_ns=int(span.get("endTimeUnixNano") or 0),
                        attributes=_json_attributes(span.get("attributes", [])),
                        status_code=_enum(status.get("code"), _STATUS_NAMES),
                        status_message=str(status.get("message") or ""),
                        events=[
                            (str(e.get("name", "")), _json_attributes(e.get("attributes", [])))
                            for e in span.get("events", [])
                        ],
                        resource=resource,
                        scope=scope,
                    )
    except (AttributeError, TypeError, ValueError) as exc:
        raise UserError(f"malformed OTLP JSON export: {exc}") from None


# --- mapping ----------------------------------------------------------------------------
#
# Three conventions name the same facts; each fact is read from the first name present, in
# this order: OpenTelemetry GenAI, then OpenInference (Phoenix, Arize), then Langfuse.

# What kind of operation a span is: GenAI's gen_ai.operation.name, or the operation implied by
# OpenInference's span kind or Langfuse's observation type.
_OPENINFERENCE_KINDS = {
    "LLM": "chat",
    "EMBEDDING": "embeddings",
    "TOOL": "execute_tool",
    "AGENT": "invoke_agent",
}
_LANGFUSE_TYPES = {
    "generation": "chat",
    "embedding": "embeddings",
    "tool": "execute_tool",
    "agent": "invoke_agent",
}
_TOOL_NAME = ("gen_ai.tool.name", "tool.name")
_AGENT_NAME = ("gen_ai.agent.name", "gen_ai.agent.id", "agent.name")
_MODEL = (
    "gen_ai.request.model",
    "gen_ai.response.model",
    "llm.model_name",
    "embedding.model_name",
    "langfuse.observation.model.name",
)
_PROVIDER = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
_INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
_OUTPUT_TOKENS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
)
_REASONING_TOKENS = (
    "gen_ai.usage.reasoning.output_tokens",
    "gen_ai.usage.reasoning_tokens",
    "llm.token_count.completion_details.reasoning",
)
# Langfuse's usage_details is a JSON object; these are the keys its SDKs write.
_LANGFUSE_USAGE = {
    "input": ("input", "prompt_tokens", "input_tokens"),
    "output": ("output", "completion_tokens", "output_tokens"),
    "reasoning": ("reasoning", "output_reasoning", "reasoning_tokens"),
}
_TOOL_INPUT = ("gen_ai.tool.call.arguments", "tool.parameters", "input.value", "langfuse.observation.input")
_TOOL_OUTPUT = ("gen_ai.tool.call.result", "output.value", "langfuse.observation.output")
_INPUT = ("gen_ai.input.messages", "gen_ai.prompt", "input.value", "langfuse.observation.input")
_OUTPUT = ("gen_ai.output.messages", "gen_ai.completion", "output.value", "langfuse.observation.output")
# Resource attributes kept on every op of the resource (the rest describe the host).
_RESOURCE_KEPT = ("service.name", "service.version", "service.namespace", "deployment.environment.name")


def _first(attributes: dict[str, Any], *names: str) -> Any:
    for name in names:
        value = attributes.get(name)
        if value is not None and value != "":
            return value
    return None


def _int(value: Any) -> int | None:
    try:
        return None if value is None else max(0, int(value))
    except (TypeError, ValueError):
        return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def _operation(attrs: dict[str, Any]) -> str | None:
    operation = _first(attrs, "gen_ai.operation.name")
    if operation is not None:
        return str(operation)
    kind = _first(attrs, "openinference.span.kind")
    if kind is not None and str(kind).upper() in _OPENINFERENCE_KINDS:
        return _OPENINFERENCE_KINDS[str(kind).upper()]
    observation = _first(attrs, "langfuse.observation.type")
    if observation is not None:
        return _LANGFUSE_TYPES.get(str(observation).lower())
    return None


def _langfuse_usage(attrs: dict[str, Any]) -> dict[str, int | None]:
    details = attrs.get("langfuse.observation.usage_details")
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            details = None
    if not isinstance(details, dict):
        return {}
    return {what: _int(_first(details, *keys)) for what, keys in _LANGFUSE_USAGE.items()}


def _usage(attrs: dict[str, Any]) -> LLMUsage:
    langfuse = _langfuse_usage(attrs)
    finish = _first(attrs, "gen_ai.response.finish_reasons")

    def tokens(names: tuple[str, ...], langfuse_key: str) -> int | None:
        value = _int(_first(attrs, *names))
        return value if value is not None else langfuse.get(langfuse_key)

    return LLMUsage(
        provider=_first(attrs, *_PROVIDER),
        model=_first(attrs, *_MODEL),
        input_tokens=tokens(_INPUT_TOKENS, "input"),
        output_tokens=tokens(_OUTPUT_TOKENS, "output"),
        thinking_tokens=tokens(_REASONING_TOKENS, "reasoning"),
        finish_reason=",".join(map(str, finish)) if isinstance(finish, list) else finish,
    )


def _failure(span: Span) -> str | None:
    """The op's error: the span's ERROR status, or a Langfuse observation at level ERROR."""
    attrs = span.attributes
    langfuse_error = str(attrs.get("langfuse.observation.level", "")).upper() == "ERROR"
    if span.status_code != _STATUS_ERROR and not langfuse_error:
        return None
    return (
        span.status_message
        or _text(attrs.get("langfuse.observation.status_message"))
        or _exception_text(span.events)
        or _text(attrs.get("error.type"))
        or ("span status ERROR" if span.status_code == _STATUS_ERROR else "observation level ERROR")
    )


def span_to_op(span: Span) -> ObservedOp:
    """The op for one span (see the module docstring and ``docs/observer.md`` for the mapping).
    Raises ``UserError`` naming the span when its fields cannot make a valid op."""
    attrs = span.attributes
    operation = _operation(attrs)
    tool = _first(attrs, *_TOOL_NAME)
    agent = _first(attrs, *_AGENT_NAME)
    usage = None
    if operation == "execute_tool" or (operation is None and tool):
        tool = tool or span.name or None
        endpoint = f"tool.{tool}" if tool else "tool"
        input_summary = _text(_first(attrs, *_TOOL_INPUT))
        output_summary = _text(_first(attrs, *_TOOL_OUTPUT))
    elif operation is not None:
        kind = "llm" if operation in _LLM_OPERATIONS else "agent" if "agent" in operation else "gen_ai"
        endpoint = f"{kind}.{operation}"
        if kind == "agent" and agent is None:
            agent = span.name or None
        input_summary = _text(_first(attrs, *_INPUT))
        output_summary = _text(_first(attrs, *_OUTPUT))
        usage = _usage(attrs)
    else:
        endpoint = span.name or "span"
        input_summary = _text(_first(attrs, "input.value", "langfuse.observation.input"))
        output_summary = _text(_first(attrs, "output.value", "langfuse.observation.output"))
    error = _failure(span)
    # The resource describes the sender (agentlake.run_id on the resource covers every span of
    # the process); a span's own attribute wins.
    run_id = attrs.get("agentlake.run_id", span.resource.get("agentlake.run_id"))
    labels = {
        key[len(LABEL_PREFIX) :]: value
        for source in (span.resource, attrs)
        for key, value in source.items()
        if key.startswith(LABEL_PREFIX) and isinstance(value, (str, bool, int, float))
    }
    extra = {key: value for key, value in attrs.items() if not key.startswith("agentlake.")}
    extra["otel.span.name"] = span.name
    extra["otel.span.kind"] = _SPAN_KINDS.get(span.kind, str(span.kind))
    if span.scope:
        extra["otel.scope.name"] = span.scope
    for key in _RESOURCE_KEPT:
        if key in span.resource:
            extra[key] = span.resource[key]
    start = span.start_ns or span.end_ns
    try:
        return ObservedOp(
            id=f"otlp-{span.trace_id}-{span.span_id}",
            ts=datetime.fromtimestamp(start / 1e9, UTC) if start else datetime.now(UTC),
            trace_id=span.trace_id,
            span_id=span.span_id,
            parent_span_id=span.parent_span_id,
            endpoint=cap(endpoint, 256),
            source="otlp",
            agent_id=cap(str(agent), 128) if agent is not None else None,
            input_summary=input_summary,
            output_summary=output_summary,
            success=error is None,
            duration_ms=max(0.0, (span.end_ns - span.start_ns) / 1e6)
            if span.end_ns and span.start_ns
            else 0.0,
            error=error,
            run_id=str(run_id) if run_id is not None else None,
            labels=labels,
            usage=usage,
            attributes=extra,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UserError(f"span {span.name!r} ({span.span_id}) cannot be stored: {problems}") from None


def _exception_text(events: Iterable[tuple[str, dict[str, Any]]]) -> str | None:
    for name, attributes in events:
        if name == "exception":
            kind = attributes.get("exception.type")
            message = attributes.get("exception.message")
            return ": ".join(str(part) for part in (kind, message) if part) or None
    return None


def ops_from_export(
    body: bytes, content_type: str | None, content_encoding: str | None, max_bytes: int
) -> list[ObservedOp]:
    """Every span of an OTLP/HTTP export as an op; all or nothing (``UserError`` on any bad span)."""
    return [span_to_op(span) for span in decode_body(body, content_type, content_encoding, max_bytes)]


# --- logs and metrics: acknowledged and counted, not stored ---------------------------------

Signal = Literal["traces", "logs", "metrics"]


def _messages(signal: Signal) -> tuple[Any, Any]:
    """(request, response) protobuf classes of ``signal``'s export service."""
    if signal == "logs":
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as logs

        return logs.ExportLogsServiceRequest, logs.ExportLogsServiceResponse
    if signal == "metrics":
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as metrics

        return metrics.ExportMetricsServiceRequest, metrics.ExportMetricsServiceResponse
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as trace

    return trace.ExportTraceServiceRequest, trace.ExportTraceServiceResponse


def count_records(request: Any, signal: Signal) -> int:
    """Log records of a decoded logs export, or data points of a metrics export."""
    if signal == "logs":
        return sum(
            len(scope.log_records) for resource in request.resource_logs for scope in resource.scope_logs
        )
    points = 0
    for resource in request.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                data = metric.WhichOneof("data")
                points += len(getattr(metric, data).data_points) if data else 0
    return points


def count_export(
    body: bytes, content_type: str | None, content_encoding: str | None, max_bytes: int, signal: Signal
) -> int:
    """How many log records (``signal="logs"``) or metric data points (``"metrics"``) an OTLP/HTTP
    export holds. They are acknowledged and counted, not stored: agentlake learns from spans.
    Raises ``UserError`` (400/413/415) as :func:`decode_body` does."""
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    body = _decoded_body(body, content_encoding, max_bytes)
    media = (content_type or JSON).split(";")[0].strip().lower()
    request_class, _ = _messages(signal)
    try:
        if media == PROTOBUF:
            request = request_class.FromString(body)
        elif media == JSON:
            # Ids are hex in OTLP/JSON (the protobuf JSON mapping reads them as base64): they are
            # not kept, so the difference does not matter for counting.
            request = json_format.Parse(body, request_class(), ignore_unknown_fields=True)
        else:
            raise UserError(f"unsupported Content-Type {media!r}: send {PROTOBUF} or {JSON}", http_status=415)
    except (DecodeError, json_format.ParseError, UnicodeDecodeError) as exc:
        raise UserError(f"malformed OTLP {signal} export: {str(exc)[:300]}") from None
    return count_records(request, signal)


def export_response(content_type: str | None, signal: Signal = "traces") -> tuple[bytes, str]:
    """The success body for an export, in the request's encoding: (body, media type)."""
    if (content_type or "").split(";")[0].strip().lower() == PROTOBUF:
        _, response_class = _messages(signal)
        return response_class().SerializeToString(), PROTOBUF
    return b"{}", JSON
