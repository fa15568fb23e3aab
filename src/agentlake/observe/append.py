"""What an append to an op store answers: the result per op, the ticket, the two refusals.

Owns :class:`AppendResult` (stored, duplicate or spooled), :class:`Ticket` (a handle on queued
ops: wait until they are durable, or be called back from the writer thread), the queued batch a
ticket stands for (:class:`Pending`), and the two 503s a writer answers with:
:class:`QueueFullError` (the queue is full) and :class:`StoreUnavailableError` (the database
cannot commit). Shared by both op stores (``store.OpStore``, ``pg_store.PgOpStore``), the
observer, its sinks and its HTTP client; it does not own the queue or the commits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from agentlake.errors import RunError, UnavailableError
from agentlake.observe.model import ObservedOp


@dataclass(frozen=True)
class AppendResult:
    """What happened to one op: ``stored`` now, already stored (``duplicate``), or ``spooled``
    locally by an HTTP client to be replayed once the observer is back."""

    id: str
    status: Literal["stored", "duplicate", "spooled"] = "stored"

    @property
    def duplicate(self) -> bool:
        return self.status == "duplicate"

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "accepted": True, "status": self.status, "duplicate": self.duplicate}


class QueueFullError(UnavailableError):
    """The write queue holds ``queue_max`` ops already; retry after ``retry_after`` seconds."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message, http_status=503, retry_after=retry_after)
        self.retry_after = retry_after


class StoreUnavailableError(UnavailableError):
    """The store cannot commit right now (``reason``: ``unreachable`` or ``disk_full``); the ops
    were not acknowledged. Retry after ``retry_after`` seconds with the same ids: each is stored
    once (answered ``duplicate`` if the failed commit had gone through after all)."""

    def __init__(self, message: str, *, reason: str, retry_after: float = 1.0) -> None:
        super().__init__(message, http_status=503, retry_after=retry_after, reason=reason)
        self.reason = reason
        self.retry_after = retry_after

    def again(self, retry_after: float) -> StoreUnavailableError:
        """A fresh error with the same message for the next caller (an exception instance
        carries its own traceback, so callers never share one)."""
        return StoreUnavailableError(self.message, reason=self.reason, retry_after=retry_after)


class Pending:
    """Ops waiting for a commit. ``done`` and ``event`` change under the store's lock; the event
    exists only once a thread waits (an asyncio waiter uses a callback instead), since making
    one per queued request was a visible share of a single event's cost on the event loop."""

    __slots__ = ("callbacks", "done", "enqueued_at", "error", "event", "ops", "results")

    def __init__(self, ops: list[ObservedOp]) -> None:
        self.ops = ops
        self.done = False
        self.event: threading.Event | None = None
        self.results: list[AppendResult] | None = None
        self.error: BaseException | None = None
        self.callbacks: list[Callable[[Pending], object]] = []
        self.enqueued_at = time.monotonic()


class Ticket:
    """A handle on queued ops: ``wait()`` blocks until they are durable; ``add_done_callback``
    lets an asyncio server resolve a future from the writer thread instead of parking a thread."""

    def __init__(self, pending: Pending, lock: threading.Lock) -> None:
        self._pending = pending
        self._lock = lock

    @property
    def size(self) -> int:
        """How many ops this ticket holds."""
        return len(self._pending.ops)

    def add_done_callback(self, fn: Callable[[Ticket], object]) -> None:
        """Call ``fn(ticket)`` once the ops are committed (or failed): from the writer thread, or
        right here if that already happened."""
        with self._lock:
            if not self._pending.done:
                self._pending.callbacks.append(lambda _p: fn(self))
                return
        fn(self)

    def result(self) -> list[AppendResult]:
        """The results once done; raises the writer's error if the commit failed."""
        if self._pending.error is not None:
            raise self._pending.error
        assert self._pending.results is not None
        return self._pending.results

    def wait(self, timeout: float | None = None) -> list[AppendResult]:
        """Block until durable. Raises ``RunError`` on timeout (the ops may still commit later;
        retrying with the same ids is safe) or the commit's own error."""
        pending = self._pending
        with self._lock:
            if not pending.done and pending.event is None:
                pending.event = threading.Event()
            event = pending.event
        if event is not None and not event.wait(timeout):
            raise RunError(f"observer store did not commit {len(pending.ops)} ops within {timeout} s")
        return self.result()
