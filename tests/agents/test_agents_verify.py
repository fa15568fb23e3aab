"""Verification in code against the real generated lake: each rule, with the reason a person reads."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from agentlake.agents import Booking, FillOrder, ScheduleBook, verify_fill
from agentlake.errors import UserError
from agentlake.workforce.tables import fetch_workers


def _rules(verification, worker_id: int) -> set[str]:
    return {r.rule for r in verification.rejections if r.worker_id == worker_id}


def test_qualified_workers_pass(lake, order, qualified) -> None:
    result = verify_fill(lake, order, qualified[:3])
    assert result.ok
    assert result.accepted == qualified[:3]
    assert not result.rejections


def test_unknown_duplicate_and_excluded_workers(lake, order, qualified) -> None:
    excluding = order.model_copy(update={"exclude_worker_ids": [qualified[2]]})
    result = verify_fill(lake, excluding, [qualified[0], 424242, qualified[0], qualified[2]])
    assert result.accepted == [qualified[0]]
    assert not result.ok
    assert _rules(result, 424242) == {"unknown_worker"}
    assert "no worker with id 424242 exists" in result.summary()
    assert {r.rule for r in result.rejections if r.worker_id == qualified[0]} == {"duplicate"}
    assert _rules(result, qualified[2]) == {"excluded"}


def test_role_synonyms_are_accepted_and_other_roles_rejected(lake, order, qualified) -> None:
    by_synonym = order.model_copy(update={"role": "warehouse worker"})  # a catalogue synonym
    assert verify_fill(lake, by_synonym, qualified[:3]).ok
    welders = order.model_copy(update={"role": "Welder"})
    result = verify_fill(lake, welders, qualified[:1])
    (rejection,) = result.rejections
    assert rejection.rule == "role_mismatch"
    assert rejection.value == "Warehouse Associate"
    assert "works as Warehouse Associate, not as Welder" in rejection.reason


def test_distance_limit_uses_the_order_radius(lake, order, qualified) -> None:
    rows = fetch_workers(lake, qualified[:8], ["lat", "lon"])
    from agentlake.workforce.geo import gazetteer, haversine_miles

    site = gazetteer(lake).resolve("New York", "NY")
    farthest = max(
        qualified[:8], key=lambda w: haversine_miles(rows[w]["lat"], rows[w]["lon"], site.lat, site.lon)
    )
    miles = haversine_miles(rows[farthest]["lat"], rows[farthest]["lon"], site.lat, site.lon)
    tight = order.model_copy(update={"radius_miles": miles - 0.5})
    result = verify_fill(lake, tight, [farthest])
    (rejection,) = result.rejections
    assert rejection.rule == "too_far"
    assert rejection.value == pytest.approx(miles, abs=0.1)
    assert verify_fill(lake, order.model_copy(update={"radius_miles": miles + 0.5}), [farthest]).accepted == [
        farthest
    ]


def test_requirements_match_across_spellings(lake, order) -> None:
    # Workers whose record spells OSHA 10 differently from the order.
    table = lake.read_arrow(
        "SELECT worker_id FROM workers WHERE role = 'Warehouse Associate' AND certifications LIKE '%OSHA-10%' "
        "AND certifications NOT LIKE '%OSHA 10%' AND availability >= 0.3 AND lat BETWEEN 40.4 AND 41.0 "
        "AND lon BETWEEN -74.3 AND -73.7"
    )
    variant_holders = table.column("worker_id").to_pylist()
    assert variant_holders, "the generator writes certification spelling variants"
    worker = variant_holders[0]
    wanting = order.model_copy(
        update={"requirements": ["osha 10 hour"], "shift_start": None, "shift_end": None}
    )
    assert verify_fill(lake, wanting, [worker]).accepted == [worker]
    wanting_30 = wanting.model_copy(update={"requirements": ["OSHA-30"]})
    (rejection,) = verify_fill(lake, wanting_30, [worker]).rejections
    assert rejection.rule == "missing_requirement"
    assert rejection.value == "OSHA-30"


def test_availability_floor(lake) -> None:
    (row,) = lake.read_arrow(
        "SELECT worker_id, availability, role, city, state FROM workers WHERE availability < 0.3 ORDER BY worker_id LIMIT 1"
    ).to_pylist()
    order = FillOrder(role=row["role"], count=1, city=row["city"], state=row["state"], radius_miles=60)
    (rejection,) = verify_fill(lake, order, [row["worker_id"]]).rejections
    assert rejection.rule == "unavailable"
    assert rejection.value == pytest.approx(row["availability"], abs=1e-3)


def test_double_booking_from_run_bookings_and_removal(lake, order, qualified) -> None:
    schedule = ScheduleBook(lake)
    worker = qualified[0]
    schedule.add(
        Booking(
            worker_id=worker,
            start=order.shift_start - timedelta(hours=2),
            end=order.shift_start + timedelta(hours=1),
            client_name="Acme Foods",
        )
    )
    (rejection,) = verify_fill(lake, order, [worker], schedule=schedule).rejections
    assert rejection.rule == "double_booked"
    assert rejection.value == "06:00-09:00"
    assert "already booked 2026-04-22 06:00-09:00 at Acme Foods" in rejection.reason
    # A booking that ends when the shift starts does not overlap.
    schedule.remove(worker, order.shift_start - timedelta(hours=2))
    schedule.add(
        Booking(worker_id=worker, start=order.shift_start - timedelta(hours=8), end=order.shift_start)
    )
    assert verify_fill(lake, order, [worker], schedule=schedule, requested=1).ok


def test_double_booking_from_lake_placements(lake) -> None:
    # A real scheduled placement in the generated lake, and an order over the same hours.
    (row,) = lake.read_arrow(
        "SELECT p.worker_id, p.shift_start, p.shift_end, w.role, w.city, w.state FROM placements p "
        "JOIN workers w USING (worker_id) WHERE p.status = 'scheduled' AND w.availability >= 0.5 "
        "ORDER BY p.worker_id LIMIT 1"
    ).to_pylist()
    order = FillOrder(
        role=row["role"],
        count=1,
        city=row["city"],
        state=row["state"],
        radius_miles=60,
        shift_start=row["shift_start"] + timedelta(hours=1),
        shift_end=row["shift_end"] + timedelta(hours=1),
    )
    result = verify_fill(lake, order, [row["worker_id"]])
    assert [r.rule for r in result.rejections] == ["double_booked"]
    # The scenario took them off that job: now they are free.
    schedule = ScheduleBook(lake)
    schedule.remove(row["worker_id"], row["shift_start"])
    assert verify_fill(lake, order, [row["worker_id"]], schedule=schedule).ok


def test_unknown_city_and_ambiguous_names(lake, order, qualified) -> None:
    with pytest.raises(UserError, match="unknown city Springfeld, NY"):
        verify_fill(lake, order.model_copy(update={"city": "Springfeld"}), qualified[:1])
    with pytest.raises(UserError, match="Columbus exists in GA, OH"):
        verify_fill(lake, order.model_copy(update={"city": "Columbus", "state": "TX"}), qualified[:1])


def test_order_parsing_forms_and_errors() -> None:
    now = datetime(2026, 4, 21, 12, 0)
    plain = FillOrder.parse("3 x Welder in Cleveland, OH", now=now)
    assert (plain.count, plain.role, plain.city, plain.state, plain.radius_miles) == (
        3,
        "Welder",
        "Cleveland",
        "OH",
        25.0,
    )
    assert FillOrder.parse("3 × Welder in Cleveland, OH").role == "Welder"
    full = FillOrder.parse("fill 3 Welders in Cleveland, OH for Riverfront Steel at 08:00", now=now)
    assert full.role == "Welder"
    assert full.client_id == "riverfront-steel"
    assert full.shift_start == datetime(2026, 4, 22, 8, 0)
    assert full.shift_end == datetime(2026, 4, 22, 16, 0)
    night = FillOrder.parse(
        "2 forklift drivers in Columbus, GA from 22:00 to 06:00 on 2026-04-25 within 40 miles "
        "with OSHA 10, Forklift Certified"
    )
    assert night.role == "Forklift Operator"
    assert night.radius_miles == 40
    assert night.shift_end == datetime(2026, 4, 26, 6, 0)
    assert night.requirements == [
        "OSHA 10",
        "Forklift Certified",
    ]
    assert (
        full.signature().sig_hash()
        == FillOrder.parse("1 x welder in cleveland, oh for riverfront steel").signature().sig_hash()
    )
    with pytest.raises(UserError, match="write it like '3 x Welder in Cleveland, OH'"):
        FillOrder.parse("some welders please")
    with pytest.raises(UserError, match="state must be a two-letter code"):
        FillOrder.parse("3 x Welder in Cleveland, OH", state="Ohio")
    with pytest.raises(UserError, match="count"):
        FillOrder.parse("0 x Welder in Cleveland, OH")
