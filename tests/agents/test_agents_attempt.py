"""The executor/reviewer attempt's state machine (``agents.attempt``), transition by transition,
without a model, a tool or a lake: search -> propose -> review -> done, the narrowing, the
steering, the failures and the rescue."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from agentlake.agents.actions import CourseAction, CritiqueAction, ProposeDoneAction
from agentlake.agents.attempt import (
    INVALID_TURNS_MAX,
    AttemptState,
    acted,
    action_key,
    answered,
    answered_invalid,
    approved,
    call_failed,
    course_reviewed,
    ended,
    executor_turn,
    fresh_action,
    is_repeat,
    next_step,
    phase,
    proposed,
    rejected,
    repeat_told,
    repeated,
    rescue,
    review_turn,
    told,
)
from agentlake.workforce.learning import StaffingAction
from agentlake.workforce.order import FillOrder
from agentlake.workforce.verify import Rejection, Verification

ORDER = FillOrder.parse("2 x Welder in Cleveland, OH at 08:00 on 2026-04-22")


def start(**fields: object) -> AttemptState:
    return AttemptState(order=ORDER, executor="scripted:e", reviewer="scripted:r", budget=6, **fields)


def passing(*ids: int) -> Verification:
    return Verification(accepted=list(ids), requested=len(ids))


def failing(worker_id: int) -> Verification:
    rejection = Rejection(worker_id=worker_id, reason="no", rule="certification")
    return Verification(accepted=[], rejections=[rejection], requested=2)


def propose(state: AttemptState, *ids: int, verification: Verification | None = None) -> AttemptState:
    action = ProposeDoneAction(worker_ids=list(ids))
    state, _ = proposed(state, action_key(action), action, verification or passing(*ids), [], "")
    return state


# --- the state is immutable ----------------------------------------------------------------------


def test_the_state_cannot_be_changed_in_place() -> None:
    with pytest.raises(FrozenInstanceError):
        start().turns = 3  # type: ignore[misc]


def test_a_transition_leaves_the_state_it_was_given() -> None:
    state = start()
    executor_turn(state)
    assert state.turns == 0


# --- search -> propose -> review -> done ----------------------------------------------------------


def test_an_attempt_starts_with_the_executor_searching() -> None:
    assert next_step(start(), review_every=0) == "executor"


def test_an_executor_turn_counts_and_takes_the_feedback() -> None:
    state = executor_turn(told(start(), "search first"))
    assert (state.turns, state.feedback) == (1, ())


def test_a_tool_call_keeps_the_workers_it_surfaced() -> None:
    state = fresh_action(start(), "k", "3 workers", surfaced=[4, 5, 6])
    assert state.surfaced == {4, 5, 6}


def test_a_verified_proposal_waits_for_the_reviewer() -> None:
    state = propose(fresh_action(start(), "k", "", surfaced=[1, 2]), 1, 2)
    assert next_step(state, review_every=0) == "review"


def test_a_proposal_that_fails_verification_goes_back_to_the_executor() -> None:
    state = propose(fresh_action(start(), "k", "", surfaced=[1, 2]), 1, 2, verification=failing(2))
    assert phase(state) == "search"


def test_a_failed_verification_tells_the_executor_which_workers_to_replace() -> None:
    state = propose(fresh_action(start(), "k", "", surfaced=[1, 2]), 1, 2, verification=failing(2))
    assert "2 certification" in state.feedback[-1]


def test_a_proposal_outside_the_lessons_goes_back_though_verified() -> None:
    action = ProposeDoneAction(worker_ids=[1, 2])
    state, _ = proposed(
        start(surfaced=frozenset({1, 2})), "k", action, passing(1, 2), [2], "reliability >= 0.9"
    )
    assert not state.pending_review


def test_invented_ids_are_kept_and_told() -> None:
    action = ProposeDoneAction(worker_ids=[1, 99])
    _, invented = proposed(start(surfaced=frozenset({1})), "k", action, passing(1, 99), [], "")
    assert invented == [99]


def test_approval_of_a_verified_proposal_is_done() -> None:
    state = approved(review_turn(propose(start(surfaced=frozenset({1, 2})), 1, 2)))
    assert phase(state) == "done"


def test_a_done_attempt_takes_no_more_turns() -> None:
    state = approved(review_turn(propose(start(surfaced=frozenset({1, 2})), 1, 2)))
    assert next_step(state, review_every=0) is None


def test_a_rejection_sends_the_critique_back() -> None:
    state = review_turn(propose(start(surfaced=frozenset({1, 2})), 1, 2))
    state = rejected(state, CritiqueAction(approve=False, notes="worker 2 is too far", drift=["wrong city"]))
    assert state.feedback == ("reviewer (drift): wrong city", "reviewer: worker 2 is too far")


def test_a_rejected_proposals_workers_are_objected_to() -> None:
    state = rejected(
        review_turn(propose(start(surfaced=frozenset({1, 2})), 1, 2)), CritiqueAction(approve=False)
    )
    assert state.objected == (1, 2)


def test_a_rejected_proposal_may_be_insisted_on_once() -> None:
    state = rejected(
        review_turn(propose(start(surfaced=frozenset({1, 2})), 1, 2)), CritiqueAction(approve=False)
    )
    action = ProposeDoneAction(worker_ids=[2, 1])
    assert not is_repeat(state, action_key(action), action)


def test_a_proposal_rejected_twice_is_a_repeat() -> None:
    action = ProposeDoneAction(worker_ids=[1, 2])
    state = start(surfaced=frozenset({1, 2}))
    for _ in range(2):
        state = rejected(review_turn(propose(state, 1, 2)), CritiqueAction(approve=False))
    assert is_repeat(state, action_key(action), action)


# --- the course review ----------------------------------------------------------------------------


def test_the_reviewer_looks_at_the_course_every_n_executor_turns() -> None:
    state = executor_turn(executor_turn(start()))
    assert next_step(state, review_every=2) == "course"


def test_a_course_review_restarts_the_count() -> None:
    state = review_turn(executor_turn(executor_turn(start())))
    assert next_step(state, review_every=2) == "executor"


def test_a_course_on_course_tells_nothing() -> None:
    assert course_reviewed(start(), CourseAction(notes="fine")).feedback == ()


# --- the narrowing --------------------------------------------------------------------------------


def test_told_it_has_enough_an_executor_that_searches_is_narrowed() -> None:
    state, narrowed = acted(start(enough=(1, 2, 3)), told_enough=True, proposed=False)
    assert narrowed
    assert phase(state) == "narrowed"


def test_the_narrowing_names_the_workers_to_propose_among() -> None:
    state, _ = acted(start(enough=(1, 2, 3), objected=(1,)), told_enough=True, proposed=False)
    assert state.feedback[-1].endswith("2 of [2, 3].")


def test_a_proposal_ends_the_narrowing() -> None:
    state, _ = acted(start(enough=(1, 2), ignored_enough=True), told_enough=True, proposed=True)
    assert phase(state) == "search"


def test_an_executor_not_told_it_has_enough_is_not_narrowed() -> None:
    _, narrowed = acted(start(enough=(1, 2)), told_enough=False, proposed=False)
    assert not narrowed


# --- repeats and the steering ---------------------------------------------------------------------


def test_the_first_repeats_cost_no_turn() -> None:
    assert repeated(executor_turn(start())).turns == 0


def test_a_second_repeat_in_a_row_steers_to_the_orders_search() -> None:
    state = repeated(repeated(executor_turn(start())))
    state, steered = repeat_told(state, "find_workers()", 1, "0 workers", [])
    assert steered
    assert phase(state) == "steered"


def test_the_steering_happens_once() -> None:
    state, _ = repeat_told(repeated(repeated(start())), "x()", 1, "", [])
    state, steered = repeat_told(repeated(repeated(state)), "x()", 1, "", [])
    assert not steered


def test_repeating_on_after_the_steering_fails_the_attempt() -> None:
    state, _ = repeat_told(repeated(repeated(start())), "x()", 1, "", [])
    state, _ = repeat_told(repeated(repeated(repeated(state))), "x()", 1, "", [])
    assert phase(state) == "failed"


def test_a_repeat_says_what_to_change_when_nothing_else_is_known() -> None:
    state, _ = repeat_told(repeated(start()), "x()", 1, "0 workers", [])
    assert state.feedback[-1].startswith("change the arguments")


# --- failures -------------------------------------------------------------------------------------


def test_invalid_replies_in_a_row_fail_the_attempt() -> None:
    state = start()
    for _ in range(INVALID_TURNS_MAX):
        state = answered_invalid(state, "executor", "answered no valid action")
    assert phase(state) == "failed"


def test_a_valid_reply_resets_the_invalid_count() -> None:
    state = answered(answered_invalid(start(), "executor", "x"), schema_retries=0)
    assert state.invalid_in_row == 0


def test_a_failed_executor_call_fails_the_attempt_at_once() -> None:
    state = call_failed(start(), "executor", "model call failed (executor): down", "down")
    assert state.failure_reason == "model call failed (executor): down"


def test_a_failed_reviewer_call_counts_as_an_invalid_turn() -> None:
    assert phase(call_failed(start(), "reviewer", "model call failed", "down")) == "search"


def test_an_attempt_out_of_turns_failed_for_its_budget() -> None:
    state = start(turns=6)
    assert ended(state).failure_reason == "turn budget of 6 exhausted without a proposal"


def test_an_approved_attempt_ends_without_a_failure() -> None:
    state = approved(review_turn(propose(start(surfaced=frozenset({1, 2})), 1, 2)))
    assert ended(state).failure_reason is None


# --- the rescue -----------------------------------------------------------------------------------


def test_the_rescue_widens_the_radius_a_lesson_names() -> None:
    state, _ = rescue(start(aborted=True), StaffingAction(widen_radius_miles=80), None)
    assert state.order.radius_miles == 80


def test_the_rescue_runs_on_the_escalation_model() -> None:
    state, notes = rescue(start(aborted=True), None, "scripted:bigger")
    assert (state.executor, notes) == ("scripted:bigger", ["escalated executor: scripted:bigger"])


def test_the_rescue_keeps_the_workers_found() -> None:
    state, _ = rescue(start(surfaced=frozenset({1, 2}), turns=6), None, None)
    assert (state.surfaced, state.turns) == ({1, 2}, 0)


def test_the_rescue_is_told_why_the_last_proposal_failed() -> None:
    first = propose(start(surfaced=frozenset({1, 2})), 1, 2, verification=failing(2))
    state, _ = rescue(first, None, None)
    assert state.feedback[0].startswith("verification rejected your proposal: 2 certification")
