"""The client judge: every hidden rule produces a client-like reason and a structured rule."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

import pytest
from pydantic import ValidationError

from agentlake.agents import FillOrder
from agentlake.scenarios.judge import Matching, WorkerFacts, judge_fill
from agentlake.scenarios.scenario import Acceptance

SITE = (41.4995, -81.69541)  # Cleveland, OH
ACCEPTANCE = Acceptance(
    required_certifications=["OSHA 30"],
    min_reliability=0.7,
    max_distance_miles=40,
    exclude_prior_no_show=True,
    role_synonyms={"Forklift Operator": ["Forklift Driver"]},
)


@dataclass
class _Booking:
    start: datetime
    end: datetime
    client_name: str | None
    client_id: str | None


class _Schedule:
    def __init__(self, booked: dict[int, _Booking]) -> None:
        self.booked = booked

    def conflicts(self, worker_id: int, start: datetime, end: datetime) -> list[_Booking]:
        b = self.booked.get(worker_id)
        return [b] if b and b.start < end and start < b.end else []


def _worker(
    worker_id: int,
    *,
    role: str = "Welder",
    certs: tuple[str, ...] = ("OSHA-30 Hour", "AWS D1.1 Structural Steel"),
    reliability: float = 0.9,
    lat: float = 41.50,
    lon: float = -81.70,
) -> WorkerFacts:
    return WorkerFacts(
        worker_id=worker_id,
        role=role,
        lat=lat,
        lon=lon,
        certifications=certs,
        reliability=reliability,
        name=f"W{worker_id}",
    )


def _order(count: int, **extra: object) -> FillOrder:
    return FillOrder(
        role="Welder",
        count=count,
        city="Cleveland",
        state="OH",
        client_id="riverfront-steel",
        shift_start=datetime(2026, 4, 21, 8),
        shift_end=datetime(2026, 4, 21, 16),
        requirements=["AWS D1.1"],
        **extra,
    )


def test_each_hidden_rule_is_a_client_reason_with_a_rule() -> None:
    facts = {
        1: _worker(1),
        2: _worker(2, certs=("AWS D1.1",)),
        3: _worker(3, reliability=0.55),
        4: _worker(4, lat=41.4995 + 63 / 69.0),  # ~63 miles north
        5: _worker(5),
        6: _worker(6),
    }
    schedule = _Schedule(
        {6: _Booking(datetime(2026, 4, 21, 8), datetime(2026, 4, 21, 16), "Acme Foods", "acme-foods")}
    )
    judgement = judge_fill(
        _order(6, radius_miles=80),
        [1, 2, 3, 4, 5, 6],
        acceptance=ACCEPTANCE,
        site=SITE,
        facts=facts,
        no_shows={5: [date(2026, 3, 2), date(2026, 1, 5)]},
        schedule=schedule,
        matching=Matching.default(),
    )
    assert judgement.accepted == [1]
    assert judgement.filled == 1
    assert not judgement.success
    by_worker = {r.worker_id: r for r in judgement.rejections}
    assert (by_worker[2].reason, by_worker[2].rule, by_worker[2].value) == (
        "no OSHA 30 on file; site policy",
        "required_certification",
        "OSHA 30",
    )
    assert (by_worker[3].reason, by_worker[3].rule, by_worker[3].value) == (
        "reliability 0.55 below 0.70",
        "min_reliability",
        0.7,
    )
    assert (by_worker[4].reason, by_worker[4].rule) == ("63 miles from site, limit 40", "max_distance_miles")
    assert (by_worker[5].reason, by_worker[5].rule, by_worker[5].value) == (
        "no-show here on 2026-03-02",
        "exclude_prior_no_show",
        True,
    )
    assert (by_worker[6].reason, by_worker[6].rule, by_worker[6].value) == (
        "already booked 08:00-16:00 at Acme Foods",
        "double_booked",
        "08:00-16:00",
    )


def test_stated_rules_role_synonyms_duplicates_and_unknowns() -> None:
    facts = {
        1: _worker(1, role="Forklift Operator", certs=("OSHA 30", "Forklift Certified")),
        2: _worker(2, role="Painter", certs=("OSHA 30",)),
        3: _worker(3, certs=("OSHA 30",), lat=41.4995 + 30 / 69.0),
    }
    forklift = FillOrder(role="Forklift Driver", count=2, city="Cleveland", state="OH", client_id="x")
    judged = judge_fill(
        forklift, [1, 1], acceptance=ACCEPTANCE, site=SITE, facts=facts, matching=Matching.default()
    )
    assert judged.accepted == [1]
    assert [(r.worker_id, r.rule) for r in judged.rejections] == [(1, "duplicate")]
    welders = judge_fill(
        _order(3), [2, 3, 99], acceptance=ACCEPTANCE, site=SITE, facts=facts, matching=Matching.default()
    )
    rules = {(r.worker_id, r.rule) for r in welders.rejections}
    assert {
        (2, "role_mismatch"),
        (2, "missing_requirement"),
        (3, "missing_requirement"),
        (3, "too_far"),
        (99, "unknown_worker"),
    } <= rules
    assert (
        next(r.reason for r in welders.rejections if r.worker_id == 2 and r.rule == "role_mismatch")
        == "we asked for a Welder; W2 is a Painter"
    )


def test_only_the_requested_count_is_judged_and_exclusions_hold() -> None:
    facts = {i: _worker(i) for i in range(1, 6)}
    judged = judge_fill(
        _order(2, exclude_worker_ids=[1]),
        [1, 2, 3, 4],
        acceptance=Acceptance(),
        site=SITE,
        facts=facts,
        matching=Matching.default(),
        exclusion_reason="did not show this morning",
    )
    assert judged.submitted == [1, 2]
    assert judged.ignored == [3, 4]
    assert judged.accepted == [2]
    assert [(r.rule, r.reason) for r in judged.rejections] == [("excluded", "did not show this morning")]
    empty = judge_fill(
        _order(2), [], acceptance=ACCEPTANCE, site=SITE, facts=facts, matching=Matching.default()
    )
    assert empty.filled == 0
    assert not empty.success
    assert empty.rejections == []


def test_a_client_can_hold_a_minimum_on_any_score_column() -> None:
    strict = Acceptance(min_scores={"compliance": 0.8})
    facts = {
        1: WorkerFacts(1, "Welder", 41.5, -81.7, ("AWS D1.1",), 0.9, scores={"compliance": 0.85}),
        2: WorkerFacts(2, "Welder", 41.5, -81.7, ("AWS D1.1",), 0.9, scores={"compliance": 0.62}),
    }
    judged = judge_fill(_order(2), [1, 2], acceptance=strict, site=SITE, facts=facts)
    assert judged.accepted == [1]
    (rejection,) = judged.rejections
    assert (rejection.rule, rejection.value, rejection.reason) == (
        "min_compliance",
        0.8,
        "compliance 0.62 below 0.80",
    )


def test_score_minimums_name_known_scores_once() -> None:
    with pytest.raises(ValidationError, match="unknown score 'speed'"):
        Acceptance(min_scores={"speed": 0.5})
    with pytest.raises(ValidationError, match="min_reliability or min_scores.reliability"):
        Acceptance(min_reliability=0.7, min_scores={"reliability": 0.8})
    assert Acceptance(min_reliability=0.7, min_scores={"compliance": 0.6}).score_minimums() == {
        "compliance": 0.6,
        "reliability": 0.7,
    }
