"""The search for qualified workers: a role near a city, holding what the order requires.

Owns ``CandidateQuery`` (what to search for, including the filters a lesson's machine action
adds), its SQL (``candidate_sql``: role and synonyms, a bounding box then the exact radius,
minimum scores, no prior no-show at a client, a checked WHERE fragment) and
``find_candidates``, the search the rules policy and the ``find_workers`` tool use, and
``explain_empty``: why a search found no one and what would find someone.
Certifications are checked after the SQL with the catalogue's normaliser (``roles``), so
search and verification share one definition of "holds OSHA 30". It does not own whether a
fill passes (``verify``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

from agentlake.errors import UserError
from agentlake.lake import check_where
from agentlake.lake.versioned import has_dataset
from agentlake.workforce.geo import Place, bounding_box, gazetteer, haversine_sql
from agentlake.workforce.roles import (
    closest_certifications,
    closest_roles,
    find_role,
    known_certification,
    missing_certifications,
    role_names,
)
from agentlake.workforce.tables import PLACEMENTS, SCORE_COLUMNS, trusted_read

if TYPE_CHECKING:
    from agentlake.lake import Lake

# Scores a lesson's min_scores may name; anything else is refused rather than spliced into SQL.
KNOWN_SCORES = SCORE_COLUMNS


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
    only_ids: list[int] | None = None  # search among these workers only (e.g. held spares)
    also_roles: list[str] = field(default_factory=list)  # roles a client takes for ``role``
    min_availability: float | None = None
    limit: int = 20
    # Workers to rank first (a playbook: ones the client accepted before); a boost, not a filter.
    prefer_ids: list[int] = field(default_factory=list)

    def effective_radius(self) -> float:
        if self.max_distance_miles is not None:
            return min(self.radius_miles, self.max_distance_miles)
        return self.radius_miles


def candidate_sql(query: CandidateQuery, origin: Place) -> tuple[str, dict[str, Any]]:
    """The SQL and parameters of the prefilter (role, box, radius, scores, lesson filters).

    Certifications are checked afterwards in Python with the data package's normaliser, so
    that search and verification share one definition of "holds OSHA 30".
    """
    radius = query.effective_radius()
    lat_min, lat_max, lon_min, lon_max = bounding_box(origin.lat, origin.lon, radius)
    params: dict[str, Any] = {
        "roles": sorted(set().union(*(role_names(r) for r in (query.role, *query.also_roles)))),
        "lat": origin.lat,
        "lon": origin.lon,
        "lat_min": lat_min,
        "lat_max": lat_max,
        "lon_min": lon_min,
        "lon_max": lon_max,
        "radius": radius,
        "exclude": sorted({int(w) for w in query.exclude_ids}) or [-1],
        "prefer": sorted({int(w) for w in query.prefer_ids}) or [-1],
    }
    where = [
        "lower(role) IN (SELECT unnest($roles::VARCHAR[]))",
        "lat BETWEEN $lat_min AND $lat_max",
        "lon BETWEEN $lon_min AND $lon_max",
        "worker_id NOT IN (SELECT unnest($exclude::BIGINT[]))",
    ]
    if query.only_ids is not None:
        params["only"] = sorted({int(w) for w in query.only_ids}) or [-1]
        where.append("worker_id IN (SELECT unnest($only::BIGINT[]))")
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
        "ORDER BY worker_id IN (SELECT unnest($prefer::BIGINT[])) DESC, "
        "reliability DESC NULLS LAST, distance_miles ASC, worker_id ASC"
    )
    return sql, params


def find_candidates(lake: Lake, query: CandidateQuery) -> list[dict[str, Any]]:
    """Workers matching ``query``, best first (``prefer_ids`` first, then reliability, then
    distance), at most ``limit``.

    Each row carries the worker's columns plus ``distance_miles`` (rounded to 0.1). Raises
    ``UserError`` for an unknown city, an unknown score name or a refused ``extra_where``.
    """
    if query.exclude_no_show_client is not None and not has_dataset(lake, PLACEMENTS):
        query = CandidateQuery(**{**query.__dict__, "exclude_no_show_client": None})
    origin = gazetteer(lake).resolve(query.city, query.state)
    sql, params = candidate_sql(query, origin)
    try:
        table = trusted_read(lake, sql, params)
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


# Counting a filter's survivors needs every row, not the first ``limit``.
_COUNT_ALL = 1_000_000


def explain_empty(lake: Lake, query: CandidateQuery) -> str:
    """Why ``query`` finds no worker, and what would: one or two sentences for an agent.

    An unknown role or certification names the closest known ones (and the certifications
    the role's workers hold); otherwise the filters are added one at a time to the bare
    search (role, place, radius) and the first that leaves no one is named, with the count
    just before it. Raises what ``find_candidates`` raises (an unknown city).
    """
    role = find_role(query.role)
    if role is None:
        return f"{query.role!r} is not a known role; the closest known roles are {', '.join(closest_roles(query.role))}."
    unknown = [req for req in query.requirements if known_certification(req) is None]
    if unknown:
        held = ", ".join(name for name, _ in role.certifications)
        parts = []
        for req in unknown:
            named = (
                "it names the role, not a certification"
                if find_role(req) is role
                else ("closest known: " + ", ".join(closest_certifications(req)))
            )
            parts.append(f"{req!r} is not a known certification ({named})")
        return f"{'; '.join(parts)}. {role.name} workers hold: {held}. Remove it from requirements or use one of those."
    bare = CandidateQuery(
        role=query.role,
        city=query.city,
        state=query.state,
        radius_miles=query.radius_miles,
        exclude_ids=list(query.exclude_ids),
        limit=_COUNT_ALL,
    )
    steps: list[tuple[str, dict[str, Any]]] = []
    if query.min_availability is not None:
        steps.append(
            (f"availability >= {query.min_availability:g}", {"min_availability": query.min_availability})
        )
    if query.max_distance_miles is not None and query.max_distance_miles < query.radius_miles:
        steps.append(
            (f"within {query.max_distance_miles:g} miles", {"max_distance_miles": query.max_distance_miles})
        )
    for name, value in sorted(query.min_scores.items()):
        steps.append((f"{name} >= {value:g}", {"min_scores": {**bare.min_scores, name: value}}))
    for req in query.requirements:
        steps.append((f"holding {req}", {"requirements": [*bare.requirements, req]}))
    if query.exclude_no_show_client is not None:
        steps.append(
            ("no prior no-show at the client", {"exclude_no_show_client": query.exclude_no_show_client})
        )
    if query.extra_where:
        steps.append((f"WHERE {query.extra_where}", {"extra_where": query.extra_where}))
    where = f"{role.name} workers within {query.radius_miles:g} miles of {query.city}, {query.state}"
    count = len(find_candidates(lake, bare))
    if count == 0:
        wider = CandidateQuery(**{**bare.__dict__, "radius_miles": min(500.0, query.radius_miles * 2)})
        more = len(find_candidates(lake, wider))
        return f"no {where}; within {wider.radius_miles:g} miles there are {more}."
    funnel = [f"{where}: {count}"]
    for label, change in steps:
        for key, value in change.items():
            setattr(bare, key, value)
        survivors = len(find_candidates(lake, bare))
        funnel.append(f"{label}: {survivors}")
        if survivors == 0:
            return f"{'; '.join(funnel)}. The filter {label!r} left no one: drop or loosen it."
        count = survivors
    return f"{'; '.join(funnel)}; the last limits or exclusions left no one."
