"""The reviewer's cadence (``review_every``), with scripted models over the real generated lake:
0 (the default) shows the reviewer verified proposals only; N also shows it the executor's
course every N executor turns, and what it calls drift reaches the executor's next turn."""

from __future__ import annotations

import pytest
from agents_support import action

from agentlake.agents import LLMPolicy, TurnRecord
from agentlake.errors import UserError
from agentlake.llm import ScriptedProvider

FIND = {"role": "Warehouse Associate", "city": "New York", "state": "NY"}
WRONG_CITY = {"role": "Warehouse Associate", "city": "Newark", "state": "NJ"}


def _model_turns(records: list[TurnRecord]) -> list[tuple[str, str]]:
    return [(r.agent, r.kind) for r in records if r.turn]


def _prompt(provider, call: int) -> str:
    messages, _ = provider.history[call]
    return "\n".join(m.content for m in messages)


def _fill(make_ctx, order, qualified, models, review_every: int, *, drift: list[str] | None = None):
    """Search, (course review), propose, approve: the turns each cadence takes."""
    executor, reviewer = models
    executor.enqueue(action("tool_call", tool="find_workers", args=FIND))
    executor.enqueue(action("propose_done", worker_ids=qualified[:3]))
    if review_every:
        reviewer.enqueue(action("course", drift=drift or []))
    reviewer.enqueue(action("critique", approve=True))
    seen: list[TurnRecord] = []
    outcome = LLMPolicy(executor, reviewer, review_every=review_every).run(
        order, make_ctx(on_turn=seen.append)
    )
    return outcome, seen


def test_by_default_the_reviewer_sees_proposals_only(make_ctx, order, qualified, models) -> None:
    _, seen = _fill(make_ctx, order, qualified, models, 0)
    assert _model_turns(seen) == [
        ("executor", "tool_call"),
        ("executor", "propose_done"),
        ("reviewer", "critique"),
    ]


def test_every_executor_turn_the_reviewer_looks_at_the_course(make_ctx, order, qualified, models) -> None:
    _, seen = _fill(make_ctx, order, qualified, models, 1)
    assert _model_turns(seen) == [
        ("executor", "tool_call"),
        ("reviewer", "course"),
        ("executor", "propose_done"),
        ("reviewer", "critique"),
    ]


def test_a_course_review_is_a_turn_of_the_budget(make_ctx, order, qualified, models) -> None:
    outcome, _ = _fill(make_ctx, order, qualified, models, 1)
    assert (outcome.success, outcome.turns) == (True, 4)


def test_every_second_turn_the_course_is_reviewed_after_two_executor_turns(
    make_ctx, order, qualified, models
) -> None:
    executor, reviewer = models
    executor.enqueue(action("tool_call", tool="find_workers", args=WRONG_CITY))
    executor.enqueue(action("tool_call", tool="find_workers", args=FIND))
    executor.enqueue(action("propose_done", worker_ids=qualified[:3]))
    reviewer.enqueue(action("course", drift=["searched Newark, NJ; the order is in New York"]))
    reviewer.enqueue(action("critique", approve=True))
    seen: list[TurnRecord] = []
    LLMPolicy(executor, reviewer, review_every=2).run(order, make_ctx(on_turn=seen.append))
    assert _model_turns(seen) == [
        ("executor", "tool_call"),
        ("executor", "tool_call"),
        ("reviewer", "course"),
        ("executor", "propose_done"),
        ("reviewer", "critique"),
    ]


def test_the_course_review_sees_the_order_and_the_executors_calls(make_ctx, order, qualified, models) -> None:
    _, reviewer = models
    _fill(make_ctx, order, qualified, models, 1)
    course = _prompt(reviewer, 0)
    assert ("Order: 3 x Warehouse Associate in New York, NY" in course, "find_workers(" in course) == (
        True,
        True,
    )


def test_the_executors_tool_results_reach_the_course_review_fenced(
    make_ctx, order, qualified, models
) -> None:
    _, reviewer = models
    _fill(make_ctx, order, qualified, models, 1)
    user = reviewer.history[0][0][-1].content
    assert "<data>" in user.split("find_workers(", 1)[1]


def test_drift_the_reviewer_sees_reaches_the_executors_next_turn(make_ctx, order, qualified, models) -> None:
    executor, _ = models
    _fill(make_ctx, order, qualified, models, 1, drift=["the order asks for 3, keep to 3"])
    assert "the order asks for 3, keep to 3" in _prompt(executor, 1)


def test_drift_is_noted_in_the_transcript(make_ctx, order, qualified, models) -> None:
    _, seen = _fill(make_ctx, order, qualified, models, 1, drift=["the order asks for 3, keep to 3"])
    assert [r.summary for r in seen if r.kind == "drift"] == [
        "drift fed back: the order asks for 3, keep to 3"
    ]


def test_a_course_on_course_sends_nothing_back(make_ctx, order, qualified, models) -> None:
    executor, _ = models
    _fill(make_ctx, order, qualified, models, 1)
    on_course = _prompt(executor, 1).splitlines()
    drifting = (ScriptedProvider("executor"), ScriptedProvider("reviewer"))
    _fill(make_ctx, order, qualified, drifting, 1, drift=["keep to 3"])
    # What drift adds to the executor's next prompt is the drift alone: on course, nothing.
    added = [line for line in _prompt(drifting[0], 1).splitlines() if line not in on_course]
    assert added != []
    assert [line for line in added if "keep to 3" not in line] == []


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_a_review_every_that_is_no_count_of_turns_is_refused_in_one_line(bad: object) -> None:
    with pytest.raises(
        UserError, match=r"^review_every must be 0 \(proposals only\) or a number of executor turns"
    ):
        LLMPolicy("scripted:x", review_every=bad)  # type: ignore[arg-type]
