"""Feedback modes: what the client says in the op learners read, and what stays for evaluation."""

from __future__ import annotations

import json
import re

import pytest

from agentlake.errors import UserError
from agentlake.scenarios import compare, load_scenarios, read_results
from agentlake.scenarios.day import DayResult, DayTask, run_day
from agentlake.scenarios.profile import load_profile
from agentlake.scenarios.runner import run_scenarios
from agentlake.scenarios.scenario import Scenario, parse_feedback, parse_scenario
from agentlake.scenarios.voice import PHRASES
from agentlake.settings import Settings

HIDDEN_RULE_IDS = (
    "required_certification",
    "min_reliability",
    "max_distance_miles",
    "exclude_prior_no_show",
    "double_booked",
)


def _riverfront() -> Scenario:
    return next(s for s in load_scenarios("builtin") if s.scenario == "riverfront-steel-day1")


def _day(settings: Settings, scenario: Scenario, mode: str) -> DayResult:
    task = DayTask(
        run_id="fb",
        batch=1,
        repetition=1,
        scenario=scenario,
        profile=load_profile("rules-static"),
        settings=settings,
        lake_path=str(settings.lake_path),
        feedback=mode,
    )
    return run_day(task)


def _judged(day: DayResult) -> dict[str, object]:
    return {op.attributes["event_id"]: op for op in day.ops if op.endpoint == "fill.judged"}


def test_explicit_ops_name_each_rule_and_its_value(scenario_settings: Settings) -> None:
    day = _day(scenario_settings, _riverfront(), "explicit")
    ops = _judged(day)
    refused = [r for r in day.results if r.rejections]
    assert refused, "the built-in day has refusals"
    for result in refused:
        said = ops[result.event_id].attributes["rejections"]
        assert said == [x.model_dump(mode="json") for x in result.rejections]


def test_vague_ops_carry_the_clients_words_and_no_rule_or_number(scenario_settings: Settings) -> None:
    day = _day(scenario_settings, _riverfront(), "vague")
    ops = _judged(day)
    refused = [r for r in day.results if r.rejections]
    assert refused
    for result in refused:
        said = ops[result.event_id].attributes["rejections"]
        assert [set(entry) for entry in said] == [{"worker_id", "said"}] * len(result.rejections)
        for entry, truth in zip(said, result.rejections, strict=True):
            assert entry["said"] in PHRASES[truth.rule]
            assert not re.search(r"\d", entry["said"])


def test_silent_ops_say_who_was_refused_and_nothing_else(scenario_settings: Settings) -> None:
    day = _day(scenario_settings, _riverfront(), "silent")
    ops = _judged(day)
    for result in day.results:
        op = ops[result.event_id]
        assert "rejections" not in op.attributes
        assert op.attributes["refused"] == list(dict.fromkeys(x.worker_id for x in result.rejections))
        assert op.attributes["accepted"] == result.accepted


def test_ops_carry_the_submitted_workers_facts_as_evidence(scenario_settings: Settings) -> None:
    day = _day(scenario_settings, _riverfront(), "silent")
    ops = _judged(day)
    for result in day.results:
        items = ops[result.event_id].attributes["judged"]["items"]
        assert {i["id"] for i in items} == set(result.proposed[: result.requested])
        assert {i["id"] for i in items if i["accepted"]} == set(result.accepted)
    first = next(iter(ops.values())).attributes["judged"]
    assert first["scope"] == "riverfront-steel"
    assert first["features"]["distance_miles"]["filter"] == "max_distance_miles"
    assert set(first["items"][0]["values"]) >= {
        "reliability",
        "compliance",
        "certifications",
        "prior_no_show",
    }


def test_the_true_rule_never_reaches_the_op_learners_read(scenario_settings: Settings) -> None:
    """Two clients whose hidden rules differ (a spelling of the certification, a lower reliability
    floor, a longer distance) but refuse the same workers: in vague and silent mode their ops are
    identical, so nothing a learner reads depends on the rule itself; in explicit mode they
    differ (the control: the comparison can fail)."""
    a = _riverfront()
    acceptance_b = a.client.acceptance.model_copy(
        update={"required_certifications": ["OSHA-10 Hour"], "min_reliability": 0.6, "max_distance_miles": 45}
    )
    b = a.model_copy(update={"client": a.client.model_copy(update={"acceptance": acceptance_b})})

    def seen(day: DayResult) -> list[tuple[str, str, str]]:
        return [
            (op.input_summary, op.output_summary, json.dumps(op.attributes, sort_keys=True))
            for op in _judged(day).values()
        ]

    for mode in ("explicit", "vague", "silent"):
        day_a, day_b = _day(scenario_settings, a, mode), _day(scenario_settings, b, mode)
        verdicts_a = [(r.accepted, [(x.worker_id, x.rule) for x in r.rejections]) for r in day_a.results]
        verdicts_b = [(r.accepted, [(x.worker_id, x.rule) for x in r.rejections]) for r in day_b.results]
        assert verdicts_a == verdicts_b, "the two clients refuse the same workers for the same rules"
        assert any(r.rejections for r in day_a.results)
        if mode == "explicit":
            assert seen(day_a) != seen(day_b)
            continue
        assert seen(day_a) == seen(day_b), mode
        # The evidence's data dictionary names search filters (max_distance_miles is one), the
        # same in every op; everything else must not name a rule.
        said = [
            (op.output_summary, {k: v for k, v in op.attributes.items() if k != "judged"})
            for op in _judged(day_a).values()
        ]
        text = json.dumps(said)
        for rule in HIDDEN_RULE_IDS:
            assert rule not in text, (mode, rule)


def test_an_unknown_feedback_mode_is_refused_naming_the_modes(cli) -> None:
    with pytest.raises(UserError, match="explicit, vague, silent"):
        parse_feedback("explicit,loud")
    result = cli("run", "--feedback", "loud", "--check")
    assert result.code != 0
    assert "unknown feedback mode 'loud'; the modes are explicit, vague, silent" in result.err
    with pytest.raises(UserError, match="feedback"):
        parse_scenario({**_riverfront().model_dump(mode="json"), "feedback": "loud"}, "x.yaml")


def test_a_run_has_one_arm_per_staffer_and_feedback_mode(scenario_settings: Settings, observer) -> None:
    summary = run_scenarios(
        [_riverfront()],
        ["rules-static"],
        batches=1,
        feedback="explicit,silent",
        settings=scenario_settings,
        observer=observer,
        run_id="arms",
    )
    results = read_results(summary.run_dir)
    assert {r.arm for r in results} == {"rules-static", "rules-static@silent"}
    plan = json.loads((summary.run_dir / "plan.json").read_text())
    assert plan["feedback"] == ["explicit", "silent"]
    board = json.loads((summary.run_dir / "leaderboard.json").read_text())
    assert set(board["learning_curve_by_feedback"]) == {"explicit", "silent"}
    assert board["learning_curve_by_feedback"]["silent"] == {
        "rules-static": summary.learning_curve["rules-static@silent"]
    }
    card = compare(results, "rules-static", "rules-static@silent")
    assert card.paired
    assert "rules-static@silent" in (summary.run_dir / "report.html").read_text()


def test_a_scenarios_own_feedback_key_decides_without_the_option(
    scenario_settings: Settings, observer
) -> None:
    vague = _riverfront().model_copy(update={"feedback": "vague"})
    summary = run_scenarios(
        [vague], ["rules-static"], batches=1, settings=scenario_settings, observer=observer, run_id="key"
    )
    assert {r.arm for r in read_results(summary.run_dir)} == {"rules-static@vague"}
    plan = json.loads((summary.run_dir / "plan.json").read_text())
    assert plan["scenario_feedback"] == {"riverfront-steel-day1": "vague"}
