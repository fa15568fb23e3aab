"""Curation over time and by similarity: decay, expiry, promotion, embedding dedup, contradiction."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from learn_support import give

from agentlake.learn import (
    Delta,
    LessonDraft,
    LessonMatch,
    LessonStore,
    TaskKey,
)
from agentlake.workforce.learning import StaffingAction

RIVERFRONT = LessonMatch(client_id="riverfront-steel")
SQL_COLUMN = LessonMatch(tool="sql", error_signature="Binder Error: Referenced column <q> not found")

# The same tests on both backends of the lesson store (tests/learn/conftest.py: backend).
pytestmark = pytest.mark.parametrize("backend", ["duckdb", "postgres"], indirect=True)


def osha(confidence: float = 0.8, op: str = "op-1", project: str | None = None) -> LessonDraft:
    return LessonDraft(
        domain="staffing",
        trigger="Filling any role for riverfront-steel",
        action="Only propose workers with OSHA 30 on file",
        match=RIVERFRONT,
        machine=StaffingAction(require_certifications=["OSHA 30"]),
        confidence=confidence,
        evidence_op_ids=[op],
        project_id=project,
    )


def worded(action: str, op: str, *, confidence: float = 0.5, match: LessonMatch = SQL_COLUMN) -> LessonDraft:
    return LessonDraft(
        trigger="When tool.sql fails with Binder Error: Referenced column not found",
        action=action,
        match=match,
        confidence=confidence,
        evidence_op_ids=[op],
        source="llm",
    )


def test_decay_per_unused_week_and_use_resets_it(store: LessonStore, clock) -> None:
    lesson_id = store.add(osha()).lesson_id
    clock.advance(days=6)
    assert store.maintain() == []
    clock.advance(days=15)  # 3 weeks since creation
    events = store.maintain()
    assert [(e.kind, e.data["weeks"]) for e in events] == [("decay", 3)]
    assert store.get(lesson_id).confidence == pytest.approx(0.74)
    assert store.maintain() == [], "the same weeks never decay twice"
    task = TaskKey(task_kind="baseline_fill", role="Welder", client_id="riverfront-steel")
    give(store, task, "run-1")  # given to a run: used now
    clock.advance(days=6)
    assert store.maintain() == []
    clock.advance(days=8)  # two weeks after the use
    assert [e.data["weeks"] for e in store.maintain()] == [2]
    assert store.get(lesson_id).confidence == pytest.approx(0.70)


def test_a_lesson_decayed_to_zero_is_retired(store: LessonStore, clock) -> None:
    lesson_id = store.add(osha(confidence=0.8)).lesson_id
    clock.advance(weeks=41)
    kinds = [e.kind for e in store.maintain()]
    assert kinds == ["decay", "retire"]
    assert store.get(lesson_id).status == "retired"
    assert store.history(lesson_id)[-1].reason == "decayed to 0"


def test_pending_lessons_expire_after_30_days(store: LessonStore, clock) -> None:
    pending = store.add(osha(confidence=0.5)).lesson_id
    active = store.add(
        LessonDraft(
            trigger="Filling for acme-foods",
            action="Check schedules",
            match=LessonMatch(client_id="acme"),
            confidence=0.9,
        )
    ).lesson_id
    clock.advance(days=29)
    assert [e.kind for e in store.maintain()] == ["decay", "decay"]
    assert store.get(pending).status == "pending"
    clock.advance(days=1)
    events = store.maintain()
    assert [(e.lesson_id, e.kind) for e in events] == [(pending, "retire")]
    assert "expired" in events[0].reason
    assert store.get(pending).status == "retired"
    assert store.get(active).status == "active"


def test_a_pending_lesson_confirmed_to_active_no_longer_expires(store: LessonStore, clock) -> None:
    lesson_id = store.add(osha(confidence=0.75, op="a")).lesson_id
    clock.advance(days=20)
    store.propose([Delta(op="ADD", lesson=osha(confidence=0.75, op="b"))])
    assert store.get(lesson_id).status == "active"
    clock.advance(days=20)
    store.maintain()
    assert store.get(lesson_id).status == "active"


def test_promotion_to_global_when_seen_in_two_projects(store: LessonStore) -> None:
    a = store.add(osha(confidence=0.8, op="a", project="plant-a")).lesson_id
    assert store.promote() == [], "one project is not enough"
    b = store.add(osha(confidence=0.9, op="b", project="plant-b")).lesson_id
    assert a != b
    events = store.promote()
    assert [(e.lesson_id, e.kind) for e in events] == [(b, "promote"), (a, "merge")]
    promoted = store.get(b)
    assert (promoted.scope, promoted.project_id, promoted.confidence) == ("global", None, pytest.approx(0.85))
    assert set(promoted.evidence_op_ids) == {"a", "b"}
    assert (store.get(a).status, store.get(a).merged_into) == ("retired", b)
    assert events[0].data["projects"] == ["plant-a", "plant-b"]
    # learning it again in a project now confirms the global lesson
    again = store.propose([Delta(op="ADD", lesson=osha(op="c", project="plant-c"))])[0]
    assert (again.outcome, again.lesson_id) == ("confirmed", b)


def test_no_promotion_below_mean_confidence(store: LessonStore) -> None:
    store.add(osha(confidence=0.8, op="a", project="plant-a"))
    store.propose([Delta(op="ADD", lesson=osha(confidence=0.7, op="b", project="plant-b"))])
    # plant-b's copy is pending (0.7): only active lessons count
    assert store.promote() == []


@pytest.mark.slow
def test_near_duplicate_wording_merges_evidence(open_store: Callable[..., LessonStore], embedder) -> None:
    store = open_store(embedder=embedder)
    first = store.propose(
        [Delta(op="ADD", lesson=worded("Check the column names with DESCRIBE first", "op-1"))]
    )[0]
    second = store.propose(
        [
            Delta(
                op="ADD",
                lesson=worded("Check the table's columns with DESCRIBE before you reference one", "op-2"),
            )
        ]
    )[0]
    assert second.outcome == "merged", second.reason
    assert second.lesson_id == first.lesson_id
    lesson = store.get(first.lesson_id)
    assert lesson.evidence_op_ids == ["op-1", "op-2"]
    assert lesson.confidence == pytest.approx(0.55)
    assert len(store.list()) == 1
    # the same words for another tool are a different lesson
    other = store.propose(
        [
            Delta(
                op="ADD",
                lesson=worded(
                    "Check the column names with DESCRIBE first",
                    "op-3",
                    match=LessonMatch(tool="hybrid_search"),
                ),
            )
        ]
    )[0]
    assert other.outcome == "added"
    # and an unrelated action for the same trigger is added, not merged
    unrelated = store.propose(
        [Delta(op="ADD", lesson=worded("Retry with a smaller LIMIT after a timeout", "op-4"))]
    )[0]
    assert unrelated.outcome == "added"


@pytest.mark.slow
def test_opposite_action_for_the_same_trigger_is_a_contradiction(open_store, embedder) -> None:
    store = open_store(embedder=embedder)
    keep = store.propose(
        [Delta(op="ADD", lesson=worded("Quote column names in double quotes", "op-1", confidence=0.6))]
    )[0]
    flip = store.propose(
        [Delta(op="ADD", lesson=worded("Do not quote column names in double quotes", "op-2", confidence=0.6))]
    )[0]
    assert flip.outcome == "contradiction", flip.reason
    assert flip.related_ids == [keep.lesson_id]
    for lesson_id in (keep.lesson_id, flip.lesson_id):
        lesson = store.get(lesson_id)
        assert (lesson.status, lesson.confidence) == ("conflict-hold", pytest.approx(0.5))


@pytest.mark.slow
def test_promotion_groups_similar_wordings_across_projects(open_store, embedder) -> None:
    store = open_store(embedder=embedder)
    a = worded("Check the column names with DESCRIBE first", "op-1", confidence=0.85)
    a.project_id = "plant-a"
    b = worded("Check the table's columns with DESCRIBE before you reference one", "op-2", confidence=0.8)
    b.project_id = "plant-b"
    ids = [r.lesson_id for r in store.propose([Delta(op="ADD", lesson=a), Delta(op="ADD", lesson=b)])]
    events = store.promote()
    assert [e.kind for e in events] == ["promote", "merge"]
    assert store.get(ids[0]).scope == "global"
    assert store.get(ids[1]).merged_into == ids[0]
