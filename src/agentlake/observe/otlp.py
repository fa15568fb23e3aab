"""OTLP/HTTP trace export -> ops: decoding (protobuf or JSON, optionally gzip) and mapping.

Owns how a span becomes an ``ObservedOp``. GenAI spans (OpenTelemetry semantic conventions:
``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``, ``gen_ai.tool.name``,
``gen_ai.agent.name``) become ``llm.<operation>``, ``tool.<tool name>`` or
``agent.<operation>`` ops with usage filled; any other span keeps its name as the endpoint.
Every op gets ``source="otlp"`` and the id ``otlp-<trace id>-<span id>``, so a re-sent export
is stored once. Span attributes ``agentlake.<provenance field>`` (``agentlake.run_id`` ...)
fill the provenance. It does not own the HTTP route (``service``) nor storage.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from agentlake.errors import UserError
from agentlake.observe.model import LLMUsage, ObservedOp, Provenance, cap

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
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("gzip", "deflate"):
        body = _inflate(body, encoding, max_bytes)
    elif encoding not in ("", "identity"):
        raise UserError(
            f"unsupported Content-Encoding {encoding!r}: send gzip, deflate or none", http_status=415
        )
    media = (content_type or JSON).split(";")[0].strip().lower()
    if media == PROTOBUF:
        return list(_from_protobuf(body))
    if media == JSON:
        return list(_from_json(body))
    raise UserError(f"unsupported Content-Type {media!r}: send {PROTOBUF} or {JSON}", http_status=415)


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
                    code = status.get("code", 0)
                    if isinstance(code, str):  # enum names are valid OTLP/JSON too
                        code = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(
                            code, 0
                        )
                    trace_id, span_id = span.get("traceId"), span.get("spanId")
                    if not trace_id or not span_id:
                        raise UserError(f"span {span.get('name')!r} has no traceId or spanId")
                    yield Span(
                        trace_id=str(trace_id).lower(),
                        span_id=str(span_id).lower(),
                        parent_span_id=str(span.get("parentSpanId") or "").lower() or None,
                        name=str(span.get("name") or ""),
                        kind=int(span.get("kind") or 0) if not isinstance(span.get("kind"), str) else 0,
                        start_ns=int(span.get("startTimeUnixNano") or 0),
                        end_ns=int(span.get("endTimeUnixNano") or 0),
                        attributes=_json_attributes(span.get("attributes", [])),
                        status_code=int(code),
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


def _first(attributes: dict[str, Any], *names: str) -> Any:
    for name in names:
        value = attributes.get(name)
        if value is not None:
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


def span_to_op(span: Span) -> ObservedOp:
    """The op for one span (see the module docstring for the mapping). Raises ``UserError``
    naming the span when its fields cannot make a valid op."""
    attrs = span.attributes
    operation = _first(attrs, "gen_ai.operation.name")
    tool = _first(attrs, "gen_ai.tool.name")
    agent = _first(attrs, "gen_ai.agent.name", "gen_ai.agent.id")
    usage = None
    if operation == "execute_tool" or (operation is None and tool):
        endpoint = f"tool.{tool}" if tool else (span.name or "tool")
        input_summary = _text(_first(attrs, "gen_ai.tool.call.arguments"))
        output_summary = _text(_first(attrs, "gen_ai.tool.call.result"))
    elif operation is not None:
        kind = "llm" if operation in _LLM_OPERATIONS else "agent" if "agent" in str(operation) else "gen_ai"
        endpoint = f"{kind}.{operation}"
        input_summary = _text(_first(attrs, "gen_ai.input.messages", "gen_ai.prompt"))
        output_summary = _text(_first(attrs, "gen_ai.output.messages", "gen_ai.completion"))
        finish = _first(attrs, "gen_ai.response.finish_reasons")
        usage = LLMUsage(
            provider=_first(attrs, "gen_ai.provider.name", "gen_ai.system"),
            model=_first(attrs, "gen_ai.request.model", "gen_ai.response.model"),
            input_tokens=_int(_first(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")),
            output_tokens=_int(_first(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")),
            thinking_tokens=_int(
                _first(attrs, "gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens")
            ),
            finish_reason=",".join(map(str, finish)) if isinstance(finish, list) else finish,
        )
    else:
        endpoint = span.name or "span"
        input_summary = output_summary = ""
    error = None
    if span.status_code == _STATUS_ERROR:
        error = (
            span.status_message
            or _exception_text(span.events)
            or _text(attrs.get("error.type"))
            or "span status ERROR"
        )
    provenance = {
        field: attrs[f"agentlake.{field}"]
        for field in Provenance.model_fields
        if f"agentlake.{field}" in attrs
    }
    extra = {key: value for key, value in attrs.items() if not key.startswith("agentlake.")}
    extra["otel.span.name"] = span.name
    extra["otel.span.kind"] = _SPAN_KINDS.get(span.kind, str(span.kind))
    if span.scope:
        extra["otel.scope.name"] = span.scope
    if "service.name" in span.resource:
        extra["service.name"] = span.resource["service.name"]
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
            success=span.status_code != _STATUS_ERROR,
            duration_ms=max(0.0, (span.end_ns - span.start_ns) / 1e6)
            if span.end_ns and span.start_ns
            else 0.0,
            error=error,
            provenance=provenance,
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


def export_response(content_type: str | None) -> tuple[bytes, str]:
    """The success body for an export, in the request's encoding: (body, media type)."""
    if (content_type or "").split(";")[0].strip().lower() == PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        return ExportTraceServiceResponse().SerializeToString(), PROTOBUF
    return b"{}", JSON
