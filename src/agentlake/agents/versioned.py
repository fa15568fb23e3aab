"""``PerLakeCache``: one derived value per lake file, rebuilt when the lake's data changes.

The agents derive a few things from the lake that are costly to rebuild per task and change
only when a dataset is written: the city gazetteer, the clients' slugs, the catalog text for
prompts. Each is kept here once per lake file together with the catalog version it was built
from; a new version replaces the old value, so a long-running process does not accumulate one
copy per ingest. This module does not know what the values are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

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
