"""The loop end to end: a rules policy that reads lessons fills better the next batch;
the scheduler learns from an observer in the background and survives failures."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agentlake.learn import (
    LearningScheduler,
    LessonStore,
    TaskKey,
    combined_action,
    learn_cycle,
    learn_from_ops,
    learn_recorded,
    learnable_ops,
    measure_effects,
    outcome_attributes,
    retrieve_lessons,
)
from agentlake.learn.effect import record_outcome
from agentlake.observe import ObservedOp, Observer, OpStore
from agentlake.settings import load_settings
from agentlake.workforce.learning import StaffingAction, action_of

CLIENTS = ("riverfront-steel", "acme-foods")


@dataclass
class Worker:
    id: int
    reliability: float
    certs: set[str]
    miles: float
    no_show_at: set[str]
    booked: bool


def workforce(seed: int = 7) -> list[Worker]:
    rng = random.Random(seed)
    return [
        Worker(
            id=i,
            reliability=round(rng.uniform(0.4, 1.0), 2),
            certs={"OSHA 30"} if rng.random() < 0.6 else set(),
            miles=round(rng.uniform(1, 60), 1),
            no_show_at={c for c in CLIENTS if rng.random() < 0.15},
            booked=rng.random() < 0.1,
        )
        for i in range(300)
    ]


def hidden_rejection(worker: Worker, client: str) -> dict | None:
    """The clients' unwritten rules (the judge): riverfront wants OSHA 30 and reliability 0.7."""
    if worker.booked:
        return {
            "worker_id": worker.id,
            "reason": "already booked",
            "rule": "double_booked",
            "value": "08:00-16:00",
        }
    if client in worker.no_show_at:
        return {
            "worker_id": worker.id,
            "reason": "no-show here before",
            "rule": "exclude_prior_no_show",
            "value": True,
        }
    if client == "riverfront-steel":
        if "OSHA 30" not in worker.certs:
            return {
                "worker_id": worker.id,
                "reason": "no OSHA 30 on file; site policy",
                "rule": "required_certification",
                "value": "OSHA 30",
            }
        if worker.reliability < 0.7:
            return {
                "worker_id": worker.id,
                "reason": f"reliability {worker.reliability} below 0.70",
                "rule": "min_reliability",
                "value": 0.7,
            }
    if client == "acme-foods" and worker.miles > 40:
        return {
            "worker_id": worker.id,
            "reason": f"{worker.miles} miles from site, limit 40",
            "rule": "max_distance_miles",
            "value": 40,
        }
    return None


def allowed(worker: Worker, client: str, machine: StaffingAction | None) -> bool:
    """A rules policy without an LLM: the order's radius plus the lessons' machine action."""
    if worker.miles > 60:
        return False
    if machine is None:
        return True
    if any(cert not in worker.certs for cert in machine.require_certifications):
        return False
    if worker.reliability < machine.min_scores.get("reliability", 0.0):
        return False
    if machine.max_distance_miles is not None and worker.miles > machine.max_distance_miles:
        return False
    if machine.exclude_prior_no_show_at_client and client in worker.no_show_at:
        return False
    return not (machine.exclude_double_booked and worker.booked)


def run_batch(
    store: LessonStore | None, workers: list[Worker], batch: int, *, per_client: int = 6
) -> tuple[float, list[ObservedOp]]:
    """Fill 3 workers per event (one candidate each, no retries); returns fill rate and ops."""
    ops, filled_total, requested_total = [], 0, 0
    rng = random.Random(batch)
    for client in CLIENTS:
        for event in range(per_client):
            run_id = f"b{batch}-{client}-{event}"
            task = TaskKey(
                task_kind="baseline_fill", role="Welder", client_id=client, city="Cleveland", state="OH"
            )
            machine = None
            if store is not None:
                lessons = retrieve_lessons(store, task, semantic=False).lessons
                store.record_citations(
                    run_id, [lesson.id for lesson in lessons], used=False
                ) if lessons else None
                action, _ = combined_action(lessons, "staffing")
                machine = StaffingAction.model_validate(action) if action is not None else None
            pool = [w for w in rng.sample(workers, len(workers)) if allowed(w, client, machine)]
            proposed = pool[:3]
            rejections = [r for r in (hidden_rejection(w, client) for w in proposed) if r]
            filled = len(proposed) - len(rejections)
            filled_total, requested_total = filled_total + filled, requested_total + 3
            if store is not None:
                record_outcome(store, run_id, task, filled == 3, score=filled / 3)
            ops.append(
                ObservedOp(
                    id=f"op-{run_id}",
                    endpoint="fill.judged",
                    source="scenario",
                    success=filled == 3,
                    run_id=run_id,
                    labels=dict(
                        role="Welder", city="Cleveland", state="OH", count=3, sig_hash=task.sig_hash()
                    ),
                    attributes={
                        "client_id": client,
                        "task_kind": "baseline_fill",
                        "requested": 3,
                        "filled": filled,
                        "rejections": rejections,
                    },
                )
            )
    return filled_total / requested_total, ops


def test_lessons_from_batch_one_raise_the_fill_rate_of_batch_two(store: LessonStore) -> None:
    workers = workforce()
    rate_1, ops_1 = run_batch(store, workers, 1)
    applied = learn_from_ops(store, ops_1)
    assert {a.outcome for a in applied} <= {"added", "confirmed"}
    rate_2, ops_2 = run_batch(store, workers, 2)
    learn_from_ops(store, ops_2)
    rate_3, _ = run_batch(store, workers, 3)
    assert rate_2 - rate_1 >= 0.20, (rate_1, rate_2)
    assert rate_3 >= rate_2 - 0.05
    reports = {r.lesson_id: r for r in measure_effects(store, min_runs=3)}
    riverfront_osha = next(
        lesson
        for lesson in store.list()
        if lesson.machine and action_of(lesson).require_certifications == ["OSHA 30"]
    )
    assert reports[riverfront_osha.id].effect > 0
    assert reports[riverfront_osha.id].helpful > 0
    assert all(lesson.status == "active" for lesson in store.list()), "no helpful rule was retired"


def test_without_lessons_nothing_improves() -> None:
    workers = workforce()
    rates = [run_batch(None, workers, batch)[0] for batch in (1, 2, 3)]
    assert max(rates) - min(rates) < 0.2


def test_learn_cycle_reports_every_stage(store: LessonStore, clock) -> None:
    _, ops = run_batch(store, workforce(), 1)
    report = learn_cycle(store, ops, promote=True)
    assert report.ops_read == report.ops_new == len(ops)
    assert report.counts()["added"] >= 4
    assert report.notes["heuristic_drafts"] == report.counts()["added"]
    clock.advance(weeks=2)
    later = learn_cycle(store, [])
    assert later.applied == []
    assert {e.kind for e in later.maintenance} == {"decay"}


def test_scheduler_learns_from_the_observer_in_the_background(settings) -> None:
    store = LessonStore.open(settings, embedder=False)
    observer = Observer(OpStore(settings.observer_path))
    scheduler = LearningScheduler(store, observer, interval_s=0.05)
    done: list[int] = []
    scheduler.on_cycle = lambda report: done.append(len(report.applied))
    try:
        scheduler.start()
        _, ops = run_batch(None, workforce(), 1)
        observer.record_many(ops)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not store.list():
            time.sleep(0.05)
        assert store.list(), f"no lesson learned; errors={scheduler.errors} {scheduler.last_error}"
        assert scheduler.running
        assert scheduler.errors == 0
        cycles = scheduler.cycles
        while time.monotonic() < deadline and scheduler.cycles < cycles + 2:
            time.sleep(0.05)
        assert done[-1] == 0, "later cycles re-learn nothing"
        assert sum(done) == len(store.list())
    finally:
        scheduler.stop()
        observer.close()
        store.close()
    assert not scheduler.running


def test_a_failing_cycle_never_reaches_the_host(store: LessonStore) -> None:
    class Broken:
        def query(self, **filters: object) -> list[ObservedOp]:
            raise ConnectionError("observer went away")

    scheduler = LearningScheduler(store, Broken(), interval_s=3600)
    assert scheduler.run_once() is None
    assert scheduler.errors == 1
    assert "observer went away" in (scheduler.last_error or "")


def test_scheduler_reads_only_new_ops(store: LessonStore, settings) -> None:
    with Observer(OpStore(settings.observer_path)) as observer:
        _, ops = run_batch(None, workforce(), 1)
        base = datetime(2026, 11, 21, tzinfo=UTC)
        for i, op in enumerate(ops):
            op.ts = base + timedelta(seconds=i)
        observer.record_many(ops[:6])
        scheduler = LearningScheduler(store, observer, interval_s=3600)
        first = scheduler.run_once()
        assert first is not None
        assert first.ops_read == 6
        observer.record_many(ops[6:])
        second = scheduler.run_once()
        assert second is not None
        assert second.ops_read == len(ops) - 6, "the cursor is the commit sequence: no op is read twice"


def test_scheduler_interval_comes_from_settings_by_default(store: LessonStore) -> None:
    scheduler = LearningScheduler(store, None)
    assert scheduler.interval_s == store.settings.learn_interval_s == 300.0
    assert scheduler.extractor.name == "induction"


def _stating_outcomes(ops: list[ObservedOp], given: list[str]) -> list[ObservedOp]:
    """The batch's ops, each stating its run's outcome (as a scenario day does); every other run
    was given the lessons ``given``, so the others are the baseline."""
    for index, op in enumerate(ops):
        task = TaskKey(
            task_kind="baseline_fill",
            role="Welder",
            client_id=op.attributes["client_id"],
            city="Cleveland",
            state="OH",
        )
        score = op.attributes["filled"] / op.attributes["requested"]
        op.attributes.update(outcome_attributes(task, op.success, score=score))
        op.attributes["lessons_given"] = given if index % 2 == 0 else []
    return ops


def test_learning_now_reads_one_runs_ops_back_from_the_observer(store: LessonStore, settings) -> None:
    with Observer(OpStore(settings.observer_path)) as observer:
        _, ours = run_batch(None, workforce(), 1)
        _, theirs = run_batch(None, workforce(), 2)
        for op in ours:
            op.run_id = f"run-a:{op.run_id}"
        for op in theirs:
            op.run_id = f"run-b:{op.run_id}"
        observer.record_many(ours + theirs)
        report = learn_recorded(store, observer, run_id="run-a:*", maintain=False, promote=False)
    assert report.ops_read == len(ours)
    assert store.unlearned([op.id for op in ours]) == set()
    assert store.unlearned([op.id for op in theirs]) == {op.id for op in theirs}


def test_the_outcomes_and_citations_ops_state_are_recorded_once(store: LessonStore, settings) -> None:
    _, first = run_batch(None, workforce(), 1)
    learn_from_ops(store, first)
    known = [lesson.id for lesson in store.list()][:2]
    _, second = run_batch(None, workforce(), 2)
    ops = _stating_outcomes(second, [*known, "L-0000000000"])
    with Observer(OpStore(settings.observer_path)) as observer:
        observer.record_many(ops)
        report = learn_recorded(store, observer, maintain=False, promote=False)
        learn_recorded(store, observer, maintain=False, promote=False)
    assert report.outcomes == len(ops)
    assert len(store.query("SELECT run_id FROM outcomes")) == len(ops)
    given = store.query("SELECT lesson_id, run_id FROM citations WHERE NOT used")
    assert sorted({lesson for lesson, _ in given}) == sorted(known), "an unknown lesson id is skipped"
    assert len(given) == len(known) * len(ops[::2]), "a second cycle over the same ops cites nothing twice"
    assert report.effects, "the outcomes were in before measuring"


def test_every_door_teaches_by_default_but_outside_traces_and_posted_events_do_not() -> None:
    ops = {
        "scenario": ObservedOp(endpoint="fill.judged", source="scenario"),
        "agent tool": ObservedOp(endpoint="tool.sql", source="agent"),
        "outside span": ObservedOp(endpoint="tool.get_weather", source="otlp"),
        "posted event": ObservedOp(endpoint="fill.judged", source="external"),
        "via mcp": ObservedOp(endpoint="tool.sql", source="agent", attributes={"origin": "mcp"}),
        "gateway request": ObservedOp(endpoint="POST /sql", source="gateway", success=False),
        "other endpoint": ObservedOp(endpoint="GET /workers", source="agent"),
    }
    kept = learnable_ops(list(ops.values()), load_settings())
    assert [name for name, op in ops.items() if op in kept] == [
        "scenario",
        "agent tool",
        "via mcp",
        "gateway request",
    ]


def test_learning_sources_and_endpoints_are_settings() -> None:
    ops = [
        ObservedOp(endpoint="tool.get_weather", source="otlp"),
        ObservedOp(endpoint="fill.judged", source="scenario"),
    ]
    settings = load_settings(learn_sources="otlp", learn_endpoints="tool.get_weather")
    assert [op.endpoint for op in learnable_ops(ops, settings)] == ["tool.get_weather"]


def test_a_lesson_given_before_this_store_learned_it_is_cited(store: LessonStore) -> None:
    """Ops of a staffer that learned within the day: a later run was given the lesson an earlier
    op taught. Once the cycle has learned it, that run counts as given, not as the baseline."""
    _, batch = run_batch(None, workforce(), 1)
    probe = LessonStore.open(store.settings, path=store.path.with_name("probe.duckdb"), embedder=False)
    with probe:
        learn_from_ops(probe, batch)
        taught = [lesson.id for lesson in probe.list()][:2]
    assert taught
    ops = _stating_outcomes(batch, taught)
    learn_cycle(store, ops, measure=False, maintain=False, promote=False)
    given = {lesson for lesson, _ in store.query("SELECT lesson_id, run_id FROM citations WHERE NOT used")}
    assert given == set(taught)
