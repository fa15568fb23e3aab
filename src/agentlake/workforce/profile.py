"""A worker and their placement history, read from the lake: the library behind ``/profile/{id}``.

Owns the profile's shape (the worker's row, every placement with its client's name, counts by
status, the clients where they did not show) and the trusted reads that build it. It does not
own the workforce's schema (``generator``), who is booked when during a run (``schedule``) or
how workers are ranked (``candidates``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field, PlainSerializer, WithJsonSchema

from agentlake.errors import NotFoundError, UserError
from agentlake.lake.catalog import table_exists

if TYPE_CHECKING:
    from agentlake.lake import Lake


# Shifts are stored as the site's wall-clock time, without a zone; on the wire they stay so
# (ISO 8601 without an offset), and the schema says so instead of claiming RFC 3339 date-time.
LocalDateTime = Annotated[
    datetime,
    PlainSerializer(lambda value: value.isoformat(), return_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "description": "Local (site) date and time, ISO 8601 without offset.",
            "examples": ["2026-04-28T08:00:00"],
        }
    ),
]


class Placement(BaseModel):
    """One shift a worker was placed on."""

    client_id: int | None = None
    client_name: str | None = Field(None, description="From the clients dataset, when present.")
    role: str | None = None
    shift_start: LocalDateTime | None = None
    shift_end: LocalDateTime | None = None
    status: str | None = Field(None, description="scheduled, completed, cancelled or no_show.")


class WorkerProfile(BaseModel):
    """A worker's record and history: what a staffer checks before placing them again."""

    worker: dict[str, Any]
    placements: list[Placement] = Field(..., description="Newest first.")
    by_status: dict[str, int] = Field(..., description="Placements listed, per status.")
    no_show_clients: list[str] = Field(
        ..., description="Clients (names, else ids) where the worker did not show."
    )


def get_worker(lake: Lake, worker_id: int) -> dict[str, Any]:
    """The worker's row from the ``workers`` dataset.

    ``NotFoundError`` for an unknown worker, ``UserError`` when the lake has no workers dataset.
    """
    row = get_workers(lake, [worker_id]).get(worker_id)
    if row is None:
        raise unknown_worker(worker_id)
    return row


def unknown_worker(worker_id: int) -> NotFoundError:
    """The error for an id with no worker (404 over HTTP)."""
    return NotFoundError(f"no worker with worker_id {worker_id}")


def get_workers(lake: Lake, worker_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The rows of these workers by id, in one read; ids with no worker are left out.

    ``UserError`` when the lake has no workers dataset. One indexed read on its own cursor: this
    sits on the gateway's hottest path, where a query's fixed cost (~0.45 ms of CPU) dwarfs a
    row's, so concurrent misses share one (``gateway.worker_cache``).
    """
    import duckdb

    ids = list(dict.fromkeys(worker_ids))
    if not ids:
        return {}
    with lake.cursor() as cur:
        try:
            cur.execute(f"SELECT * FROM workers WHERE worker_id IN ({', '.join('?' * len(ids))})", ids)
        except duckdb.CatalogException:
            raise UserError(
                "the lake has no workers dataset: run `agentlake data generate` or ingest one"
            ) from None
        rows = cur.fetchall()
        columns = [column[0] for column in cur.description or []]
    records = (dict(zip(columns, row, strict=True)) for row in rows)
    return {record["worker_id"]: record for record in records}


def worker_profile(lake: Lake, worker_id: int, *, max_placements: int = 200) -> WorkerProfile:
    """The worker with their placements, newest first (at most ``max_placements``).

    ``NotFoundError`` for an unknown worker; a lake without ``placements`` gives an empty history.
    """
    worker = get_worker(lake, worker_id)
    rows: list[dict[str, Any]] = []
    with lake.cursor() as cur:
        placements_exist, clients_exist = table_exists(cur, "placements"), table_exists(cur, "clients")
    if placements_exist:
        name = "c.name" if clients_exist else "NULL"
        join = "LEFT JOIN clients c ON c.id = p.client_id" if clients_exist else ""
        rows = lake.read_arrow(
            f"SELECT p.client_id, {name} AS client_name, p.role, p.shift_start, p.shift_end, p.status "
            f"FROM placements p {join} WHERE p.worker_id = ? ORDER BY p.shift_start DESC LIMIT ?",
            [worker_id, max_placements],
        ).to_pylist()
    placements = [Placement(**row) for row in rows]
    by_status: dict[str, int] = {}
    for placement in placements:
        by_status[placement.status or "unknown"] = by_status.get(placement.status or "unknown", 0) + 1
    no_shows = [p.client_name or str(p.client_id) for p in placements if p.status == "no_show"]
    return WorkerProfile(
        worker=worker,
        placements=placements,
        by_status=by_status,
        no_show_clients=list(dict.fromkeys(no_shows)),
    )
