"""Deferred acknowledgement: many ops recorded, one wait for their group commit.

Owns ``deferred()`` and the ``Deferred`` scope: ops recorded inside (through ``observe``,
``wrap_tool``, ``event``, the LLM hook or ``record_op``) are held, queued for one commit when
the scope exits, and the exit returns once all are durable. It does not own building or
recording an op (``recording``) or the store's group commit (``store``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from agentlake.errors import RunError, UserError
from agentlake.observe.append import AppendResult, QueueFullError, Ticket
from agentlake.observe.model import ObservedOp, exception_text
from agentlake.observe.observer import IN_PROCESS_WAIT_FOR_SPACE_S, Observer, _await_ticket

log = logging.getLogger(__name__)

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
            self.errors.append(f"{len(ops)} op(s): {exception_text(error)}")

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
