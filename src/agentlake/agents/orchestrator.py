"""The executor/reviewer loop: ``LLMPolicy``.

Owns the turn loop. Each turn one model answers with ONE typed action (through the LLM
layer's ``generate_json``: native schema where the server has it, the tolerant parser
otherwise, validation errors sent back for a retry). The executor plans, calls tools and
proposes; the orchestrator applies tool calls, keeps the candidate ledger and the compact
log, and verifies every proposal in code. The reviewer is asked after a plan, after every
``REVIEW_EVERY`` tool calls in a row, and after every proposal; its ``drift`` notes go back to
the executor. A task succeeds only on consensus: a proposal, the reviewer's approval and a
passing verification (an approval of a rejected proposal is overridden). When the turn
budget runs out the task fails with the reason. One rescue attempt follows a failure (the
escalation model if one is set, a lesson's wider radius if one applies).

Every turn counts one model call (executor or reviewer). Model calls are recorded by the
observer's LLM hook (installed by whoever owns the process: ``fill``, scenarios, the gateway);
tool calls by the tool registry; the outcome as a ``task.fill`` op. None of them waits for its
own commit: the task's ops are acknowledged together before the outcome is returned
(``task_scope``), or each turn's before the next turn with ``acknowledge="turn"``. It does not
own tools, verification, prompts' wording or the rules policy.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentlake.agents import prompts
from agentlake.agents.actions import (
    CritiqueAction,
    ExecutorAction,
    PlanAction,
    ProposeDoneAction,
    ToolCallAction,
    json_schema,
)
from agentlake.agents.lessons import TaskLessons, cite, lessons_for
from agentlake.agents.outcome import TaskOutcome, TurnRecord, new_run_id, record_task, task_scope
from agentlake.agents.overseer import oversee
from agentlake.agents.policy import register_policy
from agentlake.errors import RunError, UserError
from agentlake.observe import deferred, observe_context
from agentlake.workforce.verify import Verification, verify_fill

if TYPE_CHECKING:
    from agentlake.agents.policy import RunContext
    from agentlake.llm import Provider
    from agentlake.workforce.order import FillOrder

REVIEW_EVERY = 3
DEFAULT_SPARES = 2
SPARES_VERIFIED_MAX = 40
MAX_TOKENS = 1024


_METER_TAG = "agentlake_task"


class _UsageMeter:
    """Sums the tokens and cost of every model call made for one task, failed calls included.

    Listens to the LLM layer's accounting hook and keeps only the records tagged with its own
    token (``call_tags``), so concurrent tasks in other threads are not counted.
    """

    def __init__(self, run_id: str) -> None:
        import uuid

        self.run_id = run_id
        self.token = uuid.uuid4().hex
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.calls = 0
        self._unsubscribe: Any = None

    def _record(self, record: Any) -> None:
        if record.tags.get(_METER_TAG) == self.token:
            self.calls += 1
            self.input_tokens += record.input_tokens
            self.output_tokens += record.output_tokens
            self.cost_usd += record.cost_usd or 0.0

    def __enter__(self) -> _UsageMeter:
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import add_recorder

        self._unsubscribe = add_recorder(self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()


@dataclass
class _Reply:
    action: Any
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    schema_retries: int = 0


@dataclass
class _Attempt:
    """One run of the loop (the first try, or the rescue)."""

    order: FillOrder
    executor: str | Provider
    reviewer: str | Provider
    budget: int
    meter: _UsageMeter | None = None
    ledger: prompts.Ledger = field(default_factory=prompts.Ledger)
    log: prompts.Log = field(default_factory=prompts.Log)
    feedback: list[str] = field(default_factory=list)
    transcript: list[TurnRecord] = field(default_factory=list)
    turns: int = 0
    cited: list[str] = field(default_factory=list)
    proposal: ProposeDoneAction | None = None
    verification: Verification | None = None
    success: bool = False
    aborted: bool = False  # the executor's model failed: no point in more turns
    failure_reason: str | None = None


class LLMPolicy:
    """Executor + reviewer over the audited tools; see the module docstring.

    ``executor_model``/``reviewer_model``: model strings (``ollama:qwen3:4b``,
    ``scripted:NAME``...) or provider objects; the reviewer defaults to
    ``settings.reviewer_model``, then to the executor. ``turn_budget`` defaults to
    ``settings.agent_turn_budget``. ``escalation_model`` runs the rescue attempt.
    ``acknowledge``: when the observer must have made the ops durable: ``"task"`` (default)
    all of them once, before the outcome is returned; ``"turn"`` each turn's before the next
    turn (one commit wait per turn).
    """

    name = "llm"

    def __init__(
        self,
        executor_model: str | Provider | None = None,
        reviewer_model: str | Provider | None = None,
        *,
        turn_budget: int | None = None,
        escalation_model: str | Provider | None = None,
        acknowledge: Literal["task", "turn"] = "task",
    ) -> None:
        if turn_budget is not None and turn_budget < 2:
            raise UserError(
                f"turn_budget must be at least 2 (one executor and one reviewer turn), got {turn_budget}"
            )
        if acknowledge not in ("task", "turn"):
            raise UserError(f"acknowledge must be 'task' or 'turn', got {acknowledge!r}")
        self.executor_model = executor_model
        self.reviewer_model = reviewer_model
        self.turn_budget = turn_budget
        self.escalation_model = escalation_model
        self.acknowledge = acknowledge

    def _acknowledged_turn(self) -> AbstractContextManager[Any]:
        """With ``acknowledge="turn"``: the turn's ops (its model call, its tool call) are durable
        before the next turn starts. Otherwise they wait for the task's scope (``task_scope``)."""
        if self.acknowledge != "turn":
            return nullcontext()

        return deferred(raise_errors=False)

    def _models(self, ctx: RunContext) -> tuple[str | Provider, str | Provider]:
        executor = self.executor_model or ctx.settings.executor_model
        if not executor:
            raise UserError(
                "no executor model configured: pass --executor MODEL or set AGENTLAKE_EXECUTOR_MODEL "
                "(e.g. ollama:qwen3:4b with Ollama at OLLAMA_HOST, or openai:MODEL with OPENAI_BASE_URL)"
            )
        reviewer = self.reviewer_model or ctx.settings.reviewer_model or executor
        return executor, reviewer

    def run(self, order: FillOrder, ctx: RunContext) -> TaskOutcome:
        """Fill ``order`` with the executor/reviewer loop (plus one rescue when it fails).

        Raises ``UserError`` for configuration problems (no model, unreachable server); a fill
        that fails, a model that keeps answering garbage or a model call that errors end as a
        failed outcome with ``failure_reason``.
        """
        executor, reviewer = self._models(ctx)
        budget = self.turn_budget or ctx.settings.agent_turn_budget
        started = time.perf_counter()
        run_id = ctx.run_id or new_run_id()
        meter = _UsageMeter(run_id)
        with task_scope(order, ctx), meter:
            given = lessons_for(order, ctx, run_id)
            first = _Attempt(order=order, executor=executor, reviewer=reviewer, budget=budget, meter=meter)
            if given.lessons:
                self._emit(
                    ctx,
                    first,
                    TurnRecord(
                        turn=0,
                        agent="orchestrator",
                        kind="lessons",
                        summary=f"{len(given.lessons)} lesson(s) given: {', '.join(given.ids)}",
                        detail=given.text,
                    ),
                )
            self._loop(first, ctx, given)
            final, rescue_attempted = first, False
            if not first.success and ctx.rescue:
                rescue_attempted = True
                final = self._rescue(first, ctx, given)
            attempts = [first] if final is first else [first, final]
            proposed, verification = _final_proposal(final, ctx)
            spares = _spares(final, ctx, proposed, given)
            cited = cite(ctx, run_id, [c for a in attempts for c in a.cited], given)
            outcome = TaskOutcome(
                order=final.order,
                proposed=proposed,
                verification=verification,
                success=final.success,
                failure_reason=None if final.success else final.failure_reason,
                turns=sum(a.turns for a in attempts),
                input_tokens=meter.input_tokens,
                output_tokens=meter.output_tokens,
                cost_usd=round(meter.cost_usd, 6),
                latency_ms=round((time.perf_counter() - started) * 1000, 3),
                lessons_given=given.ids,
                lessons_cited=cited,
                rescue_attempted=rescue_attempted,
                rescue_succeeded=rescue_attempted and final.success,
                candidates=spares,
                transcript=[record for a in attempts for record in a.transcript],
                policy=self.name,
                run_id=run_id,
            )
            oversee(outcome, ctx)
            record_task(outcome, ctx)
        return outcome

    # --- the loop ---------------------------------------------------------------------------

    def _loop(self, state: _Attempt, ctx: RunContext, given: TaskLessons) -> None:
        catalog = ctx.tools.catalog_text(ctx.lake)
        tool_calls_in_row = 0
        while state.turns < state.budget:
            with self._acknowledged_turn():
                state.turns += 1
                messages = prompts.executor_messages(
                    state.order,
                    catalog,
                    given.text,
                    state.ledger,
                    state.log,
                    state.feedback,
                    state.turns,
                    state.budget,
                )
                state.feedback = []
                reply = self._ask(state, ctx, "executor", state.executor, messages, ExecutorAction)
                if state.aborted:
                    return
                if reply is None:
                    continue
                action = reply.action.root
                state.cited += action.cited_lessons
                review = False
                latest = ""
                if isinstance(action, PlanAction):
                    text = "plan: " + "; ".join(action.steps)
                    state.log.add(state.turns, "executor", text)
                    self._turn(ctx, state, "executor", "plan", text, reply, action)
                    review, latest = True, text
                    tool_calls_in_row = 0
                elif isinstance(action, ToolCallAction):
                    result = ctx.tools.call(action.tool, action.args, ctx=ctx)
                    call_text = f"{action.tool}({_args_text(action.args)})"
                    state.ledger.observe(result.data, result.worker_ids)
                    state.log.add(state.turns, "executor", call_text, result.text, is_tool=True)
                    self._turn(
                        ctx,
                        state,
                        "executor",
                        "tool_call",
                        call_text,
                        reply,
                        action,
                        detail=result.text,
                        ok=result.ok,
                    )
                    tool_calls_in_row += 1
                    review, latest = tool_calls_in_row >= REVIEW_EVERY, call_text
                else:  # propose_done
                    assert isinstance(action, ProposeDoneAction)
                    state.proposal = action
                    verification = verify_fill(
                        ctx.lake, state.order, action.worker_ids, schedule=ctx.schedule
                    )
                    state.verification = verification
                    state.ledger.mark(verification)
                    text = f"propose_done {action.worker_ids}" + (
                        f" spares {action.spares}" if action.spares else ""
                    )
                    state.log.add(state.turns, "executor", text, verification.summary())
                    self._turn(ctx, state, "executor", "propose_done", text, reply, action)
                    self._emit(
                        ctx,
                        state,
                        TurnRecord(
                            turn=0,
                            agent="orchestrator",
                            kind="verification",
                            summary=("passed" if verification.ok else "failed")
                            + f": {len(verification.accepted)} accepted, "
                            f"{len(verification.rejected_ids)} rejected",
                            detail=verification.summary(),
                            ok=verification.ok,
                        ),
                    )
                    review, latest = True, text
                    tool_calls_in_row = 0
            if not review:
                continue
            if state.turns >= state.budget:
                break
            tool_calls_in_row = 0
            proposing = isinstance(action, ProposeDoneAction)
            with self._acknowledged_turn():
                done = self._review(state, ctx, given, latest, proposing)
            if done:
                return
        state.failure_reason = _budget_reason(state)

    def _review(
        self, state: _Attempt, ctx: RunContext, given: TaskLessons, latest: str, proposing: bool
    ) -> bool:
        """Ask the reviewer; True when the task is done (consensus reached)."""
        state.turns += 1
        verification = state.verification if proposing else None
        messages = prompts.reviewer_messages(
            state.order, given.text, state.ledger, state.log, latest, verification, state.turns, state.budget
        )
        reply = self._ask(state, ctx, "reviewer", state.reviewer, messages, CritiqueAction)
        if reply is None:
            if proposing and state.verification is not None and not state.verification.ok:
                state.feedback.append(_rejections_feedback(state.verification))
            return False
        critique: CritiqueAction = reply.action
        state.cited += critique.cited_lessons
        verdict = "approve" if critique.approve else "reject"
        text = f"critique ({verdict}): {critique.notes}" + (
            f" drift: {'; '.join(critique.drift)}" if critique.drift else ""
        )
        state.log.add(state.turns, "reviewer", text)
        self._turn(ctx, state, "reviewer", "critique", text, reply, critique, ok=critique.approve)
        for note in critique.drift:
            state.feedback.append(f"reviewer (drift): {note}")
            self._emit(
                ctx,
                state,
                TurnRecord(turn=0, agent="orchestrator", kind="drift", summary=f"drift fed back: {note}"),
            )
        if not proposing:
            if critique.notes and not critique.approve:
                state.feedback.append(f"reviewer: {critique.notes}")
            return False
        assert state.verification is not None
        if critique.approve and state.verification.ok:
            state.success = True
            state.failure_reason = None
            self._emit(
                ctx,
                state,
                TurnRecord(
                    turn=0,
                    agent="orchestrator",
                    kind="consensus",
                    summary=f"consensus: {len(state.verification.accepted)} verified worker(s) approved",
                ),
            )
            return True
        if critique.approve:
            self._emit(
                ctx,
                state,
                TurnRecord(
                    turn=0,
                    agent="orchestrator",
                    kind="override",
                    ok=False,
                    summary="reviewer approved, but verification rejected the proposal: approval overridden",
                    detail=state.verification.summary(),
                ),
            )
            state.log.add(
                state.turns, "orchestrator", "approval overridden: the proposal failed verification"
            )
        elif critique.notes:
            state.feedback.append(f"reviewer: {critique.notes}")
        if not state.verification.ok:
            state.feedback.append(_rejections_feedback(state.verification))
        return False

    # --- model calls --------------------------------------------------------------------------

    def _ask(
        self,
        state: _Attempt,
        ctx: RunContext,
        agent: str,
        model: str | Provider,
        messages: list[dict[str, str]],
        output_type: Any,
    ) -> _Reply | None:
        """One model call for one action; ``None`` (turn spent, error noted) when it fails."""
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import StructuredOutputError, call_tags, generate_json

        started = time.perf_counter()
        try:
            tags = {
                "agent_id": f"{ctx.agent_id}.{agent}",
                "run_id": state.meter.run_id if state.meter else "",
            }
            meter = {_METER_TAG: state.meter.token} if state.meter else {}
            # The observer's context names the role on the llm.chat op (agent.executor, agent.reviewer).
            with call_tags(**tags, **meter), observe_context(agent_id=tags["agent_id"]):
                result = generate_json(
                    model,
                    messages,
                    json_schema(output_type),
                    validate=output_type.model_validate,
                    label=f"{agent} action",
                    settings=ctx.settings,
                    max_tokens=MAX_TOKENS,
                    temperature=ctx.settings.executor_temperature
                    if agent == "executor"
                    else ctx.settings.reviewer_temperature,
                )
        except StructuredOutputError as exc:
            raw = " ".join((exc.raw_text or "").split())[:200]
            state.feedback.append(
                f"your last reply was not a valid action ({'; '.join(exc.errors[:2])}); reply with ONE JSON action only"
            )
            self._emit(
                ctx,
                state,
                TurnRecord(
                    turn=state.turns,
                    agent=agent,
                    kind="error",
                    ok=False,  # type: ignore[arg-type]
                    summary=f"invalid reply after {exc.attempts} attempt(s): {'; '.join(exc.errors[:2])}",
                    detail=raw,
                    latency_ms=_ms(started),
                ),
            )
            return None
        except UserError:
            raise
        except RunError as exc:
            reason = f"model call failed ({agent}): {exc.message}"
            self._emit(
                ctx,
                state,
                TurnRecord(
                    turn=state.turns,
                    agent=agent,
                    kind="error",
                    ok=False,  # type: ignore[arg-type]
                    summary=reason,
                    latency_ms=_ms(started),
                ),
            )
            if (
                agent == "executor"
            ):  # the reviewer's failure only costs its turn; the executor's ends the attempt
                state.aborted, state.failure_reason = True, reason
            return None
        usage = result.completion.usage
        return _Reply(
            action=result.value,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=result.cost_usd or 0.0,
            latency_ms=_ms(started),
            schema_retries=result.schema_retries,
        )

    # --- rescue -------------------------------------------------------------------------------

    def _rescue(self, first: _Attempt, ctx: RunContext, given: TaskLessons) -> _Attempt:
        order = first.order
        machine = given.machine
        notes = []
        if (
            machine is not None
            and machine.widen_radius_miles
            and machine.widen_radius_miles > order.radius_miles
        ):
            notes.append(
                f"radius widened from {order.radius_miles:g} to {machine.widen_radius_miles:g} miles (lesson)"
            )
            order = order.model_copy(update={"radius_miles": machine.widen_radius_miles})
        executor = self.escalation_model or first.executor
        if self.escalation_model is not None:
            notes.append(f"escalated executor: {_model_name(executor)}")
        rescue = _Attempt(
            order=order,
            executor=executor,
            reviewer=first.reviewer,
            budget=first.budget,
            meter=first.meter,
            ledger=first.ledger,
        )
        rescue.log.add(
            0,
            "orchestrator",
            f"a first attempt failed: {first.failure_reason}; this is the one rescue attempt",
        )
        if first.verification is not None and not first.verification.ok:
            rescue.feedback.append(_rejections_feedback(first.verification))
        self._emit(
            ctx,
            rescue,
            TurnRecord(
                turn=0,
                agent="orchestrator",
                kind="rescue",
                summary="rescue attempt"
                + (": " + "; ".join(notes) if notes else " (same models and radius)"),
            ),
        )
        self._loop(rescue, ctx, given)
        return rescue

    # --- records ------------------------------------------------------------------------------

    def _turn(
        self,
        ctx: RunContext,
        state: _Attempt,
        agent: str,
        kind: str,
        text: str,
        reply: _Reply,
        action: Any,
        *,
        detail: str = "",
        ok: bool = True,
    ) -> None:
        if reply.schema_retries:
            text += f" (valid after {reply.schema_retries} repair request(s))"
        record = TurnRecord(
            turn=state.turns,
            agent=agent,  # type: ignore[arg-type]
            kind=kind,
            summary=text,
            detail=detail,
            action=action.model_dump(mode="json"),
            cited_lessons=list(action.cited_lessons),
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            latency_ms=reply.latency_ms,
            ok=ok,
        )
        self._emit(ctx, state, record)

    @staticmethod
    def _emit(ctx: RunContext, state: _Attempt, record: TurnRecord) -> None:
        state.transcript.append(record)
        ctx.emit(record)


def _final_proposal(state: _Attempt, ctx: RunContext) -> tuple[list[int], Verification]:
    """On success the approved proposal; otherwise its verified part (a partial fill), if any."""
    if state.success and state.proposal is not None and state.verification is not None:
        return list(state.proposal.worker_ids), state.verification
    if state.verification is None:
        return [], Verification(requested=state.order.count)
    kept = state.verification.accepted[: state.order.count]
    return kept, verify_fill(ctx.lake, state.order, kept, schedule=ctx.schedule)


def _spares(state: _Attempt, ctx: RunContext, proposed: list[int], given: TaskLessons) -> list[int]:
    """Verified spares beyond the proposal: the executor's named spares first, then the ledger."""
    wanted = DEFAULT_SPARES
    if given.machine is not None and given.machine.min_candidate_buffer:
        wanted = max(wanted, given.machine.min_candidate_buffer)
    named = list(state.proposal.spares) if state.proposal is not None else []
    pool = [w for w in dict.fromkeys(named + state.ledger.ids()) if w not in set(proposed)][
        :SPARES_VERIFIED_MAX
    ]
    if not pool:
        return []
    loose = verify_fill(ctx.lake, state.order, pool, schedule=ctx.schedule, requested=0)
    return loose.accepted[:wanted]


def _rejections_feedback(verification: Verification) -> str:
    reasons = "; ".join(f"{r.worker_id} {r.rule} ({r.reason})" for r in verification.rejections[:8])
    text = (
        f"verification rejected your proposal: {reasons}"
        if reasons
        else verification.summary().replace("\n", " ")
    )
    return text + ". Replace the rejected workers with others from the tools."


def _budget_reason(state: _Attempt) -> str:
    if state.proposal is None:
        return f"turn budget of {state.budget} exhausted without a proposal"
    if state.verification is not None and not state.verification.ok:
        return f"turn budget of {state.budget} exhausted; the last proposal failed verification ({len(state.verification.rejections)} rejection(s))"
    return f"turn budget of {state.budget} exhausted before the reviewer approved a verified proposal"


def _args_text(args: dict[str, Any]) -> str:
    parts = []
    for key, value in args.items():
        text = repr(value) if isinstance(value, str) else str(value)
        parts.append(f"{key}={text if len(text) <= 120 else text[:117] + '...'}")
    return ", ".join(parts)


def _model_name(model: str | Provider) -> str:
    return model if isinstance(model, str) else f"{model.name}:{model.model}"


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


register_policy("llm", LLMPolicy)
