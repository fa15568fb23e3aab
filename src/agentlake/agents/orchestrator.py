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
(``task_scope``), or each turn's before the next turn with ``acknowledge="turn"``.

What the loop decides (which turn comes next, what a reply, a verification or a review changes,
when the attempt is over, what the rescue starts from) is the state machine of
``agents.attempt``, over an immutable state; this module makes the calls it needs (the models
through ``agents.turn``, the tools, the checks in code) and records them. It does not own
tools, verification, prompts' wording or the rules policy.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from agentlake.agents import prompts
from agentlake.agents.actions import (
    ActionBase,
    CourseAction,
    CritiqueAction,
    ExecutorAction,
    PlanAction,
    ProposeDoneAction,
    ToolCallAction,
    executor_schema,
    json_schema,
)
from agentlake.agents.attempt import (
    AttemptState,
    Notebook,
    acted,
    action_key,
    action_text,
    answered,
    answered_invalid,
    approved,
    args_text,
    asked,
    call_failed,
    cite_lessons,
    course_reviewed,
    ended,
    executor_turn,
    fresh_action,
    is_repeat,
    next_step,
    planned,
    progressed,
    proposable,
    proposed,
    rejected,
    repeat_told,
    repeated,
    rescue,
    review_turn,
    told,
)
from agentlake.agents.lessons import TaskLessons, cite, lesson_args, lessons_for, search_args, search_query
from agentlake.agents.outcome import TaskOutcome, TurnRecord, new_run_id, record_task, task_scope
from agentlake.agents.overseer import oversee
from agentlake.agents.policy import register_policy
from agentlake.agents.resume_check import Screen, screen_task
from agentlake.agents.turn import Turn, TurnReply, UsageMeter, attempt
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
# Candidates the lessons' filters are checked against (best first).
ELIGIBLE_MAX = 2000
# Lessons the reviewer does not judge a proposal by: how to call tools.
NOT_JUDGED_DOMAINS = frozenset({"tools"})


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
    screen: Screen | None = None  # the order's and lessons' wishes, read in resumes (resume_check)


@dataclass
class _Task:
    """What the turns of one attempt act with: the run's context, the task's brief, the usage
    meter and the attempt's notebook."""

    ctx: RunContext
    brief: _Brief
    meter: UsageMeter
    book: Notebook


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
        meter = UsageMeter(run_id)
        with task_scope(order, ctx), meter:
            given = lessons_for(order, ctx)
            task = _Task(ctx, _brief(order, ctx, given), meter, Notebook())
            if given.lessons:
                self._note(
                    task,
                    "lessons",
                    summary=f"{len(given.lessons)} lesson(s) given: {', '.join(given.ids)}",
                    detail=given.text,
                )
            start = AttemptState(order=order, executor=executor, reviewer=reviewer, budget=budget)
            first = self._loop(self._screen(start, task), task)
            attempts, books = [first], [task.book]
            if not first.success and ctx.rescue:
                rescue, book = self._rescue(first, task, given)
                attempts.append(rescue)
                books.append(book)
            final = attempts[-1]
            proposed, verification = _final_proposal(final, ctx, given)
            spares = _spares(final, books[-1], ctx, proposed, given)
            screen = task.brief.screen
            if screen is not None and final.success:  # the lessons whose wishes it met
                final = attempts[-1] = replace(final, cited=final.cited + tuple(screen.followed(proposed)))
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
                rescue_attempted=len(attempts) > 1,
                rescue_succeeded=len(attempts) > 1 and final.success,
                candidates=spares,
                transcript=[record for book in books for record in book.transcript],
                policy=self.name,
                run_id=run_id,
            )
            oversee(outcome, ctx)
            record_task(outcome, ctx)
        return outcome

    # --- the loop: the state machine's steps (agents.attempt), with the calls they need ------

    def _screen(self, state: AttemptState, task: _Task) -> AttemptState:
        """Wishes only resumes hold (``resume_check``): the workers whose resumes show every
        wish become the ones that fit, and join the ledger with the resume's words."""
        brief = task.brief
        screen = screen_task(state.order, task.ctx, brief.given, state.executor, task.meter.tags())
        if screen is None:
            return state
        brief.screen, brief.eligible = screen, set(screen.passed)
        brief.wanted = "; ".join(p for p in (brief.wanted, screen.describe()) if p)
        self._note(task, "resumes", summary=screen.summary(), detail=screen.verdicts_text())
        for worker_id in screen.passed:
            task.book.ledger.add(worker_id, f"resume shows {screen.reason(worker_id)}")
        return self._progress(replace(state, surfaced=state.surfaced | frozenset(screen.passed)), task)

    def _loop(self, state: AttemptState, task: _Task) -> AttemptState:
        if task.ctx.buffer:
            state = self._held(state, task)
        if not state.surfaced:
            state = told(state, "nothing found yet: start with the search above (one find_workers call).")
        while (step := next_step(state, self.review_every)) is not None:
            with self._acknowledged_turn():
                if step == "review":
                    state = self._review(state, task)
                elif step == "course":
                    state = self._review_course(state, task)
                else:
                    state = self._executor_turn(state, task)
        return ended(state)

    def _executor_turn(self, state: AttemptState, task: _Task) -> AttemptState:
        brief = task.brief
        feedback, steer, told_enough = state.feedback, state.steer, bool(state.enough)
        state = executor_turn(state)
        messages = prompts.executor_messages(
            state.order,
            brief.system,
            brief.search,
            brief.lessons,
            task.book.ledger,
            task.book.log,
            list(feedback),
            state.turns,
            state.budget,
        )
        schema = executor_schema(
            brief.tools,
            sorted(state.surfaced),
            state.order.count,
            propose_from=proposable(state) if state.ignored_enough else (),
            lessons=brief.given.ids,
            search=brief.search if steer else None,
        )
        state, reply = self._ask(state, task, "executor", state.executor, messages, ExecutorAction, schema)
        action = reply.value.root if reply is not None else None
        state, narrowed = acted(
            state, told_enough=told_enough, proposed=isinstance(action, ProposeDoneAction)
        )
        if narrowed:
            self._note(
                task,
                "narrowed",
                summary=f"the executor did not propose although {len(state.enough)} verified worker(s) "
                "fill the order: its next action is a proposal among them",
            )
        if reply is None or action is None:
            return state
        state = cite_lessons(state, action.cited_lessons)
        count = state.order.count
        if isinstance(action, ProposeDoneAction) and len(action.worker_ids) > count:
            # "Five for three": the first ones are the proposal, the others its spares.
            spares = list(dict.fromkeys(action.worker_ids[count:] + action.spares))
            action = action.model_copy(update={"worker_ids": action.worker_ids[:count], "spares": spares})
        key = action_key(action)
        if is_repeat(state, key, action):
            return self._repeat(state, task, action, reply, key)
        if isinstance(action, PlanAction):
            text = "plan: " + "; ".join(action.steps)
            task.book.log.add(state.turns, "executor", text)
            self._turn(task, state, "executor", "plan", text, reply, action)
            return planned(state, key)
        if isinstance(action, ToolCallAction):
            result = task.ctx.tools.call(action.tool, action.args, ctx=task.ctx)
            call_text = f"{action.tool}({args_text(action.args)})"
            task.book.ledger.observe(result.data, result.worker_ids)
            task.book.log.add(
                state.turns,
                "executor",
                call_text,
                result.text,
                is_tool=True,
                in_ledger=bool(result.worker_ids),
            )
            self._turn(
                task,
                state,
                "executor",
                "tool_call",
                call_text,
                reply,
                action,
                detail=result.text,
                ok=result.ok,
            )
            came = result.text.splitlines()[0] if result.text else ""
            state = fresh_action(state, key, came, surfaced=result.worker_ids)
            return self._progress(state, task) if result.worker_ids else state
        assert isinstance(action, ProposeDoneAction)
        return self._propose(state, task, action, reply, key)

    def _propose(
        self, state: AttemptState, task: _Task, action: ProposeDoneAction, reply: TurnReply, key: str
    ) -> AttemptState:
        ctx, brief = task.ctx, task.brief
        verification = verify_fill(
            ctx.lake,
            state.order,
            action.worker_ids,
            schedule=ctx.schedule,
            also_roles=_also_roles(brief.given),
        )
        task.book.ledger.mark(verification)
        unfit = _unfit(brief, action.worker_ids, state.order)
        state, _ = proposed(state, key, action, verification, unfit, brief.wanted)
        text = f"propose_done {action.worker_ids}" + (f" spares {action.spares}" if action.spares else "")
        task.book.log.add(state.turns, "executor", text, verification.summary().splitlines()[0])
        self._turn(task, state, "executor", "propose_done", text, reply, action)
        self._note(
            task,
            "verification",
            summary=("passed" if verification.ok else "failed") + f": {len(verification.accepted)} accepted, "
            f"{len(verification.rejected_ids)} rejected",
            detail=verification.summary(),
            ok=verification.ok,
        )
        return state if state.pending_review else self._progress(state, task)

    def _repeat(
        self, state: AttemptState, task: _Task, action: ActionBase, reply: TurnReply, key: str
    ) -> AttemptState:
        """The executor repeated an earlier action: answer from the first one's result and say so."""
        first_turn, came = state.done[key]
        state = repeated(state)
        what = action_text(action)
        self._turn(
            task,
            state,
            "executor",
            "repeat",
            f"repeated {what} (first at turn {first_turn}): not run again",
            reply,
            action,
            ok=False,
        )
        task.book.log.add(state.turns, "orchestrator", f"you repeated {what}; not run again")
        enough, hints = self._check(state, task)
        state, steered = repeat_told(replace(state, enough=tuple(enough)), what, first_turn, came, hints)
        if steered:
            self._note(
                task,
                "steered",
                summary=f"the executor repeated {what} after being told: its next action is the search for this order",
            )
        return state

    def _progress(self, state: AttemptState, task: _Task) -> AttemptState:
        """Check every worker surfaced so far and tell the executor what to do next."""
        enough, hints = self._check(state, task)
        return progressed(state, enough, hints)

    @staticmethod
    def _check(state: AttemptState, task: _Task) -> tuple[list[int], list[str]]:
        """Check every worker surfaced so far (verification, then the lessons' filters; the
        ledger marked) and say plainly what to do next: ``(the workers that fill the order, best
        first, or none; what to do: propose which ids, or search how)``."""
        ctx, brief, order = task.ctx, task.brief, state.order
        ledger = task.book.ledger
        pool = [w for w in ledger.ids() if w in state.surfaced][:SPARES_VERIFIED_MAX]
        if not pool:
            return list(state.enough), []
        loose = verify_fill(
            ctx.lake, order, pool, schedule=ctx.schedule, requested=0, also_roles=_also_roles(brief.given)
        )
        ledger.mark(loose)
        fit = []
        for worker_id in loose.accepted:
            if brief.eligible is not None and worker_id not in brief.eligible:
                ledger.mark_unfit(worker_id, brief.wanted)
            else:
                fit.append(worker_id)
        lessons = " and the lessons" if brief.eligible is not None else ""
        if len(fit) >= order.count:
            # Workers of a proposal the reviewer rejected go last: offer others first.
            fit = [w for w in fit if w not in state.objected] + [w for w in fit if w in state.objected]
            chosen, spares = fit[: order.count], fit[order.count : order.count + DEFAULT_SPARES]
            return fit, [
                f"you have enough: workers {chosen} pass verification{lessons}. "
                f"Propose them now: propose_done with worker_ids {chosen}"
                + (f" and spares {spares}." if spares else ".")
            ]
        if fit:
            return [], [
                f"only {len(fit)} of the {order.count} workers needed pass verification{lessons} so far ({fit}): "
                "find more (a higher limit or a wider radius_miles)."
            ]
        if loose.accepted:
            return [], [
                f"{len(loose.accepted)} found worker(s) pass verification but not the lessons' filters "
                f"({brief.wanted}): search with the search above."
            ]
        return [], [
            "none of the workers found passes verification (see the reasons under Candidates): search again "
            "with the search above."
        ]

    def _held(self, state: AttemptState, task: _Task) -> AttemptState:
        """Candidates kept in reserve for this job by an earlier event join the ledger first,
        except those the lessons given now rule out (learned since they were kept, within the
        day): those are left out, and the executor is told which and why."""
        ctx, brief = task.ctx, task.brief
        held = list(dict.fromkeys(ctx.buffer))
        machine = brief.given.machine
        if machine is not None and not machine.is_empty():
            # Precisely, among the held workers only (``eligible`` is the top of one search):
            # those the order's own search admits but the lessons' filters do not.
            admitted = _among(state.order, ctx, None, held)
            passing = _among(state.order, ctx, machine, held)
            if brief.eligible is not None and brief.screen is None:
                # (with wishes, only the workers whose resumes showed them are eligible)
                brief.eligible |= passing
            ruled_out = [w for w in held if w in admitted and w not in passing]
            if ruled_out:
                held = [w for w in held if w not in ruled_out]
                note = (
                    f"worker(s) {ruled_out} kept in reserve by an earlier fill no longer fit the lessons "
                    f"({machine.describe()}): left out; do not propose them."
                )
                task.book.log.add(state.turns, "orchestrator", note)
                state = told(state, note)
        for worker_id in held:
            task.book.ledger.add(worker_id, "kept in reserve for this job by an earlier fill")
        state = replace(state, surfaced=state.surfaced | frozenset(held))
        return self._progress(state, task)

    def _review(self, state: AttemptState, task: _Task) -> AttemptState:
        """Ask the reviewer about the verified proposal: consensus when it approves."""
        proposal, verification = state.proposal, state.verification
        assert proposal is not None and verification is not None
        brief = task.brief
        state = review_turn(state)
        messages = prompts.reviewer_messages(
            state.order,
            brief.judged,
            task.book.ledger,
            proposal.worker_ids,
            verification,
            _lesson_check(brief, proposal),
            details=brief.words_only,
        )
        state, reply = self._ask(
            state, task, "reviewer", state.reviewer, messages, CritiqueAction, json_schema(CritiqueAction)
        )
        if reply is None:
            return state  # the proposal stays pending: the reviewer is asked again
        critique: CritiqueAction = reply.value
        state = cite_lessons(state, critique.cited_lessons)
        verdict = "approve" if critique.approve else "reject"
        summary = f"critique ({verdict}): {critique.notes}" + (
            f" drift: {'; '.join(critique.drift)}" if critique.drift else ""
        )
        task.book.log.add(state.turns, "reviewer", summary)
        self._turn(task, state, "reviewer", "critique", summary, reply, critique, ok=critique.approve)
        if critique.approve:
            state = approved(state)
            self._note(
                task,
                "consensus",
                summary=f"consensus: {len(verification.accepted)} verified worker(s) approved",
            )
            return state
        state = rejected(state, critique)
        for note in critique.drift:
            self._note(task, "drift", summary=f"drift fed back: {note}")
        return self._progress(state, task)

    def _review_course(self, state: AttemptState, task: _Task) -> AttemptState:
        """The reviewer looks at the executor's course so far (``review_every``); its drift notes
        go to the executor's next turn. A failed review is noted and the executor goes on."""
        state = review_turn(state)
        messages = prompts.course_messages(state.order, task.brief.judged, task.brief.search, task.book.log)
        state, reply = self._ask(
            state, task, "reviewer", state.reviewer, messages, CourseAction, json_schema(CourseAction)
        )
        if reply is None:
            return state
        review: CourseAction = reply.value
        state = cite_lessons(state, review.cited_lessons)
        summary = "course: " + (f"drift: {'; '.join(review.drift)}" if review.drift else "on course")
        if review.notes:
            summary += f" ({review.notes})"
        task.book.log.add(state.turns, "reviewer", summary)
        self._turn(task, state, "reviewer", "course", summary, reply, review, ok=not review.drift)
        for note in review.drift:
            self._note(task, "drift", summary=f"drift fed back: {note}")
        return course_reviewed(state, review)

    # --- model calls --------------------------------------------------------------------------

    def _ask(
        self,
        state: AttemptState,
        task: _Task,
        agent: str,
        model: str | Provider,
        messages: list[dict[str, str]],
        output_type: type[ExecutorAction | CritiqueAction | CourseAction],
        schema: dict[str, Any],
    ) -> tuple[AttemptState, TurnReply | None]:
        """One model call for one action (``agents.turn``); no reply (turn spent, error noted)
        when it fails. ``INVALID_TURNS_MAX`` failures in a row end the attempt, as does any
        failed executor call (``attempt.answered_invalid``, ``attempt.call_failed``)."""
        ctx, meter = task.ctx, task.meter
        state = asked(state)
        example = (
            prompts.EXECUTOR_EXAMPLE
            if agent == "executor"
            else prompts.COURSE_EXAMPLE
            if output_type is CourseAction
            else prompts.REVIEWER_EXAMPLE
        )
        agent_id = f"{ctx.agent_id}.{agent}"
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
            tags={"agent_id": agent_id, "run_id": meter.run_id, **meter.tags()},
            # The observer's context names the role on the llm.chat op (agent.executor, agent.reviewer).
            agent_id=agent_id,
        )
        result = attempt(turn, messages, ctx.settings)
        if isinstance(result, TurnReply):
            return answered(state, result.schema_retries), result
        raw = " ".join(result.raw.split())[:200]
        problems = "; ".join(result.errors[:2])
        reason = (
            f"invalid reply after {result.attempts} attempt(s): {problems}"
            if result.invalid
            else f"model call failed ({agent}): {result.message}"
        )
        error = TurnRecord(
            turn=state.turns,
            agent=agent,
            kind="error",
            ok=False,
            summary=reason,
            detail=raw,
            latency_ms=result.latency_ms,
        )
        self._emit(task, error)
        if result.invalid:
            state = told(
                state, f"your last reply was not a valid action ({problems}); reply with ONE JSON action only"
            )
            return answered_invalid(
                state, agent, f"answered no valid action ({reason}; last reply: {raw[:120]!r})"
            ), None
        return call_failed(state, agent, reason, result.message), None

    # --- rescue -------------------------------------------------------------------------------

    def _rescue(self, first: AttemptState, task: _Task, given: TaskLessons) -> tuple[AttemptState, Notebook]:
        state, notes = rescue(first, given.machine, self.escalation_model)
        book = Notebook(ledger=task.book.ledger)
        book.log.add(
            0,
            "orchestrator",
            f"a first attempt failed: {first.failure_reason}; this is the one rescue attempt",
        )
        rescued = _Task(task.ctx, _brief(state.order, task.ctx, given), task.meter, book)
        self._note(
            rescued,
            "rescue",
            summary="rescue attempt" + (": " + "; ".join(notes) if notes else " (same models and radius)"),
        )
        return self._loop(state, rescued), book

    # --- records ------------------------------------------------------------------------------

    def _turn(
        self,
        task: _Task,
        state: AttemptState,
        agent: str,
        kind: str,
        text: str,
        reply: TurnReply,
        action: ActionBase,
        *,
        detail: str = "",
        ok: bool = True,
    ) -> None:
        if reply.schema_retries:
            text += f" (valid after {reply.schema_retries} repair request(s))"
        record = TurnRecord(
            turn=state.turns,
            agent=agent,
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
        self._emit(task, record)

    @classmethod
    def _note(cls, task: _Task, kind: str, **fields: Any) -> None:
        """A record of the orchestrator's own (lessons given, verification, consensus...)."""
        cls._emit(task, TurnRecord(turn=0, agent="orchestrator", kind=kind, **fields))

    @staticmethod
    def _emit(task: _Task, record: TurnRecord) -> None:
        task.book.transcript.append(record)
        task.ctx.emit(record)


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


def _also_roles(given: TaskLessons) -> list[str]:
    """Other roles the lessons say the client takes for the ordered one (verified as it)."""
    return list(given.machine.accept_roles) if given.machine is not None else []


def _final_proposal(
    state: AttemptState, ctx: RunContext, given: TaskLessons
) -> tuple[list[int], Verification]:
    """On success the approved proposal; otherwise its verified part (a partial fill), if any."""
    if state.success and state.proposal is not None and state.verification is not None:
        return list(state.proposal.worker_ids), state.verification
    if state.verification is None:
        return [], Verification(requested=state.order.count)
    kept = state.verification.accepted[: state.order.count]
    return kept, verify_fill(
        ctx.lake, state.order, kept, schedule=ctx.schedule, also_roles=_also_roles(given)
    )


def _spares(
    state: AttemptState, book: Notebook, ctx: RunContext, proposed: list[int], given: TaskLessons
) -> list[int]:
    """Verified spares beyond the proposal: the executor's named spares first, then the ledger."""
    wanted = DEFAULT_SPARES
    if given.machine is not None and given.machine.min_candidate_buffer:
        wanted = max(wanted, given.machine.min_candidate_buffer)
    named = list(state.proposal.spares) if state.proposal is not None else []
    seen = [w for w in book.ledger.ids() if w in state.surfaced]
    pool = [w for w in dict.fromkeys(named + seen) if w not in set(proposed)][:SPARES_VERIFIED_MAX]
    if not pool:
        return []
    loose = verify_fill(
        ctx.lake, state.order, pool, schedule=ctx.schedule, requested=0, also_roles=_also_roles(given)
    )
    return loose.accepted[:wanted]


register_policy("llm", LLMPolicy)
