"""Retrieval for a task: structured match, semantic stage, token budget, citations."""

from __future__ import annotations

import pytest
from learn_support import give

from agentlake.errors import NotFoundError
from agentlake.learn import (
    Delta,
    LessonDraft,
    LessonMatch,
    LessonStore,
    TaskKey,
    combined_action,
    estimate_tokens,
    outcome_attributes,
    record_outcomes,
    retrieve_lessons,
)
from agentlake.observe.model import ObservedOp
from agentlake.workforce.learning import StaffingAction

WELDER = TaskKey(
    task_kind="baseline_fill", role="Welder", client_id="riverfront-steel", city="Cleveland", state="OH"
)


def draft(
    trigger: str, action: str, match: LessonMatch, confidence: float = 0.8, **kw: object
) -> LessonDraft:
    return LessonDraft(
        trigger=trigger, action=action, match=match, confidence=confidence, **{"domain": "staffing", **kw}
    )


def seed(store: LessonStore) -> dict[str, str]:
    drafts = {
        "client": draft(
            "Filling any role for riverfront-steel",
            "Only propose workers with OSHA 30 on file",
            LessonMatch(client_id="riverfront-steel"),
            machine=StaffingAction(require_certifications=["OSHA 30"]),
        ),
        "role": draft(
            "Filling Welder for riverfront-steel",
            "Only propose workers with reliability >= 0.7",
            LessonMatch(client_id="riverfront-steel", role="Welder"),
            confidence=0.9,
            machine=StaffingAction(min_scores={"reliability": 0.7}),
        ),
        "other_client": draft(
            "Filling any role for acme-foods",
            "Exclude prior no-shows",
            LessonMatch(client_id="acme-foods"),
            machine=StaffingAction(exclude_prior_no_show_at_client=True),
        ),
        "other_role": draft(
            "Filling Electrician for riverfront-steel",
            "Require an electrical license",
            LessonMatch(client_id="riverfront-steel", role="Electrician"),
        ),
        "general": draft(
            "Any fill", "Check schedules for double bookings before proposing", LessonMatch(), confidence=0.85
        ),
        "pending": draft(
            "Filling Welder for riverfront-steel",
            "Shortlist spare candidates beyond the count",
            LessonMatch(client_id="riverfront-steel", role="Welder"),
            confidence=0.5,
            machine=StaffingAction(min_candidate_buffer=2),
        ),
    }
    results = store.propose([Delta(op="ADD", lesson=d) for d in drafts.values()])
    return {name: r.lesson_id for name, r in zip(drafts, results, strict=True)}  # type: ignore[misc]


def test_structured_match_ranks_specific_first_and_never_crosses_clients_or_roles(store: LessonStore) -> None:
    ids = seed(store)
    got = retrieve_lessons(store, WELDER, budget_tokens=1000, semantic=False)
    assert got.ids == [ids["role"], ids["client"], ids["general"], ids["pending"]]
    assert ids["other_client"] not in got.ids
    assert ids["other_role"] not in got.ids
    assert (
        got.text.splitlines()[1]
        == f"[{ids['role']}] Filling Welder for riverfront-steel: Only propose workers with reliability >= 0.7"
    )
    assert got.text.splitlines()[-1].endswith("(trial)")
    assert retrieve_lessons(store, WELDER, budget_tokens=1000, include_pending=False, semantic=False).ids == [
        ids["role"],
        ids["client"],
        ids["general"],
    ]
    # case and spacing do not matter
    shouty = TaskKey(task_kind="baseline_fill", role="WELDER", client_id="Riverfront-Steel")
    assert retrieve_lessons(store, shouty, budget_tokens=1000, semantic=False).ids[:2] == [
        ids["role"],
        ids["client"],
    ]


def test_combined_machine_action_for_a_rules_policy(store: LessonStore) -> None:
    seed(store)
    action, _ = combined_action(
        retrieve_lessons(store, WELDER, budget_tokens=1000, semantic=False).lessons, "staffing"
    )
    assert StaffingAction.model_validate(action) == StaffingAction(
        require_certifications=["OSHA 30"], min_scores={"reliability": 0.7}, min_candidate_buffer=2
    )


def test_no_lesson_with_an_action_combines_to_none(store: LessonStore) -> None:
    seed(store)
    nothing = TaskKey(task_kind="baseline_fill", role="Cook", client_id="nobody")
    lessons = retrieve_lessons(store, nothing, budget_tokens=1000, semantic=False).lessons
    assert combined_action(lessons, "staffing") == (None, [])


@pytest.mark.parametrize("budget", [0, 10, 25, 40, 60, 90, 400])
def test_retrieval_stays_within_its_token_budget(store: LessonStore, budget: int) -> None:
    drafts = [
        draft(
            f"Filling Welder for riverfront-steel, case {i}",
            "Prefer workers who " + "really " * (i % 7) + f"finished shift {i}",
            LessonMatch(client_id="riverfront-steel", role="Welder"),
            evidence_op_ids=[f"op-{i}"],
        )
        for i in range(40)
    ]
    assert {a.outcome for a in store.propose([Delta(op="ADD", lesson=d) for d in drafts])} == {"added"}
    got = retrieve_lessons(store, WELDER, budget_tokens=budget, semantic=False)
    assert got.tokens == estimate_tokens(got.text) <= budget
    if budget >= 40:
        assert len(got.lessons) >= 1
    if budget == 0:
        assert got.lessons == []
        assert got.text == ""
    assert all(f"[{lesson_id}]" in got.text for lesson_id in got.ids)


def test_default_budget_comes_from_settings(store: LessonStore) -> None:
    seed(store)
    got = retrieve_lessons(store, WELDER, semantic=False)
    assert got.budget_tokens == store.settings.lesson_token_budget == 400


def test_retrieval_records_nothing(store: LessonStore) -> None:
    seed(store)
    retrieve_lessons(store, WELDER, budget_tokens=1000, semantic=False)
    assert store.citations() == []


def test_a_runs_op_records_the_lessons_it_was_given_and_cited(store: LessonStore) -> None:
    ids = seed(store)
    got = retrieve_lessons(store, WELDER, budget_tokens=1000, semantic=False)
    op = ObservedOp(
        endpoint="task.fill",
        run_id="run-7",
        attributes={
            **outcome_attributes(WELDER, True),
            "lessons_given": got.ids,
            "lessons_cited": [ids["role"]],
        },
    )
    record_outcomes(store, [op])
    used = {r["lesson_id"]: r["used"] for r in store.citations(run_id="run-7")}
    assert used == {lesson_id: lesson_id == ids["role"] for lesson_id in got.ids}


def test_a_citation_of_a_lesson_the_store_does_not_hold_is_skipped(store: LessonStore) -> None:
    seed(store)
    op = ObservedOp(
        endpoint="task.fill",
        run_id="run-8",
        attributes={**outcome_attributes(WELDER, True), "lessons_given": ["L-nothere"]},
    )
    record_outcomes(store, [op])
    assert store.citations(run_id="run-8") == []


def test_citing_an_unknown_lesson_directly_writes_nothing(store: LessonStore) -> None:
    with pytest.raises(NotFoundError):
        store.record_citations("run-7", ["L-nothere"], used=True)


def test_project_filter_keeps_global_lessons(store: LessonStore) -> None:
    mine = store.add(
        draft(
            "Welders at riverfront",
            "Prefer day-shift welders",
            LessonMatch(client_id="riverfront-steel"),
            project_id="mine",
        )
    ).lesson_id
    theirs = store.add(
        draft(
            "Welders at riverfront",
            "Prefer night-shift welders",
            LessonMatch(client_id="riverfront-steel"),
            project_id="theirs",
        )
    ).lesson_id
    shared = store.add(draft("Any fill", "Check schedules", LessonMatch(), scope="global")).lesson_id
    got = retrieve_lessons(store, WELDER, budget_tokens=1000, project_id="mine", semantic=False)
    assert set(got.ids) == {mine, shared}
    assert theirs in retrieve_lessons(store, WELDER, budget_tokens=1000, semantic=False).ids


def test_sig_hash_ignores_case_and_spacing() -> None:
    a = TaskKey(
        task_kind="baseline_fill", role="Welder", client_id="riverfront-steel", city="Cleveland", state="OH"
    )
    b = TaskKey(
        task_kind="baseline_fill", role=" welder ", client_id="RIVERFRONT-STEEL", city="cleveland", state="oh"
    )
    c = TaskKey(
        task_kind="emergency_fill", role="Welder", client_id="riverfront-steel", city="Cleveland", state="OH"
    )
    assert a.sig_hash() == b.sig_hash() != c.sig_hash()
    assert len(a.sig_hash()) == 16


@pytest.mark.slow
def test_semantic_stage_brings_close_lessons_of_another_city_never_of_another_task_kind(
    open_store, embedder
) -> None:
    store = open_store(embedder=embedder)
    elsewhere = store.add(
        draft(
            "Emergency fills of Welder for riverfront-steel in Akron",
            "Shortlist spare welders: several rejected at the gate",
            LessonMatch(
                task_kind="emergency_fill", client_id="riverfront-steel", role="Welder", city="Akron"
            ),
        )
    ).lesson_id
    baseline = store.add(
        draft(
            "Baseline fills of Welder for riverfront-steel",
            "Shortlist spare welders: several rejected at the gate",
            LessonMatch(task_kind="baseline_fill", client_id="riverfront-steel", role="Welder"),
        )
    ).lesson_id
    emergency = TaskKey(
        task_kind="emergency_fill", role="Welder", client_id="riverfront-steel", city="Cleveland", state="OH"
    )
    assert retrieve_lessons(store, emergency, budget_tokens=1000, semantic=False).ids == []
    got = retrieve_lessons(store, emergency, budget_tokens=1000)
    assert got.ids == [elsewhere]
    assert baseline not in got.ids


def test_a_tool_lesson_is_given_only_to_a_task_that_has_the_tool(open_store) -> None:
    store = open_store()
    sql = store.add(
        draft("When tool.sql fails with Binder Error", "Check the column names", LessonMatch(tool="sql"))
    ).lesson_id
    store.add(draft("When tool.get_weather times out", "Narrow the call", LessonMatch(tool="get_weather")))
    given = retrieve_lessons(store, WELDER, budget_tokens=1000, semantic=False, tools=["sql", "find_workers"])
    assert given.ids == [sql]


def test_no_tools_named_no_tool_lessons(open_store) -> None:
    store = open_store()
    store.add(draft("When tool.sql fails", "Check the column names", LessonMatch(tool="sql")))
    assert retrieve_lessons(store, WELDER, budget_tokens=1000, semantic=False).ids == []


def test_use_survives_reopen(open_store, clock) -> None:
    store = open_store()
    ids = seed(store)
    clock.advance(days=3)
    give(store, WELDER, "run-1", budget_tokens=1000)
    store.close()
    again = open_store()
    assert again.get(ids["role"]).last_used_at == clock.now
    assert again.get(ids["other_client"]).last_used_at is None
