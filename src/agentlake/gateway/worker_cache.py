"""The read path of ``GET /worker/{id}``: worker records rendered once, kept by id until the lake changes.

Owns :class:`WorkerCache`, a bounded LRU from ``worker_id`` to the JSON bytes of the route's
``Worker`` response, and the grouping of its misses. A hit costs a dict lookup, no query, no
validation and no serialization. A miss reads the row through ``profile.get_workers`` (the
lake's read by id), validates it through the ``Worker`` model and renders it. It does not own
the read (``agentlake.workforce.profile``) or the response model (``gateway.schemas.Worker``).

Misses are grouped, as the observer groups commits: a query's fixed cost (~0.45 ms of CPU)
is far above a row's (~0.03 ms), so while one read is in flight the misses that arrive wait
and the next read fetches them all in one query. Misses are reads by ``worker_id``, so it
keeps the lake's key index on that column (``lake.keyindex``).

Why it can never serve a row the lake no longer has: the whole cache is dropped when
``Lake.change_token`` moves, and the token moves whenever this process opens the lake or
commits any write to it, while no other process can write the file as long as the gateway
holds it open. A row read while a write commits is stored only if the token did not move
during the read (otherwise the next lookup would drop it anyway).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import islice
from typing import TYPE_CHECKING

from agentlake.errors import AgentlakeError
from agentlake.workforce.profile import get_workers, unknown_worker

if TYPE_CHECKING:
    from agentlake.lake import Lake

log = logging.getLogger(__name__)

# ~1 KB per rendered worker: 50,000 entries stay under ~60 MB however large the lake is.
DEFAULT_MAX_ENTRIES = 50_000
# Ids per grouped read: one query's IN list (more wait for the next read).
MAX_GROUP = 256


class _Misses:
    """One event loop's misses: the ids waiting for the next grouped read, each with the futures
    of its requests (one each, so a request that goes away cancels only its own), and the task
    reading them while there are any. Touched only from that loop's thread."""

    __slots__ = ("loop", "reader", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[int, list[asyncio.Future[bytes]]] = {}
        self.reader: asyncio.Task[None] | None = None  # held here: the loop keeps only a weak reference


class WorkerCache:
    """Rendered ``Worker`` JSON by id, bounded, dropped whole when the lake changes. Thread-safe."""

    def __init__(self, lake: Callable[[], Lake], *, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._open_lake = lake
        self._lake: Lake | None = None  # the lake read from; set by the first load
        self._token: int | None = None
        self._entries: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._index_lock = threading.Lock()
        self._indexed_at: int | None = None  # the change token at the last key index check
        self._misses: _Misses | None = None
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self.reads = 0  # queries made for misses (fewer than misses when they were grouped)

    def cached(self, worker_id: int) -> bytes | None:
        """The rendered record when it is cached and the lake has not changed since; else ``None``.

        Never reads the lake, so it is safe on the event loop.
        """
        lake = self._lake
        if lake is None:
            return None
        with self._lock:
            if lake.change_token != self._token:
                self._entries.clear()
                self._token = None
                return None
            body = self._entries.get(worker_id)
            if body is None:
                return None
            self._entries.move_to_end(worker_id)
            self.hits += 1
            return body

    async def read(self, worker_id: int) -> bytes:
        """The rendered record, from the next grouped read of the lake (for a miss).

        Raises ``NotFoundError`` for an unknown id (``profile.unknown_worker``), and what
        ``profile.get_workers`` raises.
        """
        loop = asyncio.get_running_loop()
        misses = self._misses
        if misses is None or misses.loop is not loop:
            # One loop serves the gateway; another (a test's) starts its own group.
            misses = self._misses = _Misses(loop)
        future: asyncio.Future[bytes] = loop.create_future()
        misses.waiting.setdefault(worker_id, []).append(future)
        if misses.reader is None:
            misses.reader = loop.create_task(self._read_waiting(misses))
        return await future

    async def _read_waiting(self, misses: _Misses) -> None:
        """Read the waiting ids in groups until none wait; each read runs in a thread."""
        group: dict[int, list[asyncio.Future[bytes]]] = {}
        try:
            while misses.waiting:
                group = dict(islice(misses.waiting.items(), MAX_GROUP))
                for worker_id in group:
                    del misses.waiting[worker_id]
                error: Exception | None
                try:
                    bodies = await misses.loop.run_in_executor(None, self.load_many, list(group))
                except Exception as exc:
                    bodies, error = {}, exc
                else:
                    error = None
                for worker_id, futures in group.items():
                    body = bodies.get(worker_id)
                    for future in futures:
                        if future.done():
                            continue  # its request went away
                        if error is not None:
                            future.set_exception(error)
                        elif body is None:
                            future.set_exception(unknown_worker(worker_id))
                        else:
                            future.set_result(body)
                group = {}
        finally:
            misses.reader = None
            # Only when cancelled (the loop is closing): nobody is left to read for these.
            for futures in (*group.values(), *misses.waiting.values()):
                for future in futures:
                    future.cancel()
            misses.waiting.clear()

    def load_many(self, worker_ids: Sequence[int]) -> dict[int, bytes]:
        """Read these workers in one query, render and remember them (blocking: run it off the loop).

        Returns the rendered records by id; unknown ids are left out and not remembered. Raises
        ``UserError`` when the lake has no workers dataset.
        """
        # Lazy (start-up time): the app is assembled when it is built.
        from agentlake.gateway.schemas import Worker

        lake = self._open_lake()
        if self._indexed_at != lake.change_token:
            self._ensure_index(lake)
        token = lake.change_token
        rows = get_workers(lake, worker_ids)
        bodies = {worker_id: Worker(**row).model_dump_json().encode() for worker_id, row in rows.items()}
        with self._lock:
            self.misses += len(worker_ids)
            self.reads += 1
            if lake.change_token != token:
                return bodies  # a write committed during the read: serve them, do not keep them
            if self._lake is not lake or self._token != token:
                self._lake, self._token = lake, token
                self._entries.clear()
            self._entries.update(bodies)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return bodies

    def _ensure_index(self, lake: Lake) -> None:
        # A miss is a point read by worker_id: with the key index it is a lookup, not a scan
        # (6x less CPU at 500k workers). Checked again whenever the lake changed, since a
        # replace-ingest of workers drops the index with the old table.
        from agentlake.lake.keyindex import ensure_key_index

        with self._index_lock:
            if self._indexed_at == lake.change_token:
                return
            try:
                ensure_key_index(lake, "workers", "worker_id")
            except AgentlakeError:
                # Reads still work without it, only slower: never fail a request over it.
                log.warning("could not create the index on workers.worker_id", exc_info=True)
            self._indexed_at = lake.change_token

    def clear(self) -> None:
        """Forget every record (the next lookups read the lake)."""
        with self._lock:
            self._entries.clear()
            self._token = None

    def __len__(self) -> int:
        return len(self._entries)
