"""The executor/reviewer loop: ``LLMPolicy``.

Owns the turn loop. Each turn one model answers with ONE typed action (one ``agents.turn``:
native schema where the server has it, the tolerant parser otherwise, validation errors sent
back for a retry). The executor plans, calls tools and
proposes; the orchestrator applies tool calls, keeps the candidate ledger and the compact
log, and verifies every proposal in code. The reviewer is asked about every proposal that
passed verification; with ``review_every`` N above 0 it also looks at the course every N
executor turns (a ``course`` review, a turn of the budget), and its ``drift`` notes go back to
the executor; with 0, the default, it sees proposals only. A task succeeds only on consensus:
a proposal, the reviewer's approval and a passing verification (an approval of a rejected
proposal is overridden). An executor told it has enough verified workers that does something
else may then only propose among them (its action schema narrows); the reviewer is not shown
lessons about calling tools. When the turn budget runs out the task fails with the reason.
One rescue attempt follows a failure (the escalation model if one is set, a lesson's wider
radius if one applies).

Every turn counts one model call (executor or reviewer). Model calls are recorded by the
observer's LLM hook (installed by whoever owns the process: ``fill``, scenarios, the gateway);
tool calls by the tool registry; the outcome as a ``task.fill`` op. None of them waits for its
own commit: the task's ops are acknowledged together before the outcome is returned
(``task_scope``), or each turn's before the next turn with ``acknowledge="turn"``. It does not
own tools, verification, prompts' wording or the rules policy.
"""

from __future__ import annotations

import json
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentlake.agents import prompts
from agentlake.agents.actions import (
    CourseAction,
    CritiqueAction,
    ExecutorAction,
    PlanAction,
    ProposeDoneAction,
    ToolCallAction,
    executor_schema,
    json_schema,
)
from agentlake.agents.lessons import TaskLessons, cite, lesson_args, lessons_for, search_args, search_query
from agentlake.agents.outcome import TaskOutcome, TurnRecord, new_run_id, record_task, task_scope
from agentlake.agents.overseer import oversee
from agentlake.agents.policy import register_policy
from agentlake.agents.turn import Turn, TurnReply, attempt
from agentlake.errors import UserError
from agentlake.observe import deferred
from agentlake.workforce.candidates import find_candidates
from agentlake.workforce.learning import action_of
from agentlake.workforce.verify import Verification, verify_fill

if TYPE_CHECKING:
    from agentlake.agents.policy import RunContext
    from agentlake.llm import Provider
    from agentlake.workforce.learning import StaffingAction
    from agentlake.workforce.order import FillOrder

DEFAULT_SPARES = 2
SPARES_VERIFIED_MAX = 40
# An action is a few dozen tokens and every free-text field is capped under constrained
# decoding; a reply this long is a model rambling, and each token costs time on a CPU.
MAX_TOKENS = 512
# Consecutive turns without a valid action (or with a failed reviewer call) after which the
# attempt ends: the model is not going to produce one.
INVALID_TURNS_MAX = 2
# Repeats of an earlier action answered without spending a turn (then they count), and
# repeats in a row after which the attempt ends: the model is stuck.
FREE_REPEATS = 2
REPEATS_IN_ROW_MAX = 3
# Times the reviewer is asked about one and the same proposal (the executor may insist once).
REVIEWS_PER_PROPOSAL = 2
# Candidates the lessons' filters are checked against (best first).
ELIGIBLE_MAX = 2000
# Lessons the reviewer does not judge a proposal by: how to call tools.
NOT_JUDGED_DOMAINS = frozenset({"tools"})


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
class _Attempt:
    """One run of the loop (the first try, or the rescue)."""

    order: FillOrder
    executor: str | Provider
    reviewer: str | Provider
    budget: int
    meter: _UsageMeter | None = None
    ledger: prompts.Ledger = field(default_factory=prompts.Ledger)
    surfaced: set[int] = field(default_factory=set)  # workers a tool returned (or an earlier fill kept)
    log: prompts.Log = field(default_factory=prompts.Log)
    feedback: list[str] = field(default_factory=list)
    transcript: list[TurnRecord] = field(default_factory=list)
    turns: int = 0
    cited: list[str] = field(default_factory=list)
    proposal: ProposeDoneAction | None = None
    verification: Verification | None = None
    pending_review: bool = False  # a verified proposal waits for the reviewer
    done: dict[str, tuple[int, str]] = field(default_factory=dict)  # action key -> (turn, what came of it)
    repeats: int = 0
    repeats_in_row: int = 0
    reviews: dict[str, int] = field(default_factory=dict)  # proposal key -> reviewer rejections
    objected: list[int] = field(default_factory=list)  # workers of proposals the reviewer rejected
    enough: list[int] = field(default_factory=list)  # verified workers, best first, when they fill the order
    ignored_enough: bool = False  # told it had enough, the executor did something else than propose
    steer: bool = False  # stuck repeating a call: the next action may only be the brief's search (once)
    steered: bool = False
    invalid_in_row: int = 0
    since_course: int = 0  # executor turns since the reviewer last looked (review_every)
    invented: list[int] = field(default_factory=list)
    model_turns: int = 0
    first_try_valid: int = 0
    success: bool = False
    aborted: bool = False  # a model failed for good: no point in more turns
    failure_reason: str | None = None


@dataclass
class _Brief:
    """What stays the same for every turn of a task: prompts' stable parts and the lessons' filters."""

    given: TaskLessons
    system: str
    search: dict[str, Any]
    lessons: str
    judged: str  # the lessons the reviewer judges a proposal by (none about calling tools)
    words_only: bool  # one of those has no filter code can check: the reviewer must read the workers
    eligible: set[int] | None  # workers the lessons' filters allow; None: no filter to check
    wanted: str  # the lessons' filters in words
    tools: dict[str, dict[str, Any]]  # each tool's parameters' JSON schema, for the action schema


class LLMPolicy:
    """Executor + reviewer over the audited tools; see the module docstring.

    ``executor_model``/``reviewer_model``: model strings (``ollama:qwen3:4b``,
    ``local:qwen2.5-coder-1.5b``, ``scripted:NAME``...) or provider objects; the executor
    defaults to ``settings.executor_model``, then to the embedded model
    (``agentlake.llm.default_model``); the reviewer to ``settings.reviewer_model``, then the
    executor. ``turn_budget`` defaults to ``settings.agent_turn_budget``. ``escalation_model``
    runs the rescue attempt. ``think``: the reasoning switch of executor and reviewer turns (off
    by default: a turn is one small action; ``None`` leaves the model's default; a provider
    whose model cannot think leaves it out). ``review_every``: 0 (default), the reviewer sees
    verified proposals only; N, it also reviews the course every N executor turns and may say
    drift (each review is a turn of the budget). ``acknowledge``: when the observer must have
    made the ops durable: ``"task"`` (default) all of them once, before the outcome is
    returned; ``"turn"`` each turn's before the next turn (one commit wait per turn).
    """

    name = "llm"

    def __init__(
        self,
        executor_model: str | Provider | None = None,
        reviewer_model: str | Provider | None = None,
        *,
        turn_budget: int | None = None,
        escalation_model: str | Provider | None = None,
        think: bool | None = False,
        review_every: int = 0,
        acknowledge: Literal["task", "turn"] = "task",
    ) -> None:
        if turn_budget is not None and turn_budget < 2:
            raise UserError(
                f"turn_budget must be at least 2 (one executor and one reviewer turn), got {turn_budget}"
            )
        if isinstance(review_every, bool) or not isinstance(review_every, int) or review_every < 0:
            raise UserError(
                f"review_every must be 0 (proposals only) or a number of executor turns, got {review_every!r}"
            )
        if acknowledge not in ("task", "turn"):
            raise UserError(f"acknowledge must be 'task' or 'turn', got {acknowledge!r}")
        self.executor_model = executor_model
        self.reviewer_model = reviewer_model
        self.turn_budget = turn_budget
        self.escalation_model = escalation_model
        self.think = think
        self.review_every = review_every
        self.acknowledge = acknowledge

    def _acknowledged_turn(self) -> AbstractContextManager[Any]:
        """With ``acknowledge="turn"``: the turn's ops (its model call, its tool call) are durable
        before the next turn starts. Otherwise they wait for the task's scope (``task_scope``)."""
        if self.acknowledge != "turn":
            return nullcontext()
        return deferred(raise_errors=False)

    def _models(self, ctx: RunContext) -> tuple[str | Provider, str | Provider]:
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import default_model

        executor = self.executor_model or default_model(ctx.settings, "executor_model")
        if not executor:
            raise UserError(
                "no executor model configured: pass --executor MODEL or set AGENTLAKE_EXECUTOR_MODEL "
                "(e.g. local:qwen2.5-coder-1.5b after `make models`, ollama:qwen3:4b with Ollama at OLLAMA_HOST, "
                "or openai:MODEL with OPENAI_BASE_URL)"
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
            given = lessons_for(order, ctx)
            first = _Attempt(order=order, executor=executor, reviewer=reviewer, budget=budget, meter=meter)
            if given.lessons:
                self._note(
                    ctx,
                    first,
                    "lessons",
                    summary=f"{len(given.lessons)} lesson(s) given: {', '.join(given.ids)}",
                    detail=given.text,
                )
            self._loop(first, ctx, _brief(order, ctx, given))
            final, rescue_attempted = first, False
            if not first.success and ctx.rescue:
                rescue_attempted = True
                final = self._rescue(first, ctx, given)
            attempts = [first] if final is first else [first, final]
            proposed, verification = _final_proposal(final, ctx, given)
            spares = _spares(final, ctx, proposed, given)
            cited = cite([c for a in attempts for c in a.cited], given)
            outcome = TaskOutcome(
                order=final.order,
                proposed=proposed,
                verification=verification,
                success=final.success,
                failure_reason=None if final.success else final.failure_reason,
                turns=sum(a.turns for a in attempts),
                model_calls=meter.calls,
                model_turns=sum(a.model_turns for a in attempts),
                first_try_valid=sum(a.first_try_valid for a in attempts),
                invented_ids=list(dict.fromkeys(w for a in attempts for w in a.invented)),
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

    def _loop(self, state: _Attempt, ctx: RunContext, brief: _Brief) -> None:
        if ctx.buffer:
            self._held(state, ctx, brief)
        if not state.surfaced:
            state.feedback.append("nothing found yet: start with the search above (one find_workers call).")
        while state.turns < state.budget and not state.aborted:
            with self._acknowledged_turn():
                if state.pending_review:
                    if self._review(state, ctx, brief):
                        return
                elif self.review_every and state.since_course >= self.review_every:
                    self._review_course(state, ctx, brief)
                else:
                    self._executor_turn(state, ctx, brief)
        if state.failure_reason is None:
            state.failure_reason = _budget_reason(state)

    def _executor_turn(self, state: _Attempt, ctx: RunContext, brief: _Brief) -> None:
        state.turns += 1
        state.since_course += 1
        messages = prompts.executor_messages(
            state.order,
            brief.system,
            brief.search,
            brief.lessons,
            state.ledger,
            state.log,
            state.feedback,
            state.turns,
            state.budget,
        )
        state.feedback = []
        told_enough = bool(state.enough)
        schema = executor_schema(
            brief.tools,
            sorted(state.surfaced),
            state.order.count,
            propose_from=_proposable(state) if state.ignored_enough else (),
            lessons=brief.given.ids,
            search=brief.search if state.steer else None,
        )
        state.steer = False
        reply = self._ask(state, ctx, "executor", state.executor, messages, ExecutorAction, schema)
        if reply is None:
            self._ignored_enough(state, ctx, told_enough)
            return
        action = reply.value.root
        if isinstance(action, ProposeDoneAction):
            state.ignored_enough = False
        else:
            self._ignored_enough(state, ctx, told_enough)
        state.cited += action.cited_lessons
        count = state.order.count
        if isinstance(action, ProposeDoneAction) and len(action.worker_ids) > count:
            # "Five for three": the first ones are the proposal, the others its spares.
            spares = list(dict.fromkeys(action.worker_ids[count:] + action.spares))
            action = action.model_copy(update={"worker_ids": action.worker_ids[:count], "spares": spares})
        key = _action_key(action)
        insisting = (
            isinstance(action, ProposeDoneAction) and 0 < state.reviews.get(key, 0) < REVIEWS_PER_PROPOSAL
        )
        if key in state.done and not insisting:
            self._repeat(state, ctx, brief, action, reply, key)
            return
        state.repeats_in_row = 0
        if isinstance(action, PlanAction):
            text = "plan: " + "; ".join(action.steps)
            state.log.add(state.turns, "executor", text)
            self._turn(ctx, state, "executor", "plan", text, reply, action)
            state.done[key] = (state.turns, "planned")
            state.feedback.append(
                "a plan costs a turn and finds no one: act now with find_workers (the search above)."
            )
        elif isinstance(action, ToolCallAction):
            result = ctx.tools.call(action.tool, action.args, ctx=ctx)
            call_text = f"{action.tool}({_args_text(action.args)})"
            state.ledger.observe(result.data, result.worker_ids)
            state.surfaced.update(result.worker_ids)
            state.log.add(
                state.turns,
                "executor",
                call_text,
                result.text,
                is_tool=True,
                in_ledger=bool(result.worker_ids),
            )
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
            state.done[key] = (state.turns, result.text.splitlines()[0] if result.text else "")
            if result.worker_ids:
                state.feedback += self._progress(state, ctx, brief)
        else:
            assert isinstance(action, ProposeDoneAction)
            self._propose(state, ctx, brief, action, reply, key)

    def _ignored_enough(self, state: _Attempt, ctx: RunContext, told: bool) -> None:
        """Told it had enough verified workers, the executor did something else: from its next
        turn on it may only propose among them (the schema says so; the prompt says why)."""
        if not told or not state.enough:
            return
        if not state.ignored_enough:
            self._note(
                ctx,
                state,
                "narrowed",
                summary=f"the executor did not propose although {len(state.enough)} verified worker(s) "
                "fill the order: its next action is a proposal among them",
            )
        state.ignored_enough = True
        state.feedback.append(
            f"enough verified workers are found, so searching is over: reply with propose_done, "
            f"{state.order.count} of {_proposable(state)}."
        )

    def _propose(
        self,
        state: _Attempt,
        ctx: RunContext,
        brief: _Brief,
        action: ProposeDoneAction,
        reply: TurnReply,
        key: str,
    ) -> None:
        state.proposal = action
        verification = verify_fill(
            ctx.lake,
            state.order,
            action.worker_ids,
            schedule=ctx.schedule,
            also_roles=_also_roles(brief.given),
        )
        state.verification = verification
        state.ledger.mark(verification)
        invented = [w for w in dict.fromkeys(action.worker_ids + action.spares) if w not in state.surfaced]
        state.invented += [w for w in invented if w not in state.invented]
        text = f"propose_done {action.worker_ids}" + (f" spares {action.spares}" if action.spares else "")
        state.log.add(state.turns, "executor", text, verification.summary().splitlines()[0])
        self._turn(ctx, state, "executor", "propose_done", text, reply, action)
        self._note(
            ctx,
            state,
            "verification",
            summary=("passed" if verification.ok else "failed") + f": {len(verification.accepted)} accepted, "
            f"{len(verification.rejected_ids)} rejected",
            detail=verification.summary(),
            ok=verification.ok,
        )
        if invented:
            state.feedback.append(
                f"no tool returned worker(s) {invented}: propose only ids from the candidates found."
            )
        unfit = _unfit(brief, action.worker_ids, state.order)
        if verification.ok and not unfit:
            state.pending_review = True
            state.done[key] = (state.turns, "passed verification")
            return
        if verification.ok:
            # The lessons' filters are the client's own rejections, learned: a proposal that breaks
            # them while enough workers fit goes back like a failed verification.
            state.done[key] = (state.turns, f"workers {unfit} do not fit the lessons")
            state.feedback.append(
                f"workers {unfit} pass verification but not the lessons' filters ({brief.wanted}): "
                "replace them."
            )
        else:
            state.done[key] = (state.turns, "failed verification")
            state.feedback.append(_rejections_feedback(verification))
        state.feedback += self._progress(state, ctx, brief)

    def _repeat(
        self, state: _Attempt, ctx: RunContext, brief: _Brief, action: Any, reply: TurnReply, key: str
    ) -> None:
        """The executor repeated an earlier action: answer from the first one's result and say so."""
        turn, came = state.done[key]
        state.repeats += 1
        state.repeats_in_row += 1
        if state.repeats <= FREE_REPEATS:
            state.turns -= 1  # a repeat the model is told about costs a model call, not a turn
        what = _action_text(action)
        self._turn(
            ctx,
            state,
            "executor",
            "repeat",
            f"repeated {what} (first at turn {turn}): not run again",
            reply,
            action,
            ok=False,
        )
        state.log.add(state.turns, "orchestrator", f"you repeated {what}; not run again")
        state.feedback.append(f"you already did {what} at turn {turn}: {came}. Do not repeat it.")
        hints = self._progress(state, ctx, brief)
        state.feedback += hints or [
            "change the arguments (the filter its result names, a wider radius_miles, a higher limit) or propose."
        ]
        if state.repeats_in_row == REPEATS_IN_ROW_MAX - 1 and not state.steered and not state.enough:
            # Told once and repeated again: a small model does not get out of this by itself
            # (the 1.5B sent find_workers(requirements=['']) three times). Its next action may
            # be only the search the brief names, whose arguments the grammar then writes.
            state.steer = state.steered = True
            state.repeats_in_row = 0
            self._note(
                ctx,
                state,
                "steered",
                summary=f"the executor repeated {what} after being told: its next action is the search for this order",
            )
            state.feedback.append("run the search for this order above, exactly as written.")
        if state.repeats_in_row >= REPEATS_IN_ROW_MAX:
            state.aborted = True
            state.failure_reason = (
                f"the executor repeated {what} {state.repeats_in_row} times in a row after being told"
            )

    def _progress(self, state: _Attempt, ctx: RunContext, brief: _Brief) -> list[str]:
        """Check every worker surfaced so far (verification, then the lessons' filters) and say
        plainly what to do next: propose which ids, or search how."""
        order = state.order
        pool = [w for w in state.ledger.ids() if w in state.surfaced][:SPARES_VERIFIED_MAX]
        if not pool:
            return []
        loose = verify_fill(
            ctx.lake, order, pool, schedule=ctx.schedule, requested=0, also_roles=_also_roles(brief.given)
        )
        state.ledger.mark(loose)
        fit = []
        for worker_id in loose.accepted:
            if brief.eligible is not None and worker_id not in brief.eligible:
                state.ledger.mark_unfit(worker_id, brief.wanted)
            else:
                fit.append(worker_id)
        lessons = " and the lessons" if brief.eligible is not None else ""
        state.enough = []
        if len(fit) >= order.count:
            # Workers of a proposal the reviewer rejected go last: offer others first.
            fit = [w for w in fit if w not in state.objected] + [w for w in fit if w in state.objected]
            state.enough = fit
            chosen, spares = fit[: order.count], fit[order.count : order.count + DEFAULT_SPARES]
            return [
                f"you have enough: workers {chosen} pass verification{lessons}. "
                f"Propose them now: propose_done with worker_ids {chosen}"
                + (f" and spares {spares}." if spares else ".")
            ]
        if fit:
            return [
                f"only {len(fit)} of the {order.count} workers needed pass verification{lessons} so far ({fit}): "
                "find more (a higher limit or a wider radius_miles)."
            ]
        if loose.accepted:
            return [
                f"{len(loose.accepted)} found worker(s) pass verification but not the lessons' filters "
                f"({brief.wanted}): search with the search above."
            ]
        return [
            "none of the workers found passes verification (see the reasons under Candidates): search again "
            "with the search above."
        ]

    def _held(self, state: _Attempt, ctx: RunContext, brief: _Brief) -> None:
        """Candidates kept in reserve for this job by an earlier event join the ledger first,
        except those the lessons given now rule out (learned since they were kept, within the
        day): those are left out, and the executor is told which and why."""
        held = list(dict.fromkeys(ctx.buffer))
        machine = brief.given.machine
        if machine is not None and not machine.is_empty():
            # Precisely, among the held workers only (``eligible`` is the top of one search):
            # those the order's own search admits but the lessons' filters do not.
            admitted = _among(state.order, ctx, None, held)
            passing = _among(state.order, ctx, machine, held)
            if brief.eligible is not None:
                brief.eligible |= passing
            ruled_out = [w for w in held if w in admitted and w not in passing]
            if ruled_out:
                held = [w for w in held if w not in ruled_out]
                note = (
                    f"worker(s) {ruled_out} kept in reserve by an earlier fill no longer fit the lessons "
                    f"({machine.describe()}): left out; do not propose them."
                )
                state.log.add(state.turns, "orchestrator", note)
                state.feedback.append(note)
        for worker_id in held:
            state.ledger.add(worker_id, "kept in reserve for this job by an earlier fill")
            state.surfaced.add(worker_id)
        state.feedback += self._progress(state, ctx, brief)

    def _review(self, state: _Attempt, ctx: RunContext, brief: _Brief) -> bool:
        """Ask the reviewer about the verified proposal; True when the task is done (consensus)."""
        assert state.proposal is not None and state.verification is not None
        state.turns += 1
        state.since_course = 0  # the reviewer has just looked: the next course review is N turns on
        proposal = state.proposal
        messages = prompts.reviewer_messages(
            state.order,
            brief.judged,
            state.ledger,
            proposal.worker_ids,
            state.verification,
            _lesson_check(brief, proposal),
            details=brief.words_only,
        )
        reply = self._ask(
            state, ctx, "reviewer", state.reviewer, messages, CritiqueAction, json_schema(CritiqueAction)
        )
        if reply is None:
            return False  # the proposal stays pending: the reviewer is asked again
        critique: CritiqueAction = reply.value
        state.cited += critique.cited_lessons
        verdict = "approve" if critique.approve else "reject"
        summary = f"critique ({verdict}): {critique.notes}" + (
            f" drift: {'; '.join(critique.drift)}" if critique.drift else ""
        )
        state.log.add(state.turns, "reviewer", summary)
        self._turn(ctx, state, "reviewer", "critique", summary, reply, critique, ok=critique.approve)
        state.pending_review = False
        if critique.approve:
            state.success = True
            state.failure_reason = None
            self._note(
                ctx,
                state,
                "consensus",
                summary=f"consensus: {len(state.verification.accepted)} verified worker(s) approved",
            )
            return True
        key = _action_key(proposal)
        state.reviews[key] = state.reviews.get(key, 0) + 1
        state.done[key] = (state.turns, f"the reviewer rejected it: {critique.notes}")
        state.objected += [w for w in proposal.worker_ids if w not in state.objected]
        for note in critique.drift:
            state.feedback.append(f"reviewer (drift): {note}")
            self._note(ctx, state, "drift", summary=f"drift fed back: {note}")
        if critique.notes:
            state.feedback.append(f"reviewer: {critique.notes}")
        state.feedback += self._progress(state, ctx, brief)
        return False

    def _review_course(self, state: _Attempt, ctx: RunContext, brief: _Brief) -> None:
        """The reviewer looks at the executor's course so far (``review_every``); its drift notes
        go to the executor's next turn. A failed review is noted and the executor goes on."""
        state.turns += 1
        state.since_course = 0
        messages = prompts.course_messages(state.order, brief.judged, brief.search, state.log)
        reply = self._ask(
            state, ctx, "reviewer", state.reviewer, messages, CourseAction, json_schema(CourseAction)
        )
        if reply is None:
            return
        review: CourseAction = reply.value
        state.cited += review.cited_lessons
        summary = "course: " + (f"drift: {'; '.join(review.drift)}" if review.drift else "on course")
        if review.notes:
            summary += f" ({review.notes})"
        state.log.add(state.turns, "reviewer", summary)
        self._turn(ctx, state, "reviewer", "course", summary, reply, review, ok=not review.drift)
        for note in review.drift:
            state.feedback.append(f"reviewer (drift): {note}")
            self._note(ctx, state, "drift", summary=f"drift fed back: {note}")
        if review.drift and review.notes:
            state.feedback.append(f"reviewer: {review.notes}")

    # --- model calls --------------------------------------------------------------------------

    def _ask(
        self,
        state: _Attempt,
        ctx: RunContext,
        agent: str,
        model: str | Provider,
        messages: list[dict[str, str]],
        output_type: Any,
        schema: dict[str, Any],
    ) -> TurnReply | None:
        """One model call for one action (``agents.turn``); ``None`` (turn spent, error noted)
        when it fails.

        ``INVALID_TURNS_MAX`` failures in a row end the attempt, as does any failed executor
        call (a model that cannot be reached will not answer the next turn either)."""
        state.model_turns += 1
        example = (
            prompts.EXECUTOR_EXAMPLE
            if agent == "executor"
            else prompts.COURSE_EXAMPLE
            if output_type is CourseAction
            else prompts.REVIEWER_EXAMPLE
        )
        tags = {"agent_id": f"{ctx.agent_id}.{agent}", "run_id": state.meter.run_id if state.meter else ""}
        turn = Turn.of(
            model,
            output_type,
            schema=schema,
            label=f"{agent} action",
            example=example,
            max_tokens=MAX_TOKENS,
            temperature=ctx.settings.executor_temperature
            if agent == "executor"
            else ctx.settings.reviewer_temperature,
            think=self.think,
            tags={**tags, **({_METER_TAG: state.meter.token} if state.meter else {})},
            # The observer's context names the role on the llm.chat op (agent.executor, agent.reviewer).
            agent_id=tags["agent_id"],
        )
        result = attempt(turn, messages, ctx.settings)
        if isinstance(result, TurnReply):
            state.invalid_in_row = 0
            if result.schema_retries == 0:
                state.first_try_valid += 1
            return result
        raw = " ".join(result.raw.split())[:200]
        problems = "; ".join(result.errors[:2])
        reason = (
            f"invalid reply after {result.attempts} attempt(s): {problems}"
            if result.invalid
            else f"model call failed ({agent}): {result.message}"
        )
        error = TurnRecord(
            turn=state.turns,
            agent=agent,  # type: ignore[arg-type]
            kind="error",
            ok=False,
            summary=reason,
            detail=raw,
            latency_ms=result.latency_ms,
        )
        self._emit(ctx, state, error)
        if result.invalid:
            state.feedback.append(
                f"your last reply was not a valid action ({problems}); reply with ONE JSON action only"
            )
            self._invalid(state, agent, f"answered no valid action ({reason}; last reply: {raw[:120]!r})")
        elif agent == "executor":
            state.aborted, state.failure_reason = True, reason
        else:
            self._invalid(state, agent, f"failed: {result.message}")
        return None

    @staticmethod
    def _invalid(state: _Attempt, agent: str, what: str) -> None:
        state.invalid_in_row += 1
        if state.invalid_in_row >= INVALID_TURNS_MAX:
            state.aborted = True
            state.failure_reason = f"the {agent}'s model {what}, {state.invalid_in_row} turns in a row"

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
            surfaced=set(first.surfaced),
        )
        rescue.log.add(
            0,
            "orchestrator",
            f"a first attempt failed: {first.failure_reason}; this is the one rescue attempt",
        )
        if first.verification is not None and not first.verification.ok:
            rescue.feedback.append(_rejections_feedback(first.verification))
        self._note(
            ctx,
            rescue,
            "rescue",
            summary="rescue attempt" + (": " + "; ".join(notes) if notes else " (same models and radius)"),
        )
        self._loop(rescue, ctx, _brief(order, ctx, given))
        return rescue

    # --- records ------------------------------------------------------------------------------

    def _turn(
        self,
        ctx: RunContext,
        state: _Attempt,
        agent: str,
        kind: str,
        text: str,
        reply: TurnReply,
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

    @classmethod
    def _note(cls, ctx: RunContext, state: _Attempt, kind: str, **fields: Any) -> None:
        """A record of the orchestrator's own (lessons given, verification, consensus...)."""
        cls._emit(ctx, state, TurnRecord(turn=0, agent="orchestrator", kind=kind, **fields))

    @staticmethod
    def _emit(ctx: RunContext, state: _Attempt, record: TurnRecord) -> None:
        state.transcript.append(record)
        ctx.emit(record)


def _brief(order: FillOrder, ctx: RunContext, given: TaskLessons) -> _Brief:
    """The task's stable prompt parts, and the workers the lessons' filters allow (searched once)."""
    machine = given.machine
    added = {
        lesson.id: lesson_args(action, order)
        for lesson in given.lessons
        if (action := action_of(lesson)) is not None
    }
    eligible: set[int] | None = None
    wanted = ""
    if machine is not None and any(added.values()):
        query = search_query(order, ctx, machine, limit=ELIGIBLE_MAX)
        eligible = {row["worker_id"] for row in find_candidates(ctx.lake, query)}
        wanted = machine.describe()
    # A lesson about calling a tool ("check find_workers' arguments") says nothing about who fits:
    # shown one, the 1.5B reviewer read the workers and rejected verified proposals to the end of
    # the turn budget.
    judged = [lesson for lesson in given.lessons if lesson.domain not in NOT_JUDGED_DOMAINS]
    return _Brief(
        given=given,
        system=prompts.executor_system(ctx.tools.catalog_text(ctx.lake)),
        search=search_args(order, machine),
        lessons=prompts.lessons_text(given.lessons, added),
        judged=prompts.lessons_text(judged, added),
        words_only=any(lesson.machine is None for lesson in judged),
        eligible=eligible,
        wanted=wanted,
        tools={schema["name"]: schema["parameters"] for schema in ctx.tools.schemas()},
    )


def _among(
    order: FillOrder, ctx: RunContext, machine: StaffingAction | None, worker_ids: list[int]
) -> set[int]:
    """Which of ``worker_ids`` the search for ``order`` (narrowed by ``machine``) finds."""
    query = search_query(order, ctx, machine, limit=max(1, len(worker_ids)))
    query.only_ids = worker_ids
    return {row["worker_id"] for row in find_candidates(ctx.lake, query)}


def _proposable(state: _Attempt) -> list[int]:
    """The verified workers a narrowed proposal may name: those the reviewer did not object to,
    when they still fill the order, else all of them."""
    fresh = [w for w in state.enough if w not in state.objected]
    return fresh if len(fresh) >= state.order.count else list(state.enough)


def _unfit(brief: _Brief, worker_ids: list[int], order: FillOrder) -> list[int]:
    """Proposed workers the lessons' filters rule out, when enough workers fit them to fill the order."""
    if brief.eligible is None or len(brief.eligible) < order.count:
        return []
    return [w for w in worker_ids if w not in brief.eligible]


def _lesson_check(brief: _Brief, proposal: ProposeDoneAction) -> str:
    if brief.eligible is None:
        return ""
    unfit = [w for w in proposal.worker_ids if w not in brief.eligible]
    if not unfit:
        return f"every proposed worker fits the lessons' filters ({brief.wanted})"
    return f"worker(s) {unfit} do NOT fit the lessons' filters ({brief.wanted})"


def _action_key(action: Any) -> str:
    """What makes two actions the same: the tool and its arguments, or the proposed ids."""
    if isinstance(action, ToolCallAction):
        return json.dumps({"tool": action.tool, "args": action.args}, sort_keys=True, default=str)
    if isinstance(action, ProposeDoneAction):
        return json.dumps({"propose": sorted(action.worker_ids)})
    return "plan"


def _action_text(action: Any) -> str:
    if isinstance(action, ToolCallAction):
        return f"{action.tool}({_args_text(action.args)})"
    if isinstance(action, ProposeDoneAction):
        return f"propose_done {action.worker_ids}"
    return "a plan"


def _also_roles(given: TaskLessons) -> list[str]:
    """Other roles the lessons say the client takes for the ordered one (verified as it)."""
    return list(given.machine.accept_roles) if given.machine is not None else []


def _final_proposal(state: _Attempt, ctx: RunContext, given: TaskLessons) -> tuple[list[int], Verification]:
    """On success the approved proposal; otherwise its verified part (a partial fill), if any."""
    if state.success and state.proposal is not None and state.verification is not None:
        return list(state.proposal.worker_ids), state.verification
    if state.verification is None:
        return [], Verification(requested=state.order.count)
    kept = state.verification.accepted[: state.order.count]
    return kept, verify_fill(
        ctx.lake, state.order, kept, schedule=ctx.schedule, also_roles=_also_roles(given)
    )


def _spares(state: _Attempt, ctx: RunContext, proposed: list[int], given: TaskLessons) -> list[int]:
    """Verified spares beyond the proposal: the executor's named spares first, then the ledger."""
    wanted = DEFAULT_SPARES
    if given.machine is not None and given.machine.min_candidate_buffer:
        wanted = max(wanted, given.machine.min_candidate_buffer)
    named = list(state.proposal.spares) if state.proposal is not None else []
    seen = [w for w in state.ledger.ids() if w in state.surfaced]
    pool = [w for w in dict.fromkeys(named + seen) if w not in set(proposed)][:SPARES_VERIFIED_MAX]
    if not pool:
        return []
    loose = verify_fill(
        ctx.lake, state.order, pool, schedule=ctx.schedule, requested=0, also_roles=_also_roles(given)
    )
    return loose.accepted[:wanted]


def _rejections_feedback(verification: Verification) -> str:
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


register_policy("llm", LLMPolicy)
