"""The overseer's tiers in a scenario run (issue 32 point 1), with a scripted T3 model and real
parts: the generated lake, real judged events, the arm's lesson store on disk. T3 reviews every
judged event and proposes through the learner; T5 replays what it proposes over the run's
judged events and refuses the lesson that would have left out workers the client accepted."""

from __future__ import annotations

import json

import pytest

from agentlake.learn import LessonStore, read_ops
from agentlake.scenarios import StafferProfile, load_scenarios, read_results
from agentlake.scenarios.metrics import leaderboard
from agentlake.scenarios.results import read_lines
from agentlake.scenarios.runner import run_scenarios
from agentlake.settings import Settings

HARMFUL = {
    "trigger": "every order",
    "action": "only near-perfect workers",
    "filter": "reliability",
    "value": "0.99",
}
HARMLESS = {
    "trigger": "emergencies",
    "action": "shortlist three spares",
    "filter": "spare_buffer",
    "value": "3",
}


def _t3(seen: list[object]):
    def reply(messages, options) -> str:
        seen.append((messages, options))
        return json.dumps({"lessons": [HARMFUL, HARMLESS]})

    return reply


@pytest.mark.slow
def test_t3_proposes_per_judged_event_and_t5_refuses_what_would_reject_accepted_workers(
    scenario_settings: Settings, observer
) -> None:
    from agentlake.llm import FunctionProvider, register_scripted, unregister_scripted

    seen: list[object] = []
    register_scripted("t3", FunctionProvider(_t3(seen), "t3"))
    try:
        staffer = StafferProfile(
            staffer="rules-tiers",
            policy="rules",
            models={"t3": "function:t3"},
            t3_review=True,
            t5_gate=True,
        )
        days = [s for s in load_scenarios("builtin") if s.client.id == "riverfront-steel"][:1]
        summary = run_scenarios(
            days,
            [staffer, "rules-learning"],
            batches=2,
            settings=scenario_settings,
            observer=observer,
            run_id="t",
        )
    finally:
        unregister_scripted("t3")
    results = read_results(summary.run_dir)
    mine = [r for r in results if r.staffer == "rules-tiers"]
    assert len(seen) == len(mine), "T3 reviews each judged event once"
    assert all(options.think for _, options in seen), "T3 thinks"  # type: ignore[attr-defined]
    rows = {row.metrics.staffer: row.metrics.tiers for row in leaderboard(results)}
    assert rows == {"rules-tiers": "T3 T5", "rules-learning": ""}

    learning = [
        line for line in read_lines(summary.run_dir / "learning.jsonl") if line["staffer"] == "rules-tiers"
    ]
    assert learning[0]["tiers"]["t3_proposed"] == 2 * sum(1 for r in mine if r.batch == 1)
    assert learning[0]["tiers"]["t5_refused"] >= 1

    with LessonStore.open(
        scenario_settings, path=summary.run_dir / "lessons" / "rules-tiers.duckdb", embedder=False
    ) as store:
        lessons = store.list()
        harmful = [
            lesson for lesson in lessons if (lesson.machine or {}).get("min_scores") == {"reliability": 0.99}
        ]
        harmless = [lesson for lesson in lessons if (lesson.machine or {}).get("min_candidate_buffer") == 3]
        assert harmful, "T3's drafts reached the learner"
        assert {lesson.status for lesson in harmful} == {"retired"}
        refusal = store.history(harmful[0].id)[-1]
        assert (refusal.actor, refusal.reason.startswith("refused by the gatekeeper")) == ("gatekeeper", True)
        assert "the judge accepted" in refusal.reason
        assert harmless, "T3's drafts reached the learner"
        assert {lesson.status for lesson in harmless} == {"pending"}
        assert all(lesson.replayed for lesson in harmless), "the harmless lessons passed their replay"
        active = [lesson for lesson in lessons if lesson.status == "active"]
        assert all(lesson.replayed for lesson in active), "nothing activates without passing the replay"
    # What T3 read is what the client said (the judged op), never the judge's hidden verdicts.
    judged = read_ops(observer, run_id="t:rules-tiers:*", endpoint="fill.judged")
    first_prompt = seen[0][0][-1].content  # type: ignore[index]
    assert judged[0].input_summary in first_prompt
