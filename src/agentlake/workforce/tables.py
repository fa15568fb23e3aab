"""The domain's tables in the lake, and the trusted reads of them that others share.

Owns the names of the workforce datasets (``workers``, ``placements``, ``clients``; the
dataset and column hybrid search ranks workers by), reading workers by id
(:func:`trusted_read`, :func:`fetch_workers`: library SQL through ``Lake.read_bounded``, so a
lesson's filter runs under the SQL timeout; a missing table becomes the ``UserError`` saying
how to create it) and the clients' slugs and names (:func:`resolve_client`, :func:`client_labels`). It does not own searching for workers
(``candidates``), a worker's history (``profile``) or which datasets changed
(``agentlake.lake.versioned``).

Columns used: workers(worker_id, name, role, city, state, lat, lon, certifications, the score
columns such as reliability and availability); placements(worker_id, client_id, shift_start,
shift_end, status); clients(id, name).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from agentlake.errors import UserError
from agentlake.lake.versioned import PerLakeCache, dataset_versions
from agentlake.workforce.order import slugify

if TYPE_CHECKING:
    from agentlake.lake import Lake

WORKERS, PLACEMENTS, CLIENTS = "workers", "placements", "clients"
TABLES = (WORKERS, PLACEMENTS, CLIENTS)
# What hybrid search ranks: the workers, by their resumes.
SEARCH_DATASET, SEARCH_COLUMN = WORKERS, "resume_text"
# The workers' score columns (0-1, higher is better): what a lesson's min_scores may name.
SCORE_COLUMNS = (
    "reliability",
    "responsiveness",
    "engagement",
    "communications",
    "compliance",
    "availability",
)
# One question of each kind over the workforce, which the first-run demo answers.
EXAMPLE_SQL = (
    "SELECT role, count(*) AS workers, round(avg(reliability), 2) AS avg_reliability "
    "FROM workers WHERE state = 'OH' GROUP BY role ORDER BY workers DESC, role LIMIT 5"
)
EXAMPLE_QUESTION = "certified welder experienced with MIG and TIG welding"
EXAMPLE_WHERE = "role = 'Welder' AND state = 'OH'"

NO_WORKERS = "the lake has no workers dataset: run `agentlake data generate` or ingest one with key worker_id"


def workers_table_version(lake: Lake) -> object:
    """Changes whenever ``workers`` is written; ``None`` without a workers dataset."""
    return dataset_versions(lake).get(WORKERS)


def trusted_read(lake: Lake, sql: str, params: list | dict) -> Any:
    """Library SQL as Arrow, under the lake's bounded read (``sql_timeout_s``, the memory
    limit): a lesson's checked filter is spliced into the candidate search. A missing table
    becomes the ``UserError`` saying how to create it.

    Checking for the table first would cost a catalog query on every call; asking forgiveness
    costs nothing on the normal path.
    """
    try:
        return lake.read_bounded(sql, params, what="the candidate search")
    except duckdb.CatalogException as exc:
        if WORKERS in str(exc):
            raise UserError(NO_WORKERS) from None
        raise UserError(f"the lake is missing a table the agents need: {str(exc).splitlines()[0]}") from None


def fetch_workers(
    lake: Lake, worker_ids: Sequence[int], columns: Sequence[str] | None = None
) -> dict[int, dict[str, Any]]:
    """Rows of ``workers`` by id (unknown ids are absent). ``columns`` default: all."""
    ids = sorted({int(w) for w in worker_ids})
    if not ids:
        return {}
    select = "*" if columns is None else ", ".join(dict.fromkeys(["worker_id", *columns]))
    table = trusted_read(
        lake, f"SELECT {select} FROM workers WHERE worker_id IN (SELECT unnest(?::BIGINT[]))", [ids]
    )
    return {int(row["worker_id"]): row for row in table.to_pylist()}


_client_maps: PerLakeCache[dict[str, tuple[int, str]]] = PerLakeCache()


def _clients(lake: Lake) -> dict[str, tuple[int, str]]:
    """slug and str(id) -> (id, name) for every client; empty without a clients dataset."""
    version = dataset_versions(lake).get(CLIENTS)
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


def missing_tables(lake: Lake, needed: Sequence[str] = (WORKERS, PLACEMENTS)) -> list[str]:
    """The ``needed`` datasets the lake does not have, in order (empty when all are there)."""
    versions = dataset_versions(lake)
    return [name for name in needed if name not in versions]
