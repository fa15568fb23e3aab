"""``Observer``: the recording front over a sink, with its ring of recent ops and live stats.

Owns the bounded ring, the live counters and latency percentiles, subscribers (the SSE live
tail) and ``record``/``record_many`` (durable on return). It does not own the choice of sink
(``default_observer``), the ``observe``/``wrap_tool``/``event`` API (``recording``), held
acknowledgement (``deferred``), storage (``store``) or HTTP (``service``, ``client``).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any

from agentlake.errors import RunError, UserError
from agentlake.observe.append import AppendResult, Ticket
from agentlake.observe.filters import OpFilter
from agentlake.observe.model import ObservedOp
from agentlake.observe.sink import OpSink, percentile
from agentlake.observe.store import OpStore, Stats

log = logging.getLogger(__name__)

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
        self.offered = 0  # ops offered so far (taken, waiting or dropped)
        self.closed = False

    def _offer(self, op: ObservedOp) -> None:
        self.offered += 1
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
        self._acknowledged: Counter[str] = Counter()
        self._attached: list[Any] = []
        if isinstance(sink, OpStore):
            # A restart rebuilds the ring from the store (in PostgreSQL: every writer's last ops).
            self._ring.extend(sink.recent(ring_size))
        if sink.local:
            # ... and the counters, when this process is the store's one writer.
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

    def record_many(
        self,
        ops: Sequence[ObservedOp],
        *,
        timeout: float | None = None,
        wait_for_space: float = IN_PROCESS_WAIT_FOR_SPACE_S,
    ) -> list[AppendResult]:
        """Make ``ops`` durable; one :class:`AppendResult` per op, in order. A full write queue
        is waited on for up to ``wait_for_space`` seconds, then ``QueueFullError``."""
        ops = list(ops)
        if not ops:
            return []
        results = self.sink.append(ops, timeout=timeout, wait_for_space=wait_for_space)
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

    def acknowledge(self, signal: str, count: int) -> None:
        """Count ``count`` records of a signal that is answered but not stored (OTLP logs and
        metrics); shown in :meth:`stats` as ``acknowledged``."""
        with self._lock:
            self._acknowledged[signal] += count

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

    def query(self, wanted: OpFilter | None = None, /, **filters: Any) -> list[ObservedOp]:
        """Stored ops matching ``wanted`` (an ``OpFilter``, or its fields as keywords; see
        ``OpStore.query``)."""
        return self.sink.query(wanted, **filters)

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
                acknowledged=dict(self._acknowledged),
            )
        if durations:
            stats.latency_p50_ms = percentile(durations, 0.50)
            stats.latency_p95_ms = percentile(durations, 0.95)
        return stats

    def health(self) -> dict[str, Any]:
        """Status, ring depth, store lag (ops waiting for a commit, age of the oldest) and why
        the store cannot commit right now (``store_unavailable``, else ``None``). The status
        stays ``ok`` through a store outage: the service is up, and ingest answers 503 until
        the store recovers by itself (restarting the service would not help)."""
        queued = getattr(self.sink, "queued_ops", 0)
        oldest = getattr(self.sink, "oldest_pending_age", lambda: 0.0)()
        return {
            "status": "ok",
            "sink": getattr(self.sink, "kind", "embedded" if self.sink.local else "http"),
            "ring_depth": self.ring_depth,
            "store_lag": {"queued_ops": queued, "oldest_pending_s": round(oldest, 3)},
            "store_unavailable": getattr(self.sink, "unavailable", None),
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

    def attach(self, part: Any) -> None:
        """Keep ``part`` (a subscriber such as ``otlp_export.OtlpExport``) for the observer's
        lifetime: its ``close()`` is called when the observer closes, before the sink."""
        self._attached.append(part)

    def close(self) -> None:
        """Close what is attached, then the sink if this observer owns it (queued ops are
        committed first)."""
        for part in reversed(self._attached):
            try:
                part.close()
            except Exception:  # a subscriber's failure must not keep the store open
                log.exception("closing %r failed", part)
        self._attached.clear()
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
