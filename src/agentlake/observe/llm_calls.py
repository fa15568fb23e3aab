"""Records every model call as an op, through the LLM layer's accounting hook.

Owns the mapping ``agentlake.llm.accounting.CallRecord`` -> ``ObservedOp`` (source ``llm``,
endpoint ``llm.<operation>``, usage filled, GenAI attributes kept; recorded through
``recording.event``) and the subscription, installed once per observer however many callers
ask for it. It does not own the accounting (``agentlake.llm.accounting``) nor storage.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentlake.llm.accounting import add_recorder
from agentlake.observe.model import LLMUsage
from agentlake.observe.observer import Observer
from agentlake.observe.recording import current_scope, event, observe

if TYPE_CHECKING:
    from agentlake.llm import CallRecord, Completion, GenerateOptions, Message, Provider

log = logging.getLogger(__name__)


def op_from_call(record: CallRecord) -> dict[str, Any]:
    """The fields of the op for one ``CallRecord``, with the current observe context (trace,
    parent span, agent, run id, labels) applied. Returned as fields so the caller builds the op."""
    scope = current_scope()
    started = getattr(record, "started_at", None)
    if isinstance(started, datetime):
        ts = started.timestamp() if started.tzinfo else started.replace(tzinfo=UTC).timestamp()
    elif isinstance(started, (int, float)):
        ts = float(started)
    else:
        ts = datetime.now(UTC).timestamp()
    try:
        attributes = dict(record.otel_attributes())
    except Exception:  # attributes are a bonus; the usage columns carry the numbers
        attributes = {}
    operation = getattr(record, "operation", None) or "chat"
    # call_tags(agent_id=..., run_id=...) set by the caller fill what the observe context lacks.
    tags = dict(getattr(record, "tags", None) or {})
    labels = dict(scope.labels)
    return dict(
        ts=ts,
        trace_id=scope.trace_id,
        parent_span_id=scope.span_id,
        endpoint=f"llm.{operation}",
        source="llm",
        agent_id=scope.agent_id or tags.get("agent_id"),
        input_summary="",
        output_summary="",
        success=bool(getattr(record, "success", True)),
        duration_ms=max(0.0, float(getattr(record, "latency_ms", 0.0) or 0.0)),
        error=getattr(record, "error", None),
        run_id=scope.run_id or tags.get("run_id") or None,
        labels=labels,
        usage=LLMUsage(
            provider=getattr(record, "provider", None),
            model=getattr(record, "model", None),
            input_tokens=getattr(record, "input_tokens", None),
            output_tokens=getattr(record, "output_tokens", None),
            thinking_tokens=getattr(record, "thinking_tokens", None),
            finish_reason=getattr(record, "finish_reason", None),
            attempts=getattr(record, "attempts", None),
            continuations=getattr(record, "continuations", None),
            cost_usd=getattr(record, "cost_usd", None),
        ),
        attributes={**scope.attributes, **attributes},
    )


class _Installation:
    """The one accounting hook of one observer, and how many callers hold it."""

    def __init__(self, observer: Observer | None) -> None:
        self.holders = 0
        self.remove = add_recorder(lambda call: event(observer=observer, **op_from_call(call)))


# Keyed by the observer's identity (None: the process-wide one, looked up at each call).
_installed: dict[int | None, _Installation] = {}
_installed_lock = threading.Lock()


def install_llm_recording(observer: Observer | None = None) -> Callable[[], None]:
    """Record every model call made through ``agentlake.llm`` as an op (source ``llm``) in
    ``observer`` (default: the process-wide one, looked up at each call) until the returned
    function is called. A recording failure is logged, never raised into the model call.

    Installed once per observer: callers that overlap (two fills in one process, a scenario
    day inside a fill) share one hook, so each call is recorded once; it is removed when the
    last of them stops. Calling the returned function again does nothing.
    """
    key = None if observer is None else id(observer)
    with _installed_lock:
        installation = _installed.get(key)
        if installation is None:
            installation = _installed[key] = _Installation(observer)
        installation.holders += 1
    stopped = False

    def stop() -> None:
        nonlocal stopped
        with _installed_lock:
            if stopped:
                return
            stopped = True
            installation.holders -= 1
            if installation.holders == 0 and _installed.get(key) is installation:
                del _installed[key]
                installation.remove()

    return stop


class ObservedProvider:
    """A provider whose every ``complete`` is recorded as an op (source ``llm``, usage filled).

    For code that calls a provider directly. Calls made through ``agentlake.llm.generate*``
    are already recorded by :func:`install_llm_recording`: do not wrap those providers too, or
    each call is recorded twice.
    """

    def __init__(
        self, inner: Provider, *, agent_id: str | None = None, observer: Observer | None = None
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.capabilities = inner.capabilities
        self._agent_id = agent_id
        self._observer = observer

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
        last = messages[-1].content if messages else ""
        with observe(
            "llm.chat", source="llm", agent_id=self._agent_id, input=last, observer=self._observer
        ) as op:
            completion = self.inner.complete(messages, options)
            op.set_output(completion.text)
            op.set_usage(
                LLMUsage(
                    provider=completion.provider or self.name,
                    model=completion.model or self.model,
                    input_tokens=completion.usage.input_tokens,
                    output_tokens=completion.usage.output_tokens,
                    thinking_tokens=completion.usage.thinking_tokens,
                    finish_reason=completion.finish_reason,
                    attempts=1,
                )
            )
            return completion


def wrap_provider(
    provider: Provider, *, agent_id: str | None = None, observer: Observer | None = None
) -> ObservedProvider:
    """``provider`` with every ``complete`` call recorded (see :class:`ObservedProvider`)."""
    return ObservedProvider(provider, agent_id=agent_id, observer=observer)


__all__ = ["ObservedProvider", "install_llm_recording", "op_from_call", "wrap_provider"]
