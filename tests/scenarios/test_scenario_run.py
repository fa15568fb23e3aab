"""Running scenario days: the learning curve, what gets recorded, backends, and refusing bad runs."""

from __future__ import annotations

import json
from collections import defaultdict
from functools import partial
from pathlib import Path

import pytest
from scenarios_support import approver, lesson_follower

from agentlake.errors import NotFoundError, UserError
from agentlake.learn import LessonStore, read_ops
from agentlake.scenarios import StafferProfile, compare, load_scenarios, read_results
from agentlake.scenarios.runner import run_scenarios
from agentlake.settings import Settings


def _overlap(a, b) -> bool:  # two EventResults
    return a.shift_start < b.shift_end and b.shift_start < a.shift_end


@pytest.mark.slow
def test_rules_baseline_learns_the_clients_rules_and_the_static_one_does_not(
    scenario_settings: Settings, observer
) -> None:
    summary = run_scenarios(
        "builtin",
        ["rules-learning", "rules-static"],
        batches=3,
        settings=scenario_settings,
        observer=observer,
        run_id="curve",
    )
    learner, static = summary.learning_curve["rules-learning"], summary.learning_curve["rules-static"]
    # Nothing is known at 08:00 of batch 1; the learner learns within the day (the afternoon
    # uses the morning's refusals), then between batches.
    assert static[0] < 0.6
    assert learner[0] > static[0]
    assert learner[2] - static[0] >= 0.20, learner
    assert max(static) - min(static) <= 0.02, static
    assert summary.leaderboard[0]["staffer"] == "rules-learning"

    run_dir = summary.run_dir
    assert {p.name for p in run_dir.iterdir()} >= {
        "plan.json",
        "results.jsonl",
        "leaderboard.json",
        "report.html",
        "lessons",
    }
    # Each learning arm has its own store; the static arm has none, so arms cannot leak.
    assert [p.name for p in (run_dir / "lessons").iterdir()] == ["rules-learning.duckdb"]
    board = json.loads((run_dir / "leaderboard.json").read_text())
    assert board["learning_curve"]["rules-learning"] == learner
    assert board["learning"][0]["active"] > 0

    results = read_results(run_dir)
    assert len(results) == 3 * 2 * sum(len(s.events) for s in load_scenarios("builtin"))
    # The hidden rules are what batch 1 ran into, and they are what learning removed.
    hidden = {"required_certification", "min_reliability", "max_distance_miles", "exclude_prior_no_show"}
    first = [x.rule for r in results if r.staffer == "rules-learning" and r.batch == 1 for x in r.rejections]
    last = [x.rule for r in results if r.staffer == "rules-learning" and r.batch == 3 for x in r.rejections]
    assert sum(rule in hidden for rule in first) > 2 * max(1, sum(rule in hidden for rule in last))
    assert any(r.lessons_cited for r in results if r.staffer == "rules-learning" and r.batch == 3)
    assert not any(r.lessons_given for r in results if r.staffer == "rules-static")

    # Placements persist across a day's events: no worker is accepted twice over overlapping shifts,
    # and the staffer's own checks caught the attempts.
    days = defaultdict(list)
    for r in results:
        days[r.day_key].append(r)
    for events in days.values():
        for i, a in enumerate(events):
            for b in events[i + 1 :]:
                if _overlap(a, b):
                    assert not set(a.accepted) & set(b.accepted), (a.event_id, b.event_id)
    assert sum(r.double_bookings_caught for r in results) > 0
    # An emergency never takes back the worker who did not show.
    for events in days.values():
        by_id = {r.event_id: r for r in events}
        for r in events:
            if r.kind == "emergency":
                scenario = next(s for s in load_scenarios("builtin") if s.scenario == r.scenario)
                ref = by_id[scenario.event(r.event_id).no_show_of]
                assert not set(r.accepted) & set(ref.accepted)

    # Every judged event went to the observer as a fill.judged op with its labels.
    ops = observer.query(endpoint="fill.judged", limit=10_000)
    assert len(ops) == len(results)
    op = next(o for o in ops if o.attributes["rejections"])
    assert op.source == "scenario"
    assert op.labels.get("staffer_id") in ("rules-learning", "rules-static")
    assert op.run_id.startswith("curve:")
    assert op.labels.get("sig_hash")
    assert op.labels.get("count")
    assert {
        "client_id",
        "task_kind",
        "requested",
        "filled",
        "accepted",
        "rejections",
        "lessons_given",
    } <= set(op.attributes)
    assert {"worker_id", "reason", "rule", "value"} <= set(op.attributes["rejections"][0])
    assert op.success == (op.attributes["filled"] == op.attributes["requested"])
    assert observer.query(endpoint="task.fill", limit=1), "the policy's own ops come back from the day too"

    card = compare(results, "rules-static", "rules-learning", batch=3)
    fill = next(row for row in card.rows if row.metric == "fill_rate")
    assert card.paired
    assert fill.diff_ci.low > 0
    assert fill.verdict == "rules-learning better"

    html = (run_dir / "report.html").read_text()
    assert "Learning curve" in html
    assert "rules-learning" in html
    assert "<script" not in html


@pytest.mark.slow
def test_a_scripted_llm_staffer_learns_from_rejections_too(scenario_settings: Settings, observer) -> None:
    from agentlake.llm import FunctionProvider, register_scripted, unregister_scripted

    register_scripted("lesson-follower", FunctionProvider(lesson_follower, "lesson-follower"))
    register_scripted("approver", FunctionProvider(approver, "approver"))
    try:
        staffer = StafferProfile(
            staffer="scripted-llm",
            policy="llm",
            models={"executor": "function:lesson-follower", "reviewer": "function:approver"},
            rescue=False,
        )
        days = [s for s in load_scenarios("builtin") if s.scenario.endswith("-day1")]
        summary = run_scenarios(
            days, [staffer], batches=3, settings=scenario_settings, observer=observer, run_id="llm"
        )
    finally:
        unregister_scripted("lesson-follower")
        unregister_scripted("approver")
    curve = summary.learning_curve["scripted-llm"]
    assert curve[2] - curve[0] >= 0.20, curve
    results = read_results(summary.run_dir)
    assert all(r.turns >= 2 for r in results)
    assert any(r.lessons_cited for r in results if r.batch == 3)
    assert not any(r.lessons_cited for r in results if r.batch == 1)
    assert observer.query(endpoint="tool.find_workers", limit=1), "the model's tool calls are observed"
    # Learning read the batches back from the observer: every op of the run (tool calls, model
    # calls, task and judged ops) carries its event's run id, and every one was learned from.
    recorded = read_ops(observer, run_id="llm:scripted-llm:*")
    assert len(recorded) == len(read_ops(observer)), "every op of the run carries its event's run id"
    lessons = summary.run_dir / "lessons" / "scripted-llm.duckdb"
    with LessonStore.open(scenario_settings, path=lessons, embedder=False) as store:
        assert store.unlearned([op.id for op in recorded]) == set()


@pytest.mark.slow
def test_process_backend_gives_the_inline_results(scenario_settings: Settings, observer) -> None:
    days = [
        s
        for s in load_scenarios("builtin")
        if s.scenario in ("eagle-container-day1", "tri-county-container-day1")
    ]
    runs = {}
    for backend in ("inline", "process"):
        summary = run_scenarios(
            days,
            ["rules-learning"],
            batches=2,
            backend=backend,
            workers=2,
            settings=scenario_settings,
            observer=observer,
            run_id=backend,
        )
        runs[backend] = {
            (r.batch, r.scenario, r.event_id): (r.filled, r.accepted) for r in read_results(summary.run_dir)
        }
    assert runs["process"] == runs["inline"]
    # Learning happened between the batches in both (the rules policy is deterministic).
    assert sum(f for (b, *_), (f, _) in runs["process"].items() if b == 2) > sum(
        f for (b, *_), (f, _) in runs["process"].items() if b == 1
    )


class _Interrupted(Exception):
    """Stands for the crash or kill that stops a run between two days."""


@pytest.mark.slow
def test_an_interrupted_run_resumes_where_it_stopped(scenario_settings: Settings, observer) -> None:
    days = [
        s
        for s in load_scenarios("builtin")
        if s.scenario in ("eagle-container-day1", "tri-county-container-day1")
    ]
    run = partial(
        run_scenarios,
        days,
        ["rules-learning", "rules-static"],
        batches=3,
        settings=scenario_settings,
        observer=observer,
    )
    whole = run(run_id="whole")

    def stop_in_batch_2(p) -> None:  # a runner.Progress
        if p.batch == 2 and p.done == 2:
            raise _Interrupted

    with pytest.raises(_Interrupted):
        run(run_id="cut", on_progress=stop_in_batch_2)
    ran: list[tuple[int, str, str]] = []
    resumed = run(
        run_id="cut", resume=True, on_progress=lambda p: ran.append((p.batch, p.staffer, p.scenario))
    )

    def outcomes(run_dir: Path) -> list[tuple]:
        return sorted(
            (r.arm, r.batch, r.scenario, r.event_id, r.filled, r.accepted) for r in read_results(run_dir)
        )

    # 4 days a batch; 4 of batch 1 and 2 of batch 2 had finished, so 6 days were left.
    assert len(ran) == 6
    assert [b for b, *_ in ran].count(2) == 2
    assert outcomes(resumed.run_dir) == outcomes(whole.run_dir)
    assert [(item.staffer, item.batch) for item in resumed.learning] == [
        ("rules-learning", b) for b in (1, 2, 3)
    ]
    assert resumed.learning_curve == whole.learning_curve
    assert len(json.loads((resumed.run_dir / "plan.json").read_text())["resumed_at"]) == 1


def test_resuming_asks_for_the_run_as_it_was_started(scenario_settings: Settings) -> None:
    days = [s for s in load_scenarios("builtin") if s.scenario == "eagle-container-day1"]
    with pytest.raises(UserError, match="no run to resume"):
        run_scenarios(days, ["rules-static"], settings=scenario_settings, run_id="never", resume=True)
    with pytest.raises(UserError, match="--resume needs the --run-id"):
        run_scenarios(days, ["rules-static"], settings=scenario_settings, resume=True)
    started = scenario_settings.runs_dir / "started"
    started.mkdir(parents=True)
    (started / "plan.json").write_text(json.dumps({"scenarios": ["eagle-container-day1"], "batches": 2}))
    with pytest.raises(UserError, match="started was started with other staffers"):
        run_scenarios(days, ["rules-static"], settings=scenario_settings, run_id="started", resume=True)
    with pytest.raises(UserError, match="or --resume to continue it"):
        run_scenarios(days, ["rules-static"], settings=scenario_settings, run_id="started")


def test_bad_runs_are_refused_before_anything_runs(scenario_settings: Settings, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        (Path(__file__).parents[2] / "src/agentlake/scenarios/pack/eagle-container-day1.yaml")
        .read_text()
        .replace("count: 3", "count: -1")
    )
    with pytest.raises(
        UserError, match=r"bad.yaml: events\[0\].count: Input should be greater than or equal to 1"
    ):
        run_scenarios([bad, "builtin"], ["rules-static"], settings=scenario_settings)
    with pytest.raises(UserError, match="unknown staffer 'robot'"):
        run_scenarios("builtin", ["rules-static", "robot"], settings=scenario_settings)
    # An LLM staffer whose model is not reachable (conftest points Ollama at 127.0.0.1:9).
    with pytest.raises(
        UserError, match=r"staffer basic: ollama:qwen3:4b: Ollama is not answering at http://127.0.0.1:9"
    ):
        run_scenarios("builtin", ["basic"], settings=scenario_settings)
    scripted = StafferProfile(staffer="s", policy="llm", models={"executor": "function:nobody"})
    with pytest.raises(UserError, match="lives in this process only; use --backend inline"):
        run_scenarios("builtin", [scripted], backend="process", settings=scenario_settings)
    unknown_city = tmp_path / "nowhere.yaml"
    unknown_city.write_text(
        bad.read_text().replace("count: -1", "count: 1").replace("city: Fort Worth", "city: Fort Wurth")
    )
    with pytest.raises(
        UserError,
        match="scenario eagle-container-day1: unknown city Fort Wurth, TX: did you mean Fort Worth, TX",
    ):
        run_scenarios(unknown_city, ["rules-static"], settings=scenario_settings)
    assert not scenario_settings.runs_dir.exists(), "nothing was written"
    empty = scenario_settings.model_copy(update={"data_dir": tmp_path / "empty"})
    with pytest.raises(NotFoundError, match="no lake at"):
        run_scenarios("builtin", ["rules-static"], settings=empty)
