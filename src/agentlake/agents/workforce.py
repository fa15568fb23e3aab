"""The agents' view of the workforce tables: roles, certifications, clients, candidate search.

Owns every piece of SQL the agents run against ``workers``, ``placements`` and ``clients`` in
library code (trusted reads through ``Lake.read_arrow``), the matching rules shared by search
and verification (a role matches its catalogue synonyms; a certification matches across its
spellings through the data package's ``normalize_certification``) and ``find_candidates``,
the search the rules policy and the ``find_workers`` tool use. It does not own the catalogue
(``agentlake.data.roles``) or the decision whether a fill passes (``verify``).

Columns used: workers(worker_id, name, role, city, state, lat, lon, certifications, the score
columns such as reliability and availability); placements(worker_id, client_id, shift_start,
shift_end, status); clients(id, name).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from agentlake.agents.geo import Place, bounding_box, gazetteer, haversine_sql
from agentlake.agents.order import slugify
from agentlake.agents.versioned import PerLakeCache
from agentlake.errors import UserError

if TYPE_CHECKING:
    from agentlake.lake import Lake

WORKER_COLUMNS = ("worker_id", "name", "role", "city", "state", "lat", "lon", "certifications")
SCORE_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
# Scores a lesson's min_scores may name; anything else is refused rather than spliced into SQL.
KNOWN_SCORES = ("reliability", "responsiveness", "engagement", "communications", "compliance", "availability")


# --- roles and certifications ------------------------------------------------------------------


@lru_cache(maxsize=512)
def role_names(role: str) -> frozenset[str]:
    """Lower-case role names accepted for ``role``: the catalogue role and its synonyms.

    'Welders', 'welding' and 'Welder' all give the Welder set; a role outside the catalogue
    matches only itself.
    """
    from agentlake.data.roles import find_role

    text = " ".join(role.split())
    found = find_role(text)
    if found is None and text.lower().endswith("s"):
        found = find_role(text[:-1])
    if found is None:
        return frozenset({text.casefold()})
    return frozenset({found.name.casefold(), *(s.casefold() for s in found.synonyms)})


def canonical_role(role: str) -> str:
    """The catalogue's name for ``role`` ('forklift driver' -> 'Forklift Operator'), else ``role``."""
    from agentlake.data.roles import find_role

    text = " ".join(role.split())
    found = find_role(text) or (find_role(text[:-1]) if text.lower().endswith("s") else None)
    return found.name if found is not None else text


def same_role(worker_role: str | None, order_role: str) -> bool:
    """True when a worker's role satisfies the ordered role (synonyms both ways)."""
    if not worker_role:
        return False
    wanted = role_names(order_role)
    return worker_role.casefold() in wanted or bool(role_names(worker_role) & wanted)


def certification_key(name: str) -> str:
    """The canonical, case-folded name of a certification as written anywhere."""
    from agentlake.data.roles import normalize_certification

    return normalize_certification(name).casefold()


def held_certifications(value: Any) -> set[str]:
    """Canonical keys of the certifications in a workers.certifications value."""
    if value is None:
        return set()
    parts: Iterable[Any] = value if isinstance(value, (list, tuple)) else re.split(r"[,;|]", str(value))
    return {certification_key(str(part)) for part in parts if str(part).strip()}


def missing_certifications(value: Any, required: Sequence[str]) -> list[str]:
    """The required certifications (as written in ``required``) a worker does not hold."""
    held = held_certifications(value)
    return [req for req in required if certification_key(req) not in held]


# --- reads ----------------------------------------------------------------------------------


_snapshot: contextvars.ContextVar[dict[str, dict[str, object]] | None] = contextvars.ContextVar(
    "agentlake_agents_catalog_snapshot", default=None
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
    counts rows and loads histories: this runs several times per task.
    """
    snapshot = _snapshot.get()
    if snapshot is not None:
        key = str(lake.path)
        if key not in snapshot:
            snapshot[key] = _query_versions(lake)
        return snapshot[key]
    return _query_versions(lake)


def _query_versions(lake: Lake) -> dict[str, object]:
    import duckdb

    with lake.cursor() as cur:
        try:
            rows = cur.execute("SELECT name, updated_at FROM _catalog").fetchall()
        except duckdb.CatalogException:  # a lake file without a catalog has no datasets
            return {}
    return {str(name): updated for name, updated in rows}


def has_dataset(lake: Lake, name: str) -> bool:
    return name in dataset_versions(lake)


def workers_table_version(lake: Lake) -> object:
    """Changes whenever ``workers`` is written; ``None`` without a workers dataset."""
    return dataset_versions(lake).get("workers")


def worker_cities(lake: Lake) -> list[Place]:
    """Each distinct (city, state) of ``workers`` at its workers' mean coordinates."""
    table = lake.read_arrow(
        "SELECT city, state, avg(lat) AS lat, avg(lon) AS lon FROM workers "
        "WHERE city IS NOT NULL AND state IS NOT NULL AND lat IS NOT NULL AND lon IS NOT NULL GROUP BY city, state"
    )
    return [
        Place(str(r["city"]), str(r["state"]).upper(), float(r["lat"]), float(r["lon"]))
        for r in table.to_pylist()
    ]


NO_WORKERS = "the lake has no workers dataset: run `agentlake data generate` or ingest one with key worker_id"


def _read(lake: Lake, sql: str, params: list | dict) -> Any:
    """A trusted read as Arrow; a missing table becomes the ``UserError`` saying how to create it.

    Checking for the table first would cost a catalog query on every call; asking forgiveness
    costs nothing on the normal path.
    """
    import duckdb

    with lake.cursor() as cur:
        try:
            return cur.sql(sql, params=params).to_arrow_table()
        except duckdb.CatalogException as exc:
            if "workers" in str(exc):
                raise UserError(NO_WORKERS) from None
            raise UserError(
                f"the lake is missing a table the agents need: {str(exc).splitlines()[0]}"
            ) from None


def fetch_workers(
    lake: Lake, worker_ids: Sequence[int], columns: Sequence[str] | None = None
) -> dict[int, dict[str, Any]]:
    """Rows of ``workers`` by id (unknown ids are absent). ``columns`` default: all."""
    ids = sorted({int(w) for w in worker_ids})
    if not ids:
        return {}
    select = "*" if columns is None else ", ".join(dict.fromkeys(["worker_id", *columns]))
    table = _read(
        lake, f"SELECT {select} FROM workers WHERE worker_id IN (SELECT unnest(?::BIGINT[]))", [ids]
    )
    return {int(row["worker_id"]): row for row in table.to_pylist()}


_client_maps: PerLakeCache[dict[str, tuple[int, str]]] = PerLakeCache()


def _clients(lake: Lake) -> dict[str, tuple[int, str]]:
    """slug and str(id) -> (id, name) for every client; empty without a clients dataset."""
    version = dataset_versions(lake).get("clients")
    if version is None:
        return {}

    def build() -> dict[str, tuple[int, str]]:
        out: dict[str, tuple[int, str]] = {}
        for row in lake.read_arrow("SELECT id, name FROM clients").to_pylist():
            entry = (int(row["id"]), str(row["name"]))
            out.setdefault(slugify(entry[1]), entry)
            out[str(entry[0])] = entry
        return out

    return _client_maps.get(str(lake.path), version, build)


def resolve_client(lake: Lake, client_id: str | None) -> tuple[int, str] | None:
    """The lake's (id, name) for an order's client id: its slug ('riverfront-steel') or number."""
    if not client_id:
        return None
    return _clients(lake).get(str(client_id).strip().lower())


def client_labels(lake: Lake) -> dict[int, tuple[str, str]]:
    """Lake client id -> (slug, name), for labelling bookings (one lookup per batch, not per row)."""
    return {entry[0]: (slugify(entry[1]), entry[1]) for key, entry in _clients(lake).items() if key.isdigit()}


# --- candidate search -------------------------------------------------------------------------


@dataclass
class CandidateQuery:
    """What to search for. ``radius_miles`` is the order's; ``max_distance_miles`` may tighten it."""

    role: str
    city: str
    state: str
    radius_miles: float = 25.0
    requirements: list[str] = field(default_factory=list)
    min_scores: dict[str, float] = field(default_factory=dict)
    max_distance_miles: float | None = None
    exclude_no_show_client: int | None = None
    extra_where: str | None = None
    exclude_ids: list[int] = field(default_factory=list)
    min_availability: float | None = None
    limit: int = 20

    def effective_radius(self) -> float:
        if self.max_distance_miles is not None:
            return min(self.radius_miles, self.max_distance_miles)
        return self.radius_miles


def candidate_sql(query: CandidateQuery, origin: Place) -> tuple[str, dict[str, Any]]:
    """The SQL and parameters of the prefilter (role, box, radius, scores, lesson filters).

    Certifications are checked afterwards in Python with the data package's normaliser, so
    that search and verification share one definition of "holds OSHA 30".
    """
    from agentlake.lake import check_where

    radius = query.effective_radius()
    lat_min, lat_max, lon_min, lon_max = bounding_box(origin.lat, origin.lon, radius)
    params: dict[str, Any] = {
        "roles": sorted(role_names(query.role)),
        "lat": origin.lat,
        "lon": origin.lon,
        "lat_min": lat_min,
        "lat_max": lat_max,
        "lon_min": lon_min,
        "lon_max": lon_max,
        "radius": radius,
        "exclude": sorted({int(w) for w in query.exclude_ids}) or [-1],
    }
    where = [
        "lower(role) IN (SELECT unnest($roles::VARCHAR[]))",
        "lat BETWEEN $lat_min AND $lat_max",
        "lon BETWEEN $lon_min AND $lon_max",
        "worker_id NOT IN (SELECT unnest($exclude::BIGINT[]))",
    ]
    outer = ["distance_miles <= $radius"]
    for name, minimum in sorted(query.min_scores.items()):
        if name not in KNOWN_SCORES:
            raise UserError(f"unknown score {name!r} in min_scores; known scores: {', '.join(KNOWN_SCORES)}")
        params[f"min_{name}"] = float(minimum)
        outer.append(f"{name} >= $min_{name}")
    if query.min_availability is not None:
        params["min_availability_floor"] = float(query.min_availability)
        outer.append("availability >= $min_availability_floor")
    if query.extra_where:
        outer.append(f"({check_where(query.extra_where)})")
    if query.exclude_no_show_client is not None:
        params["client"] = int(query.exclude_no_show_client)
        outer.append(
            "NOT EXISTS (SELECT 1 FROM placements p WHERE p.worker_id = w.worker_id "
            "AND p.client_id = $client AND p.status = 'no_show')"
        )
    sql = (
        f"SELECT * FROM (SELECT *, {haversine_sql('lat', 'lon')} AS distance_miles FROM workers "
        f"WHERE {' AND '.join(where)}) AS w WHERE {' AND '.join(outer)} "
        "ORDER BY reliability DESC NULLS LAST, distance_miles ASC, worker_id ASC"
    )
    return sql, params


def find_candidates(lake: Lake, query: CandidateQuery) -> list[dict[str, Any]]:
    """Workers matching ``query``, best first (reliability, then distance), at most ``limit``.

    Each row carries the worker's columns plus ``distance_miles`` (rounded to 0.1). Raises
    ``UserError`` for an unknown city, an unknown score name or a refused ``extra_where``.
    """
    if query.exclude_no_show_client is not None and not has_dataset(lake, "placements"):
        query = CandidateQuery(**{**query.__dict__, "exclude_no_show_client": None})
    origin = gazetteer(lake).resolve(query.city, query.state)
    sql, params = candidate_sql(query, origin)
    import duckdb

    try:
        table = _read(lake, sql, params)
    except duckdb.Error as exc:
        # The only user-written part is a lesson's extra_where: name it.
        raise UserError(
            f"candidate search failed: {str(exc).splitlines()[0]} (extra_where: {query.extra_where!r})"
        ) from None
    rows = []
    for row in table.to_pylist():
        if query.requirements and missing_certifications(row.get("certifications"), query.requirements):
            continue
        row.pop("resume_text", None)
        row["distance_miles"] = round(float(row["distance_miles"]), 1)
        rows.append(row)
        if len(rows) >= query.limit:
            break
    return rows
