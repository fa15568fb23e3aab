"""Answers to data questions and a person's verdict on one: right, or wrong (with the value it
should have been).

Owns ``record_answer``, the ``ask.answer`` op every door that answers a data question records
(``agentlake ask``, ``POST /ask``, the MCP ``ask`` tool, the graph's thinker), and
``give_feedback``, the one library call behind ``agentlake feedback``, ``POST /feedback``, the
MCP ``feedback`` tool and the dashboard's buttons under an answer. It finds the answer's
``ask.answer`` op (its id is the answer's) and records one ``ask.feedback`` op that carries what
the learner needs without the answer op: the question, the query that ran, the tables, the
answer's words, the lessons it was given and cited, and the run's outcome (right or wrong, the
task the answer was measured by). Nothing else is written: the learner reads the op
(``questions.lessons``). It does not own answering (``agentlake.agents.ask``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentlake.errors import RunError, UserError
from agentlake.learn import outcome_attributes
from agentlake.learn.model import TaskKey
from agentlake.observe import event
from agentlake.questions.lessons import ANSWER, FEEDBACK
from agentlake.questions.retrieval import task_for

if TYPE_CHECKING:
    from agentlake.observe import Observer

MAX_EXPECTED_CHARS = 200
MAX_NOTE_CHARS = 1000


class Feedback(BaseModel):
    """A verdict on one answer (the body of ``POST /feedback`` and the MCP ``feedback`` tool)."""

    answer_id: str = Field(
        ..., min_length=1, max_length=128, description="The answer's id (`agentlake ask --json`)."
    )
    right: bool = Field(..., description="Whether the answer was right.")
    expected: str | None = Field(
        None, max_length=MAX_EXPECTED_CHARS, description="What the answer should have been (a wrong answer)."
    )
    note: str | None = Field(
        None, max_length=MAX_NOTE_CHARS, description="Anything else worth learning from."
    )


class FeedbackRecorded(BaseModel):
    """What was recorded: the feedback op, and the answer it is about."""

    op_id: str
    answer_id: str
    right: bool


def record_answer(
    answer_id: str,
    question: str,
    answer: str,
    *,
    route: str,
    datasets: list[str],
    attempts: list[dict[str, Any]],
    observer: Observer | None,
    sql: str | None = None,
    lessons_given: list[str] | None = None,
    lessons_cited: list[str] | None = None,
    failure: str | None = None,
    **attributes: Any,
) -> None:
    """Record one answer as an ``ask.answer`` op whose id is ``answer_id``: the question, the
    query it came from, the tables it is about (``datasets``: the first is the task it is
    measured by), each query tried (``attempts``: ``sql``, ``error``, ``renamed``...) and the
    lessons given and cited. ``failure``: why nothing answered it (the run states it failed);
    ``attributes``: more for the op (the model, the door). The learner and ``give_feedback``
    read it."""
    task = task_for(datasets)
    said: dict[str, Any] = {
        **attributes,
        "question": question,
        "route": route,
        "sql": sql,
        "datasets": datasets,
        "attempts": attempts,
        "task": task.model_dump(mode="json"),
        "lessons_given": lessons_given or [],
        "lessons_cited": lessons_cited or [],
    }
    if failure is not None:
        said.update(outcome_attributes(task, False))
    event(
        ANSWER,
        source="agent",
        observer=observer,
        id=answer_id,
        run_id=answer_id,
        input_summary=question,
        output_summary=answer,
        success=failure is None,
        error=failure,
        attributes=said,
    )


def give_feedback(feedback: Feedback, *, observer: Observer) -> FeedbackRecorded:
    """Record ``feedback`` on an answer as one ``ask.feedback`` op in ``observer``.

    Raises ``UserError`` for an id that names no answer (with how to list them) and for
    ``expected`` on an answer marked right; ``RunError`` when the op cannot be recorded.
    """
    if feedback.right and feedback.expected is not None:
        raise UserError("an answer marked right has no expected value: drop --expected, or mark it --wrong")
    found = [op for op in observer.query(id=feedback.answer_id, limit=1) if op.endpoint == ANSWER]
    if not found:
        raise UserError(
            f"no answer with id {feedback.answer_id!r}: `agentlake ops query --endpoint ask.answer` lists the answers"
        )
    answer = found[0].attributes
    task = TaskKey.model_validate(answer["task"]) if isinstance(answer.get("task"), dict) else None
    attributes: dict[str, Any] = {
        "answer_id": feedback.answer_id,
        "right": feedback.right,
        "expected": feedback.expected,
        "note": feedback.note,
        "question": answer.get("question"),
        "sql": answer.get("sql"),
        "route": answer.get("route"),
        "datasets": answer.get("datasets") or [],
        "answer": found[0].output_summary[:500],
        "lessons_given": answer.get("lessons_given") or [],
        "lessons_cited": answer.get("lessons_cited") or [],
    }
    if task is not None:
        attributes.update(outcome_attributes(task, feedback.right))
    op = event(
        FEEDBACK,
        source="agent",
        observer=observer,
        run_id=feedback.answer_id,
        success=feedback.right,
        input_summary=str(answer.get("question") or ""),
        output_summary="right"
        if feedback.right
        else f"wrong; expected {feedback.expected}"
        if feedback.expected
        else "wrong",
        attributes=attributes,
    )
    if op is None:
        raise RunError("the feedback could not be recorded: the observer refused it (see the log)")
    return FeedbackRecorded(op_id=op.id, answer_id=feedback.answer_id, right=feedback.right)
