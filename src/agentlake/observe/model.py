"""``ObservedOp``: the one record of anything agentlake (or an outside system) did.

This module owns the shape of an op and its hygiene: every text field (summaries, error, ids,
endpoint, run id, labels, usage names, attribute keys and values) goes through the one scrubber
(``observe.scrub``) and is length-capped, whatever path the op takes; and every value must fit
the store (``ops`` columns: INTEGER and BIGINT counts, finite DOUBLEs, timestamps Python and
DuckDB can both hold after conversion to UTC), so one client's out-of-range value is refused
with that op (a 400 naming the field) instead of failing the group commit it would share with
other clients' ops. It does not own storage (``store``), the recording path (``record``) or
the HTTP service.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from agentlake.observe.scrub import any_secret, may_hold_secret, scrub, scrub_value

__all__ = ["LLMUsage", "LabelValue", "ObservedOp", "Source", "cap", "new_op_id", "scrub"]

Source = Literal["gateway", "mcp", "scenario", "agent", "llm", "otlp", "external"]

MAX_SUMMARY_CHARS = 2000
MAX_ERROR_CHARS = 2000
MAX_ID_CHARS = 128
MAX_ATTRIBUTES_CHARS = 8000
# The store's column types (store.MIGRATIONS): INTEGER and BIGINT.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_HEX = "0123456789abcdef-"
# Validation context key: the caller runs clean_ops() on what it validated (see ObservedOp._hygiene).
BATCH_HYGIENE = "agentlake_batch_hygiene"


def cap(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    marker = f"...[+{len(text) - limit} chars]"
    return text[: max(0, limit - len(marker))] + marker


def new_op_id() -> str:
    """A time-ordered unique id (ms timestamp + random), so ids sort roughly by time."""
    return f"{int(time.time() * 1000):013x}{uuid.uuid4().hex[:19]}"


LabelValue = str | bool | int | float
MAX_LABELS = 32
# How labels travel as span attributes (OTLP in and out): agentlake.label.<name>.
LABEL_PREFIX = "agentlake.label."
MAX_LABEL_CHARS = 256
# A label's name: what a filter names (``label=key=value``) and a JSON path can hold as it is.
LABEL_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
# The op's fields before labels (releases up to 0.1): ``provenance`` held the run id beside
# fields that a domain stamps; they are labels now.
_LEGACY_PROVENANCE = "provenance"


def check_labels(labels: dict[str, Any]) -> dict[str, LabelValue]:
    """``labels`` as an op stores them: at most ``MAX_LABELS``, each a plain name, a value that
    is text (at most ``MAX_LABEL_CHARS``), a bool, an int that fits a BIGINT or a finite float;
    ``None`` values dropped. Raises ``ValueError`` naming the first that is not."""
    out: dict[str, LabelValue] = {}
    for key, value in labels.items():
        if value is None:
            continue
        if not isinstance(key, str) or not LABEL_KEY.match(key):
            raise ValueError(
                f"label name {key!r}: use letters, digits, _ . : - (at most 64, not starting with a digit)"
            )
        if isinstance(value, bool) or isinstance(value, str):
            out[key] = value if isinstance(value, bool) else cap(value, MAX_LABEL_CHARS)
        elif isinstance(value, int):
            if not -INT64_MAX - 1 <= value <= INT64_MAX:
                raise ValueError(f"label {key!r}: {value} does not fit a 64-bit integer")
            out[key] = value
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"label {key!r}: {value} is not a finite number")
            out[key] = value
        else:
            raise ValueError(
                f"label {key!r}: a label is text, a number or a bool, not {type(value).__name__}"
            )
    if len(out) > MAX_LABELS:
        raise ValueError(f"{len(out)} labels: an op carries at most {MAX_LABELS}")
    return out


class LLMUsage(BaseModel):
    """Model-call accounting, named after the OpenTelemetry GenAI conventions."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    provider: str | None = None
    model: str | None = None  # gen_ai.request.model
    input_tokens: int | None = Field(None, ge=0, le=INT64_MAX)  # gen_ai.usage.input_tokens
    output_tokens: int | None = Field(None, ge=0, le=INT64_MAX)  # gen_ai.usage.output_tokens
    thinking_tokens: int | None = Field(None, ge=0, le=INT64_MAX)  # gen_ai.usage.reasoning.output_tokens
    finish_reason: str | None = None  # gen_ai.response.finish_reasons
    attempts: int | None = Field(None, ge=0, le=INT32_MAX)
    continuations: int | None = Field(None, ge=0, le=INT32_MAX)
    cost_usd: float | None = Field(None, ge=0)  # finite: allow_inf_nan=False


class ObservedOp(BaseModel):
    """One operation: a tool call, a model call, a task outcome, an HTTP request, a span."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str = Field(default_factory=new_op_id, min_length=1, max_length=MAX_ID_CHARS)
    ts: datetime = Field(default_factory=lambda: datetime.now(UTC))
    trace_id: str | None = Field(None, max_length=MAX_ID_CHARS)
    span_id: str | None = Field(None, max_length=MAX_ID_CHARS)
    parent_span_id: str | None = Field(None, max_length=MAX_ID_CHARS)
    endpoint: str = Field(
        ...,
        min_length=1,
        max_length=256,
        description="What was done: 'tool.sql', 'llm.chat', 'POST /search'.",
    )
    source: Source = "external"
    agent_id: str | None = Field(None, max_length=MAX_ID_CHARS)
    input_summary: str = ""
    output_summary: str = ""
    success: bool = True
    duration_ms: float = Field(0.0, ge=0)
    error: str | None = None
    run_id: str | None = Field(
        None, max_length=1000, description="The run the op belongs to (a task, a scenario day, an answer)."
    )
    labels: dict[str, LabelValue] = Field(
        default_factory=dict,
        description="What a domain stamps on its ops to find them again (e.g. a scenario's arm); "
        "at most 32, each text, a number or a bool; filterable (label=key=value).",
    )
    usage: LLMUsage | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    seq: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="The store's commit sequence, set when read back; ignored when sent.",
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_provenance(cls, data: Any) -> Any:
        # An op as earlier releases and their clients send it: ``provenance: {run_id, ...}``.
        if isinstance(data, dict) and isinstance(data.get(_LEGACY_PROVENANCE), dict):
            data = dict(data)
            legacy = data.pop(_LEGACY_PROVENANCE)
            if data.get("run_id") is None and legacy.get("run_id") is not None:
                data["run_id"] = legacy["run_id"]
            labels = {key: value for key, value in legacy.items() if key != "run_id" and value is not None}
            data["labels"] = {**labels, **(data.get("labels") or {})}
        return data

    @field_validator("labels", mode="before")
    @classmethod
    def _labels(cls, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValueError("labels must be an object of name: value")
        return check_labels(value)

    @property
    def origin(self) -> str:
        """Where the op came from: the door it was recorded through (``attributes.origin``:
        ``gateway`` or ``mcp``, set by the doors for every op recorded while they serve a
        request) or else its ``source``."""
        origin = self.attributes.get("origin")
        return origin if isinstance(origin, str) and origin else self.source

    @field_validator("ts")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        try:
            return value.astimezone(UTC)
        except OverflowError:
            raise ValueError(
                "ts is outside the range a timestamp can be stored in once converted to UTC (years 1 to 9999)"
            ) from None

    @model_validator(mode="after")
    def _hygiene(self, info: ValidationInfo) -> ObservedOp:
        # A parser of many ops at once (ingest) asks to scrub them together afterwards, with
        # one gate over the whole batch: it then calls hygiene(); see clean_ops.
        if not (info.context and info.context.get(BATCH_HYGIENE)):
            self.hygiene()
        return self

    def texts(self) -> list[str | None]:
        """Every text of the op the scrubber must see (ids only when they are not lower-case hex:
        ours and OTLP's are, and no rule matches one; ids of digits alone are seen, as a card
        number could be one)."""
        usage = self.usage
        texts = [
            self.endpoint,
            self.agent_id,
            self.input_summary,
            self.output_summary,
            self.error,
            self.run_id,
        ]
        if self.labels:
            texts += [value for value in self.labels.values() if isinstance(value, str)]
        if usage is not None:
            texts += (usage.provider, usage.model, usage.finish_reason)
        for op_id in (self.id, self.trace_id, self.span_id, self.parent_span_id):
            if op_id and (op_id.strip(_HEX) or op_id.isdigit()):
                texts.append(op_id)
        return texts

    def hygiene(self, *, may_hold_secret: bool = True) -> None:
        """Scrub, then cap: in that order, so a cap never cuts a secret short of what its rule
        recognises. ``may_hold_secret=False``: the caller's gate already found the op clean."""
        # One gate over all the op's texts: the usual op has no secret, and checking its fields
        # one by one would pay the scrubber's fixed price per field.
        if may_hold_secret and any_secret(self.texts()):
            self._scrub_texts()
        # Assigning through pydantic costs more than the check: assign only what changes.
        if len(self.input_summary) > MAX_SUMMARY_CHARS:
            self.input_summary = cap(self.input_summary, MAX_SUMMARY_CHARS)
        if len(self.output_summary) > MAX_SUMMARY_CHARS:
            self.output_summary = cap(self.output_summary, MAX_SUMMARY_CHARS)
        if self.error is not None and len(self.error) > MAX_ERROR_CHARS:
            self.error = cap(self.error, MAX_ERROR_CHARS)
        if self.attributes:
            self.attributes = _clean_attributes(self.attributes)

    def _scrub_texts(self) -> None:
        for name in ("endpoint", "input_summary", "output_summary", "error"):
            value = getattr(self, name)
            if value:
                setattr(self, name, scrub(value))
        for name in ("id", "trace_id", "span_id", "parent_span_id", "agent_id"):
            value = getattr(self, name)
            if value:
                setattr(self, name, cap(scrub(value), MAX_ID_CHARS))
        if self.run_id:
            self.run_id = scrub(self.run_id)
        if self.labels:
            self.labels = {
                key: scrub(value) if isinstance(value, str) else value for key, value in self.labels.items()
            }
        if self.usage is not None:
            for name, value in self.usage.__dict__.items():
                if isinstance(value, str) and value:
                    setattr(self.usage, name, scrub(value))


def exception_text(error: BaseException | str) -> str:
    """An op's ``error`` for ``error``: "TypeName: message" (the type alone when it has no message)."""
    if isinstance(error, BaseException):
        message = str(error)
        return f"{type(error).__name__}: {message}" if message else type(error).__name__
    return error


def _finite(value: Any) -> Any:
    """Non-finite floats (NaN, infinities; JSON cannot carry them) as their text, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _clean_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attributes as they are stored: JSON-safe (non-finite numbers as text), scrubbed (texts,
    and the whole value under a key naming a secret), at most ``MAX_ATTRIBUTES_CHARS`` of JSON."""
    try:
        text = json.dumps(attributes, default=str, ensure_ascii=False, allow_nan=False)
    except ValueError:
        attributes = _finite(attributes)
        text = json.dumps(attributes, default=str, ensure_ascii=False)
    if may_hold_secret(text) or not text.isascii():
        attributes = scrub_value(json.loads(text))
        text = json.dumps(attributes, ensure_ascii=False)
    if len(text) > MAX_ATTRIBUTES_CHARS:
        return {"truncated": cap(text, MAX_ATTRIBUTES_CHARS)}
    return attributes


def clean_ops(ops: list[ObservedOp]) -> list[ObservedOp]:
    """Scrub and cap ops validated with ``context={BATCH_HYGIENE: True}``: one gate over every
    text of the batch (a thousand clean ops cost one scan, not a thousand), then each op's own
    gate only when the batch's found something."""
    suspect = any_secret(text for op in ops for text in op.texts())
    for op in ops:
        op.hygiene(may_hold_secret=suspect)
    return ops
