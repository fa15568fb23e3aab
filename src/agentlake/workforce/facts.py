"""What a client sees when it judges a fill: the workers' facts, its no-shows, the site.

Owns the reads the scenarios' judge and its feasibility check make of the lake:
``load_facts`` (the proposed workers' role, place, certifications and score columns as
``WorkerFacts``), ``client_lake_ids`` (a scenario client's ids in the ``clients`` dataset),
``load_no_shows`` (each worker's earlier no-shows at that client), ``site_of`` (the
coordinates distances are measured from, by the same gazetteer the agents use) and
``workers_near`` (every worker in the box around a site). It never writes, and it does not
own the judgement itself (``agentlake.scenarios.judge``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from agentlake.lake.versioned import has_dataset
from agentlake.workforce.geo import bounding_box, gazetteer
from agentlake.workforce.tables import CLIENTS, SCORE_COLUMNS, resolve_client

if TYPE_CHECKING:
    from agentlake.lake import Lake


_SCORES = "^(" + "|".join(SCORE_COLUMNS) + ")$"


@dataclass(frozen=True)
class WorkerFacts:
    """What the client can see about a worker (from the lake's workers table)."""

    worker_id: int
    role: str
    lat: float
    lon: float
    certifications: tuple[str, ...]
    reliability: float
    name: str = ""
    scores: Mapping[str, float] = field(default_factory=dict, compare=False)

    def score(self, name: str) -> float:
        """A score column's value (0 when the lake has no such column or no value)."""
        return self.reliability if name == "reliability" else float(self.scores.get(name, 0.0))


def load_facts(lake: Lake, worker_ids: Sequence[int]) -> dict[int, WorkerFacts]:
    """The client's view of the proposed workers (unknown ids are simply absent)."""
    ids = sorted({int(w) for w in worker_ids if isinstance(w, int) or str(w).lstrip("-").isdigit()})
    if not ids:
        return {}
    # COLUMNS(regex) selects the score columns this lake has (an ingested workers table may
    # lack some); reliability is required.
    table = lake.read_arrow(
        f"SELECT worker_id, role, lat, lon, certifications, name, COLUMNS('{_SCORES}') FROM workers "
        "WHERE worker_id IN (SELECT unnest(?::BIGINT[]))",
        [ids],
    )
    out = {}
    for row in table.to_pylist():
        scores = {name: float(row[name]) for name in SCORE_COLUMNS if row.get(name) is not None}
        out[int(row["worker_id"])] = WorkerFacts(
            worker_id=int(row["worker_id"]),
            role=str(row["role"] or ""),
            lat=float(row["lat"]),
            lon=float(row["lon"]),
            certifications=tuple(_certifications(row["certifications"])),
            reliability=scores.get("reliability", 0.0),
            name=str(row["name"] or ""),
            scores=scores,
        )
    return out


def _certifications(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [
        part.strip() for part in str(value).replace(";", ",").replace("|", ",").split(",") if part.strip()
    ]


def client_lake_ids(lake: Lake, *, lake_id: int | str | None, slug: str, name: str) -> list[str]:
    """A client's ids in the lake's ``clients`` dataset: ``lake_id``, else its slug, else its name.

    Empty when the lake does not know the client: it then has no history (no no-shows).
    """
    if lake_id is not None:
        return [str(lake_id)]
    if not has_dataset(lake, CLIENTS):
        return []
    found = resolve_client(lake, slug)  # the same slug -> id resolution the agents use
    if found is not None:
        return [str(found[0])]
    table = lake.read_arrow(
        "SELECT CAST(id AS VARCHAR) AS id FROM clients WHERE lower(name) = lower(?)", [name]
    )
    return [str(v) for v in table.column("id").to_pylist()]


def load_no_shows(
    lake: Lake, client_ids: Sequence[str], worker_ids: Sequence[int], before: date
) -> dict[int, list[date]]:
    """Dates of each worker's no-shows at the client (its lake ids) before ``before``."""
    ids = sorted({int(w) for w in worker_ids})
    if not ids or not client_ids:
        return {}
    table = lake.read_arrow(
        "SELECT worker_id, CAST(shift_start AS DATE) AS day FROM placements WHERE status = 'no_show' "
        "AND CAST(client_id AS VARCHAR) IN (SELECT unnest(?::VARCHAR[])) "
        "AND CAST(shift_start AS DATE) < ? AND worker_id IN (SELECT unnest(?::BIGINT[]))",
        [list(client_ids), before, ids],
    )
    out: dict[int, list[date]] = {}
    for row in table.to_pylist():
        out.setdefault(int(row["worker_id"]), []).append(row["day"])
    return out


def site_of(lake: Lake, city: str, state: str) -> tuple[float, float]:
    """Coordinates distances are measured from: the agents' own gazetteer, so both agree."""
    place = gazetteer(lake).resolve(city, state)
    return (place.lat, place.lon)


def workers_near(lake: Lake, lat: float, lon: float, radius_miles: float) -> list[int]:
    """Every worker inside the bounding box of the circle (an upper bound on who is near)."""
    lat_min, lat_max, lon_min, lon_max = bounding_box(lat, lon, radius_miles)
    table = lake.read_arrow(
        "SELECT worker_id FROM workers WHERE lat BETWEEN ? AND ? AND lon BETWEEN ? AND ?",
        [lat_min, lat_max, lon_min, lon_max],
    )
    return [int(v) for v in table.column("worker_id").to_pylist()]
