"""The overseer's model tiers (issue 32 point 1): T3 reviews one judged event, T4 the days so far;
each drafts lessons as pending ADD deltas for the learner, never writing one. Scripted models
for the replies; the profile keys that switch them on."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from agentlake.agents import FillOrder
from agentlake.agents.outcome import Concern
from agentlake.agents.overseer_tiers import review_event, synthesise_days, tier_of
from agentlake.errors import UserError
from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted
from agentlake.observe.model import ObservedOp
from agentlake.scenarios.profile import parse_profile, unreachable_models
from agentlake.settings import load_settings

ORDER = FillOrder.parse("2 x Welder in New York, NY for Riverfront Steel at 08:00 on 2026-04-22").model_copy(
    update={"event_id": "e1", "client_id": "riverfront-steel"}
)


def judged(
    op_id: str = "op-1", *, batch: int = 1, scenario: str = "riverfront-day1", filled: int = 1
) -> ObservedOp:
    return ObservedOp(
        id=op_id,
        ts=datetime(2026, 4, 22, 8, tzinfo=UTC),
        endpoint="fill.judged",
        source="scenario",
        input_summary="2 x Welder in New York, NY for riverfront-steel",
        attributes={
            "client_id": "riverfront-steel",
            "task_kind": "baseline_fill",
            "requested": 2,
            "filled": filled,
            "accepted": [11],
            "refused": [12],
            "rejections": [{"worker_id": 12, "said": "we need people we can count on"}],
            "batch": batch,
            "scenario": scenario,
            "judged": {
                "scope": "riverfront-steel",
                "shape": "Welder in New York, NY",
                "items": [
                    {"id": 11, "accepted": True, "values": {"reliability": 0.9}},
                    {"id": 12, "accepted": False, "values": {"reliability": 0.5}},
                ],
            },
        },
    )


@pytest.fixture
def model():
    provider = ScriptedProvider("tier", context_window=32768)
    register_scripted("tier", provider)
    yield provider
    unregister_scripted("tier")


def test_t3_drafts_a_pending_lesson_for_the_orders_client_and_role(model) -> None:
    idea = {"trigger": "welders", "action": "reliable ones only", "filter": "reliability", "value": "0.7"}
    model.enqueue(json.dumps({"lessons": [{**idea, "role": "Painter", "client_id": "someone-else"}]}))
    (delta,) = review_event("scripted:tier", ORDER, judged(), [])
    assert delta.lesson is not None
    assert delta.lesson.match.fields == {"role": "Welder", "client_id": "riverfront-steel"}
    assert delta.lesson.machine is not None
    assert delta.lesson.machine["min_scores"] == {"reliability": 0.7}
    assert (delta.op, delta.actor, delta.lesson.source) == ("ADD", "overseer", "overseer")
    assert delta.lesson.evidence_op_ids == ["op-1"]
    assert tier_of(delta) == "T3"


def test_t3_reads_what_the_client_said_and_the_code_checks(model) -> None:
    model.enqueue(json.dumps({"lessons": []}))
    concern = Concern(
        kind="double_booking", message="worker 11 was also proposed for event e0", event_id="e1"
    )
    review_event("scripted:tier", ORDER, judged(), [concern])
    prompt = model.last_messages[-1].content
    assert "we need people we can count on" in prompt
    assert "double_booking: worker 11 was also proposed for event e0" in prompt
    assert model.history[0][1].think, "an overseer tier thinks"


def test_a_filter_whose_value_does_not_fit_leaves_a_lesson_in_words(model) -> None:
    model.enqueue(
        json.dumps({"lessons": [{"trigger": "t", "action": "a", "filter": "reliability", "value": "high"}]})
    )
    (delta,) = review_event("scripted:tier", ORDER, judged(), [])
    assert delta.lesson is not None
    assert delta.lesson.machine is None


def test_a_model_that_answers_nothing_usable_costs_only_the_advice(model) -> None:
    model.enqueue_many("not json", "still not json")
    assert review_event("scripted:tier", ORDER, judged(), []) == []


def test_t4_drafts_across_days_and_keeps_only_clients_the_days_name(model) -> None:
    ideas = [
        {
            "trigger": "emergencies",
            "action": "keep spares",
            "filter": "spare_buffer",
            "value": "3",
            "client_id": "riverfront-steel",
        },
        {"trigger": "x", "action": "y", "client_id": "made-up"},
    ]
    model.enqueue(json.dumps({"lessons": ideas}))
    ops = [judged("a", batch=1), judged("b", batch=2, scenario="riverfront-day2")]
    deltas = synthesise_days("scripted:tier", ops)
    assert [d.lesson.match.fields.get("client_id") for d in deltas if d.lesson] == ["riverfront-steel", None]
    assert deltas[0].reason == "T4: scripted:tier across 2 day(s)"
    assert "Day riverfront-day2 (batch 2):" in model.last_messages[-1].content


def test_t4_without_judged_days_calls_no_model(model) -> None:
    assert synthesise_days("scripted:tier", []) == []
    assert model.calls == 0


def test_a_rules_staffer_may_run_the_tiers_with_their_own_models() -> None:
    profile = parse_profile(
        {
            "staffer": "r",
            "policy": "rules",
            "t3_review": True,
            "t5_gate": True,
            "models": {"t3": "scripted:tier"},
        }
    )
    assert profile.tiers() == ["T3", "T5"]
    assert profile.model_list(load_settings()) == ["scripted:tier"]


def test_a_rules_staffer_still_may_not_name_an_executor() -> None:
    with pytest.raises(UserError, match="overseer tiers"):
        parse_profile({"staffer": "r", "policy": "rules", "models": {"executor": "scripted:tier"}})


def test_a_tier_needs_a_learning_staffer() -> None:
    with pytest.raises(UserError, match="t3_review: true needs learning: true"):
        parse_profile({"staffer": "r", "policy": "rules", "t3_review": True, "learning": False})


def test_t3_without_any_model_is_reported_before_the_run() -> None:
    profile = parse_profile({"staffer": "r", "policy": "rules", "t3_review": True})
    problems = unreachable_models(profile, load_settings(overseer_model=None))
    assert any(problem.startswith("t3_review: no model") for problem in problems)


def test_the_rules_staffers_run_no_tier_and_the_full_one_runs_all() -> None:
    from agentlake.scenarios.profile import load_profile

    tiers = {name: load_profile(name).tiers() for name in ("rules-learning", "rules-static", "full")}
    assert tiers == {"rules-learning": [], "rules-static": [], "full": ["T3", "T4", "T5"]}
