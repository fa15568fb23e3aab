"""``OpSink``: the one contract behind an ``Observer`` (where its ops go), ``OpReader`` (what ops are
read back from), and ``MemorySink``.

Implementations: ``store.OpStore`` (the embedded DuckDB log, the truth), ``client.RemoteSink``
(an ``ObserverClient`` to a running observer service, for processes that must not open the
DuckDB file themselves) and ``MemorySink`` here (a list in memory: tests, benchmarks, and
scenario days that collect ops for their parent to record). This module owns the protocol and
the in-memory sink; it does not own storage or HTTP.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from agentlake.observe.append import AppendResult
from agentlake.observe.filters import OpFilter, aware, label_text
from agentlake.observe.model import ObservedOp
from agentlake.observe.store import Stats


class OpReader(Protocol):
    """What recorded ops are read back from: an ``Observer``, an ``OpStore`` or any ``OpSink``."""

    def query(self, wanted: OpFilter | None = None, /, **filters: Any) -> list[ObservedOp]:
        """Stored ops matching ``wanted`` (or an ``OpFilter`` of ``filters``), as ``OpStore.query``
        reads them."""
        ...


@runtime_checkable
class OpSink(Protocol):
    """Where an Observer's ops are made durable, and read back from."""

    #: True when the sink is the store itself (the Observer keeps authoritative live counters);
    #: False for a remote sink (stats and queries are answered by the service).
    local: bool

    def append(
        self, ops: Sequence[ObservedOp], *, timeout: float | None = None, wait_for_space: float = 0.0
    ) -> list[AppendResult]:
        """Make ``ops`` durable and return one result per op, in order."""
        ...

    def query(self, wanted: OpFilter | None = None, /, **filters: Any) -> list[ObservedOp]:
        """Stored ops matching ``wanted`` (or an ``OpFilter`` of ``filters``; given both, the
        keywords replace its fields), as ``OpStore.query`` reads them."""
        ...

    def recent(self, n: int = 100) -> list[ObservedOp]:
        """The last ``n`` stored ops, oldest first."""
        ...

    def stats(self) -> Stats:
        """Counts and latency over the stored ops."""
        ...

    def close(self) -> None: ...


def _matches(value: str | None, wanted: str) -> bool:
    """The store's match: ``wanted`` ending in ``*`` is a prefix, else the exact value."""
    if value is None:
        return False
    return value.startswith(wanted[:-1]) if wanted.endswith("*") else value == wanted


class MemorySink:
    """An ``OpSink`` that keeps ops in a list, in memory, for as long as it lives.

    Nothing is durable: use it where the ops are read back by the same process (tests,
    benchmarks of the recording path without storage, a scenario day collecting ops that its
    parent records). Like the store it is idempotent (an id seen before is answered
    ``duplicate`` and kept once) and thread-safe. ``ops`` is the list, in recording order.
    """

    local = False

    def __init__(self) -> None:
        self.ops: list[ObservedOp] = []
        self._ids: set[str] = set()
        self._lock = threading.Lock()

    def append(
        self, ops: Sequence[ObservedOp], *, timeout: float | None = None, wait_for_space: float = 0.0
    ) -> list[AppendResult]:
        """Keep ``ops``; one result per op (``duplicate`` for an id already kept)."""
        results: list[AppendResult] = []
        with self._lock:
            for op in ops:
                if op.id in self._ids:
                    results.append(AppendResult(op.id, "duplicate"))
                    continue
                self._ids.add(op.id)
                self.ops.append(op)
                op.seq = len(self.ops)  # as a store's commit sequence: 1, 2, ... in recording order
                results.append(AppendResult(op.id))
        return results

    def endpoint(self, name: str) -> list[ObservedOp]:
        """The ops recorded under endpoint ``name``, in recording order."""
        with self._lock:
            return [op for op in self.ops if op.endpoint == name]

    def query(self, wanted: OpFilter | None = None, /, **filters: Any) -> list[ObservedOp]:
        """Ops matching ``wanted`` (an ``OpFilter``, or its fields as keywords), as the store
        applies them (newest first unless ``order="asc"``; with ``after_seq``, by recording
        order). Raises ``UserError`` for a filter the store does not have."""
        wanted = OpFilter.of(wanted, **filters)
        with self._lock:
            found = list(self.ops)
        if wanted.after_seq is not None:
            found = found[wanted.after_seq :]  # seq counts from 1 in recording order
        for name in ("id", "source", "success", "agent_id", "trace_id"):
            value = getattr(wanted, name)
            if value is not None:
                found = [op for op in found if getattr(op, name) == value]
        if wanted.run_id is not None:
            found = [op for op in found if _matches(op.run_id, wanted.run_id)]
        if wanted.endpoint is not None:
            found = [op for op in found if _matches(op.endpoint, wanted.endpoint)]
        for key, value in wanted.labels.items():
            found = [op for op in found if key in op.labels and label_text(op.labels[key]) == value]
        if wanted.since is not None:
            found = [op for op in found if op.ts >= aware(wanted.since)]
        if wanted.until is not None:
            found = [op for op in found if op.ts < aware(wanted.until)]
        if wanted.after_seq is None:
            found.sort(key=lambda op: op.ts, reverse=wanted.order == "desc")
        elif wanted.order == "desc":
            found.reverse()
        return found[wanted.offset : wanted.offset + wanted.limit]

    def recent(self, n: int = 100) -> list[ObservedOp]:
        """The last ``n`` ops kept, oldest first."""
        with self._lock:
            return self.ops[-n:] if n > 0 else []

    def stats(self) -> Stats:
        """Exact counts by source and endpoint, latency p50/p95 over every op kept."""
        with self._lock:
            ops = list(self.ops)
        successes = sum(op.success for op in ops)
        durations = sorted(op.duration_ms for op in ops)
        return Stats(
            total=len(ops),
            successes=successes,
            failures=len(ops) - successes,
            by_source=dict(Counter(op.source for op in ops).most_common()),
            by_endpoint=dict(Counter(op.endpoint for op in ops).most_common()),
            latency_p50_ms=percentile(durations, 0.50) if durations else None,
            latency_p95_ms=percentile(durations, 0.95) if durations else None,
            latency_window=len(durations),
            recent_scenario=[op for op in reversed(ops) if op.source == "scenario"][:20],
        )

    def close(self) -> None:
        """Nothing to release; the ops stay readable."""


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (what DuckDB's quantile_cont does)."""
    position = (len(sorted_values) - 1) * q
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)
