"""What a task produced: the turn transcript and the final ``TaskOutcome``.

Owns the records a policy returns and the ``task.fill`` op that summarises one. It does not
own judging a fill against hidden client preferences (the scenarios' ``fill.judged`` ops).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from agentlake.lake.versioned import catalog_snapshot
from agentlake.observe import LLMUsage, deferred, event, get_observer, observe_context
from agentlake.workforce.order import FillOrder
from agentlake.workforce.order_words import ReadOrder
from agentlake.workforce.verify import Verification

if TYPE_CHECKING:
    from agentlake.agents.policy import RunContext

log = logging.getLogger(__name__)

Agent = Literal["executor", "reviewer", "orchestrator", "rules", "overseer"]


class TurnRecord(BaseModel):
    """One step of a task as the live view and the transcript show it."""

    turn: int = Field(
        ..., ge=0, description="1-based model turn; 0 for orchestrator/rules steps between turns."
    )
    agent: Agent
    kind: str = Field(
        ..., description="plan, tool_call, propose_done, critique, verification, error, rescue, ..."
    )
    summary: str = Field(..., description="One line saying what happened.")
    detail: str = Field("", description="Compact rendering of a tool result or rejection reasons.")
    action: dict[str, Any] | None = None
    cited_lessons: list[str] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    ok: bool = True


ConcernKind = Literal["double_booking", "certification_drift", "thin_buffer"]


class Concern(BaseModel):
    """One thing the overseer noticed about a completed event (see ``overseer``)."""

    kind: ConcernKind
    message: str
    worker_ids: list[int] = Field(default_factory=list)
    event_id: str | None = None
    client_id: str | None = None
    role: str | None = None
    value: Any = None


class TaskEffort(BaseModel):
    """What filling one order took: model turns, tokens, cost and time, the lessons given and
    cited, and the rescue. A ``TaskOutcome`` carries it; so does each judged scenario event
    (``agentlake.scenarios.results.EventResult``), copied with :meth:`effort`."""

    turns: int = 0
    model_calls: int = Field(
        0, description="Requests sent to models, schema repairs and continuations included."
    )
    model_turns: int = Field(0, description="Turns that asked a model for an action.")
    first_try_valid: int = Field(0, description="Of those, the turns whose first reply was a valid action.")
    invented_ids: list[int] = Field(
        default_factory=list, description="Worker ids a model proposed that no tool had returned."
    )
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    lessons_given: list[str] = Field(default_factory=list)
    lessons_cited: list[str] = Field(default_factory=list)
    rescue_attempted: bool = False
    rescue_succeeded: bool = False

    def effort(self) -> dict[str, Any]:
        """The :class:`TaskEffort` fields of this record, as keyword arguments for another."""
        return {name: getattr(self, name) for name in TaskEffort.model_fields}


class TaskOutcome(TaskEffort):
    """The result of one fill task, successful or not (its effort fields come from ``TaskEffort``)."""

    order: FillOrder
    proposed: list[int] = Field(
        default_factory=list, description="The final proposal (verified when success)."
    )
    verification: Verification
    success: bool
    failure_reason: str | None = None
    candidates: list[int] = Field(
        default_factory=list, description="Verified spares beyond `count` (the buffer)."
    )
    transcript: list[TurnRecord] = Field(default_factory=list)
    concerns: list[Concern] = Field(default_factory=list, description="The overseer's, when it is on.")
    policy: str = ""
    run_id: str | None = None
    reading: ReadOrder | None = Field(
        None, description="How the order's text was read (by the grammar or a model), when it was text."
    )

    @property
    def filled(self) -> int:
        """Workers actually placed: the verified part of the proposal."""
        return len(self.verification.accepted) if self.success else 0

    def rows(self) -> list[tuple[int | str, str, str]]:
        """The outcome as ``(worker_id, status, reason)`` rows, as ``agentlake fill`` and the
        graph chat show it: the placed, the spares, each rejection, the overseer's concerns."""
        rows: list[tuple[int | str, str, str]] = [(w, "placed", "passed verification") for w in self.proposed]
        rows += [(w, "spare", "verified, kept as buffer") for w in self.candidates]
        rows += [(r.worker_id, "rejected", f"{r.rule}: {r.reason}") for r in self.verification.rejections]
        rows += [("", "concern", f"{c.kind}: {c.message}") for c in self.concerns]
        return rows

    def op_attributes(self, *, states_outcome: bool = False) -> dict[str, Any]:
        """The ``task.fill`` op's attributes (shape shared with ``fill.judged``); with
        ``states_outcome``, how the run ended for lesson measurement (``learn.outcome_attributes``)."""
        # Lazy (start-up time): the learning layer loads on first use.
        from agentlake.learn import outcome_attributes

        stated = outcome_attributes(self.order.signature(), self.success) if states_outcome else {}
        return {
            **stated,
            "client_id": self.order.client_id,
            "task_kind": self.order.task_kind,
            "event_id": self.order.event_id,
            "policy": self.policy,
            "requested": self.order.count,
            "filled": self.filled,
            "proposed": self.proposed,
            "accepted": self.verification.accepted,
            "rejections": [r.model_dump(mode="json") for r in self.verification.rejections[:20]],
            "candidates": self.candidates[:20],
            "turns": self.turns,
            "model_calls": self.model_calls,
            "model_turns": self.model_turns,
            "first_try_valid": self.first_try_valid,
            "invented_ids": self.invented_ids[:20],
            "lessons_given": self.lessons_given,
            "lessons_cited": self.lessons_cited,
            "rescue_attempted": self.rescue_attempted,
            "rescue_succeeded": self.rescue_succeeded,
            "failure_reason": self.failure_reason,
            "concerns": [c.kind for c in self.concerns],
        }


def new_run_id() -> str:
    """A fresh run id for a task that was not given one."""
    import uuid

    return f"run-{uuid.uuid4().hex[:12]}"


@contextmanager
def task_scope(order: FillOrder, ctx: RunContext) -> Iterator[None]:
    """Every op recorded inside (tool calls, model calls, the ``task.fill`` op) shares one trace
    id, the agent id, the run id and the order's labels; the lake's catalog is read once.

    The task's ops are acknowledged together: they are recorded in one ``observe.deferred``
    scope, so none waits for its own commit and the scope's exit, before the policy returns
    the outcome, waits until all of them are durable. A recording failure is logged, not
    raised (the observer is a witness; the fill happened either way).
    """
    import secrets

    labels = ctx.order_labels(order)
    with (
        deferred(raise_errors=False),
        catalog_snapshot(),
        # The task's own span (its task.fill op, recorded at the end, closes it): the tool and
        # model calls inside are its children, one trace per task.
        observe_context(
            run_id=ctx.run_id, labels=labels, agent_id=ctx.agent_id, trace_id=secrets.token_hex(16), span=True
        ),
    ):
        yield


def record_task(outcome: TaskOutcome, ctx: RunContext) -> str | None:
    """Record ``outcome`` as one ``task.fill`` op (source ``agent``); returns its id.

    Inside ``task_scope`` the op is durable when the scope exits, with the task's other ops.
    A recording failure is logged, never raised: the fill happened either way.
    """
    labels = {
        **ctx.order_labels(outcome.order),
        "rescue_attempted": outcome.rescue_attempted,
        "rescue_succeeded": outcome.rescue_succeeded,
    }
    usage = None
    if outcome.input_tokens or outcome.output_tokens:
        usage = LLMUsage(
            input_tokens=outcome.input_tokens,
            output_tokens=outcome.output_tokens,
            cost_usd=outcome.cost_usd or None,
        )
    try:
        observer = ctx.observer or get_observer(ctx.settings)
    except Exception:  # the observer is a witness; it never fails the work it watches
        log.warning("could not record the task.fill op of run %s", outcome.run_id, exc_info=True)
        return None
    op = event(
        "task.fill",
        source="agent",
        observer=observer,
        closes_span=True,
        agent_id=ctx.agent_id,
        input_summary=outcome.order.describe(),
        output_summary=f"{outcome.filled}/{outcome.order.count} filled {outcome.proposed} by {outcome.policy}",
        success=outcome.success,
        duration_ms=max(0.0, outcome.latency_ms),
        error=None if outcome.success else outcome.failure_reason,
        run_id=ctx.run_id or outcome.run_id or None,
        labels=labels,
        usage=usage,
        attributes=outcome.op_attributes(states_outcome=ctx.states_outcome),
    )
    return op.id if op is not None else None
