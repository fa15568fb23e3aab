"""The one in-process recording path: ``Observer``, ``observe(...)``, ``wrap_tool``, ``record_op``,
``deferred()`` and the process-wide default observer.

Owns: the bounded ring of recent ops, live counters and latency percentiles, subscribers (the
SSE live tail), the ``observe`` context manager/decorator with its context (trace/span ids,
inherited provenance), deferred acknowledgement (``deferred()``: many ops, one wait for their
commit) and the choice of sink from settings (``observer_sink``: ``embedded``
opens the DuckDB store in this process, ``http`` sends to a running observer service through
``ObserverClient``, which spools when it is down). It does not own storage (``store``), HTTP
(``service``, ``client``) or the op's shape (``model``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import functools
import inspect
import json
import logging
import queue
import secrets
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentlake.errors import RunError, UserError
from agentlake.observe.model import (
    MAX_SUMMARY_CHARS,
    LLMUsage,
    ObservedOp,
    Provenance,
    Source,
    cap,
    new_op_id,
)
from agentlake.observe.sink import OpSink
from agentlake.observe.store import AppendResult, OpStore, QueueFullError, Stats, Ticket
from agentlake.settings import Settings, load_settings

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

# How long an in-process caller waits for room when the write queue is full: in-process callers
# get backpressure, not a 503 (the HTTP service answers 503 instead, see ``service``).
IN_PROCESS_WAIT_FOR_SPACE_S = 30.0


class Subscription:
    """A live feed of newly stored ops (bounded; a slow reader loses the oldest, counted in
    ``dropped``). Thread readers call :meth:`get`; asyncio readers pass ``loop`` to
    ``Observer.subscribe`` and ``await`` :meth:`aget`."""

    def __init__(self, observer: Observer, maxsize: int, loop: asyncio.AbstractEventLoop | None) -> None:
        self._observer = observer
        self._loop = loop
        self._queue: queue.Queue[ObservedOp] = queue.Queue(maxsize)
        self._aqueue: asyncio.Queue[ObservedOp] | None = asyncio.Queue(maxsize) if loop is not None else None
        self.dropped = 0
        self.closed = False

    def _offer(self, op: ObservedOp) -> None:
        if self._aqueue is not None and self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self._offer_async, op)
            except RuntimeError:  # the loop is gone: the reader went away
                self.close()
            return
        while True:
            try:
                self._queue.put_nowait(op)
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    self.dropped += 1
                except queue.Empty:
                    pass

    def _offer_async(self, op: ObservedOp) -> None:
        assert self._aqueue is not None
        if self._aqueue.full():
            self._aqueue.get_nowait()
            self.dropped += 1
        self._aqueue.put_nowait(op)

    def get(self, timeout: float | None = None) -> ObservedOp | None:
        """The next op, or ``None`` after ``timeout`` seconds without one."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    async def aget(self, timeout: float | None = None) -> ObservedOp | None:
        """The next op for an asyncio reader, or ``None`` after ``timeout`` seconds."""
        if self._aqueue is None:
            raise UserError("this subscription was not created with an event loop; use get()")
        try:
            return await asyncio.wait_for(self._aqueue.get(), timeout)
        except TimeoutError:
            return None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._observer._unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Observer:
    """The recording front: a sink (the durable truth), a bounded ring and live stats.

    ``record``/``record_many`` return only once the ops are durable (stored, or for a remote
    sink that is down, fsynced into the client's spool). Duplicated ids are answered
    ``duplicate`` and never counted twice.
    """

    def __init__(self, sink: OpSink, *, ring_size: int = 10000, owns_sink: bool = True) -> None:
        self.sink = sink
        self.ring_size = ring_size
        self._owns_sink = owns_sink
        self._lock = threading.Lock()
        self._ring: deque[ObservedOp] = deque(maxlen=ring_size)
        self._subscribers: list[Subscription] = []
        self._total = 0
        self._successes = 0
        self._by_source: Counter[str] = Counter()
        self._by_endpoint: Counter[str] = Counter()
        if sink.local:
            # A restart rebuilds the ring and the counters from the store.
            self._ring.extend(sink.recent(ring_size))
            store: OpStore = sink  # type: ignore[assignment]
            total, successes, by_source, by_endpoint = store.counters()
            self._total, self._successes = total, successes
            self._by_source.update(by_source)
            self._by_endpoint.update(by_endpoint)

    # --- recording ----------------------------------------------------------------------

    def record(self, op: ObservedOp, *, timeout: float | None = None) -> ObservedOp:
        """Make ``op`` durable, then return it. Raises ``RunError``/``UnavailableError`` if the
        sink fails (the op is then NOT recorded; retrying with the same id is safe)."""
        self.record_many([op], timeout=timeout)
        return op

    def record_many(self, ops: Sequence[ObservedOp], *, timeout: float | None = None) -> list[AppendResult]:
        """Make ``ops`` durable; one :class:`AppendResult` per op, in order."""
        ops = list(ops)
        if not ops:
            return []
        results = self.sink.append(ops, timeout=timeout, wait_for_space=IN_PROCESS_WAIT_FOR_SPACE_S)
        self._stored(ops, results)
        return results

    async def record_many_async(self, ops: Sequence[ObservedOp]) -> list[AppendResult]:
        """``record_many`` for an asyncio server: fails fast with ``QueueFullError`` (503) when the
        queue is full and awaits the group commit without holding a thread."""
        ops = list(ops)
        if not ops:
            return []
        submit = getattr(self.sink, "submit", None)
        if submit is None:
            return await asyncio.to_thread(self.record_many, ops)
        results = await _await_ticket(submit(ops))
        self._stored(ops, results)
        return results

    def _stored(self, ops: Sequence[ObservedOp], results: Sequence[AppendResult]) -> None:
        fresh = [op for op, result in zip(ops, results, strict=True) if result.status != "duplicate"]
        if not fresh:
            return
        with self._lock:
            self._ring.extend(fresh)
            for op in fresh:
                self._total += 1
                self._successes += op.success
                self._by_source[op.source] += 1
                self._by_endpoint[op.endpoint] += 1
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            for op in fresh:
                subscriber._offer(op)

    # --- reading ------------------------------------------------------------------------

    def recent(self, n: int = 100) -> list[ObservedOp]:
        """The last ``n`` ops recorded (or rebuilt from the store), oldest first."""
        with self._lock:
            if n >= len(self._ring):
                return list(self._ring)
            return list(self._ring)[-n:] if n > 0 else []

    @property
    def ring_depth(self) -> int:
        return len(self._ring)

    def query(self, **filters: Any) -> list[ObservedOp]:
        """Stored ops matching ``filters`` (see ``OpStore.query``)."""
        return self.sink.query(**filters)

    def stats(self, *, recent_scenario: int = 20) -> Stats:
        """Live stats: exact totals, counts by source and endpoint; latency p50/p95 over the
        ring; the latest scenario ops. A remote sink asks the service instead."""
        if not self.sink.local:
            return self.sink.stats()
        with self._lock:
            durations = sorted(op.duration_ms for op in self._ring)
            scenario = [op for op in reversed(self._ring) if op.source == "scenario"][:recent_scenario]
            stats = Stats(
                total=self._total,
                successes=self._successes,
                failures=self._total - self._successes,
                by_source=dict(self._by_source.most_common()),
                by_endpoint=dict(self._by_endpoint.most_common()),
                latency_window=len(durations),
                recent_scenario=scenario,
            )
        if durations:
            stats.latency_p50_ms = _percentile(durations, 0.50)
            stats.latency_p95_ms = _percentile(durations, 0.95)
        return stats

    def health(self) -> dict[str, Any]:
        """Status, ring depth and store lag (ops waiting for a commit, age of the oldest)."""
        queued = getattr(self.sink, "queued_ops", 0)
        oldest = getattr(self.sink, "oldest_pending_age", lambda: 0.0)()
        return {
            "status": "ok",
            "sink": "embedded" if self.sink.local else "http",
            "ring_depth": self.ring_depth,
            "store_lag": {"queued_ops": queued, "oldest_pending_s": round(oldest, 3)},
            "total": self._total if self.sink.local else None,
        }

    def subscribe(
        self, *, maxsize: int = 1000, loop: asyncio.AbstractEventLoop | None = None
    ) -> Subscription:
        """A live feed of every op stored from now on (see :class:`Subscription`)."""
        subscription = Subscription(self, maxsize, loop)
        with self._lock:
            self._subscribers.append(subscription)
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    def close(self) -> None:
        """Close the sink if this observer owns it (queued ops are committed first)."""
        if self._owns_sink:
            self.sink.close()

    def __enter__(self) -> Observer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _await_ticket(ticket: Ticket, timeout: float | None = None) -> list[AppendResult]:
    """Wait for a store ticket without holding a thread: the writer resolves a future on this
    loop. Raises the commit's error, or ``RunError`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()

    def _settle() -> None:
        if not future.done():
            future.set_result(None)

    ticket.add_done_callback(lambda _ticket: loop.call_soon_threadsafe(_settle))
    try:
        await asyncio.wait_for(future, timeout)
    except TimeoutError:
        raise RunError(f"observer store did not commit {ticket.size} ops within {timeout} s") from None
    return ticket.result()


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (what DuckDB's quantile_cont does)."""
    position = (len(sorted_values) - 1) * q
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


# --- the process-wide default observer ----------------------------------------------------

_default: Observer | None = None
_default_lock = threading.Lock()


def open_observer(settings: Settings | None = None) -> Observer:
    """A new Observer as ``settings.observer_sink`` says: ``embedded`` opens the DuckDB store at
    ``settings.observer_path`` in this process; ``http`` sends to ``settings.observer_url``
    through an ``ObserverClient`` (spooling to ``data_dir/spool`` while it is down)."""
    settings = settings or load_settings()
    if settings.observer_sink == "http":
        from agentlake.observe.client import ObserverClient, RemoteSink

        key = settings.observer_api_key.get_secret_value() if settings.observer_api_key else None
        client = ObserverClient(settings.observer_url, api_key=key, spool_path=_default_spool(settings))
        return Observer(RemoteSink(client), ring_size=settings.observer_ring_size)
    # The writer's database keeps OpStore's one DuckDB thread (see OpStore), whatever
    # duckdb_threads says: that setting is for the lake's analytical queries.
    store = OpStore(
        settings.observer_path,
        queue_max=settings.observer_queue_max,
        checkpoint_mb=settings.observer_checkpoint_mb,
    )
    return Observer(store, ring_size=settings.observer_ring_size)


def open_reader(settings: Settings | None = None, *, url: str | None = None) -> OpSink:
    """Where to read ops from, for tools like ``agentlake ops``: the service at ``url`` when
    given (or when ``observer_sink`` is ``http``); else the store file, read-only; and when
    another process holds that file (a running service), the service at ``observer_url``.
    Raises ``UserError`` when there is no store yet."""
    from agentlake.errors import UnavailableError

    settings = settings or load_settings()
    if url is None and settings.observer_sink != "http":
        try:
            return OpStore(settings.observer_path, read_only=True, threads=settings.duckdb_threads)
        except UnavailableError:
            pass  # the writer is running: ask it
    from agentlake.observe.client import ObserverClient, RemoteSink

    key = settings.observer_api_key.get_secret_value() if settings.observer_api_key else None
    return RemoteSink(
        ObserverClient(url or settings.observer_url, api_key=key, spool_path=_default_spool(settings))
    )


def _default_spool(settings: Settings) -> Any:
    import os
    import uuid

    # observer-<pid>-<random>.jsonl: a spool whose pid is dead is adopted by other clients.
    return settings.data_dir / "spool" / f"observer-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"


_default_pid: int | None = None


def get_observer(settings: Settings | None = None) -> Observer:
    """The process-wide observer, created on first use from ``settings`` (see :func:`open_observer`).

    A forked child does not reuse its parent's observer (its DuckDB connection and writer
    thread belong to the parent): it opens its own, which for an embedded store fails with
    the advice to use ``AGENTLAKE_OBSERVER_SINK=http`` while the parent holds the file.
    """
    global _default, _default_pid
    import os

    with _default_lock:
        if _default is not None and _default_pid not in (None, os.getpid()):
            _default = None  # inherited through fork: not ours to use or close
        if _default is None:
            _default = open_observer(settings)
            _default_pid = os.getpid()
        return _default


def _current_default() -> Observer | None:
    """The process-wide observer if this process already opened one (never opens it)."""
    import os

    observer = _default
    return observer if observer is not None and _default_pid == os.getpid() else None


def set_observer(observer: Observer | None) -> Observer | None:
    """Replace the process-wide observer (servers, tests); returns the previous one, NOT closed."""
    global _default, _default_pid
    import os

    with _default_lock:
        previous, _default = _default, observer
        _default_pid = os.getpid() if observer is not None else None
        return previous


@atexit.register
def close_default_observer() -> None:
    """Close the process-wide observer, if one was opened (also run at interpreter exit)."""
    previous = set_observer(None)
    if previous is not None:
        try:
            previous.close()
        except Exception:  # at exit there is nobody left to tell
            log.exception("closing the observer failed")


# --- context: trace/span ids and inherited provenance ---------------------------------------


@dataclass(frozen=True)
class _Scope:
    trace_id: str | None = None
    span_id: str | None = None
    agent_id: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    attributes: Mapping[str, Any] = field(default_factory=dict)


_scope: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar(
    "agentlake_observe_scope", default=None
)
_NO_SCOPE = _Scope()


def current_scope() -> _Scope:
    """The observe context in effect here (trace/span ids, agent, provenance, attributes)."""
    return _scope.get() or _NO_SCOPE


@contextmanager
def observe_context(
    *,
    provenance: Provenance | Mapping[str, Any] | None = None,
    agent_id: str | None = None,
    trace_id: str | None = None,
    **attributes: Any,
) -> Iterator[None]:
    """Set defaults inherited by every op recorded inside (across threads only if the context is
    copied): provenance fields (e.g. a scenario's ``run_id``/``staffer_id``), an agent id, a trace
    id and extra attributes. Nested contexts merge, inner values win."""
    current = current_scope()
    fields = _provenance_fields(provenance)
    scope = _Scope(
        trace_id=trace_id or current.trace_id,
        span_id=current.span_id,
        agent_id=agent_id or current.agent_id,
        provenance={**current.provenance, **fields},
        attributes={**current.attributes, **attributes},
    )
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)


def _provenance_fields(provenance: Provenance | Mapping[str, Any] | None) -> dict[str, Any]:
    if provenance is None:
        return {}
    if isinstance(provenance, Provenance):
        return provenance.model_dump(exclude_none=True)
    return {key: value for key, value in dict(provenance).items() if value is not None}


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

    def __init__(self, op_id: str, attributes: dict[str, Any], provenance: dict[str, Any]) -> None:
        self.id = op_id
        self.attributes = attributes
        self.provenance = provenance
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

    def set_provenance(self, **fields: Any) -> None:
        """Add provenance fields (``role``, ``city``, ``rescue_succeeded`` ...) known only inside."""
        self.provenance.update({key: value for key, value in fields.items() if value is not None})

    def fail(self, error: BaseException | str) -> None:
        """Mark the op failed without raising (e.g. a tool that returns an error result)."""
        self.error = _error_text(error)


def _error_text(error: BaseException | str) -> str:
    if isinstance(error, BaseException):
        message = str(error)
        return f"{type(error).__name__}: {message}" if message else type(error).__name__
    return error


class _Recording:
    """One op in progress: opens a span in the context on creation, closes it in ``finish``."""

    def __init__(
        self,
        endpoint: str,
        source: Source,
        agent_id: str | None,
        input: Any,
        provenance: Provenance | Mapping[str, Any] | None,
        attributes: dict[str, Any],
    ) -> None:
        self.scope = current_scope()
        self.endpoint, self.source, self.input = endpoint, source, input
        self.agent_id = agent_id or self.scope.agent_id
        self.provenance = provenance
        self.span_id = _span_id()
        self.trace_id = self.scope.trace_id or secrets.token_hex(16)
        self.handle = OpHandle(new_op_id(), dict(attributes), {})
        self.token = _scope.set(
            _Scope(trace_id=self.trace_id, span_id=self.span_id, agent_id=self.agent_id,
                   provenance=self.scope.provenance, attributes=self.scope.attributes)
        )  # fmt: skip
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
            provenance={**scope.provenance, **_provenance_fields(self.provenance), **handle.provenance},
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
    provenance: Provenance | Mapping[str, Any] | None = None,
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
    recording = _Recording(endpoint, source, agent_id, input, provenance, attributes)
    try:
        yield recording.handle
    except Exception as exc:
        recording.handle.error = _error_text(exc)
        raise
    finally:
        _record_quietly(observer, recording.finish(), recording.handle)


def _build_op(fields: dict[str, Any]) -> ObservedOp:
    from datetime import UTC, datetime

    return ObservedOp(**{**fields, "ts": datetime.fromtimestamp(fields["ts"], UTC)})


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
        log.warning("could not record op %s (%s)", op.endpoint, op.id, exc_info=True)
        return False


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
    except Exception:
        log.warning("could not record op %s (%s)", fields.get("endpoint"), fields.get("id"), exc_info=True)
        return
    try:
        results = await _await_ticket(ticket)
    except Exception:
        log.warning("could not record op %s (%s)", op.endpoint, op.id, exc_info=True)
        return
    target._stored([op], results)
    if handle is not None:
        handle.op = op


# --- deferred acknowledgement: many ops, one wait -------------------------------------------

# Ops held per observer before a scope queues them for a commit early (bounds its memory).
DEFERRED_FLUSH_AT = 500

_deferred_scope: contextvars.ContextVar[Deferred | None] = contextvars.ContextVar(
    "agentlake_observe_deferred", default=None
)


class Deferred:
    """An open :func:`deferred` scope: the ops held for it, and what became of them.

    After the scope exits: ``recorded`` ops were made durable by it, ``failed`` were not
    (``errors`` says why, one line per failed commit or submission).
    """

    def __init__(self, *, raise_errors: bool, timeout: float | None) -> None:
        self.raise_errors = raise_errors
        self.timeout = timeout
        self.recorded = 0
        self.failed = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._open = False
        self._held: list[tuple[Observer, list[ObservedOp]]] = []
        self._queued: list[tuple[Observer, list[ObservedOp], Ticket]] = []
        self._parent: Deferred | None = None
        self._token: contextvars.Token[Deferred | None] | None = None

    # --- collecting (any thread that shares the context) ------------------------------------

    def _hold(self, observer: Observer, op: ObservedOp) -> bool:
        """Keep ``op`` for this scope's commit; False once the scope has closed."""
        with self._lock:
            if not self._open:
                return False
            for held_by, ops in self._held:
                if held_by is observer:
                    ops.append(op)
                    break
            else:
                ops = [op]
                self._held.append((observer, ops))
            if len(ops) < DEFERRED_FLUSH_AT:
                return True
            self._held = [(held_by, held) for held_by, held in self._held if held is not ops]
        self._queue(observer, ops)
        return True

    def _queue(
        self,
        observer: Observer,
        ops: list[ObservedOp],
        *,
        wait_for_space: float = IN_PROCESS_WAIT_FOR_SPACE_S,
    ) -> None:
        """Hand ``ops`` to the store's writer without waiting for the commit (a sink without a
        queue, such as a remote one, records them here and now)."""
        submit = getattr(observer.sink, "submit", None)
        try:
            if submit is None:
                observer.record_many(ops)
                with self._lock:
                    self.recorded += len(ops)
                return
            ticket = submit(ops, wait_for_space=wait_for_space)
        except Exception as exc:
            self._fail(ops, exc)
            return
        with self._lock:
            self._queued.append((observer, ops, ticket))

    def _fail(self, ops: Sequence[ObservedOp], error: BaseException) -> None:
        with self._lock:
            self.failed += len(ops)
            self.errors.append(f"{len(ops)} op(s): {_error_text(error)}")

    def _fail_if_open(self, ops: Sequence[ObservedOp], error: BaseException) -> bool:
        if not self._open:
            return False
        self._fail(ops, error)
        return True

    def _close(self) -> list[tuple[Observer, list[ObservedOp]]]:
        with self._lock:
            self._open = False
            held, self._held = self._held, []
        return held

    def _take_queued(self) -> list[tuple[Observer, list[ObservedOp], Ticket]]:
        with self._lock:
            queued, self._queued = self._queued, []
        return queued

    def _settled(self, observer: Observer, ops: list[ObservedOp], results: list[AppendResult]) -> None:
        observer._stored(ops, results)
        with self._lock:
            self.recorded += len(ops)

    def _report(self, exception_in_flight: bool) -> None:
        if not self.failed:
            return
        message = (
            f"{self.failed} op(s) recorded in a deferred observer scope were not stored "
            f"({self.recorded} were): {'; '.join(self.errors[:3])}"
        )
        if self.raise_errors and not exception_in_flight:
            raise RunError(message, failed=self.failed, recorded=self.recorded)
        log.warning(message)
        parent = self._parent
        if parent is not None and parent._open:
            # Not raised here, so the enclosing scope reports these too when it exits.
            with parent._lock:
                parent.failed += self.failed
                parent.errors.extend(self.errors)

    # --- the scope ---------------------------------------------------------------------------

    def __enter__(self) -> Deferred:
        if self._token is not None or self._open:
            raise UserError("a deferred observer scope can be entered only once; call deferred() again")
        self._parent = _deferred_scope.get()
        self._open = True
        self._token = _deferred_scope.set(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        assert self._token is not None
        _deferred_scope.reset(self._token)
        for observer, ops in self._close():
            self._queue(observer, ops)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        for observer, ops, ticket in self._take_queued():
            try:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                results = ticket.wait(left)
            except Exception as error:
                self._fail(ops, error)
                continue
            self._settled(observer, ops, results)
        self._report(exc_type is not None)

    async def __aenter__(self) -> Deferred:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        assert self._token is not None
        _deferred_scope.reset(self._token)
        for observer, ops in self._close():
            submit = getattr(observer.sink, "submit", None)
            if submit is None:  # a remote sink blocks on HTTP: a worker thread records
                await asyncio.to_thread(self._queue, observer, ops)
                continue
            try:
                ticket = submit(ops)  # never blocks; a full queue waits for room in a thread
            except QueueFullError:
                await asyncio.to_thread(self._queue, observer, ops)
                continue
            except Exception as error:
                self._fail(ops, error)
                continue
            with self._lock:
                self._queued.append((observer, ops, ticket))
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        for observer, ops, ticket in self._take_queued():
            try:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                results = await _await_ticket(ticket, left)
            except Exception as error:
                self._fail(ops, error)
                continue
            self._settled(observer, ops, results)
        self._report(exc_type is not None)


def deferred(*, raise_errors: bool = True, timeout: float | None = None) -> Deferred:
    """A scope (``with`` or ``async with``) in which recording does not wait for each commit.

    Every op recorded inside through ``observe``, ``wrap_tool``, the LLM hook or
    :func:`record_op` (in this context, and in threads or tasks that copied it while the scope
    was open) is held, then queued for ONE group commit when the scope exits; the exit returns
    only once all of them are durable. So the ops of a turn or a task cost one wait and about
    one commit instead of one each. Until the exit, they are not durable and not yet in the
    observer's ring, live stats or SSE tail. ``Observer.record``/``record_many`` called inside
    keep their own contract (durable on return).

    If any op was not stored (a failed commit, a closed store, a full queue for 30 s), the exit
    raises ``RunError`` with the counts (unless the block is already raising: then it is
    logged); with ``raise_errors=False`` it is logged and left on the scope (``failed``,
    ``errors``). ``timeout``: seconds the exit waits in all, then the ops still waiting count
    as failed (they may still commit later; ids make a retry safe). Scopes nest: an inner
    scope's exit waits for its own ops; failures it did not raise are reported again by the
    enclosing scope. More than ``DEFERRED_FLUSH_AT`` held ops are queued early, still waited
    for at the exit.
    """
    return Deferred(raise_errors=raise_errors, timeout=timeout)


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
            recording = _Recording(name, source, agent_id, _arguments(args, kwargs), None, {})
            try:
                result = await fn(*args, **kwargs)
                recording.handle.set_output(result)
                return result
            except Exception as exc:
                recording.handle.error = _error_text(exc)
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
