"""The generated workforce: realistic, deterministic, loadable."""

from __future__ import annotations

import re
from datetime import datetime

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import zipcodes

from agentlake.errors import UserError
from agentlake.lake import Lake
from agentlake.workforce import CERTIFICATIONS, normalize_certification
from agentlake.workforce.cities import load_cities
from agentlake.workforce.generator import (
    ARCHETYPES,
    generate_workforce,
    load_workforce,
    write_workforce_files,
)

N = 20_000


@pytest.fixture(scope="module")
def workforce():
    return generate_workforce(N, seed=11)


@pytest.fixture(scope="module")
def db(workforce):
    conn = duckdb.connect()
    for name, (table, _) in workforce.tables().items():
        conn.register(name, table)
    return conn


def one(db, sql: str):
    return db.execute(sql).fetchone()


def test_schema_is_the_issues(workforce) -> None:
    assert workforce.workers.column_names == [
        "worker_id",
        "name",
        "role",
        "email",
        "phone",
        "city",
        "state",
        "zip",
        "lat",
        "lon",
        "skills",
        "certifications",
        "archetype",
        "reliability",
        "responsiveness",
        "engagement",
        "communications",
        "compliance",
        "availability",
        "resume_text",
    ]
    assert workforce.workers.schema.field("worker_id").type == pa.int32()
    assert workforce.clients.column_names == ["id", "name", "industry", "city", "state", "lat", "lon"]
    assert workforce.placements.column_names == [
        "worker_id",
        "client_id",
        "role",
        "shift_start",
        "shift_end",
        "status",
    ]
    assert workforce.workers.num_rows == N
    assert workforce.clients.num_rows == 300


def test_same_seed_same_rows_other_seed_other_rows(workforce) -> None:
    small = generate_workforce(2000, seed=11)
    again = generate_workforce(2000, seed=11)
    other = generate_workforce(2000, seed=12)
    assert small.workers.equals(again.workers)
    assert small.placements.equals(again.placements)
    assert small.clients.equals(again.clients)
    assert not small.workers.equals(other.workers)


def test_scores_are_bounded_and_follow_the_archetype(db) -> None:
    for column in (
        "reliability",
        "responsiveness",
        "engagement",
        "communications",
        "compliance",
        "availability",
    ):
        low, high = one(db, f"SELECT min({column}), max({column}) FROM workers")
        assert 0.0 <= low < high <= 1.0
    means = dict(db.execute("SELECT archetype, avg(reliability) FROM workers GROUP BY 1").fetchall())
    assert set(means) == set(ARCHETYPES)
    assert means["reliable veteran"] > means["steady regular"] > means["flaky"] + 0.3
    part_timer, others = one(
        db,
        "SELECT avg(availability) FILTER (WHERE archetype = 'part-timer'), avg(availability) FILTER (WHERE archetype <> 'part-timer') FROM workers",
    )
    assert part_timer < others - 0.3


def test_names_repeat_and_contacts_look_real(db) -> None:
    distinct, total = one(db, "SELECT count(DISTINCT name), count(*) FROM workers")
    assert distinct < total  # names are not unique
    assert (
        one(
            db,
            "SELECT count(*) FROM workers WHERE NOT regexp_full_match(email, '[a-z0-9._]+@[a-z]+\\.[a-z]+')",
        )[0]
        == 0
    )
    assert (
        one(
            db,
            "SELECT count(*) FROM workers WHERE NOT regexp_full_match(phone, '\\(\\d{3}\\) \\d{3}-\\d{4}')",
        )[0]
        == 0
    )


def test_cities_states_zips_and_coordinates_are_real(workforce) -> None:
    sample = workforce.workers.slice(0, 300).to_pylist()
    for row in sample:
        matches = zipcodes.matching(row["zip"])
        assert matches, row
        assert matches[0]["state"] == row["state"], row
        assert abs(float(matches[0]["lat"]) - row["lat"]) < 0.1
        assert abs(float(matches[0]["long"]) - row["lon"]) < 0.1
    cities = load_cities()
    assert len(cities) == 300
    assert ("Cleveland", "OH") in set(zip(cities.name, cities.state, strict=True))


def test_roles_carry_fitting_certifications_in_varied_spellings(db) -> None:
    forklift = one(
        db,
        "SELECT avg((certifications ILIKE '%forklift%' OR certifications ILIKE '%industrial truck%')::INT) FROM workers WHERE role = 'Forklift Operator'",
    )[0]
    assert forklift > 0.8
    welders = [
        r[0] for r in db.execute("SELECT certifications FROM workers WHERE role = 'Welder'").fetchall()
    ]
    assert sum(1 for c in welders if c and "D1.1" in c) / len(welders) > 0.6
    spellings = {
        part.strip()
        for (value,) in db.execute(
            "SELECT certifications FROM workers WHERE certifications ILIKE '%osha%10%'"
        ).fetchall()
        for part in value.split(",")
        if normalize_certification(part) == "OSHA 10"
    }
    assert {"OSHA 10", "OSHA-10 Hour"} <= spellings
    assert len(spellings) >= 4


def test_resumes_are_two_to_four_sentences_and_vary(db) -> None:
    resumes = [r[0] for r in db.execute("SELECT resume_text FROM workers").fetchall()]
    # Spellings such as "C.N.A." or "St. Louis" carry periods that do not end sentences.
    dotted = [v for c in CERTIFICATIONS.values() for v in c.variants] + list(load_cities().name)
    spellings = sorted((v for v in dotted if "." in v), key=len, reverse=True)

    def sentences(text: str) -> int:
        for spelling in spellings:
            text = text.replace(spelling, "CERT")
        return len(re.findall(r"[.!?](?=\s|$)", text))

    counts = [sentences(text) for text in resumes]
    assert min(counts) >= 2
    assert max(counts) <= 4
    assert len({" ".join(text.split()[:3]) for text in resumes}) > 200
    welder = one(db, "SELECT resume_text FROM workers WHERE role = 'Welder' LIMIT 1")[0]
    assert "welder" in welder.lower() or "welding" in welder.lower()


def test_about_five_percent_have_a_no_show(db) -> None:
    share = one(db, "SELECT count(DISTINCT worker_id) / 20000 FROM placements WHERE status = 'no_show'")[0]
    assert 0.04 <= share <= 0.06
    flaky, steady = one(
        db,
        "SELECT avg(has::INT) FILTER (WHERE archetype = 'flaky'), avg(has::INT) FILTER (WHERE archetype = 'steady regular') "
        "FROM (SELECT w.archetype, EXISTS (SELECT 1 FROM placements p WHERE p.worker_id = w.worker_id AND p.status = 'no_show') AS has FROM workers w)",
    )
    assert flaky > 5 * steady


def test_placements_span_spring_2026_with_late_april_schedules(db) -> None:
    start, end = one(db, "SELECT min(shift_start), max(shift_end) FROM placements")
    assert datetime(2026, 3, 1) <= start
    assert end <= datetime(2026, 5, 31)
    assert (
        one(
            db,
            "SELECT count(*) FROM placements WHERE status = 'scheduled' AND shift_start BETWEEN '2026-04-20' AND '2026-04-30'",
        )[0]
        > 100
    )
    assert set(r[0] for r in db.execute("SELECT DISTINCT status FROM placements").fetchall()) == {
        "scheduled",
        "completed",
        "no_show",
        "cancelled",
    }
    assert one(db, "SELECT count(*) FROM placements WHERE shift_end <= shift_start")[0] == 0
    same_state = one(
        db,
        "SELECT avg((c.state = w.state)::INT) FROM placements p JOIN clients c ON c.id = p.client_id JOIN workers w USING (worker_id)",
    )[0]
    assert same_state > 0.9
    assert one(db, "SELECT count(*) FROM placements p ANTI JOIN workers w USING (worker_id)")[0] == 0


def test_clients_and_the_flagship_scenario(db) -> None:
    assert one(db, "SELECT name, city, state FROM clients WHERE id = 1") == (
        "Riverfront Steel",
        "Cleveland",
        "OH",
    )
    assert one(db, "SELECT count(DISTINCT name) = count(*) FROM clients")[0]
    assert (
        one(db, "SELECT count(*) FROM workers WHERE role = 'Welder' AND city = 'Cleveland' AND state = 'OH'")[
            0
        ]
        >= 3
    )


def test_load_workforce_is_one_refusable_transaction() -> None:
    small = generate_workforce(500, seed=3)
    with Lake.open() as lake:
        results = load_workforce(lake, small)
        assert {(r.dataset, r.rows_after) for r in results} == {
            ("workers", 500),
            ("clients", 300),
            ("placements", small.placements.num_rows),
        }
        assert lake.dataset("workers").key == "worker_id"
        assert lake.dataset("clients").key == "id"
        assert lake.dataset("placements").key is None
        with pytest.raises(UserError, match="already exist; pass --replace"):
            load_workforce(lake, generate_workforce(100, seed=4))
        assert lake.dataset("workers").row_count == 500
        load_workforce(lake, generate_workforce(100, seed=4), replace=True)
        assert lake.dataset("workers").row_count == 100
        assert [h.rows_after for h in lake.dataset("workers").history] == [500, 100]


def test_generated_files_ingest_back(tmp_path) -> None:
    small = generate_workforce(300, seed=5)
    with Lake.open() as lake:
        for fmt in ("csv", "parquet", "jsonl"):
            paths = write_workforce_files(small, tmp_path / fmt, fmt)
            workers = next(p for p in paths if p.stem == "workers")
            result = lake.ingest(workers, f"workers_{fmt}", key="worker_id")
            assert result.rows_after == 300
        same = lake.query(
            "SELECT count(*) FROM workers_csv c JOIN workers_parquet p USING (worker_id) "
            "WHERE c.zip = p.zip AND c.resume_text = p.resume_text AND c.reliability = p.reliability"
        ).rows[0][0]
        assert same == 300  # ZIPs keep their leading zeros through CSV


def test_bad_sizes() -> None:
    with pytest.raises(UserError, match="--workers must be at least 1"):
        generate_workforce(0)
    with pytest.raises(UserError, match="--clients must be at least 4"):
        generate_workforce(10, clients=2)


def test_scores_are_doubles_between_zero_and_one_as_numpy(workforce) -> None:
    values = workforce.workers.column("reliability").to_numpy()
    assert values.dtype == np.float64
