"""Measured effect: outcomes of runs given a lesson against comparable runs without it."""

from __future__ import annotations

import pytest
from learn_support import give

from agentlake.learn import (
    LessonDraft,
    LessonMatch,
    LessonStore,
    TaskKey,
    measure_effects,
    retrieve_lessons,
)
from agentlake.learn.effect import effect_rows, record_outcome
from agentlake.workforce.learning import StaffingAction

WELDER = TaskKey(
    task_kind="baseline_fill", role="Welder", client_id="riverfront-steel", city="Cleveland", state="OH"
)
COOK = TaskKey(task_kind="baseline_fill", role="Cook", client_id="acme-foods", city="Akron", state="OH")

# The same tests on both backends of the lesson store (tests/learn/conftest.py: backend).
pytestmark = pytest.mark.parametrize("backend", ["duckdb", "postgres"], indirect=True)


def lesson(store: LessonStore, confidence: float = 0.8) -> str:
    return store.add(
        LessonDraft(
            domain="staffing",
            trigger="Filling Welder for riverfront-steel",
            action="Only propose workers with OSHA 30",
            match=LessonMatch(client_id="riverfront-steel", role="Welder"),
            machine=StaffingAction(require_certifications=["OSHA 30"]),
            confidence=confidence,
            evidence_op_ids=["op-1"],
        )
    ).lesson_id  # type: ignore[return-value]


def runs(store: LessonStore, task: TaskKey, prefix: str, outcomes: list[bool], *, with_lessons: bool) -> None:
    for i, success in enumerate(outcomes):
        run_id = f"{prefix}-{i}"
        if with_lessons:
            give(store, task, run_id)
        record_outcome(store, run_id, task, success)


def test_a_harmful_lesson_is_retired_with_its_evidence(store: LessonStore) -> None:
    lesson_id = lesson(store)
    runs(store, WELDER, "before", [True, True, True, False], with_lessons=False)
    runs(store, WELDER, "after", [False, False, True, False], with_lessons=True)
    reports = measure_effects(store, min_runs=5)
    assert [(r.lesson_id, r.runs_with, r.helpful, r.harmful, r.action) for r in reports] == [
        (lesson_id, 4, 1, 3, "none")
    ]
    assert reports[0].effect == pytest.approx((3 * -0.75 + 0.25) / 4)  # each run minus the 0.75 baseline
    assert store.get(lesson_id).status == "active", "four runs are below min_runs"
    assert store.get(lesson_id).confidence == pytest.approx(0.8 + 0.05 - 0.15)
    runs(store, WELDER, "later", [False], with_lessons=True)
    reports = measure_effects(store, min_runs=5)
    assert reports[0].action == "retired"
    retired = store.get(lesson_id)
    assert (retired.status, retired.harmful, retired.helpful) == ("retired", 4, 1)
    last = store.history(lesson_id)[-1]
    assert last.kind == "retire"
    assert last.actor == "code"
    assert "measured harmful" in last.reason
    assert last.data["runs_with"] == 5
    assert last.data["effect"] < 0
    assert last.data["mean_without"] == pytest.approx(0.75)
    # a retired lesson is not given any more
    assert retrieve_lessons(store, WELDER, semantic=False).ids == []


def test_a_helpful_pending_lesson_is_activated(store: LessonStore) -> None:
    lesson_id = lesson(store, confidence=0.5)
    runs(store, WELDER, "before", [False, False, True], with_lessons=False)
    runs(store, WELDER, "after", [True, True, True], with_lessons=True)
    reports = measure_effects(store, min_runs=3)
    assert reports[0].action == "activated"
    assert reports[0].helpful == 3
    assert reports[0].harmful == 0
    current = store.get(lesson_id)
    assert current.status == "active"
    assert current.confidence == pytest.approx(0.65)
    assert [e.kind for e in store.history(lesson_id)][-2:] == ["measure", "activate"]


def test_measuring_twice_counts_each_run_once(store: LessonStore) -> None:
    lesson_id = lesson(store)
    runs(store, WELDER, "before", [False], with_lessons=False)
    runs(store, WELDER, "after", [True, True], with_lessons=True)
    measure_effects(store, min_runs=5)
    again = measure_effects(store, min_runs=5)
    assert again[0].new_runs == 0
    assert again[0].helpful == 2
    assert store.get(lesson_id).helpful == 2
    assert len(effect_rows(store, lesson_id)) == 2


def test_runs_without_a_comparable_baseline_are_not_measured(store: LessonStore) -> None:
    lesson_id = lesson(store)
    runs(store, COOK, "cook", [True, True], with_lessons=False)  # another signature
    runs(store, WELDER, "after", [False, False], with_lessons=True)
    assert measure_effects(store, min_runs=1) == []
    assert store.get(lesson_id).harmful == 0
    runs(store, WELDER, "before", [True], with_lessons=False)
    assert measure_effects(store, min_runs=1)[0].harmful == 2


def test_scores_are_compared_when_given(store: LessonStore) -> None:
    lesson(store)
    record_outcome(store, "b1", WELDER, success=False, score=1 / 3)
    give(store, WELDER, "a1")
    record_outcome(store, "a1", WELDER, success=False, score=2 / 3)
    report = measure_effects(store, min_runs=5)[0]
    assert report.effect == pytest.approx(1 / 3)
    assert report.helpful == 1
