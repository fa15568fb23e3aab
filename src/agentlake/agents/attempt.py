"""The executor/reviewer attempt as a state machine over an immutable state.

Owns :class:`AttemptState` (frozen: every transition returns a new one) and the transitions the
orchestrator's loop takes between model calls. The phases, as :func:`phase` reads them:

* ``search``: the executor acts (plans, calls a tool, proposes);
* ``steered``: it repeated a call after being told, so its next action may only be the
  order's own search (:func:`repeat_told`; once per attempt);
* ``narrowed``: told it had enough verified workers, it did something else, so its next action
  may only be a proposal among them (:func:`acted`);
* ``review``: a proposal passed verification and waits for the reviewer (:func:`proposed`);
* ``done``: the reviewer approved a verified proposal (:func:`approved`);
* ``failed``: the turn budget ran out, or a model failed for good (:func:`answered_invalid`,
  :func:`call_failed`, :func:`repeat_told`).

The rescue is a transition too (:func:`rescue`: a failed attempt's state to the next one's,
its radius widened by a lesson, its executor escalated). Everything here is decided from the
state and what the caller observed (a reply, a verification, the workers that fit); nothing
calls a model, a tool or the lake, so every transition is tested without one
(``tests/agents/test_agents_attempt.py``). It does not own the prompts, the checks in code
(``verify_fill``, the lessons' filters) or recording: the orchestrator does those and feeds
their results in. What the attempt saw and said (the candidate ledger, the log, the
transcript) is its :class:`Notebook`, appended by the orchestrator; no transition reads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from agentlake.agents import prompts
from agentlake.agents.actions import ProposeDoneAction, ToolCallAction

if TYPE_CHECKING:
    from agentlake.agents.actions import ActionBase, CourseAction, CritiqueAction
    from agentlake.agents.outcome import TurnRecord
    from agentlake.llm import Provider
    from agentlake.workforce.learning import StaffingAction
    from agentlake.workforce.order import FillOrder
    from agentlake.workforce.verify import Verification

# Consecutive turns without a valid action (or with a failed reviewer call) after which the
# attempt ends: the model is not going to produce one.
INVALID_TURNS_MAX = 2
# Repeats of an earlier action answered without spending a turn (then they count), and
# repeats in a row after which the attempt ends: the model is stuck.
FREE_REPEATS = 2
REPEATS_IN_ROW_MAX = 3
# Times the reviewer is asked about one and the same proposal (the executor may insist once).
REVIEWS_PER_PROPOSAL = 2

Phase = Literal["search", "steered", "narrowed", "review", "done", "failed"]
Step = Literal["executor", "review", "course"]


@dataclass(frozen=True)
class AttemptState:
    """One run of the loop (the first try, or the rescue). Frozen: transitions return a copy.

    ``done`` maps an action's key (:func:`action_key`) to the turn it was taken and what came
    of it; ``reviews`` a proposal's key to the reviewer's rejections of it; ``surfaced`` holds
    the workers a tool returned (or an earlier fill kept); ``enough`` the verified workers,
    best first, when they fill the order; ``feedback`` what the executor's next prompt says."""

    order: FillOrder
    executor: str | Provider
    reviewer: str | Provider
    budget: int
    turns: int = 0
    since_course: int = 0  # executor turns since the reviewer last looked (review_every)
    model_turns: int = 0
    first_try_valid: int = 0
    invalid_in_row: int = 0
    surfaced: frozenset[int] = frozenset()
    feedback: tuple[str, ...] = ()
    cited: tuple[str, ...] = ()
    invented: tuple[int, ...] = ()
    done: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    repeats: int = 0
    repeats_in_row: int = 0
    steer: bool = False  # the next action may only be the brief's search
    steered: bool = False  # (once per attempt)
    enough: tuple[int, ...] = ()
    ignored_enough: bool = False  # told it had enough, the executor did something else
    objected: tuple[int, ...] = ()  # workers of proposals the reviewer rejected
    reviews: Mapping[str, int] = field(default_factory=dict)
    proposal: ProposeDoneAction | None = None
    verification: Verification | None = None
    pending_review: bool = False
    success: bool = False
    aborted: bool = False  # a model failed for good: no point in more turns
    failure_reason: str | None = None


@dataclass
class Notebook:
    """What an attempt saw and said: the candidate ledger (shared with its rescue), the compact
    log the prompts show, and the transcript of its turns. The orchestrator appends to it."""

    ledger: prompts.Ledger = field(default_factory=prompts.Ledger)
    log: prompts.Log = field(default_factory=prompts.Log)
    transcript: list[TurnRecord] = field(default_factory=list)


def phase(state: AttemptState) -> Phase:
    """Where the attempt stands (see the module docstring)."""
    if state.success:
        return "done"
    if state.aborted or state.turns >= state.budget:
        return "failed"
    if state.pending_review:
        return "review"
    if state.ignored_enough:
        return "narrowed"
    if state.steer:
        return "steered"
    return "search"


def next_step(state: AttemptState, review_every: int) -> Step | None:
    """The next turn: the reviewer's verdict on a pending proposal, its look at the course
    (every ``review_every`` executor turns, 0: never), else the executor's; ``None`` when the
    attempt is over."""
    current = phase(state)
    if current in ("done", "failed"):
        return None
    if current == "review":
        return "review"
    if review_every and state.since_course >= review_every:
        return "course"
    return "executor"


def told(state: AttemptState, *lines: str) -> AttemptState:
    """``lines`` added to what the executor's next prompt says."""
    return replace(state, feedback=state.feedback + lines) if lines else state


def proposable(state: AttemptState) -> list[int]:
    """The verified workers a narrowed proposal may name: those the reviewer did not object to,
    when they still fill the order, else all of them."""
    fresh = [w for w in state.enough if w not in state.objected]
    return fresh if len(fresh) >= state.order.count else list(state.enough)


# --- the executor's turn --------------------------------------------------------------------------


def executor_turn(state: AttemptState) -> AttemptState:
    """An executor turn starts: it counts, and its prompt has taken the feedback and the steer."""
    return replace(
        state, turns=state.turns + 1, since_course=state.since_course + 1, feedback=(), steer=False
    )


def asked(state: AttemptState) -> AttemptState:
    """A model was asked for an action."""
    return replace(state, model_turns=state.model_turns + 1)


def answered(state: AttemptState, schema_retries: int) -> AttemptState:
    """A valid action came back (``schema_retries`` repair requests before it)."""
    return replace(
        state, invalid_in_row=0, first_try_valid=state.first_try_valid + (1 if schema_retries == 0 else 0)
    )


def answered_invalid(state: AttemptState, agent: str, what: str) -> AttemptState:
    """``agent``'s model gave no valid action, or its reviewer call failed: ``INVALID_TURNS_MAX``
    in a row end the attempt."""
    count = state.invalid_in_row + 1
    if count < INVALID_TURNS_MAX:
        return replace(state, invalid_in_row=count)
    return replace(
        state,
        invalid_in_row=count,
        aborted=True,
        failure_reason=f"the {agent}'s model {what}, {count} turns in a row",
    )


def call_failed(state: AttemptState, agent: str, reason: str, message: str) -> AttemptState:
    """A model call failed: the executor's ends the attempt (a model that cannot be reached
    will not answer the next turn either); the reviewer's counts as an invalid turn."""
    if agent == "executor":
        return replace(state, aborted=True, failure_reason=reason)
    return answered_invalid(state, agent, f"failed: {message}")


def acted(state: AttemptState, *, told_enough: bool, proposed: bool) -> tuple[AttemptState, bool]:
    """The narrowing: told it had enough verified workers (``told_enough``, and still has), the
    executor did something else than propose, so from its next turn on it may only propose
    among them (the schema says so, and the feedback why). ``(state, narrowed now)``."""
    if proposed:
        return replace(state, ignored_enough=False), False
    if not told_enough or not state.enough:
        return state, False
    narrowed = not state.ignored_enough
    state = replace(state, ignored_enough=True)
    line = (
        f"enough verified workers are found, so searching is over: reply with propose_done, "
        f"{state.order.count} of {proposable(state)}."
    )
    return told(state, line), narrowed


def cite_lessons(state: AttemptState, lessons: list[str]) -> AttemptState:
    """The lessons an action cites, kept for the outcome."""
    return replace(state, cited=state.cited + tuple(lessons)) if lessons else state


def is_repeat(state: AttemptState, key: str, action: ActionBase) -> bool:
    """Whether the action was taken before. A proposal the reviewer rejected once may be
    insisted on (``REVIEWS_PER_PROPOSAL``)."""
    insisting = isinstance(action, ProposeDoneAction) and 0 < state.reviews.get(key, 0) < REVIEWS_PER_PROPOSAL
    return key in state.done and not insisting


def repeated(state: AttemptState) -> AttemptState:
    """The executor repeated an earlier action: counted, and the first ``FREE_REPEATS`` cost a
    model call, not a turn."""
    repeats = state.repeats + 1
    turns = state.turns - 1 if repeats <= FREE_REPEATS else state.turns
    return replace(state, repeats=repeats, repeats_in_row=state.repeats_in_row + 1, turns=turns)


def repeat_told(
    state: AttemptState, what: str, first_turn: int, came: str, hints: list[str]
) -> tuple[AttemptState, bool]:
    """After a repeat (and the check of the workers so far, whose ``hints`` say what to do):
    told so; the second repeat in a row steers the next action to the order's own search (once,
    unless the workers found already fill the order); the ``REPEATS_IN_ROW_MAX``-th ends the
    attempt. ``(state, steered now)``."""
    state = told(
        state,
        f"you already did {what} at turn {first_turn}: {came}. Do not repeat it.",
        *(
            hints
            or [
                "change the arguments (the filter its result names, a wider radius_miles, a higher limit) or propose."
            ]
        ),
    )
    steered = False
    if state.repeats_in_row == REPEATS_IN_ROW_MAX - 1 and not state.steered and not state.enough:
        # Told once and repeated again: a small model does not get out of this by itself
        # (the 1.5B sent find_workers(requirements=['']) three times). Its next action may
        # be only the search the brief names, whose arguments the grammar then writes.
        state = replace(state, steer=True, steered=True, repeats_in_row=0)
        state = told(state, "run the search for this order above, exactly as written.")
        steered = True
    if state.repeats_in_row >= REPEATS_IN_ROW_MAX:
        state = replace(
            state,
            aborted=True,
            failure_reason=f"the executor repeated {what} {state.repeats_in_row} times in a row after being told",
        )
    return state, steered


def fresh_action(state: AttemptState, key: str, came: str, *, surfaced: Iterable[int] = ()) -> AttemptState:
    """A new plan or tool call was taken (``came``: what came of it; ``surfaced``: the workers
    its result names)."""
    return replace(
        state,
        repeats_in_row=0,
        done={**state.done, key: (state.turns, came)},
        surfaced=state.surfaced | frozenset(surfaced),
    )


def planned(state: AttemptState, key: str) -> AttemptState:
    state = fresh_action(state, key, "planned")
    return told(state, "a plan costs a turn and finds no one: act now with find_workers (the search above).")


def progressed(state: AttemptState, enough: list[int], hints: list[str]) -> AttemptState:
    """The workers surfaced so far were checked: ``enough`` those that fill the order (empty
    when they do not), ``hints`` what to do next."""
    return told(replace(state, enough=tuple(enough)), *hints)


# --- a proposal and its review --------------------------------------------------------------------


def proposed(
    state: AttemptState,
    key: str,
    action: ProposeDoneAction,
    verification: Verification,
    unfit: list[int],
    wanted: str,
) -> tuple[AttemptState, list[int]]:
    """A proposal and its verification in code (``unfit``: proposed workers the lessons'
    filters rule out, described by ``wanted``): a verified one that fits waits for the reviewer;
    otherwise it goes back with why. ``(state, ids no tool returned)``."""
    invented = [w for w in dict.fromkeys(action.worker_ids + action.spares) if w not in state.surfaced]
    state = replace(
        state,
        repeats_in_row=0,
        proposal=action,
        verification=verification,
        invented=state.invented + tuple(w for w in invented if w not in state.invented),
    )
    if invented:
        state = told(
            state, f"no tool returned worker(s) {invented}: propose only ids from the candidates found."
        )
    if verification.ok and not unfit:
        return replace(
            state, pending_review=True, done={**state.done, key: (state.turns, "passed verification")}
        ), invented
    if verification.ok:
        # The lessons' filters are the client's own rejections, learned: a proposal that breaks
        # them while enough workers fit goes back like a failed verification.
        state = replace(
            state, done={**state.done, key: (state.turns, f"workers {unfit} do not fit the lessons")}
        )
        line = f"workers {unfit} pass verification but not the lessons' filters ({wanted}): replace them."
        return told(state, line), invented
    state = replace(state, done={**state.done, key: (state.turns, "failed verification")})
    return told(state, rejections_feedback(verification)), invented


def review_turn(state: AttemptState) -> AttemptState:
    """A reviewer turn starts (a verdict or a look at the course): it counts, and the next look
    at the course is ``review_every`` executor turns on."""
    return replace(state, turns=state.turns + 1, since_course=0)


def approved(state: AttemptState) -> AttemptState:
    """Consensus: the reviewer approved the verified proposal."""
    return replace(state, pending_review=False, success=True, failure_reason=None)


def rejected(state: AttemptState, critique: CritiqueAction) -> AttemptState:
    """The reviewer rejected the proposal: its workers go last from now on, it may be insisted
    on once, the critique's drift and notes go to the executor."""
    assert state.proposal is not None
    key = action_key(state.proposal)
    state = replace(
        state,
        pending_review=False,
        reviews={**state.reviews, key: state.reviews.get(key, 0) + 1},
        done={**state.done, key: (state.turns, f"the reviewer rejected it: {critique.notes}")},
        objected=state.objected + tuple(w for w in state.proposal.worker_ids if w not in state.objected),
    )
    state = told(state, *(f"reviewer (drift): {note}" for note in critique.drift))
    return told(state, f"reviewer: {critique.notes}") if critique.notes else state


def course_reviewed(state: AttemptState, review: CourseAction) -> AttemptState:
    """The reviewer's look at the course: its drift notes (and then its notes) go to the executor."""
    state = told(state, *(f"reviewer (drift): {note}" for note in review.drift))
    return told(state, f"reviewer: {review.notes}") if review.drift and review.notes else state


def ended(state: AttemptState) -> AttemptState:
    """The loop is over: a failure without a reason of its own ran out of turns."""
    if state.success or state.failure_reason is not None:
        return state
    return replace(state, failure_reason=budget_reason(state))


# --- the rescue ------------------------------------------------------------------------------------


def rescue(
    first: AttemptState, machine: StaffingAction | None, escalation: str | Provider | None
) -> tuple[AttemptState, list[str]]:
    """The one rescue attempt after ``first`` failed: the radius a lesson widens to (when wider),
    the escalation model as executor (when set), the workers found so far kept, and a failed
    verification's rejections told. ``(state, what changed, in words)``."""
    order = first.order
    notes = []
    if machine is not None and machine.widen_radius_miles and machine.widen_radius_miles > order.radius_miles:
        notes.append(
            f"radius widened from {order.radius_miles:g} to {machine.widen_radius_miles:g} miles (lesson)"
        )
        order = order.model_copy(update={"radius_miles": machine.widen_radius_miles})
    executor = escalation or first.executor
    if escalation is not None:
        notes.append(f"escalated executor: {model_name(executor)}")
    state = AttemptState(
        order=order, executor=executor, reviewer=first.reviewer, budget=first.budget, surfaced=first.surfaced
    )
    if first.verification is not None and not first.verification.ok:
        state = told(state, rejections_feedback(first.verification))
    return state, notes


# --- words and keys ------------------------------------------------------------------------------


def action_key(action: ActionBase) -> str:
    """What makes two actions the same: the tool and its arguments, or the proposed ids."""
    if isinstance(action, ToolCallAction):
        return json.dumps({"tool": action.tool, "args": action.args}, sort_keys=True, default=str)
    if isinstance(action, ProposeDoneAction):
        return json.dumps({"propose": sorted(action.worker_ids)})
    return "plan"


def action_text(action: ActionBase) -> str:
    if isinstance(action, ToolCallAction):
        return f"{action.tool}({args_text(action.args)})"
    if isinstance(action, ProposeDoneAction):
        return f"propose_done {action.worker_ids}"
    return "a plan"


def args_text(args: dict[str, Any]) -> str:
    parts = []
    for key, value in args.items():
        text = repr(value) if isinstance(value, str) else str(value)
        parts.append(f"{key}={text if len(text) <= 120 else text[:117] + '...'}")
    return ", ".join(parts)


def rejections_feedback(verification: Verification) -> str:
    # Rule names and ids only: the reasons quote lake data (names), which reaches the prompt
    # fenced, in the candidates list.
    reasons = ", ".join(f"{r.worker_id} {r.rule}" for r in verification.rejections[:8])
    if reasons:
        return f"verification rejected your proposal: {reasons} (reasons under Candidates). Replace those workers."
    short = verification.requested - len(verification.accepted)
    if short > 0:
        return (
            f"verification: the proposal is {short} worker(s) short of the {verification.requested} ordered."
        )
    return (
        f"verification: {len(verification.accepted)} workers proposed for {verification.requested} ordered."
    )


def budget_reason(state: AttemptState) -> str:
    if state.proposal is None:
        return f"turn budget of {state.budget} exhausted without a proposal"
    if state.verification is not None and not state.verification.ok:
        return f"turn budget of {state.budget} exhausted; the last proposal failed verification ({len(state.verification.rejections)} rejection(s))"
    return f"turn budget of {state.budget} exhausted before the reviewer approved a verified proposal"


def model_name(model: str | Provider) -> str:
    return model if isinstance(model, str) else f"{model.name}:{model.model}"
