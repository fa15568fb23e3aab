"""How events become orders, what the client sees in the lake, and the pack's fairness on a lake."""

from __future__ import annotations

from datetime import date, datetime

from agentlake.scenarios import load_scenarios
from agentlake.scenarios.day import DayLedger, lake_client_ids, load_facts, load_no_shows, plan_event, site_of
from agentlake.scenarios.feasibility import event_pools
from agentlake.scenarios.judge import judge_fill
from agentlake.scenarios.scenario import parse_scenario
from agentlake.settings import Settings

DAY = parse_scenario(
    {
        "scenario": "acme-day1",
        "client": {
            "id": "riverfront-steel",
            "name": "Riverfront Steel",
            "city": "Cleveland",
            "state": "OH",
            "acceptance": {"exclude_prior_no_show": True},
        },
        "date": "2026-04-21",
        "events": [
            {
                "id": "e1",
                "at": "08:00",
                "kind": "baseline_fill",
                "role": "Welder",
                "count": 3,
                "shift": {"start": "08:00", "end": "16:00"},
                "requirements": ["AWS D1.1"],
                "radius_miles": 40,
            },
            {
                "id": "e2",
                "at": "10:30",
                "kind": "recurring",
                "same_as": "e1",
                "count": 2,
                "shift": {"start": "22:00", "end": "06:00"},
            },
            {
                "id": "e3",
                "at": "12:00",
                "kind": "expansion",
                "role": "General Laborer",
                "count": 4,
                "city": "Akron",
                "state": "OH",
            },
            {"id": "e4", "at": "14:00", "kind": "emergency", "no_show_of": "e1", "count": 2},
            {
                "id": "e5",
                "at": "15:45",
                "kind": "misplacement",
                "replace_from": "e2",
                "count": 1,
                "requirements": ["OSHA 10"],
            },
        ],
    }
)


def test_each_event_kind_becomes_the_documented_order() -> None:
    ledger = DayLedger()
    plans = {}
    for event in DAY.events:
        planned = plan_event(DAY, event, ledger)
        plans[event.id] = planned
        ledger.orders[event.id] = planned.order
        if event.id == "e1":
            ledger.placed["e1"], ledger.ever_placed["e1"] = [11, 12, 13], {11, 12, 13}
        if event.id == "e2":
            ledger.placed["e2"], ledger.ever_placed["e2"] = [21], {21}
    e1, e2, e3, e4, e5 = (plans[k].order for k in ("e1", "e2", "e3", "e4", "e5"))
    assert (e1.role, e1.city, e1.radius_miles, e1.client_id, e1.task_kind) == (
        "Welder",
        "Cleveland",
        40,
        "riverfront-steel",
        "baseline_fill",
    )
    assert (e1.shift_start, e1.shift_end) == (datetime(2026, 4, 21, 8), datetime(2026, 4, 21, 16))
    # recurring: same role, place and requirements; a night shift ends the next morning.
    assert (e2.role, e2.requirements, e2.radius_miles, e2.task_kind) == (
        "Welder",
        ["AWS D1.1"],
        40,
        "recurring",
    )
    assert (e2.shift_start, e2.shift_end) == (datetime(2026, 4, 21, 22), datetime(2026, 4, 22, 6))
    # expansion: its own place; no shift given: `at` + 8 hours; default radius.
    assert (e3.city, e3.radius_miles, e3.shift_start, e3.shift_end) == (
        "Akron",
        25,
        datetime(2026, 4, 21, 12),
        datetime(2026, 4, 21, 20),
    )
    # emergency: the first `count` placed on e1 did not show; they are taken off and excluded.
    assert plans["e4"].removed == [11, 12]
    assert ledger.placed["e1"] == [13]
    assert (e4.role, e4.count, e4.shift_start, e4.exclude_worker_ids, e4.task_kind) == (
        "Welder",
        2,
        e1.shift_start,
        [11, 12, 13],
        "emergency",
    )
    assert "did not show" in plans["e4"].exclusion_reason
    # misplacement: replaces from e2, adds why the worker did not fit.
    assert plans["e5"].removed == [21]
    assert e5.requirements == ["AWS D1.1", "OSHA 10"]
    assert e5.shift_start == e2.shift_start


def test_the_client_reads_history_from_the_lake(scenario_settings: Settings) -> None:
    from agentlake.lake import Lake

    with Lake.open(scenario_settings, read_only=True) as lake:
        [client_id] = lake_client_ids(lake, DAY.client)
        row = lake.read_arrow(
            "SELECT worker_id, CAST(shift_start AS DATE) AS day FROM placements WHERE status = 'no_show' "
            "ORDER BY worker_id LIMIT 1"
        ).to_pylist()[0]
        other = lake.read_arrow(
            "SELECT CAST(client_id AS VARCHAR) AS c FROM placements WHERE status = 'no_show' "
            "ORDER BY worker_id LIMIT 1"
        ).to_pylist()[0]["c"]
        shows = load_no_shows(lake, [other], [row["worker_id"]], date(2026, 4, 21))
        assert shows == {row["worker_id"]: [row["day"]]}
        assert load_no_shows(lake, [other], [row["worker_id"]], row["day"]) == {}, (
            "only history before the day counts"
        )
        facts = load_facts(lake, [row["worker_id"], 10**9])
        assert list(facts) == [row["worker_id"]]
        assert facts[row["worker_id"]].certifications is not None
        site = site_of(lake, "Cleveland", "OH")
        order = plan_event(DAY, DAY.events[0], DayLedger()).order.model_copy(
            update={"role": facts[row["worker_id"]].role, "requirements": [], "radius_miles": 5000}
        )
        judged = judge_fill(
            order,
            [row["worker_id"]],
            acceptance=DAY.client.acceptance,
            site=site,
            facts=facts,
            no_shows=shows,
        )
        assert [(r.rule, r.reason) for r in judged.rejections] == [
            ("exclude_prior_no_show", f"no-show here on {row['day']}")
        ]
        assert client_id == "1"  # the generator's anchor client, found by its slug


def test_the_builtin_pack_is_solvable_and_a_trap_on_a_small_lake(scenario_settings: Settings) -> None:
    from agentlake.lake import Lake

    with Lake.open(scenario_settings, read_only=True) as lake:
        pools = event_pools(lake, load_scenarios("builtin"))
    solvable = sum(p.solvable for p in pools) / len(pools)
    trap = sum(p.trap_share * p.count for p in pools) / sum(p.count for p in pools)
    assert solvable >= 0.8, [p for p in pools if not p.solvable]
    # Most of what the orders state, the clients would refuse: a staffer must learn the rules.
    assert trap >= 0.5
    assert all(p.stated >= p.acceptable for p in pools)
