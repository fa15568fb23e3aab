"""Rule recovery: learned filters set against the clients' hidden rules, per client and mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentlake.lake import Lake
from agentlake.learn import LessonDraft, LessonMatch, LessonStore
from agentlake.scenarios import load_scenarios, read_results
from agentlake.scenarios.recovery import ClientRecovery, client_recovery
from agentlake.scenarios.report import render_report
from agentlake.scenarios.runner import client_pools, run_scenarios
from agentlake.settings import Settings
from agentlake.workforce.learning import StaffingAction

PACK2 = Path(__file__).parent / "data" / "pack2"


def _riverfront():  # a Scenario
    return [s for s in load_scenarios("builtin") if s.client.id == "riverfront-steel"]


def _recover(settings: Settings, tmp_path: Path, *machines: StaffingAction) -> ClientRecovery:
    scenarios = _riverfront()
    client = scenarios[0].client
    with (
        Lake.open(settings, read_only=True) as lake,
        LessonStore.open(settings, path=tmp_path / "lessons.duckdb", embedder=False) as store,
    ):
        for n, machine in enumerate(machines):
            store.add(
                LessonDraft(
                    trigger=f"Filling any role for {client.id}",
                    action=f"lesson {n}: {machine.describe()}",
                    match=LessonMatch(client_id=client.id),
                    machine=machine,
                    domain="staffing",
                    confidence=0.9,
                    source="human",
                )
            )
        pools = client_pools(lake, scenarios).by_client[client.id]
        return client_recovery(pools, client.acceptance, store, arm="a", feedback="silent")


def _verdicts(found: ClientRecovery) -> dict[str, str]:
    return {r.rule: r.verdict for r in found.rules}


def test_the_clients_own_rules_are_recovered_exactly_at_no_cost(
    scenario_settings: Settings, tmp_path: Path
) -> None:
    found = _recover(
        scenario_settings,
        tmp_path,
        StaffingAction(require_certifications=["OSHA-10 Hour"]),  # another spelling of OSHA 10
        StaffingAction(min_scores={"reliability": 0.7}),
        StaffingAction(max_distance_miles=40),
        StaffingAction(exclude_prior_no_show_at_client=True),
    )
    assert set(_verdicts(found).values()) == {"exact"}
    assert found.pool_cost == 0
    assert found.harmful == []
    assert found.acceptable > 0


def test_nothing_learned_misses_every_rule(scenario_settings: Settings, tmp_path: Path) -> None:
    found = _recover(scenario_settings, tmp_path)
    assert set(_verdicts(found).values()) == {"missed"}
    assert found.pool_cost == 0


def test_a_floor_above_the_clients_is_too_strict_harmful_and_costs_pool(
    scenario_settings: Settings, tmp_path: Path
) -> None:
    found = _recover(scenario_settings, tmp_path, StaffingAction(min_scores={"reliability": 0.85}))
    assert _verdicts(found)["min_reliability"] == "too_strict"
    assert len(found.harmful) == 1
    assert found.pool_cost > 0.1


def test_a_floor_below_the_clients_is_too_loose_and_harmless(
    scenario_settings: Settings, tmp_path: Path
) -> None:
    found = _recover(scenario_settings, tmp_path, StaffingAction(min_scores={"reliability": 0.5}))
    assert _verdicts(found)["min_reliability"] == "too_loose"
    assert found.harmful == []
    assert found.pool_cost == 0


def test_a_filter_for_a_rule_the_client_lacks_is_spurious(
    scenario_settings: Settings, tmp_path: Path
) -> None:
    found = _recover(scenario_settings, tmp_path, StaffingAction(min_scores={"compliance": 0.8}))
    assert found.spurious == ["min_compliance 0.8"]
    assert len(found.harmful) == 1


def test_a_run_scores_each_learning_arm_against_the_hidden_rules(
    scenario_settings: Settings, observer
) -> None:
    summary = run_scenarios(
        _riverfront()[:1],
        ["rules-learning", "rules-static"],
        batches=2,
        feedback="explicit,silent",
        settings=scenario_settings,
        observer=observer,
        run_id="recovery",
    )
    board = json.loads((summary.run_dir / "leaderboard.json").read_text())
    assert {(row["arm"], row["client_id"]) for row in board["rule_recovery"]} == {
        ("rules-learning", "riverfront-steel"),
        ("rules-learning@silent", "riverfront-steel"),
    }
    explicit = board["rule_recovery_by_arm"]["rules-learning"]
    assert explicit["exact"] >= 1, "the client named the rule and its value"
    assert explicit["harmful"] == 0
    assert board["rule_recovery_by_arm"] == summary.recovery_by_arm
    html = (summary.run_dir / "report.html").read_text()
    assert "Hidden rules recovered" in html
    assert "rules-learning@silent" in html


def test_the_report_says_why_learning_set_evidence_aside(scenario_settings: Settings, observer) -> None:
    """Contradictory evidence gives no lesson (tests/learn: induction); the report says why."""
    summary = run_scenarios(
        _riverfront()[:1],
        ["rules-static"],
        batches=1,
        settings=scenario_settings,
        observer=observer,
        run_id="n",
    )
    note = "worker 7 was accepted and refused for Welder in Cleveland, OH: contradictory evidence, no lesson from it"
    html = render_report(
        read_results(summary.run_dir), learning=[{"staffer": "rules-learning", "batch": 1, "notes": [note]}]
    )
    assert f"rules-learning after batch 1: {note}" in html


def test_a_client_that_never_refuses_teaches_nothing_and_fails_nothing(
    scenario_settings: Settings, observer
) -> None:
    (day,) = _riverfront()[:1]
    easy = day.model_copy(
        update={
            "client": day.client.model_copy(
                update={
                    "acceptance": day.client.acceptance.model_copy(
                        update={
                            "required_certifications": [],
                            "min_reliability": None,
                            "max_distance_miles": None,
                            "exclude_prior_no_show": False,
                        }
                    )
                }
            )
        }
    )
    summary = run_scenarios(
        [easy],
        ["rules-learning"],
        batches=2,
        feedback="silent",
        settings=scenario_settings,
        observer=observer,
        run_id="easy",
    )
    results = read_results(summary.run_dir)
    assert not any(r.rejections for r in results), "the client refused no one"
    assert not any(r.error for r in results)
    with LessonStore.open(
        scenario_settings, path=summary.run_dir / "lessons" / "rules-learning@silent.duckdb", embedder=False
    ) as store:
        assert store.list(source="induction") == []


@pytest.mark.slow
def test_the_second_pack_holds_the_targets_under_vague_and_silent_feedback(
    scenario_settings: Settings, observer
) -> None:
    """Five clients, cities and hidden values the learner was not tuned on (tests/scenarios/data/pack2)."""
    scenarios = load_scenarios(PACK2)
    assert len({s.client.id for s in scenarios}) == 5
    summary = run_scenarios(
        scenarios,
        ["rules-learning", "rules-static"],
        batches=3,
        feedback="vague,silent",
        settings=scenario_settings,
        observer=observer,
        run_id="pack2",
    )
    curve = summary.learning_curve
    assert curve["rules-learning@vague"][2] >= 0.90, curve
    assert curve["rules-learning@silent"][2] >= 0.85, curve
    for mode in ("vague", "silent"):
        static = curve[f"rules-static@{mode}"]
        assert max(static) == min(static), static
    for arm, total in summary.recovery_by_arm.items():
        assert total["harmful"] == 0, arm
        assert total["pool_cost"] <= 0.10, arm
        assert total["exact"] >= 4, (arm, total)
