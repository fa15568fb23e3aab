"""The heuristic extractor over the op conventions the agents and scenarios emit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentlake.learn import (
    ExtractContext,
    HeuristicExtractor,
    LessonStore,
    TaskKey,
    combined_action,
    get_extractor,
    learn_from_ops,
    outcome_attributes,
    retrieve_lessons,
)
from agentlake.learn.heuristic import error_signature
from agentlake.observe.model import ObservedOp
from agentlake.workforce.learning import StaffingAction, action_of

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
REJECTIONS = [
    {"worker_id": 7, "reason": "reliability 0.55 below 0.70", "rule": "min_reliability", "value": 0.7},
    {
        "worker_id": 9,
        "reason": "no OSHA 30 on file; site policy",
        "rule": "required_certification",
        "value": "OSHA 30",
    },
    {"worker_id": 11, "reason": "63 miles from site, limit 40", "rule": "max_distance_miles", "value": 40},
    {"worker_id": 12, "reason": "no-show here on 2026-03-02", "rule": "exclude_prior_no_show", "value": True},
    {
        "worker_id": 13,
        "reason": "already booked 08:00-16:00 at Acme Foods",
        "rule": "double_booked",
        "value": "08:00-16:00",
    },
]


def judged(
    op_id: str,
    *,
    rejections: list[dict[str, Any]] | None = None,
    client: str = "riverfront-steel",
    role: str = "Welder",
    task_kind: str = "baseline_fill",
    requested: int = 3,
    filled: int = 1,
    run_id: str | None = None,
    at: int = 0,
) -> ObservedOp:
    return ObservedOp(
        id=op_id,
        ts=T0 + timedelta(seconds=at),
        endpoint="fill.judged",
        source="scenario",
        success=filled == requested,
        run_id=run_id or f"run-{op_id}",
        labels=dict(
            staffer_id="s1", event_kind=task_kind, role=role, city="Cleveland", state="OH", count=requested
        ),
        attributes={
            "client_id": client,
            "task_kind": task_kind,
            "requested": requested,
            "filled": filled,
            "accepted": [101],
            "rejections": REJECTIONS if rejections is None else rejections,
            "lessons_given": [],
            "lessons_cited": [],
            **outcome_attributes(
                TaskKey(domain="staffing", task_kind=task_kind, fields={"role": role, "client_id": client}),
                filled == requested,
            ),
        },
    )


def tool(
    op_id: str,
    name: str,
    *,
    run_id: str = "r",
    ok: bool = True,
    error: str | None = None,
    at: int = 0,
    **attrs: Any,
) -> ObservedOp:
    return ObservedOp(
        id=op_id,
        ts=T0 + timedelta(seconds=at),
        endpoint=f"tool.{name}",
        source="agent",
        success=ok,
        error=error,
        input_summary=f"{name} call {op_id}",
        run_id=run_id,
        attributes=attrs,
    )


def by_action(store: LessonStore) -> dict[str, Any]:
    return {lesson.describe_action() if lesson.machine else lesson.action: lesson for lesson in store.list()}


def test_client_rejections_become_active_client_rules(store: LessonStore) -> None:
    applied = learn_from_ops(store, [judged("op-1")], extractor="heuristic")
    assert {a.outcome for a in applied} == {"added"}
    lessons = by_action(store)
    assert set(lessons) == {
        "require OSHA 30",
        "reliability >= 0.7",
        "within 40 miles",
        "exclude prior no-shows at this client",
        "exclude workers already booked over the shift",
    }
    osha = lessons["require OSHA 30"]
    assert (osha.status, osha.confidence, osha.source, osha.domain) == (
        "active",
        0.8,
        "heuristic",
        "staffing",
    )
    assert osha.match.get("client_id") == "riverfront-steel", "site policy: any role"
    assert osha.match.get("role") is None, "site policy: any role"
    assert osha.evidence_op_ids == ["op-1"]
    assert osha.evidence_excerpts == ["riverfront-steel rejected worker 9: no OSHA 30 on file; site policy"]
    double = lessons["exclude workers already booked over the shift"]
    assert double.match.get("client_id") is None, "a double booking is no client's policy"


def combined(lessons: list) -> StaffingAction | None:
    """The staffing action a rules policy applies for ``lessons`` (``learn.combined_action``)."""
    action, _ = combined_action(lessons, "staffing")
    return StaffingAction.model_validate(action) if action is not None else None


def test_the_next_batch_gets_the_rules_as_one_machine_action(store: LessonStore) -> None:
    learn_from_ops(store, [judged("op-1")])
    task = TaskKey(
        task_kind="baseline_fill", role="Welder", client_id="riverfront-steel", city="Cleveland", state="OH"
    )
    machine = combined(retrieve_lessons(store, task, semantic=False).lessons)
    assert machine == StaffingAction(
        require_certifications=["OSHA 30"],
        min_scores={"reliability": 0.7},
        max_distance_miles=40,
        exclude_prior_no_show_at_client=True,
        exclude_double_booked=True,
    )
    other = TaskKey(task_kind="baseline_fill", role="Welder", client_id="acme-foods")
    assert combined(retrieve_lessons(store, other, semantic=False).lessons) == StaffingAction(
        exclude_double_booked=True
    )


def test_role_named_in_the_reason_scopes_the_lesson_to_the_role(store: LessonStore) -> None:
    rejection = {
        "worker_id": 3,
        "reason": "welders here need AWS D1.1",
        "rule": "required_certification",
        "value": "AWS D1.1",
    }
    flagged = {
        "worker_id": 4,
        "reason": "needs forklift card",
        "rule": "required_certification",
        "value": "Forklift",
        "role_specific": True,
    }
    learn_from_ops(store, [judged("op-1", rejections=[rejection, flagged])])
    lessons = by_action(store)
    assert lessons["require AWS D1.1"].match.get("role") == "Welder"
    assert lessons["require Forklift"].match.get("role") == "Welder"
    assert lessons["require AWS D1.1"].trigger == "Filling Welder for riverfront-steel"


def test_repeated_rejections_confirm_and_learning_is_idempotent(store: LessonStore) -> None:
    ops = [judged("op-1"), judged("op-2", at=60)]
    learn_from_ops(store, ops[:1])
    applied = learn_from_ops(store, ops)  # op-1 again plus the new op-2
    assert {a.outcome for a in applied} == {"confirmed"}
    osha = by_action(store)["require OSHA 30"]
    assert osha.confidence == pytest.approx(0.85)
    assert osha.evidence_op_ids == ["op-1", "op-2"]
    assert learn_from_ops(store, ops) == [], "ops already learned from are skipped"


def test_a_client_changing_its_limit_is_a_contradiction(store: LessonStore) -> None:
    learn_from_ops(store, [judged("op-1", rejections=[REJECTIONS[0]])])
    stricter = {**REJECTIONS[0], "value": 0.8, "reason": "reliability 0.75 below 0.80"}
    applied = learn_from_ops(store, [judged("op-2", rejections=[stricter])])
    assert [a.outcome for a in applied] == ["contradiction"]
    assert {lesson.status for lesson in store.list()} == {"conflict-hold"}


def test_odd_rejections_are_skipped_not_fatal(store: LessonStore) -> None:
    odd = [
        "not a dict",
        {"worker_id": 1},
        {"rule": "min_reliability", "value": "high"},
        {"rule": "max_distance_miles", "value": -5},
        {"rule": "required_certification", "value": ""},
        {"worker_id": 2, "reason": "wears the wrong colour", "rule": "dress_code", "value": "blue"},
    ]
    learn_from_ops(store, [judged("op-1", rejections=odd)])  # type: ignore[arg-type]
    (lesson,) = store.list()
    assert lesson.machine is None
    assert "dress_code" in lesson.action
    assert lesson.status == "pending"
    no_client = judged("op-2")
    no_client.attributes["client_id"] = None
    learn_from_ops(store, [no_client])
    assert "exclude workers already booked over the shift" in by_action(store)


def test_emergencies_that_ran_short_ask_for_a_candidate_buffer(store: LessonStore) -> None:
    ops = [
        judged("e1", rejections=[], task_kind="emergency_fill", requested=4, filled=1),
        judged("e2", rejections=[], task_kind="emergency_fill", requested=3, filled=3),
        judged("b1", rejections=[], task_kind="baseline_fill", requested=3, filled=0),
    ]
    learn_from_ops(store, ops)
    (lesson,) = store.list()
    assert action_of(lesson) == StaffingAction(min_candidate_buffer=3)
    assert (lesson.match.task_kind, lesson.match.get("client_id"), lesson.status) == (
        "emergency_fill",
        "riverfront-steel",
        "pending",
    )
    # a bigger shortfall later raises the buffer instead of contradicting it
    learn_from_ops(store, [judged("e3", rejections=[], task_kind="emergency_fill", requested=6, filled=1)])
    (lesson,) = store.list()
    assert action_of(lesson) == StaffingAction(min_candidate_buffer=5)
    assert "at least 5 spare" in lesson.action


def test_failure_signatures_from_tool_ops(store: LessonStore) -> None:
    ops = [
        tool(
            "s1",
            "sql",
            ok=False,
            error='Binder Error: Referenced column "wage" not found in FROM clause!\nCandidate bindings: "pay_rate"',
        ),
        tool(
            "s2", "sql", ok=False, error='Binder Error: Referenced column "wages" not found in FROM clause!'
        ),
        tool("s3", "sql", ok=False, error="query interrupted after 10 s (sql_timeout_s)"),
        tool("h1", "hybrid_search", rows=0),
        tool("h2", "hybrid_search", rows=12),
    ]
    learn_from_ops(store, ops)
    lessons = {(lesson.match.tool, lesson.match.error_signature): lesson for lesson in store.list()}
    assert set(lessons) == {
        ("sql", "Binder Error: Referenced column <q> not found in FROM clause!"),
        ("sql", "timeout"),
        ("hybrid_search", "empty result"),
    }
    column = lessons[("sql", "Binder Error: Referenced column <q> not found in FROM clause!")]
    assert column.evidence_op_ids == ["s1", "s2"]
    assert column.confidence == pytest.approx(0.55)
    assert "DESCRIBE" in column.action
    assert "'wage'" in column.action
    assert column.status == "pending"
    assert column.domain == "tools"
    assert "LIMIT" in lessons[("sql", "timeout")].action


def test_error_signature_is_stable_across_names_and_numbers() -> None:
    a = error_signature('Catalog Error: Table with name "workerz" does not exist!\nDid you mean "workers"?')
    b = error_signature("Catalog Error: Table with name 'shifts2' does not exist!")
    assert a == b == "Catalog Error: Table with name <q> does not exist!"
    assert error_signature("Conversion Error: could not convert 12.5 to INT32 at line 3") == (
        "Conversion Error: could not convert <n> to INT32 at line <n>"
    )


def test_repeated_successful_tool_sequences_become_a_playbook(store: LessonStore) -> None:
    ops: list[ObservedOp] = []
    for i in range(3):
        run = f"good-{i}"
        ops += [
            tool(f"{run}-a", "sql", run_id=run, at=10 * i),
            tool(f"{run}-b", "hybrid_search", run_id=run, at=10 * i + 1),
            tool(f"{run}-b2", "hybrid_search", run_id=run, at=10 * i + 2),
            tool(f"{run}-c", "get_worker", run_id=run, at=10 * i + 3),
            judged(f"{run}-j", rejections=[], requested=2, filled=2, run_id=run, at=10 * i + 4),
        ]
    ops += [
        tool("bad-a", "sql", run_id="bad", at=90),
        tool("bad-b", "get_worker", run_id="bad", at=91),
        judged("bad-j", rejections=[], requested=2, filled=1, run_id="bad", at=92),
        tool("once-a", "get_worker", run_id="once", at=95),
        tool("once-b", "sql", run_id="once", at=96),
        judged("once-j", rejections=[], requested=1, filled=1, run_id="once", at=97),
    ]
    learn_from_ops(store, ops)
    (playbook,) = [lesson for lesson in store.list() if lesson.domain == "playbook"]
    assert playbook.action == "A tool sequence that succeeded in 3 runs: sql -> hybrid_search -> get_worker"
    assert playbook.match.task_kind == "baseline_fill"
    assert playbook.evidence_op_ids == ["good-0-j", "good-1-j", "good-2-j"]
    assert playbook.confidence == pytest.approx(0.55)


def test_registry_resolves_builtins_and_rejects_unknown(settings) -> None:
    from agentlake.errors import UserError

    assert isinstance(get_extractor("heuristic", settings), HeuristicExtractor)
    with pytest.raises(UserError, match="known: heuristic, induction, llm"):
        get_extractor("oracle", settings)
    with pytest.raises(UserError, match="learn_model"):
        get_extractor("llm", settings)


def test_project_id_scopes_what_is_learned(store: LessonStore) -> None:
    learn_from_ops(store, [judged("op-1")], project_id="plant-a")
    assert {lesson.project_id for lesson in store.list()} == {"plant-a"}
    context = ExtractContext(project_id="plant-b")
    deltas = HeuristicExtractor().extract([judged("op-2")], context)
    assert {d.lesson.project_id for d in deltas if d.lesson} == {"plant-b"}
    assert context.notes["heuristic_drafts"] == 5


WORDS = {
    "worker_id": 21,
    "reason": "we only take people who have run a reach truck",
    "rule": "resume_wish",
    "value": "has driven a reach truck",
}


def test_a_refusal_in_words_is_kept_as_the_words_plus_a_search_phrase(store: LessonStore) -> None:
    learn_from_ops(store, [judged("op-1", rejections=[WORDS])])

    (lesson,) = store.list()
    machine = action_of(lesson)
    assert machine == StaffingAction(
        resume_wishes=["has driven a reach truck"], search_phrase="driven reach truck"
    )
    assert "has driven a reach truck" in lesson.action
    assert lesson.status == "active"


def test_the_same_words_refused_again_confirm_the_one_lesson(store: LessonStore) -> None:
    learn_from_ops(store, [judged("op-1", rejections=[WORDS])])
    learn_from_ops(store, [judged("op-2", rejections=[{**WORDS, "worker_id": 22}])])

    assert len(store.list()) == 1


def test_wishes_merge_with_filters_into_one_action(store: LessonStore) -> None:
    learn_from_ops(store, [judged("op-1", rejections=[WORDS, REJECTIONS[0]])])
    task = TaskKey(task_kind="baseline_fill", role="Welder", client_id="riverfront-steel")

    machine = combined(retrieve_lessons(store, task, semantic=False).lessons)

    assert machine == StaffingAction(
        min_scores={"reliability": 0.7},
        resume_wishes=["has driven a reach truck"],
        search_phrase="driven reach truck",
    )
