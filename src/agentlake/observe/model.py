"""``ObservedOp``: the one record of anything agentlake (or an outside system) did.

This module owns the shape of an op and its hygiene (secrets scrubbed, fields length-capped).
It does not own storage (``store``), the recording path (``record``) or the HTTP service.
"""

from __future__ import annotations

import re
import time
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Source = Literal["gateway", "mcp", "scenario", "agent", "llm", "otlp", "external"]

MAX_SUMMARY_CHARS = 2000
MAX_ERROR_CHARS = 2000
MAX_ID_CHARS = 128
MAX_ATTRIBUTES_CHARS = 8000

# Order matters: URL passwords before generic key=value, so the user name survives.
_SECRET_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 [REDACTED]"),
    (re.compile(r"(?i)([a-z][a-z0-9+.-]*://[^/\s:@]+):[^@\s/]+@"), r"\1:[REDACTED]@"),
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{12,}\b"), "[REDACTED]"),
    (re.compile(r"\b(ghp|gho|ghs|github_pat|xox[abp]|AKIA)[A-Za-z0-9_]{12,}\b"), "[REDACTED]"),
    (
        re.compile(
            r"(?i)((?:api[_-]?key|apikey|token|secret|password|passwd|pwd|authorization|x-api-key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&]{4,}"
        ),
        r"\1[REDACTED]",
    ),
]


# Each pattern above needs one of these (lower-cased) substrings to match at all. Checking for
# them first skips the five regex passes for the usual secret-free text (~25x faster), which
# is what lets ingest validate tens of thousands of ops per second.
_SECRET_HINTS = (
    "bearer",
    "://",
    "sk-",
    "pk-",
    "rk-",
    "ghp",
    "gho",
    "ghs",
    "github_pat",
    "xox",
    "akia",
    "key",
    "token",
    "secret",
    "passw",
    "pwd",
    "authorization",
)


def _scrub_all(text: str) -> str:
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def scrub(text: str) -> str:
    """Remove API keys, bearer tokens and passwords (also inside URLs) from ``text``."""
    if not text:
        return text
    lowered = text.lower()
    if not any(hint in lowered for hint in _SECRET_HINTS):
        return text
    return _scrub_all(text)


def cap(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    marker = f"...[+{len(text) - limit} chars]"
    return text[: max(0, limit - len(marker))] + marker


def new_op_id() -> str:
    """A time-ordered unique id (ms timestamp + random), so ids sort roughly by time."""
    return f"{int(time.time() * 1000):013x}{uuid.uuid4().hex[:19]}"


class Provenance(BaseModel):
    """Where an op came from in a scenario run; every field optional."""

    model_config = ConfigDict(extra="forbid")

    staffer_id: str | None = None
    run_id: str | None = None
    event_kind: str | None = None
    role: str | None = None
    city: str | None = None
    state: str | None = None
    count: int | None = None
    sig_hash: str | None = None
    rescue_attempted: bool | None = None
    rescue_succeeded: bool | None = None


class LLMUsage(BaseModel):
    """Model-call accounting, named after the OpenTelemetry GenAI conventions."""

    model_config = ConfigDict(extra="forbid")

    provider: str | None = None
    model: str | None = None  # gen_ai.request.model
    input_tokens: int | None = Field(None, ge=0)  # gen_ai.usage.input_tokens
    output_tokens: int | None = Field(None, ge=0)  # gen_ai.usage.output_tokens
    thinking_tokens: int | None = Field(None, ge=0)  # gen_ai.usage.reasoning.output_tokens
    finish_reason: str | None = None  # gen_ai.response.finish_reasons
    attempts: int | None = Field(None, ge=0)
    continuations: int | None = Field(None, ge=0)
    cost_usd: float | None = Field(None, ge=0)


class ObservedOp(BaseModel):
    """One operation: a tool call, a model call, a task outcome, an HTTP request, a span."""

    model_config = ConfigDict(extra="forbid")

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
    provenance: Provenance = Field(default_factory=Provenance)
    usage: LLMUsage | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)

    @field_validator("input_summary", "output_summary")
    @classmethod
    def _clean_summary(cls, value: str) -> str:
        return cap(scrub(value), MAX_SUMMARY_CHARS)

    @field_validator("error")
    @classmethod
    def _clean_error(cls, value: str | None) -> str | None:
        return None if value is None else cap(scrub(value), MAX_ERROR_CHARS)

    @field_validator("ts")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @model_validator(mode="after")
    def _clean_attributes(self) -> ObservedOp:
        if not self.attributes:
            return self
        import json

        text = json.dumps(self.attributes, default=str, ensure_ascii=False)
        cleaned = scrub(text)
        if cleaned != text or len(cleaned) > MAX_ATTRIBUTES_CHARS:
            if len(cleaned) > MAX_ATTRIBUTES_CHARS:
                self.attributes = {"truncated": cap(cleaned, MAX_ATTRIBUTES_CHARS)}
            else:
                self.attributes = json.loads(cleaned)
        return self


def exception_text(error: BaseException | str) -> str:
    """An op's ``error`` for ``error``: "TypeName: message" (the type alone when it has no message)."""
    if isinstance(error, BaseException):
        message = str(error)
        return f"{type(error).__name__}: {message}" if message else type(error).__name__
    return error
