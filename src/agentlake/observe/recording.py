"""The one in-process recording path: ``observe(...)``, ``wrap_tool``, ``event``, ``record_op``.

Owns the observe context (trace/span ids, agent id, inherited run id, labels and attributes:
``observe_context``, ``current_scope``), the ``observe`` context manager/decorator, the tool
wrapper, ``event`` (one op built by the caller, with the context applied: the way code outside
``observe`` records what it knows) and ``record_op`` (into an open ``deferred`` scope, else
durably). Recording never fails the work it watches: a failure is logged. It does not own the
observer (``observer``), which observer is the default (``default_observer``) or held
acknowledgement (``deferred``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from agentlake.errors import UnavailableError
from agentlake.observe.append import QueueFullError
from agentlake.observe.default_observer import _current_default, get_observer
from agentlake.observe.deferred import _deferred_scope
from agentlake.observe.model import (
    MAX_SUMMARY_CHARS,
    LLMUsage,
    ObservedOp,
    Source,
    cap,
    exception_text,
    new_op_id,
)
from agentlake.observe.observer import Observer, _await_ticket

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class _Scope:
    trace_id: str | None = None
    span_id: str | None = None
    parent_span_id: str | None = None  # of span_id: set when observe_context(span=True) opened it
    agent_id: str | None = None
    run_id: str | None = None
    labels: Mapping[str, Any] = field(default_factory=dict)
    attributes: Mapping[str, Any] = field(default_factory=dict)


_scope: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar(
    "agentlake_observe_scope", default=None
)
_NO_SCOPE = _Scope()


def current_scope() -> _Scope:
    """The observe context in effect here (trace/span ids, agent, run id, labels, attributes)."""
    return _scope.get() or _NO_SCOPE


@contextmanager
def observe_context(
    *,
    run_id: str | None = None,
    labels: Mapping[str, Any] | None = None,
    agent_id: str | None = None,
    trace_id: str | None = None,
    span: bool = False,
    **attributes: Any,
) -> Iterator[None]:
    """Set defaults inherited by every op recorded inside (across threads only if the context is
    copied): a run id, labels (e.g. a scenario's arm), an agent id, a trace id and extra
    attributes. Nested contexts merge, inner values win.

    ``span=True`` opens a span for work whose op is recorded only at its end (an agent's task:
    ``event(..., closes_span=True)`` records it): ops recorded inside become its children."""
    current = current_scope()
    scope = _Scope(
        trace_id=trace_id or current.trace_id,
        span_id=_span_id() if span else current.span_id,
        parent_span_id=current.span_id if span else current.parent_span_id,
        agent_id=agent_id or current.agent_id,
        run_id=run_id or current.run_id,
        labels={**current.labels, **_given(labels)},
        attributes={**current.attributes, **attributes},
    )
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)


def _given(labels: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: value for key, value in (labels or {}).items() if value is not None}


def summarize(value: Any, limit: int = MAX_SUMMARY_CHARS) -> str:
    """A short text of ``value`` for ``input_summary``/``output_summary``: strings as they are,
    containers as JSON with long ones cut (the model scrubs secrets and caps the length)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return cap(value, limit)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if isinstance(value, (list, tuple)) and len(value) > 20:
        value = [*value[:20], f"... {len(value) - 20} more"]
    elif isinstance(value, dict) and len(value) > 50:
        value = dict(list(value.items())[:50]) | {"...": f"{len(value) - 50} more keys"}
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return cap(text, limit)


def _span_id() -> str:
    return secrets.token_hex(8)


class OpHandle:
    """What the body of ``observe(...)`` can set on its op before it is recorded."""

    def __init__(self, op_id: str, attributes: dict[str, Any], labels: dict[str, Any]) -> None:
        self.id = op_id
        self.attributes = attributes
        self.labels = labels
        self.output: Any = None
        self.usage: LLMUsage | None = None
        self.error: str | None = None
        self.op: ObservedOp | None = None  # the recorded op, once the block has exited

    def set_output(self, value: Any) -> None:
        """Summarize ``value`` into the op's ``output_summary``."""
        self.output = value

    def set_usage(self, usage: LLMUsage | Mapping[str, Any]) -> None:
        """Attach model-call accounting."""
        self.usage = usage if isinstance(usage, LLMUsage) else LLMUsage(**usage)

    def set_labels(self, **labels: Any) -> None:
        """Add labels known only inside the block (``None`` values are left out)."""
        self.labels.update(_given(labels))

    def fail(self, error: BaseException | str) -> None:
        """Mark the op failed without raising (e.g. a tool that returns an error result)."""
        self.error = exception_text(error)


class _Recording:
    """One op in progress: opens a span in the context on creation, closes it in ``finish``."""

    def __init__(
        self,
        endpoint: str,
        source: Source,
        agent_id: str | None,
        input: Any,
        run_id: str | None,
        labels: Mapping[str, Any] | None,
        attributes: dict[str, Any],
    ) -> None:
        self.scope = current_scope()
        self.endpoint, self.source, self.input = endpoint, source, input
        self.agent_id = agent_id or self.scope.agent_id
        self.run_id = run_id or self.scope.run_id
        self.labels = labels
        self.span_id = _span_id()
        self.trace_id = self.scope.trace_id or secrets.token_hex(16)
        self.handle = OpHandle(new_op_id(), dict(attributes), {})
        self.token = _scope.set(
            _Scope(
                trace_id=self.trace_id,
                span_id=self.span_id,
                parent_span_id=self.scope.span_id,
                agent_id=self.agent_id,
                run_id=self.run_id,
                labels=self.scope.labels,
                attributes=self.scope.attributes,
            )
        )
        self.started = time.time()
        self.clock = time.perf_counter()

    def finish(self) -> dict[str, Any]:
        _scope.reset(self.token)
        handle, scope = self.handle, self.scope
        return dict(
            id=handle.id,
            ts=self.started,
            trace_id=self.trace_id,
            span_id=self.span_id,
            parent_span_id=scope.span_id,
            endpoint=self.endpoint,
            source=self.source,
            agent_id=self.agent_id,
            input_summary=summarize(self.input),
            output_summary=summarize(handle.output),
            success=handle.error is None,
            duration_ms=(time.perf_counter() - self.clock) * 1000,
            error=handle.error,
            run_id=self.run_id,
            labels={**scope.labels, **_given(self.labels), **handle.labels},
            usage=handle.usage,
            attributes={**scope.attributes, **handle.attributes},
        )


@contextmanager
def observe(
    endpoint: str,
    *,
    source: Source = "agent",
    agent_id: str | None = None,
    input: Any = None,
    run_id: str | None = None,
    labels: Mapping[str, Any] | None = None,
    observer: Observer | None = None,
    **attributes: Any,
) -> Iterator[OpHandle]:
    """Record the enclosed operation as one op: duration, success or failure, output, usage.

    An exception in the block marks the op failed (``error`` = type and message) and is
    re-raised unchanged. The op is recorded durably on exit through ``observer`` (default: the
    process-wide one), or, inside a :func:`deferred` scope, held and made durable when the
    scope exits. If recording itself fails, that is logged and NOT raised: an observer
    problem never fails the operation it watches. Usable as a decorator (``@observe("x")``).
    Nested ``observe`` blocks share a trace id and link ``parent_span_id``.
    """
    recording = _Recording(endpoint, source, agent_id, input, run_id, labels, attributes)
    try:
        yield recording.handle
    except Exception as exc:
        recording.handle.error = exception_text(exc)
        raise
    finally:
        _record_quietly(observer, recording.finish(), recording.handle)


def _build_op(fields: dict[str, Any]) -> ObservedOp:
    ts = fields.get("ts")
    if isinstance(ts, (int, float)):
        fields = {**fields, "ts": datetime.fromtimestamp(ts, UTC)}
    return ObservedOp(**fields)


def event(
    endpoint: str,
    *,
    source: Source = "agent",
    observer: Observer | None = None,
    closes_span: bool = False,
    **fields: Any,
) -> ObservedOp | None:
    """Record one op that the caller describes, with the observe context applied.

    For what is known outside an ``observe`` block (a task's outcome, a client's judgement, a
    concern, a model call the LLM layer reports). ``fields`` are ``ObservedOp`` fields
    (``success``, ``error``, ``duration_ms``, ``input_summary``, ``output_summary``, ``usage``,
    ``run_id``, ``labels``, ``attributes``, ``ts`` as a datetime or epoch seconds, ...). The
    context supplies what they leave out, as for ``observe``: its trace id, its span as the
    parent, its agent id and run id, and its labels and attributes (merged key by key; given
    values win).
    Recorded through :func:`record_op` (held in an open ``deferred`` scope, else durable on
    return) into ``observer`` (default: the process-wide one). Never raises: returns the op, or
    ``None`` when it could not be built or recorded (logged).

    ``closes_span=True``: the op is the span the context opened (``observe_context(span=True)``):
    it takes that span's id and its parent, so the ops recorded inside are its children.
    """
    scope = current_scope()
    values = dict(fields)
    if closes_span:
        values.setdefault("span_id", scope.span_id)
        values.setdefault("parent_span_id", scope.parent_span_id)
    values["labels"] = {**scope.labels, **_given(values.get("labels"))}
    values["attributes"] = {**scope.attributes, **(values.get("attributes") or {})}
    for name, default in (
        ("trace_id", scope.trace_id),
        ("parent_span_id", None if closes_span else scope.span_id),
        ("agent_id", scope.agent_id),
        ("run_id", scope.run_id),
    ):
        if values.get(name) is None:
            values[name] = default
    try:
        op = _build_op({**values, "endpoint": endpoint, "source": source})
    except Exception:
        log.warning("could not record op %s", endpoint, exc_info=True)
        return None
    return op if record_op(op, observer=observer) else None


def _record_quietly(
    observer: Observer | None, fields: dict[str, Any], handle: OpHandle | None = None
) -> None:
    """Build the op from ``fields`` and record it through :func:`record_op`; never raises."""
    try:
        op = _build_op(fields)
    except Exception:
        log.warning("could not record op %s (%s)", fields.get("endpoint"), fields.get("id"), exc_info=True)
        return
    if record_op(op, observer=observer) and handle is not None:
        handle.op = op


def record_op(op: ObservedOp, *, observer: Observer | None = None) -> bool:
    """Record ``op`` (built by the caller) the way ``observe`` records its own ops.

    Inside an open :func:`deferred` scope the op is held for the scope's commit and is durable
    when the scope exits; otherwise it is durable when this returns. ``observer`` defaults to
    the process-wide one. Never raises: a failure is logged (or, inside a scope, reported by
    the scope's exit) and ``False`` returned. Use ``Observer.record`` to get the error instead.
    """
    scope = _deferred_scope.get()
    try:
        target = observer if observer is not None else get_observer()
        if scope is not None and scope._hold(target, op):
            return True
        target.record(op)
        return True
    except Exception as exc:
        if scope is not None and scope._fail_if_open([op], exc):
            return False
        _not_recorded(op.endpoint, op.id, exc)
        return False


def _not_recorded(endpoint: str | None, op_id: str | None, exc: Exception) -> None:
    """Log an op the store did not take. An unavailable store (its database down, its disk
    full) is one line without a traceback: its message says all, and every op recorded while
    it lasts meets it."""
    if isinstance(exc, UnavailableError):
        log.warning("could not record op %s (%s): %s", endpoint, op_id, exc.message)
    else:
        log.warning("could not record op %s (%s)", endpoint, op_id, exc_info=exc)


async def _record_quietly_async(
    observer: Observer | None, fields: dict[str, Any], handle: OpHandle | None
) -> None:
    """``_record_quietly`` for a coroutine: an embedded store's commit is awaited on the loop
    (no worker thread, no blocking); a remote sink, a full queue or a default observer not
    opened yet go through a worker thread, since they block."""
    target = observer if observer is not None else _current_default()
    submit = getattr(target.sink, "submit", None) if target is not None else None
    if target is None or submit is None:
        await asyncio.to_thread(_record_quietly, observer, fields, handle)
        return
    try:
        op = _build_op(fields)
        ticket = submit([op])
    except QueueFullError:
        await asyncio.to_thread(_record_quietly, observer, fields, handle)
        return
    except Exception as exc:
        _not_recorded(fields.get("endpoint"), fields.get("id"), exc)
        return
    try:
        results = await _await_ticket(ticket)
    except Exception as exc:
        _not_recorded(op.endpoint, op.id, exc)
        return
    target._stored([op], results)
    if handle is not None:
        handle.op = op


def wrap_tool(
    fn: F,
    *,
    endpoint: str | None = None,
    source: Source = "agent",
    agent_id: str | None = None,
    observer: Observer | None = None,
) -> F:
    """``fn`` wrapped so that every call is recorded as one op (arguments as input, return value
    as output, an exception as the error; it is re-raised). Works for sync and async functions.
    ``endpoint`` defaults to ``tool.<function name>``."""
    name = endpoint or f"tool.{getattr(fn, '__name__', 'call')}"
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None

    # Plain parameters (no *args/**kwargs, nothing positional-only) are matched by hand: the
    # same mapping as Signature.bind(...).arguments at a fifth of its cost, paid on every call.
    params = list(signature.parameters.values()) if signature is not None else []
    plain = signature is not None and all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params)
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    order = {p.name: index for index, p in enumerate(params)}
    required = {p.name for p in params if p.default is p.empty}

    def _arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if signature is None:
            return {"args": list(args), "kwargs": kwargs}
        if plain and len(args) <= len(positional):
            named = dict(zip(positional, args, strict=False))
            if all(key in order and key not in named for key in kwargs) and required.issubset(
                named.keys() | kwargs.keys()
            ):
                named.update(kwargs)
                if kwargs:
                    named = dict(sorted(named.items(), key=lambda item: order[item[0]]))
                named.pop("self", None)
                named.pop("cls", None)
                return named
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return {"args": list(args), "kwargs": kwargs}
        return {key: value for key, value in bound.arguments.items() if key not in ("self", "cls")}

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            recording = _Recording(name, source, agent_id, _arguments(args, kwargs), None, None, {})
            try:
                result = await fn(*args, **kwargs)
                recording.handle.set_output(result)
                return result
            except Exception as exc:
                recording.handle.error = exception_text(exc)
                raise
            finally:
                fields = recording.finish()
                scope = _deferred_scope.get()
                if scope is not None and scope._open:
                    _record_quietly(observer, fields, recording.handle)  # held: nothing to wait for
                else:
                    await _record_quietly_async(observer, fields, recording.handle)

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with observe(
            name, source=source, agent_id=agent_id, input=_arguments(args, kwargs), observer=observer
        ) as op:
            result = fn(*args, **kwargs)
            op.set_output(result)
            return result

    return wrapper  # type: ignore[return-value]
