"""The gatekeeper (T5, issue 32 point 1): in a gated learning cycle no lesson activates before a
replay of recent judged events; one that would have left out an item the judge accepted is
retired with the reason. Real lesson stores on disk; a scripted model only for lessons in words."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from agentlake.learn import Delta, LessonDraft, LessonMatch, LessonStore, learn_cycle
from agentlake.learn.gate import Gatekeeper
from agentlake.observe.model import ObservedOp
from agentlake.workforce.learning import StaffingAction

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
SCOPE = "harbor-foods"
FEATURES = {
    "reliability": {"filter": "min_scores.reliability", "words": "reliable"},
    "certifications": {"filter": "require_certifications", "words": "card"},
}


def judged_op(op_id: str, items: list[tuple[int, float, bool]], *, stated: bool = False) -> ObservedOp:
    """A judged fill: (id, reliability, accepted) per item; ``stated``: the refusals name a rule
    (explicit feedback)."""
    attributes: dict[str, Any] = {
        "client_id": SCOPE,
        "judged": {
            "scope": SCOPE,
            "shape": "Packer in Omaha, NE",
            "item_key": "worker_id",
            "features": FEATURES,
            "items": [
                {"id": i, "accepted": ok, "values": {"reliability": r, "certifications": ["OSHA 10"]}}
                for i, r, ok in items
            ],
        },
    }
    if stated:
        attributes["rejections"] = [
            {"worker_id": i, "rule": "min_reliability"} for i, _, ok in items if not ok
        ]
    return ObservedOp(id=op_id, ts=T0, endpoint="fill.judged", source="scenario", attributes=attributes)


OPS = [
    judged_op("op-1", [(1, 0.9, True), (2, 0.55, False), (3, 0.72, True)]),
    judged_op("op-2", [(4, 0.81, True), (5, 0.6, False)], stated=True),
]


def rule(minimum: float, *, confidence: float = 0.9, role: str | None = None) -> Delta:
    return Delta(
        op="ADD",
        lesson=LessonDraft(
            trigger=f"packers for {SCOPE}",
            action=f"reliability at least {minimum}",
            match=LessonMatch(fields={"client_id": SCOPE, "role": role}),
            machine=StaffingAction(min_scores={"reliability": minimum}).model_dump(),
            domain="staffing",
            source="overseer",
            confidence=confidence,
        ),
        reason="test",
        actor="overseer",
    )


def words(action: str) -> Delta:
    return Delta(
        op="ADD",
        lesson=LessonDraft(
            trigger=f"packers for {SCOPE}",
            action=action,
            match=LessonMatch(fields={"client_id": SCOPE}),
            domain="staffing",
            source="overseer",
            confidence=0.9,
        ),
        reason="test",
        actor="overseer",
    )


def _only(store: LessonStore):
    """The one lesson the test proposed (the cycle's extractors may learn others from the ops)."""
    (lesson,) = [lesson for lesson in store.list() if lesson.source == "overseer"]
    return lesson


def test_a_lesson_that_would_leave_out_accepted_workers_is_refused_with_the_reason(
    store: LessonStore,
) -> None:
    report = learn_cycle(store, OPS, proposals=[rule(0.8)], gate=Gatekeeper())
    lesson = _only(store)
    last = store.history(lesson.id)[-1]
    assert lesson.status == "retired"
    assert (last.actor, last.kind) == ("gatekeeper", "retire")
    assert "item 3 of op-1 (reliability 0.72 below 0.8)" in last.reason
    assert [v["outcome"] for v in report.gate if v["lesson_id"] == lesson.id] == ["refused"]


def test_a_lesson_that_passes_activates_and_one_below_the_threshold_waits_pending(store: LessonStore) -> None:
    learn_cycle(
        store, OPS, proposals=[rule(0.6), rule(0.7, confidence=0.4, role="Packer")], gate=Gatekeeper()
    )
    by_min = {
        lesson.machine["min_scores"]["reliability"]: lesson  # type: ignore[index]
        for lesson in store.list()
        if lesson.source == "overseer"
    }
    assert by_min[0.6].status == "active"
    assert by_min[0.7].status == "pending"
    assert by_min[0.7].replayed is not None
    passed = store.history(by_min[0.6].id)[-1]
    assert "leaves out none of 3 accepted item(s), 1 refused one(s)" in passed.reason


def test_an_ungated_cycle_activates_a_confident_lesson_at_once(store: LessonStore) -> None:
    learn_cycle(store, OPS, proposals=[rule(0.8)])
    assert _only(store).status == "active"


def test_without_judged_events_a_confident_lesson_waits_pending(store: LessonStore) -> None:
    report = learn_cycle(store, [], proposals=[rule(0.6)], gate=Gatekeeper())
    assert _only(store).status == "pending"
    assert report.gate[0]["reason"] == "awaiting replay: no judged event it applies to yet"


def test_a_lesson_for_another_role_is_not_replayed_over_this_roles_events(store: LessonStore) -> None:
    learn_cycle(store, OPS, proposals=[rule(0.99, role="Welder")], gate=Gatekeeper())
    assert _only(store).status == "pending"


def test_a_changed_lesson_is_replayed_again(store: LessonStore) -> None:
    gate = Gatekeeper()
    learn_cycle(store, OPS, proposals=[rule(0.6)], gate=gate)
    lesson = _only(store)
    edit = Delta(
        op="EDIT",
        target_id=lesson.id,
        changes={"machine": StaffingAction(min_scores={"reliability": 0.85}).model_dump()},
        actor="human",
    )
    learn_cycle(store, [], proposals=[edit], gate=gate)
    assert _only(store).status == "retired"


def test_a_lesson_in_words_waits_without_the_gatekeepers_model(store: LessonStore) -> None:
    report = learn_cycle(store, OPS, proposals=[words("prefer calm people")], gate=Gatekeeper())
    lesson = _only(store)
    assert lesson.status == "pending"
    (verdict,) = [v for v in report.gate if v["lesson_id"] == lesson.id]
    assert "needs the gatekeeper's model" in verdict["reason"]


@pytest.fixture
def predictor():
    from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted

    provider = ScriptedProvider("t5", context_window=32768)
    register_scripted("t5", provider)
    yield provider
    unregister_scripted("t5")


def test_the_gatekeepers_model_predicts_a_lesson_in_words_and_code_checks_it(
    store: LessonStore, predictor
) -> None:
    predictor.enqueue(json.dumps({"refused": [2, 3]}))  # 3 was accepted
    predictor.enqueue(json.dumps({"refused": [5]}))
    learn_cycle(store, OPS, proposals=[words("only the most reliable")], gate=Gatekeeper(model="scripted:t5"))
    lesson = _only(store)
    assert lesson.status == "retired"
    assert "item 3 of op-1 (the model predicts it is left out)" in store.history(lesson.id)[-1].reason
    assert predictor.history[0][1].think, "the gatekeeper's model thinks"


def test_the_gatekeepers_model_passing_a_lesson_in_words_lets_it_activate(
    store: LessonStore, predictor
) -> None:
    predictor.enqueue(json.dumps({"refused": [2]}))
    predictor.enqueue(json.dumps({"refused": [5]}))
    learn_cycle(store, OPS, proposals=[words("skip the unreliable")], gate=Gatekeeper(model="scripted:t5"))
    assert _only(store).status == "active"


def test_stated_rules_are_replayed_but_not_induced_from(store: LessonStore) -> None:
    learn_cycle(store, OPS, extractor="heuristic")
    _, items = store.evidence(SCOPE)
    assert {item.op_id for item in items} == {"op-1"}


def test_measurement_does_not_activate_a_lesson_that_has_not_passed(store: LessonStore) -> None:
    from agentlake.learn import TaskKey, measure_effects

    learn_cycle(store, [], proposals=[rule(0.6, confidence=0.5)], gate=Gatekeeper())
    lesson = _only(store)
    task = TaskKey(domain="staffing", task_kind="fill", fields={"client_id": SCOPE})
    from agentlake.learn.effect import record_outcome

    for n in range(6):
        run = f"run-{n}"
        if n % 2:
            store.record_citations(run, [lesson.id], used=True)
        record_outcome(store, run, task, success=bool(n % 2), score=float(n % 2))
    measure_effects(store, min_runs=2, may_activate=Gatekeeper.may_activate)
    assert _only(store).status == "pending"
