"""Who is booked when: the lake's placements plus the bookings made during a run.

Owns ``Booking`` and ``ScheduleBook``. The book reads placements with status scheduled or
completed from the lake lazily, per worker, in one query per batch of workers (a 500k-worker
lake is never loaded whole), and layers in-memory bookings on top: a scenario day adds the
fills it accepted so that a later event cannot book the same person twice, and removes a
worker taken off a job. It never writes to the lake.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

from agentlake.lake.versioned import has_dataset
from agentlake.workforce.tables import PLACEMENTS, client_labels

if TYPE_CHECKING:
    from agentlake.lake import Lake


class Booking(BaseModel):
    """One worker booked for one shift."""

    worker_id: int
    start: datetime
    end: datetime
    client_id: str | None = None
    client_name: str | None = None
    source: str = "run"

    def overlaps(self, start: datetime, end: datetime) -> bool:
        return self.start < end and start < self.end

    def window(self) -> str:
        """'08:00-16:00' (with the date when the shift crosses midnight)."""
        if self.start.date() == self.end.date():
            return f"{self.start:%H:%M}-{self.end:%H:%M}"
        return f"{self.start:%m-%d %H:%M}-{self.end:%m-%d %H:%M}"

    def describe(self) -> str:
        where = self.client_name or self.client_id or "another client"
        return f"{self.start:%Y-%m-%d} {self.window()} at {where}"


def _naive(value: datetime) -> datetime:
    # Placements are stored as naive timestamps; compare orders the same way.
    return value.replace(tzinfo=None) if value.tzinfo is not None else value


class ScheduleBook:
    """Lake placements (status scheduled/completed) + bookings added during a run.

    Thread-safe. ``remove(worker_id, start)`` hides the booking of that worker starting at
    ``start``, whether it came from the lake or was added.
    """

    def __init__(self, lake: Lake, extra: Iterable[Booking] = ()) -> None:
        self.lake = lake
        self._lock = threading.Lock()
        self._lake_bookings: dict[int, list[Booking]] = {}
        self._added: list[Booking] = []
        self._removed: set[tuple[int, datetime]] = set()
        self._has_placements: bool | None = None
        for booking in extra:
            self.add(booking)

    def add(self, booking: Booking) -> None:
        """Book ``booking`` (an accepted fill) for the rest of the run."""
        booking = booking.model_copy(update={"start": _naive(booking.start), "end": _naive(booking.end)})
        with self._lock:
            self._removed.discard((booking.worker_id, booking.start))
            self._added.append(booking)

    def remove(self, worker_id: int, start: datetime) -> None:
        """Take ``worker_id`` off the shift that starts at ``start``."""
        start = _naive(start)
        with self._lock:
            self._added = [b for b in self._added if not (b.worker_id == worker_id and b.start == start)]
            self._removed.add((worker_id, start))

    def added(self) -> list[Booking]:
        """The bookings added during this run, in order."""
        with self._lock:
            return list(self._added)

    def prefetch(self, worker_ids: Sequence[int]) -> None:
        """Load the lake bookings of these workers in one query (verification calls this)."""
        with self._lock:
            todo = sorted({int(w) for w in worker_ids} - set(self._lake_bookings))
        if not todo:
            return
        loaded: dict[int, list[Booking]] = {w: [] for w in todo}
        if self._placements_exist():
            labels = client_labels(self.lake)

            table = self.lake.read_arrow(
                "SELECT worker_id, client_id, shift_start, shift_end FROM placements "
                "WHERE status IN ('scheduled', 'completed') AND worker_id IN (SELECT unnest(?::BIGINT[])) "
                "ORDER BY worker_id, shift_start",
                [todo],
            )
            for row in table.to_pylist():
                client = row["client_id"]
                slug, name = labels.get(client, (None if client is None else str(client), None))
                loaded[int(row["worker_id"])].append(
                    Booking(
                        worker_id=int(row["worker_id"]),
                        start=_naive(row["shift_start"]),
                        end=_naive(row["shift_end"]),
                        client_id=slug,
                        client_name=name,
                        source="lake",
                    )
                )
        with self._lock:
            for worker_id, bookings in loaded.items():
                self._lake_bookings.setdefault(worker_id, bookings)

    def _placements_exist(self) -> bool:
        if self._has_placements is None:
            self._has_placements = has_dataset(self.lake, PLACEMENTS)
        return self._has_placements

    def bookings_for(self, worker_id: int) -> list[Booking]:
        """Every live booking of ``worker_id``, by start time."""
        self.prefetch([worker_id])
        with self._lock:
            lake = [
                b
                for b in self._lake_bookings.get(worker_id, [])
                if (b.worker_id, b.start) not in self._removed
            ]
            added = [b for b in self._added if b.worker_id == worker_id]
        return sorted(lake + added, key=lambda b: b.start)

    def conflicts(self, worker_id: int, start: datetime, end: datetime) -> list[Booking]:
        """Bookings of ``worker_id`` overlapping ``[start, end)``."""
        start, end = _naive(start), _naive(end)
        return [b for b in self.bookings_for(worker_id) if b.overlaps(start, end)]
