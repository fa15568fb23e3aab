"""The rules policy: deterministic fills over the real lake, lessons with machine actions applied."""

from __future__ import annotations

import time

import pytest

from agentlake.agents import FillOrder, RulesPolicy, fill, verify_fill
from agentlake.learn import LessonDraft, LessonMatch, LessonStore
from agentlake.workforce.learning import StaffingAction
from agentlake.workforce.roles import held_certifications
from agentlake.workforce.tables import fetch_workers


@pytest.fixture
def store(tmp_path):
    opened = LessonStore.open(path=tmp_path / "lessons.duckdb", embedder=False)
    yield opened
    opened.close()


def _lesson(store: LessonStore, machine: StaffingAction, **match: str) -> str:
    applied = store.add(
        LessonDraft(
            trigger=f"orders {match}",
            action=machine.describe(),
            match=LessonMatch(**match),
            machine=machine,
            domain="staffing",
        )
    )
    assert applied.outcome == "added"
    return applied.lesson_id


def test_rules_fill_verifies_proposes_and_keeps_spares(make_ctx, order, qualified, sink) -> None:
    outcome = RulesPolicy().run(order, make_ctx())
    assert outcome.success
    assert outcome.policy == "rules"
    assert outcome.turns == 0
    assert outcome.proposed == qualified[:3]
    assert len(outcome.candidates) == 2
    assert verify_fill(make_ctx().lake, order, outcome.proposed + outcome.candidates, requested=5).ok
    kinds = [r.kind for r in outcome.transcript]
    assert kinds[0] == "search"
    assert kinds[-1] == "propose"
    assert set(kinds) <= {"search", "verification", "propose"}
    (task_op,) = sink.endpoint("task.fill")
    assert task_op.success
    assert task_op.attributes["policy"] == "rules"
    assert task_op.attributes["candidates"] == outcome.candidates


def test_rules_policy_applies_a_machine_usable_lesson(make_ctx, store, sink) -> None:
    order = FillOrder.parse(
        "3 x Warehouse Associate in New York, NY for Riverfront Steel at 08:00 on 2026-04-22"
    )
    baseline = RulesPolicy().run(order, make_ctx())
    lake = make_ctx().lake
    before = fetch_workers(lake, baseline.proposed, ["certifications", "reliability"])
    assert any("osha 10" not in held_certifications(row["certifications"]) for row in before.values()), (
        "without the lesson the most reliable workers include some without OSHA 10"
    )
    lesson_id = _lesson(
        store,
        StaffingAction(require_certifications=["OSHA-10 Hour"], min_scores={"reliability": 0.85}),
        client_id="riverfront-steel",
        role="Warehouse Associate",
    )

    outcome = RulesPolicy().run(order, make_ctx(lessons=store, run_id="run-rules-1"))

    assert outcome.success
    assert outcome.proposed != baseline.proposed
    after = fetch_workers(lake, outcome.proposed + outcome.candidates, ["certifications", "reliability"])
    assert all("osha 10" in held_certifications(row["certifications"]) for row in after.values())
    assert all(row["reliability"] >= 0.85 for row in after.values())
    assert outcome.lessons_given == [lesson_id]
    assert outcome.lessons_cited == [lesson_id]
    assert "require OSHA-10 Hour; reliability >= 0.85" in outcome.transcript[0].summary
    assert store.citations(run_id="run-rules-1") == [], "retrieval and the fill write nothing: the op says it"
    task_op = sink.endpoint("task.fill")[-1]
    assert task_op.attributes["lessons_given"] == [lesson_id]
    assert task_op.attributes["lessons_cited"] == [lesson_id]


def test_lessons_of_another_client_are_not_applied(make_ctx, store, order, qualified) -> None:
    _lesson(store, StaffingAction(min_scores={"reliability": 0.99}), client_id="some-other-client")
    outcome = RulesPolicy().run(
        order.model_copy(update={"client_id": "riverfront-steel"}), make_ctx(lessons=store)
    )
    assert outcome.lessons_given == []
    assert outcome.proposed == qualified[:3]


def test_exclude_prior_no_show_at_client(make_ctx, lake, store) -> None:
    (row,) = lake.read_arrow(
        "SELECT p.worker_id, c.name AS client, w.role, w.city, w.state FROM placements p JOIN clients c ON c.id = p.client_id "
        "JOIN workers w USING (worker_id) WHERE p.status = 'no_show' AND w.availability >= 0.5 ORDER BY p.worker_id LIMIT 1"
    ).to_pylist()
    order = FillOrder.parse(
        f"1 x {row['role']} in {row['city']}, {row['state']} for {row['client']} within 40 miles"
    )
    wide = RulesPolicy(spares=200)
    without = wide.run(order, make_ctx())
    assert row["worker_id"] in without.proposed + without.candidates
    lesson_id = _lesson(
        store, StaffingAction(exclude_prior_no_show_at_client=True), client_id=order.client_id
    )

    with_lesson = wide.run(order, make_ctx(lessons=store))

    assert row["worker_id"] not in with_lesson.proposed + with_lesson.candidates
    assert with_lesson.lessons_cited == [lesson_id]
    assert "no prior no-show here" in with_lesson.transcript[1].summary


def test_buffer_and_extra_where_from_lessons(make_ctx, store, order) -> None:
    _lesson(
        store,
        StaffingAction(min_candidate_buffer=6, extra_where="archetype <> 'flaky'"),
        role="Warehouse Associate",
    )
    outcome = RulesPolicy().run(order, make_ctx(lessons=store))
    assert outcome.success
    assert len(outcome.candidates) == 6
    rows = fetch_workers(make_ctx().lake, outcome.proposed + outcome.candidates, ["archetype"])
    assert all(r["archetype"] != "flaky" for r in rows.values())


def test_rescue_widens_the_radius_and_keeps_verified_workers(make_ctx, store) -> None:
    order = FillOrder.parse("3 x Welder in New York, NY within 5 miles")
    plain = RulesPolicy().run(order, make_ctx(rescue=False))
    assert not plain.success
    assert not plain.rescue_attempted
    assert 0 < len(plain.proposed) < 3
    assert plain.failure_reason.startswith(f"only {len(plain.proposed)} of 3 workers found")
    _lesson(store, StaffingAction(widen_radius_miles=25), role="Welder")

    rescued = RulesPolicy().run(order, make_ctx(rescue=True, lessons=store))

    assert rescued.success
    assert rescued.rescue_attempted
    assert rescued.rescue_succeeded
    assert rescued.order.radius_miles == 25
    assert rescued.proposed[: len(plain.proposed)] == plain.proposed
    assert any(r.kind == "rescue" and "from 5 to 25 miles" in r.summary for r in rescued.transcript)


def test_fill_library_call_uses_the_process_observer_and_lesson_outcomes(make_ctx, lake, store, sink) -> None:
    seen = []
    outcome = fill(
        "3 x warehouse workers in New York, NY at 08:00 on 2026-04-22",
        lake=lake,
        lessons=store,
        on_turn=seen.append,
        requirements=["OSHA 10"],
        run_id="run-fill-1",
    )
    assert outcome.success
    assert outcome.order.role == "Warehouse Associate"
    assert outcome.order.requirements == ["OSHA 10"]
    assert seen
    assert seen[0].kind == "search"
    assert seen[-1].kind == "propose"
    assert sink.endpoint("task.fill")[0].run_id == "run-fill-1"
    assert store.query("SELECT run_id FROM outcomes") == [], "the fill writes no outcome: its op states it"


def test_a_fills_op_states_its_outcome_and_the_learner_records_it(lake, store, sink) -> None:
    from agentlake.learn import record_outcomes

    fill(
        "3 x warehouse workers in New York, NY at 08:00 on 2026-04-22",
        lake=lake,
        lessons=store,
        run_id="run-fill-2",
    )
    record_outcomes(store, sink.endpoint("task.fill"))
    assert store.query("SELECT run_id, success FROM outcomes") == [("run-fill-2", True)]


@pytest.mark.timeout(60)
def test_a_slow_lesson_filter_cannot_hang_a_fill(make_ctx, store, order, monkeypatch) -> None:
    # Issue 17.1: a lesson's extra_where ran with no timeout, so one cross join hung every fill
    # it matched. It now runs under sql_timeout_s like every other SQL path.
    from agentlake.errors import RunError

    ctx = make_ctx(lessons=store)
    monkeypatch.setattr(ctx.lake, "settings", ctx.lake.settings.model_copy(update={"sql_timeout_s": 1.0}))
    slow = StaffingAction(extra_where="(SELECT count(*) FROM workers a, workers b, workers c) > 0")
    _lesson(store, slow, role=order.role)
    started = time.perf_counter()
    with pytest.raises(RunError, match="candidate search was interrupted after the 1 s timeout"):
        RulesPolicy().run(order, ctx)
    assert time.perf_counter() - started < 5


def test_a_learned_synonym_widens_the_search_to_the_roles_the_client_takes(make_ctx, store) -> None:
    order = FillOrder.parse("3 x Welder in New York, NY within 5 miles")
    plain = RulesPolicy().run(order, make_ctx(rescue=False))
    assert not plain.success
    _lesson(store, StaffingAction(accept_roles=["Sheet Metal Worker", "Pipefitter"]), role="Welder")

    widened = RulesPolicy().run(order, make_ctx(rescue=False, lessons=store))

    assert widened.success
    roles = fetch_workers(make_ctx().lake, widened.proposed, ["role"])
    assert {row["role"] for row in roles.values()} - {"Welder"}
    search = next(r for r in widened.transcript if r.kind == "search")
    assert "Welder or Pipefitter or Sheet Metal Worker within 5 mi" in search.summary
