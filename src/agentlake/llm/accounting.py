"""Accounting of model calls: one :class:`CallRecord` per call, handed to recording hooks.

"A call" is one public LLM-layer call (``generate``, ``generate_continuable``,
``generate_structured``, ``generate_tree_split``): the outermost one yields exactly one record
summing every request made inside it (retries, bigger-budget retries, continuations, schema
retries), so tokens are never counted twice. Field names follow the OpenTelemetry GenAI
conventions (see :meth:`CallRecord.otel_attributes`).

This module owns the record, the hook list and the per-call tally. It does not persist
anything: the observer subscribes with :func:`add_recorder` and stores records as ops.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger("agentlake.llm")


class CallRecord(BaseModel):
    """One model call, as the observer stores it.

    ``attempts``: requests sent to the model (every transport retry, bigger-budget retry,
    continuation and schema retry included); ``retries``: the transport retries among them;
    ``continuations``: the continuation requests among them. ``cost_usd`` is ``None`` when the
    model's price is unknown. ``tags`` carries caller context (agent id, run id) set with
    :func:`call_tags`.
    """

    model_config = ConfigDict(extra="forbid")

    operation: str = "chat"
    function: str = "generate"
    provider: str
    model: str  # gen_ai.request.model
    input_tokens: int = Field(0, ge=0)  # gen_ai.usage.input_tokens
    output_tokens: int = Field(0, ge=0)  # gen_ai.usage.output_tokens (thinking included)
    thinking_tokens: int = Field(0, ge=0)  # gen_ai.usage.reasoning.output_tokens
    cached_input_tokens: int = Field(0, ge=0)  # gen_ai.usage.cache_read.input_tokens
    latency_ms: float = Field(0.0, ge=0)
    finish_reason: str | None = None  # gen_ai.response.finish_reasons
    attempts: int = Field(0, ge=0)
    retries: int = Field(0, ge=0)
    continuations: int = Field(0, ge=0)
    repaired: bool = False
    cost_usd: float | None = Field(None, ge=0)
    success: bool = True
    error: str | None = None
    error_type: str | None = None
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    tags: dict[str, str] = Field(default_factory=dict)

    def otel_attributes(self) -> dict[str, Any]:
        """The record as OpenTelemetry GenAI span attributes (plus ``agentlake.llm.*`` extras)."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": self.operation,
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
            "gen_ai.usage.input_tokens": self.input_tokens,
            "gen_ai.usage.output_tokens": self.output_tokens,
            "gen_ai.usage.reasoning.output_tokens": self.thinking_tokens,
            "gen_ai.usage.cache_read.input_tokens": self.cached_input_tokens,
            "gen_ai.response.finish_reasons": [self.finish_reason] if self.finish_reason else [],
            "agentlake.llm.function": self.function,
            "agentlake.llm.latency_ms": self.latency_ms,
            "agentlake.llm.attempts": self.attempts,
            "agentlake.llm.retries": self.retries,
            "agentlake.llm.continuations": self.continuations,
            "agentlake.llm.repaired": self.repaired,
        }
        if self.cost_usd is not None:
            attributes["agentlake.llm.cost_usd"] = self.cost_usd
        if self.error_type:
            attributes["error.type"] = self.error_type
        for key, value in self.tags.items():
            attributes[f"agentlake.tag.{key}"] = value
        return attributes


# --- recording hooks -------------------------------------------------------------------------

_recorders: list[Callable[[CallRecord], object]] = []
_recorders_lock = threading.Lock()


def add_recorder(fn: Callable[[CallRecord], object]) -> Callable[[], None]:
    """Call ``fn(record)`` for every finished model call, in the calling thread.

    Returns a function that unsubscribes ``fn``. A recorder that raises is logged and skipped:
    it never breaks the call it records.
    """
    with _recorders_lock:
        _recorders.append(fn)

    def unsubscribe() -> None:
        with _recorders_lock:
            if fn in _recorders:
                _recorders.remove(fn)

    return unsubscribe


def emit(record: CallRecord) -> None:
    """Hand ``record`` to every recorder; failures are logged, never raised."""
    with _recorders_lock:
        recorders = list(_recorders)
    for fn in recorders:
        try:
            fn(record)
        except Exception:  # a broken recorder must not break model calls
            log.exception("LLM call recorder %r failed", fn)


# --- caller context --------------------------------------------------------------------------

_tags: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "agentlake_llm_tags", default=None
)


@contextmanager
def call_tags(**tags: object) -> Iterator[None]:
    """Attach ``tags`` (e.g. ``agent_id="executor"``, ``run_id=...``) to every record made
    inside the block, in this thread or task; nested blocks merge."""
    token = _tags.set({**(_tags.get() or {}), **{key: str(value) for key, value in tags.items()}})
    try:
        yield
    finally:
        _tags.reset(token)


# --- the tally of one outermost call ---------------------------------------------------------


class Tally:
    """Sums requests made inside one public call; the outermost call emits it as a record."""

    def __init__(self, function: str) -> None:
        self.function = function
        self.provider = ""
        self.model = ""
        self.input_tokens = 0
        self.output_tokens = 0
        self.thinking_tokens = 0
        self.cached_input_tokens = 0
        self.attempts = 0
        self.retries = 0
        self.continuations = 0
        self.repaired = False
        self.finish_reason: str | None = None
        self.cost_usd: float | None = 0.0
        self.started_at = datetime.now(UTC)
        self._t0 = time.perf_counter()

    def add_request(
        self,
        provider: str,
        model: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        thinking_tokens: int = 0,
        cached_input_tokens: int = 0,
        finish_reason: str | None = None,
        cost_usd: float | None = None,
        retry: bool = False,
    ) -> None:
        """Count one request sent to a model (successful or not)."""
        self.provider, self.model = provider, model
        self.attempts += 1
        self.retries += int(retry)
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.thinking_tokens += thinking_tokens
        self.cached_input_tokens += cached_input_tokens
        if finish_reason is not None:
            self.finish_reason = finish_reason
        if cost_usd is None:
            if input_tokens or output_tokens:
                self.cost_usd = None  # one unpriced request makes the total unknown
        elif self.cost_usd is not None:
            self.cost_usd += cost_usd

    def record(self, *, error: BaseException | None = None) -> CallRecord:
        message = None
        if error is not None:
            message = getattr(error, "message", None) or str(error) or type(error).__name__
        return CallRecord(
            function=self.function,
            provider=self.provider or "unknown",
            model=self.model or "unknown",
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            thinking_tokens=self.thinking_tokens,
            cached_input_tokens=self.cached_input_tokens,
            latency_ms=(time.perf_counter() - self._t0) * 1000,
            finish_reason=self.finish_reason,
            attempts=self.attempts,
            retries=self.retries,
            continuations=self.continuations,
            repaired=self.repaired,
            cost_usd=None if self.cost_usd is None else round(self.cost_usd, 10),
            success=error is None,
            error=message,
            error_type=None if error is None else type(error).__name__,
            started_at=self.started_at,
            tags=dict(_tags.get() or {}),
        )


_active: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("agentlake_llm_tally", default=None)


@contextmanager
def accounting_scope(function: str) -> Iterator[Tally]:
    """Open the tally of a public call. Nested scopes share the outer tally; only the outermost
    emits a record, on success and on failure."""
    outer = _active.get()
    if outer is not None:
        yield outer
        return
    tally = Tally(function)
    token = _active.set(tally)
    try:
        yield tally
    except BaseException as exc:
        _active.reset(token)
        if tally.attempts or tally.provider:
            emit(tally.record(error=exc))
        raise
    _active.reset(token)
    emit(tally.record())
