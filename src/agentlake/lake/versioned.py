"""What changed in a lake, cheaply: dataset versions, a per-task snapshot of them, and
``PerLakeCache``, one derived value per lake file rebuilt when the lake's data changes.

Callers derive a few things from the lake that are costly to rebuild per task and change only
when a dataset is written (a city gazetteer, the clients' slugs, the catalog text for prompts).
Each is kept once per lake file together with the catalog version it was built from; a new
version replaces the old value, so a long-running process does not accumulate one copy per
ingest. ``dataset_versions`` reads those versions in one cheap query (``_catalog``'s
``updated_at``); inside ``catalog_snapshot`` a task asks each lake once. This module does not
know what the cached values are.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Generic, TypeVar

import duckdb

if TYPE_CHECKING:
    from agentlake.lake import Lake

T = TypeVar("T")


class PerLakeCache(Generic[T]):
    """``get(path, version, build)``: the cached value for ``path`` if built at ``version``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, tuple[object, T]] = {}

    def get(self, path: str, version: object, build: Callable[[], T]) -> T:
        with self._lock:
            hit = self._items.get(path)
            if hit is not None and hit[0] == version:
                return hit[1]
        # Built outside the lock: two threads may both build once; both results are equal.
        value = build()
        with self._lock:
            self._items[path] = (version, value)
        return value


_snapshot: contextvars.ContextVar[dict[str, dict[str, object]] | None] = contextvars.ContextVar(
    "agentlake_catalog_snapshot", default=None
)


@contextmanager
def catalog_snapshot() -> Iterator[None]:
    """Inside, ``dataset_versions`` asks each lake once: a task sees one catalog version.

    The versions only key caches (cities, clients, the catalog text); a write to the lake
    during a task shows up in the next task.
    """
    token = _snapshot.set({})
    try:
        yield
    finally:
        _snapshot.reset(token)


def dataset_versions(lake: Lake) -> dict[str, object]:
    """Dataset name -> a value that changes whenever the dataset is written (one cheap query).

    Reads the lake's ``_catalog`` (name, updated_at) rather than ``Lake.datasets()``, which
    counts rows and loads histories: this runs several times per task. A source's table
    (``NAME.table``) is versioned by its columns.
    """
    snapshot = _snapshot.get()
    if snapshot is not None:
        key = str(lake.path)
        if key not in snapshot:
            snapshot[key] = _query_versions(lake)
        return snapshot[key]
    return _query_versions(lake)


def _query_versions(lake: Lake) -> dict[str, object]:
    with lake.cursor() as cur:
        try:
            rows = cur.execute("SELECT name, updated_at FROM _catalog").fetchall()
        except duckdb.CatalogException:  # a lake file without a catalog has no datasets
            rows = []
    # External sources' tables: a digest of their columns (their list is read once a minute).
    return {**{str(name): updated for name, updated in rows}, **lake.sources.versions()}


def has_dataset(lake: Lake, name: str) -> bool:
    """True when the lake's catalog lists ``name`` (as of the current snapshot, if any)."""
    return name in dataset_versions(lake)
