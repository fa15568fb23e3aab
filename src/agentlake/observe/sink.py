"""``OpSink``: the one contract behind an ``Observer`` (where its ops go).

Two implementations: ``store.OpStore`` (the embedded DuckDB log, the truth) and
``client.RemoteSink`` (an ``ObserverClient`` to a running observer service, for processes that
must not open the DuckDB file themselves). This module owns only the protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from agentlake.observe.model import ObservedOp
from agentlake.observe.store import AppendResult, Stats


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

    def query(self, **filters: Any) -> list[ObservedOp]:
        """Stored ops matching the filters of ``OpStore.query``."""
        ...

    def recent(self, n: int = 100) -> list[ObservedOp]:
        """The last ``n`` stored ops, oldest first."""
        ...

    def stats(self) -> Stats:
        """Counts and latency over the stored ops."""
        ...

    def close(self) -> None: ...
