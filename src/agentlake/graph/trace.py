"""The graph's trace: every node event appended to a JSONL file, rotated by size, and broadcast.

Owns the trace event's shape (``ts``, ``session``, ``turn``, ``node``, ``event``, ``data``), the
file (``data_dir/graph-trace.jsonl``; when the next line would take it past
``graph_trace_max_bytes`` it becomes ``.1``, ``.1`` becomes ``.2``, ... and the oldest beyond
``KEEP`` is deleted) and the subscribers that receive each event as it is written (the
dashboards' HUDs). It does not decide what is traced (the engine and the nodes do) and it is
not the observer: ops are the durable record of what agentlake did; the trace is the graph's
own step-by-step log.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentlake.observe.scrub import scrub_value

log = logging.getLogger(__name__)

TRACE_FILE = "graph-trace.jsonl"
KEEP = 3

Subscriber = Callable[[dict[str, Any]], None]


class TraceLog:
    """Appends trace events to ``path`` (rotating at ``max_bytes``) and hands them to subscribers.

    Thread-safe: turns of several sessions write at once. A failing write is logged, never
    raised into the turn; a failing subscriber is dropped.
    """

    def __init__(self, path: Path, max_bytes: int, keep: int = KEEP) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.keep = keep
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call ``fn(event)`` for every event from now on; returns the function that stops it."""
        with self._lock:
            self._subscribers.append(fn)

        def stop() -> None:
            with self._lock:
                if fn in self._subscribers:
                    self._subscribers.remove(fn)

        return stop

    def emit(
        self, *, session: str, turn: int, node: str, event: str, data: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Write one event and broadcast it; returns the event as written."""
        record = {
            "ts": round(time.time(), 6),
            "session": session,
            "turn": turn,
            "node": node,
            "event": event,
            # What a browser sent reaches the file and every dashboard: scrubbed like any op.
            "data": scrub_value(data) if data else {},
        }
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            try:
                self._append(line.encode("utf-8"))
            except OSError:
                log.warning("could not write the graph trace to %s", self.path, exc_info=True)
            subscribers = list(self._subscribers)
        for fn in subscribers:
            try:
                fn(record)
            except Exception:  # a gone dashboard must not break the turn
                log.debug("trace subscriber failed; dropping it", exc_info=True)
                with self._lock:
                    if fn in self._subscribers:
                        self._subscribers.remove(fn)
        return record

    def _append(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        # A single line larger than the limit still gets written (to a fresh file): dropping it
        # would hide exactly the unusual event someone is looking for.
        if size and size + len(data) > self.max_bytes:
            self._rotate()
        with self.path.open("ab") as handle:
            handle.write(data)

    def _rotate(self) -> None:
        oldest = self.rotated(self.keep)
        if oldest.exists():
            oldest.unlink()
        for number in range(self.keep - 1, 0, -1):
            src = self.rotated(number)
            if src.exists():
                src.replace(self.rotated(number + 1))
        self.path.replace(self.rotated(1))

    def rotated(self, number: int) -> Path:
        """The path of the ``number``-th rotated file (1 is the most recent)."""
        return self.path.with_name(f"{self.path.name}.{number}")

    def files(self) -> list[Path]:
        """The current file and the rotated ones that exist, newest first."""
        return [p for p in [self.path, *(self.rotated(n) for n in range(1, self.keep + 1))] if p.exists()]


def read_trace(path: Path, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Events of one trace file, oldest first (the last ``limit`` when given)."""
    if not Path(path).exists():
        return []
    events = [
        json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    return events[-limit:] if limit else events
