"""The read path of ``GET /worker/{id}``: worker records rendered once, kept by id until the lake changes.

Owns :class:`WorkerCache`, a bounded LRU from ``worker_id`` to the JSON bytes of the route's
``Worker`` response. A miss reads the row through ``profile.get_worker`` (the lake's one point
read), validates it through the ``Worker`` model and renders it; a hit costs a dict lookup, no
query, no validation and no serialization. Misses are point reads by ``worker_id``, so it keeps
the lake's key index on that column (``lake.keyindex``). It does not own the read
(``agentlake.profile``) or the response model (``gateway.schemas.Worker``).

Why it can never serve a row the lake no longer has: the whole cache is dropped when
``Lake.change_token`` moves, and the token moves whenever this process opens the lake or
commits any write to it, while no other process can write the file as long as the gateway
holds it open. A row read while a write commits is stored only if the token did not move
during the read (otherwise the next lookup would drop it anyway).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentlake.lake import Lake

log = logging.getLogger(__name__)

# ~1 KB per rendered worker: 50,000 entries stay under ~60 MB however large the lake is.
DEFAULT_MAX_ENTRIES = 50_000


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
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0

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

    def load(self, worker_id: int) -> bytes:
        """Read, validate and render the worker, remember it, return it (blocking: run it off the loop).

        Raises what ``profile.get_worker`` raises: ``NotFoundError`` for an unknown id,
        ``UserError`` when the lake has no workers dataset. Unknown ids are not remembered.
        """
        from agentlake.gateway.schemas import Worker
        from agentlake.profile import get_worker

        lake = self._open_lake()
        if self._indexed_at != lake.change_token:
            self._ensure_index(lake)
        token = lake.change_token
        body = Worker(**get_worker(lake, worker_id)).model_dump_json().encode()
        with self._lock:
            self.misses += 1
            if lake.change_token != token:
                return body  # a write committed during the read: serve it, do not keep it
            if self._lake is not lake or self._token != token:
                self._lake, self._token = lake, token
                self._entries.clear()
            self._entries[worker_id] = body
            if len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return body

    def _ensure_index(self, lake: Lake) -> None:
        # A miss is a point read by worker_id: with the key index it is a lookup, not a scan
        # (6x less CPU at 500k workers). Checked again whenever the lake changed, since a
        # replace-ingest of workers drops the index with the old table.
        from agentlake.errors import AgentlakeError
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
