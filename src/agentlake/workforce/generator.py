"""The synthetic workforce: ``workers``, ``clients`` and ``placements``, deterministic per seed.

Owns the generator (:func:`generate_workforce`, column-wise NumPy and pyarrow, no per-row
Python for the large tables), the archetypes that correlate scores, experience, certificates
and no-shows, and the doors into the lake (:func:`load_workforce`, :func:`ensure_workforce`) and onto disk
(:func:`write_workforce_files`). Reference data comes from ``cities`` (real US cities and
ZIPs), ``names`` (Faker's en_US name lists, frozen), ``roles`` (role catalogue, certification spellings);
resume wording from ``resumes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from agentlake.errors import UserError
from agentlake.workforce.catalogue import CERTIFICATIONS, ROLES, SECTORS
from agentlake.workforce.cities import load_cities
from agentlake.workforce.names import load_names
from agentlake.workforce.resumes import build_resumes, fill_templates, join_present

if TYPE_CHECKING:
    from agentlake.lake import IngestResult, Lake

ARCHETYPES = ("reliable veteran", "steady regular", "rising star", "new entrant", "part-timer", "flaky")
SCORE_COLUMNS = (
    "reliability",
    "responsiveness",
    "engagement",
    "communications",
    "compliance",
    "availability",
)
_ARCH_SHARE = np.array([0.18, 0.32, 0.12, 0.18, 0.10, 0.10])
# Mean of each score (columns as SCORE_COLUMNS) per archetype, and the spread around it.
_ARCH_MEANS = np.array(
    [
        [0.92, 0.85, 0.82, 0.84, 0.93, 0.80],
        [0.80, 0.74, 0.70, 0.72, 0.82, 0.75],
        [0.82, 0.88, 0.90, 0.82, 0.80, 0.82],
        [0.66, 0.70, 0.72, 0.62, 0.64, 0.80],
        [0.78, 0.66, 0.60, 0.70, 0.78, 0.32],
        [0.38, 0.45, 0.48, 0.50, 0.55, 0.70],
    ]
)
_ARCH_SD = np.array([0.05, 0.08, 0.07, 0.12, 0.09, 0.12])
_YEARS = np.array([[8, 26], [3, 13], [1, 6], [0, 2], [1, 11], [0, 9]])  # [low, high) per archetype
_CERT_FACTOR = np.array([1.1, 1.0, 0.95, 0.6, 0.85, 0.8])
_PAST_SHIFTS = np.array([3.0, 2.5, 2.2, 0.8, 1.4, 1.6])  # Poisson means
_FUTURE_SHIFTS = np.array([0.8, 0.7, 0.7, 0.5, 0.4, 0.5])
# Chance a worker has a no-show on record: about 5% of the workforce overall.
_NO_SHOW = np.array([0.005, 0.015, 0.01, 0.05, 0.04, 0.32])

# Shifts run 2026-03-01 .. 2026-05-10; before AS_OF they are history, after it scheduled,
# so late April holds both and schedule conflicts are possible.
SHIFTS_FROM = datetime(2026, 3, 1)
AS_OF = datetime(2026, 4, 20)
_FUTURE_DAYS = 21
_START_HOURS = np.array([6, 7, 8, 14, 15, 19, 22])
_START_WEIGHTS = np.array([0.2, 0.25, 0.2, 0.1, 0.1, 0.05, 0.1])
_SHIFT_HOURS = np.array([8, 10, 12])
_SHIFT_WEIGHTS = np.array([0.6, 0.25, 0.15])

_SHIFT_PREFS = np.array(["day", "night", "swing", "weekend", "early-morning"])
_DOMAINS = np.array(
    [
        "gmail.com",
        "yahoo.com",
        "outlook.com",
        "hotmail.com",
        "icloud.com",
        "aol.com",
        "comcast.net",
        "att.net",
    ]
)
_DOMAIN_WEIGHTS = np.array([0.45, 0.15, 0.1, 0.1, 0.08, 0.05, 0.04, 0.03])
_EMAILS = (
    "{first}.{last}@{domain}",
    "{first}{last}{nn}@{domain}",
    "{initial}{last}@{domain}",
    "{first}_{last}{nn}@{domain}",
    "{last}.{first}@{domain}",
    "{first}{nn}@{domain}",
)

_INDUSTRIES = {
    "light industrial": ("Manufacturing", "Food Processing", "Packaging", "Plastics"),
    "skilled trades": ("Metal Fabrication", "Construction", "Utilities", "Automotive Parts"),
    "logistics": ("Warehousing & Distribution", "Freight & Trucking", "E-commerce Fulfillment"),
    "healthcare": ("Hospital", "Senior Living", "Home Health", "Outpatient Clinic"),
}
_NOUNS = {
    "Manufacturing": ("Manufacturing", "Industries", "Products", "Works"),
    "Food Processing": ("Foods", "Provisions", "Food Co."),
    "Packaging": ("Packaging", "Container", "Pack Solutions"),
    "Plastics": ("Plastics", "Molding", "Polymers"),
    "Metal Fabrication": ("Steel", "Metalworks", "Fabrication", "Iron Works"),
    "Construction": ("Builders", "Construction", "Contracting"),
    "Utilities": ("Energy", "Power & Light", "Utility Services"),
    "Automotive Parts": ("Automotive", "Auto Parts", "Drivetrain"),
    "Warehousing & Distribution": ("Distribution", "Logistics", "Supply"),
    "Freight & Trucking": ("Freight", "Transport", "Trucking"),
    "E-commerce Fulfillment": ("Fulfillment", "Commerce Logistics", "Parcel Center"),
    "Hospital": ("Medical Center", "Health System", "Hospital"),
    "Senior Living": ("Senior Living", "Care Center", "Manor"),
    "Home Health": ("Home Care", "Home Health", "Caregivers"),
    "Outpatient Clinic": ("Family Clinic", "Medical Group", "Health Partners"),
}
_PREFIXES = (
    "Riverfront",
    "Lakeside",
    "Summit",
    "Keystone",
    "Heartland",
    "Pioneer",
    "Liberty",
    "Frontier",
    "Harbor",
    "Union",
    "Crossroads",
    "Great Lakes",
    "Blue Ridge",
    "Prairie",
    "Granite",
    "Cedar",
    "Ironwood",
    "Northstar",
    "Midwest",
    "Allied",
    "Premier",
    "Tri-County",
    "Evergreen",
    "Bayview",
    "Canyon",
    "Red Oak",
    "Silver Creek",
    "Eagle",
    "Patriot",
    "Sterling",
    "Gateway",
    "Lone Star",
    "Sunbelt",
    "Pacific",
    "Atlantic",
    "Valley",
)
# Manufacturing-belt states hire more trades and plant workers (the flagship scenario fills
# welders in Cleveland), so their role mix leans that way.
BELT_STATES = ("OH", "MI", "IN", "PA", "IL", "WI")
_BELT_FACTOR = {"light industrial": 1.5, "skilled trades": 2.5, "logistics": 1.0, "healthcare": 1.0}
# The flagship scenario's client ("fill 3 x Welder in Cleveland, OH for Riverfront Steel").
ANCHOR_CLIENT = ("Riverfront Steel", "Metal Fabrication", "Cleveland", "OH")


@dataclass(frozen=True)
class Workforce:
    """The three generated tables, as Arrow."""

    workers: pa.Table
    clients: pa.Table
    placements: pa.Table
    seed: int

    def tables(self) -> dict[str, tuple[pa.Table, str | None]]:
        """Dataset name -> (table, key column), in load order."""
        return {
            "clients": (self.clients, "id"),
            "workers": (self.workers, "worker_id"),
            "placements": (self.placements, None),
        }


def _weighted(rng: np.random.Generator, weights: np.ndarray, size: int) -> np.ndarray:
    """Indices drawn with probability proportional to ``weights`` (inverse CDF, vectorised)."""
    cdf = np.cumsum(weights, dtype=np.float64)
    return np.minimum(np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right"), len(weights) - 1)


def _join_first(columns: list[pa.Array], keep: np.ndarray, sep: str) -> pa.Array:
    """Join the first ``keep[i]`` of ``columns`` for row i, skipping nulls; null if none."""
    masked = [
        pc.if_else(pa.array(keep > j), column, pa.nulls(len(column), pa.string()))
        for j, column in enumerate(columns)
    ]
    return join_present(masked, sep)


def generate_workforce(workers: int = 50_000, seed: int = 7, clients: int = 300) -> Workforce:
    """Generate the workforce tables for ``workers`` people and ``clients`` employers.

    The same ``(workers, seed, clients)`` always gives the same rows. Raises ``UserError``
    for non-positive sizes.
    """
    if workers < 1:
        raise UserError(f"--workers must be at least 1 (got {workers})")
    if clients < len(SECTORS):
        raise UserError(
            f"--clients must be at least {len(SECTORS)} so every sector has an employer (got {clients})"
        )
    rng = np.random.default_rng(seed)
    cities = load_cities()
    states = np.unique(cities.state)
    city_state = np.searchsorted(states, cities.state)
    client_table, client_state, client_sector = _generate_clients(rng, clients, cities, city_state)
    worker_table, worker_meta = _generate_workers(rng, workers, cities, city_state)
    placements = _generate_placements(rng, worker_meta, client_state, client_sector)
    return Workforce(workers=worker_table, clients=client_table, placements=placements, seed=seed)


def _generate_clients(
    rng: np.random.Generator, count: int, cities, city_state: np.ndarray
) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    city_weights = np.sqrt(cities.population.astype(np.float64))
    sector_share = np.array([sum(r.weight for r in ROLES.values() if r.sector == s) for s in SECTORS])
    sector = _weighted(rng, sector_share, count)
    sector[: len(SECTORS)] = np.arange(len(SECTORS))  # every sector has an employer
    city = _weighted(rng, city_weights, count)
    names, industries = [], []
    seen: set[str] = set()
    for i in range(count):
        industry_options = _INDUSTRIES[SECTORS[sector[i]]]
        industry = industry_options[rng.integers(0, len(industry_options))]
        nouns = _NOUNS[industry]
        name = f"{_PREFIXES[rng.integers(0, len(_PREFIXES))]} {nouns[rng.integers(0, len(nouns))]}"
        if name in seen:
            name = f"{name} of {cities.name[city[i]]}"
        seen.add(name)
        names.append(name)
        industries.append(industry)
    anchor_city = int(
        np.flatnonzero((cities.name == ANCHOR_CLIENT[2]) & (cities.state == ANCHOR_CLIENT[3]))[0]
    )
    names[0], industries[0], city[0] = ANCHOR_CLIENT[0], ANCHOR_CLIENT[1], anchor_city
    sector[0] = SECTORS.index("skilled trades")
    jitter = rng.normal(0.0, 0.02, size=(count, 2))
    table = pa.table(
        {
            "id": pa.array(np.arange(1, count + 1, dtype=np.int32)),
            "name": pa.array(names, pa.string()),
            "industry": pa.array(industries, pa.string()),
            "city": pa.array(cities.name[city], pa.string()),
            "state": pa.array(cities.state[city], pa.string()),
            "lat": pa.array(np.round(cities.lat[city] + jitter[:, 0], 5)),
            "lon": pa.array(np.round(cities.lon[city] + jitter[:, 1], 5)),
        }
    )
    return table, city_state[city], sector


def _generate_workers(
    rng: np.random.Generator, n: int, cities, city_state: np.ndarray
) -> tuple[pa.Table, dict]:
    roles = list(ROLES.values())
    city = _weighted(rng, np.sqrt(cities.population.astype(np.float64)), n)
    base_weights = np.array([r.weight for r in roles])
    belt_weights = base_weights * np.array([_BELT_FACTOR[r.sector] for r in roles])
    in_belt = np.isin(cities.state[city], BELT_STATES)
    role = np.where(in_belt, _weighted(rng, belt_weights, n), _weighted(rng, base_weights, n))
    archetype = _weighted(rng, _ARCH_SHARE, n)
    zip_row = cities.zip_start[city] + (rng.random(n) * cities.zip_count[city]).astype(np.int64)

    # Names: weighted draws from Faker's lists, so common names repeat as they do in life.
    firsts, first_w, lasts, last_w = load_names()
    first = pa.array(firsts[_weighted(rng, first_w, n)])
    last = pa.array(lasts[_weighted(rng, last_w, n)])
    name = pc.binary_join_element_wise(first, last, " ")

    first_l = pc.replace_substring_regex(pc.utf8_lower(first), r"[^a-z]", "")
    last_l = pc.replace_substring_regex(pc.utf8_lower(last), r"[^a-z]", "")
    digits = np.where(rng.random(n) < 0.5, rng.integers(1, 100, n), rng.integers(1965, 2006, n))
    email = fill_templates(
        _EMAILS,
        rng.integers(0, len(_EMAILS), n),
        {
            "first": first_l,
            "last": last_l,
            "initial": pc.utf8_slice_codeunits(first_l, 0, 1),
            "nn": pa.array(digits).cast(pa.string()),
            "domain": pa.array(_DOMAINS[_weighted(rng, _DOMAIN_WEIGHTS, n)]),
        },
    )
    exchange = pa.array(rng.integers(201, 1000, n)).cast(pa.string())
    line = pc.utf8_lpad(pa.array(rng.integers(0, 10000, n)).cast(pa.string()), 4, "0")
    phone = pc.binary_join_element_wise(
        "(", pa.array(cities.zip_area_code[zip_row]), ") ", exchange, "-", line, ""
    )

    # Scores: one latent factor per worker plus per-score noise, around the archetype's means.
    latent = rng.normal(size=(n, 1))
    noise = rng.normal(size=(n, len(SCORE_COLUMNS)))
    scores = _ARCH_MEANS[archetype] + _ARCH_SD[archetype, None] * (0.7 * latent + 0.71 * noise)
    no_show = rng.random(n) < _NO_SHOW[archetype]
    scores[:, 0] -= np.where(no_show & (archetype != ARCHETYPES.index("flaky")), 0.1, 0.0)
    scores = np.round(np.clip(scores, 0.0, 1.0), 3)
    years = _YEARS[archetype, 0] + (rng.random(n) * (_YEARS[archetype, 1] - _YEARS[archetype, 0])).astype(
        np.int64
    )

    skills, skill_cols = _skills(rng, roles, role)
    certs, first_cert = _certifications(rng, roles, role, archetype)

    role_names = np.array([r.name for r in roles])
    role_phrase = np.array([r.phrase for r in roles])
    sector_of_role = np.array([SECTORS.index(r.sector) for r in roles])
    years_text = np.array(["less than a year"] + ["1 year"] + [f"{y} years" for y in range(2, 40)])
    fields = {
        "Role": pa.array(role_names[role]),
        "role": pa.array(role_phrase[role]),
        "a_role": pa.array(np.array([_article(p) for p in role_phrase])[role]),
        "years": pa.array(years_text[years]),
        "sector": pa.array(np.array(SECTORS)[sector_of_role[role]]),
        "city": pa.array(cities.name[city]),
        "state": pa.array(cities.state[city]),
        "skill1": skill_cols[0],
        "skill2": skill_cols[1],
        "skill3": skill_cols[2],
        "cert": first_cert,
        "certs": certs,
        "shift": pa.array(_SHIFT_PREFS[_weighted(rng, np.array([0.5, 0.15, 0.15, 0.1, 0.1]), n)]),
    }
    resume = build_resumes(
        rng,
        archetype,
        archetype == ARCHETYPES.index("new entrant"),
        pc.is_valid(certs).to_numpy(zero_copy_only=False),
        fields,
    )
    lat = np.round(cities.zip_lat[zip_row] + rng.normal(0.0, 0.008, n), 5)
    lon = np.round(cities.zip_lon[zip_row] + rng.normal(0.0, 0.008, n), 5)
    columns: dict[str, pa.Array] = {
        "worker_id": pa.array(np.arange(1, n + 1, dtype=np.int32)),
        "name": name,
        "role": fields["Role"],
        "email": email,
        "phone": phone,
        "city": fields["city"],
        "state": fields["state"],
        "zip": pa.array(cities.zip_code[zip_row]),
        "lat": pa.array(lat),
        "lon": pa.array(lon),
        "skills": skills,
        "certifications": certs,
        "archetype": pa.array(np.array(ARCHETYPES)[archetype]),
    }
    for index, column in enumerate(SCORE_COLUMNS):
        columns[column] = pa.array(scores[:, index])
    columns["resume_text"] = resume
    meta = {
        "role": role,
        "role_names": role_names,
        "sector": sector_of_role[role],
        "state": city_state[city],
        "archetype": archetype,
        "no_show": no_show,
    }
    return pa.table(columns), meta


def _article(phrase: str) -> str:
    # 'an HVAC technician', 'a CNC machinist', 'an emergency medical technician'
    head = phrase.split()[0]
    spoken_vowel = head[0] in "aeiou" or (head.isupper() and head[0] in "AEFHILMNORSX")
    return ("an " if spoken_vowel else "a ") + phrase


def _skills(rng: np.random.Generator, roles: list, role: np.ndarray) -> tuple[pa.Array, list[pa.Array]]:
    pools = [r.skills for r in roles]
    width = max(len(pool) for pool in pools)
    offsets = np.cumsum([0] + [len(pool) for pool in pools])[:-1]
    sizes = np.array([len(pool) for pool in pools])
    flat = pa.array([skill for pool in pools for skill in pool])
    keys = rng.random((len(role), width))
    keys[np.arange(width)[None, :] >= sizes[role][:, None]] = np.inf  # slots past the pool sort last
    picks = np.argsort(keys, axis=1)[:, :5]
    count = np.minimum(rng.integers(3, 6, len(role)), sizes[role])
    cols = [flat.take(pa.array(offsets[role] + picks[:, j])) for j in range(5)]
    return _join_first(cols, count, ", "), cols


def _certifications(
    rng: np.random.Generator, roles: list, role: np.ndarray, archetype: np.ndarray
) -> tuple[pa.Array, pa.Array]:
    """Each role's certificates, held with the role's odds (scaled by archetype), each
    written in one of its real-world spellings."""
    names = list(CERTIFICATIONS)
    variants = [CERTIFICATIONS[name].variants for name in names]
    var_offsets = np.cumsum([0] + [len(v) for v in variants])[:-1]
    var_sizes = np.array([len(v) for v in variants])
    flat = pa.array([v for group in variants for v in group])
    slots = max(len(r.certifications) for r in roles)
    cert_id = np.full((len(roles), slots), -1)
    odds = np.zeros((len(roles), slots))
    for i, r in enumerate(roles):
        for j, (cert, p) in enumerate(r.certifications):
            cert_id[i, j], odds[i, j] = names.index(cert), p
    n = len(role)
    held = rng.random((n, slots)) < np.minimum(odds[role] * _CERT_FACTOR[archetype, None], 1.0)
    # The canonical spelling is the most common; the rest share the remainder.
    spelling = np.where(rng.random((n, slots)) < 0.4, 0, rng.random((n, slots)))
    cols = []
    for j in range(slots):
        ids = np.maximum(cert_id[role, j], 0)
        variant = np.where(spelling[:, j] == 0, 0, (spelling[:, j] * var_sizes[ids]).astype(np.int64))
        text = flat.take(pa.array(var_offsets[ids] + variant))
        present = held[:, j] & (cert_id[role, j] >= 0)
        cols.append(pc.if_else(pa.array(present), text, pa.nulls(n, pa.string())))
    return join_present(cols, ", "), pc.coalesce(*cols)


def _pick_clients(
    rng: np.random.Generator, keys_rows: list[np.ndarray], keys_clients: list[np.ndarray]
) -> np.ndarray:
    """For each row, a random client sharing the first key level that has any client
    (e.g. same state and sector, else same state, else same sector)."""
    n = len(keys_rows[0])
    chosen = np.full(n, -1, dtype=np.int64)
    u = rng.random(n)
    for row_key, client_key in zip(keys_rows, keys_clients, strict=True):
        todo = chosen < 0
        if not todo.any():
            break
        size = int(max(row_key.max(), client_key.max())) + 1
        order = np.argsort(client_key, kind="stable")
        counts = np.bincount(client_key, minlength=size)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        available = counts[row_key] > 0
        take = todo & available
        chosen[take] = order[starts[row_key[take]] + (u[take] * counts[row_key[take]]).astype(np.int64)]
    return chosen


def _generate_placements(
    rng: np.random.Generator, meta: dict, client_state: np.ndarray, client_sector: np.ndarray
) -> pa.Table:
    archetype, no_show = meta["archetype"], meta["no_show"]
    n = len(archetype)
    past = rng.poisson(_PAST_SHIFTS[archetype])
    past = np.where(no_show, np.maximum(past, 1), past)
    future = rng.poisson(_FUTURE_SHIFTS[archetype])
    total = past + future
    worker = np.repeat(np.arange(n), total)
    starts = np.concatenate([[0], np.cumsum(total)[:-1]])
    position = np.arange(worker.size) - np.repeat(starts, total)
    is_past = position < past[worker]
    m = worker.size

    past_days = (AS_OF - SHIFTS_FROM).days
    day = np.where(
        is_past, rng.integers(0, past_days, m), rng.integers(past_days, past_days + _FUTURE_DAYS, m)
    )
    hour = _START_HOURS[_weighted(rng, _START_WEIGHTS, m)]
    length = _SHIFT_HOURS[_weighted(rng, _SHIFT_WEIGHTS, m)]
    base = np.datetime64(SHIFTS_FROM, "us")
    start = base + (day * 86_400 + hour * 3_600).astype("timedelta64[s]")
    end = start + (length * 3_600).astype("timedelta64[s]")

    cancelled = rng.random(m) < np.where(is_past, 0.04, 0.03)
    status = np.where(is_past, "completed", "scheduled").astype(object)
    status[cancelled] = "cancelled"
    flaky = archetype == ARCHETYPES.index("flaky")
    missed = (
        no_show[worker]
        & is_past
        & ((position == 0) | ((position == 1) & flaky[worker] & (rng.random(m) < 0.3)))
    )
    status[missed] = "no_show"

    sectors = len(SECTORS)
    client = _pick_clients(
        rng,
        [
            meta["state"][worker] * sectors + meta["sector"][worker],
            meta["state"][worker],
            meta["sector"][worker],
        ],
        [client_state * sectors + client_sector, client_state, client_sector],
    )
    order = np.lexsort((start, worker))
    return pa.table(
        {
            "worker_id": pa.array((worker[order] + 1).astype(np.int32)),
            "client_id": pa.array((client[order] + 1).astype(np.int32)),
            "role": pa.array(meta["role_names"][meta["role"][worker[order]]]),
            "shift_start": pa.array(start[order], pa.timestamp("us")),
            "shift_end": pa.array(end[order], pa.timestamp("us")),
            "status": pa.array(status[order].astype(str)),
        }
    )


def load_workforce(lake: Lake, workforce: Workforce, *, replace: bool = False) -> list[IngestResult]:
    """Write the three tables into the lake in one transaction (all or none).

    Refuses with ``UserError`` if any of the datasets exists and ``replace`` is false; with
    ``replace`` they are swapped and the ingest history keeps the earlier loads.
    """
    tables = workforce.tables()
    existing = sorted({info.name for info in lake.datasets()} & set(tables))
    if existing and not replace:
        raise UserError(
            f"dataset(s) {', '.join(existing)} already exist; pass --replace to regenerate them (their history is kept)"
        )
    source = f"generator (seed {workforce.seed}, {workforce.workers.num_rows} workers)"

    def load(conn: object) -> list[IngestResult]:
        return [
            lake.write_table(name, table, mode="replace", key=key, source=source)
            for name, (table, key) in tables.items()
        ]

    return lake.write(load)


def ensure_workforce(lake: Lake, workers: int = 50_000, seed: int = 7) -> tuple[int, int]:
    """Generate and load the workforce when the lake has no ``workers``: (generated, rows now).

    A lake that already has workers is left as it is, so a second first run is quick.
    """
    known = {info.name: info for info in lake.datasets()}
    if "workers" in known:
        return 0, known["workers"].row_count
    workforce = generate_workforce(workers, seed=seed)
    load_workforce(lake, workforce)
    return workforce.workers.num_rows, workforce.workers.num_rows


def write_workforce_files(workforce: Workforce, out_dir: Path, fmt: str = "parquet") -> list[Path]:
    """Write each table to ``out_dir/<name>.<fmt>`` (parquet, csv or jsonl); returns the paths."""
    if fmt not in ("parquet", "csv", "jsonl"):
        raise UserError(f"unknown format {fmt!r}: use parquet, csv or jsonl")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (table, _) in workforce.tables().items():
        path = out_dir / f"{name}.{fmt}"
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, path)
        elif fmt == "csv":
            import pyarrow.csv as pacsv

            pacsv.write_csv(table, path)
        else:
            import duckdb

            with duckdb.connect() as conn:
                conn.register("t", table)
                conn.execute(f"COPY t TO '{path.as_posix()}' (FORMAT json)")
        paths.append(path)
    return paths
