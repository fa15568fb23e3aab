"""One scenario day, staffed by one staffer: events -> orders -> policy -> client -> results.

Owns how each event kind becomes a ``FillOrder`` (documented in docs/scenarios.md), the day's
ledger (a ``workforce.ScheduleBook`` over the lake's placements plus the day's own bookings,
never written to the lake, so repetitions and staffers cannot contaminate each other), the
``fill.judged`` op of every event, and ``run_day``: the unit of work a backend executes.
It does not own batching, learning between batches or the run directory (``runner``).

``run_day`` opens everything it needs from paths (the lake read-only, a private snapshot of
the staffer's lessons), so it runs the same inline, in a worker process or on a Ray worker.
A staffer with ``learn_within_day`` learns after every judged event into that private copy
(``learn_event``: the same loop over the event's ops), so later events use what the morning
taught.
Ops recorded while it runs (tool calls, model calls, task outcomes) are collected in memory
and handed back with the results; the parent records them in the observer, its one writer.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agentlake.agents import Overseer, RunContext, get_policy
from agentlake.errors import AgentlakeError, UserError
from agentlake.lake import Lake
from agentlake.learn.loop import learn_recorded, outcome_attributes
from agentlake.learn.store import PgSchema, lesson_snapshot
from agentlake.observe import MemorySink, Observer, event, observing
from agentlake.observe.model import ObservedOp
from agentlake.scenarios.judge import Judgement, Matching, judge_fill
from agentlake.scenarios.oracle import OraclePolicy
from agentlake.scenarios.pools import ClientPools, PoolChecks
from agentlake.scenarios.profile import StafferProfile
from agentlake.scenarios.results import EventResult, arm_name, event_run_key
from agentlake.scenarios.scenario import DEFAULT_SHIFT_HOURS, Client, Event, FeedbackMode, Scenario
from agentlake.scenarios.tiers import gatekeeper, t3_deltas
from agentlake.scenarios.voice import client_says, summary
from agentlake.settings import Settings
from agentlake.workforce.evidence import judged_evidence
from agentlake.workforce.facts import client_lake_ids, load_facts, load_no_shows, site_of
from agentlake.workforce.order import FillOrder
from agentlake.workforce.resume_facts import FACTS, load_resume_facts
from agentlake.workforce.schedule import Booking, ScheduleBook
from agentlake.workforce.verify import verify_fill

if TYPE_CHECKING:
    from agentlake.agents import Policy, TaskOutcome
    from agentlake.lake import Lake
    from agentlake.learn import LessonStore
    from agentlake.observe import MemorySink, Observer
    from agentlake.workforce.schedule import ScheduleBook

log = logging.getLogger(__name__)

DEFAULT_RADIUS_MILES = 25.0
MAX_REJECTIONS_IN_OP = 25  # keeps the op under the observer's attribute cap


class DayTask(BaseModel):
    """Everything one day needs, picklable so any backend can ship it to a worker."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_id: str
    batch: int
    repetition: int
    scenario: Scenario
    profile: StafferProfile
    settings: Settings
    lake_path: str
    lessons_path: str | PgSchema | None = Field(
        None,
        description="The staffer's lesson store (a file, or its schema in PostgreSQL); a private copy is read.",
    )
    semantic_lessons: bool = Field(
        False, description="Rank lessons by embedding similarity too (loads the embedder)."
    )
    feedback: FeedbackMode = Field("explicit", description="What the client says when it refuses someone.")

    @property
    def arm(self) -> str:
        """The staffer under this feedback mode: its name on the leaderboard and its lesson store."""
        return arm_name(self.profile.staffer, self.feedback)


class DayResult(BaseModel):
    """A finished day: one result per event, every op recorded while it ran, and the lesson
    deltas the overseer proposed at the end of the day (applied by the parent, the writer)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    results: list[EventResult]
    ops: list[ObservedOp]
    overseer_deltas: list[Any] = Field(default_factory=list)
    seconds: float


def event_run_id(task: DayTask, event_id: str) -> str:
    """The run id one event's policy call, citations and outcome are keyed by."""
    return event_run_key(task.run_id, task.arm, task.batch, task.scenario.scenario, task.repetition, event_id)


# --- events -> orders -------------------------------------------------------------------


@dataclass
class DayLedger:
    """What happened so far today: each event's order, who is placed, who ever was, the buffers."""

    orders: dict[str, FillOrder] = field(default_factory=dict)
    placed: dict[str, list[int]] = field(default_factory=dict)
    ever_placed: dict[str, set[int]] = field(default_factory=dict)
    buffers: dict[str, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class PlannedEvent:
    """An event turned into an order, plus the workers taken off an earlier event for it and
    that event's buffer (its spares), handed to the staffer for the replacements."""

    event: Event
    order: FillOrder
    removed: list[int]
    exclusion_reason: str
    buffer: list[int] = field(default_factory=list)


def plan_event(scenario: Scenario, event: Event, ledger: DayLedger) -> PlannedEvent:
    """Turn ``event`` into a ``FillOrder`` given what happened earlier in the day.

    - baseline_fill / expansion: the event's own role, count, place (default: the client's
      city), requirements, radius (default 25 miles) and shift (default: ``at`` + 8 hours).
    - recurring: like baseline_fill; with ``same_as`` the role, place, requirements and
      radius default to that event's, with a new shift.
    - emergency (``no_show_of: eX``): the first ``count`` workers placed on eX did not show;
      they are taken off eX (their booking freed) and excluded. The order repeats eX's role,
      place, requirements, radius and shift, for ``count`` replacements.
    - misplacement (``replace_from: eX``): the first ``count`` workers placed on eX must be
      replaced; same as an emergency, plus the event's own ``requirements`` (why they did not
      fit). The ``task_kind`` of every order is the event's kind.

    For emergency and misplacement, eX's buffer (the spares its staffer kept, less anyone ever
    placed on eX) is handed over in ``buffer``; the caller removes the ones placed from eX's buffer.
    """
    client = scenario.client
    ref = ledger.orders.get(event.ref) if event.ref else None
    removed: list[int] = []
    excluded: list[int] = []
    buffer: list[int] = []
    reason = "this worker was taken off this job earlier today"
    if event.kind in ("emergency", "misplacement"):
        assert ref is not None and event.ref is not None  # validated at load time
        removed = ledger.placed.get(event.ref, [])[: event.count]
        ledger.placed[event.ref] = [w for w in ledger.placed.get(event.ref, []) if w not in removed]
        excluded = sorted(ledger.ever_placed.get(event.ref, set()))
        buffer = [w for w in ledger.buffers.get(event.ref, []) if w not in excluded]
        reason = (
            "did not show this morning; we will not take them back today"
            if event.kind == "emergency"
            else "was misplaced on this job earlier today"
        )
        start, end = (ref.shift_start, ref.shift_end)
        if event.shift is not None:
            start, end = scenario.shift_window(event.shift)
        requirements = list(dict.fromkeys([*ref.requirements, *event.requirements]))
        fields: dict[str, Any] = {
            "role": ref.role,
            "city": ref.city,
            "state": ref.state,
            "radius_miles": event.radius_miles or ref.radius_miles,
            "requirements": requirements,
            "wishes": list(ref.wishes),
        }
    else:
        if event.shift is not None:
            start, end = scenario.shift_window(event.shift)
        else:
            start = scenario.at(event.at)
            end = start + timedelta(hours=DEFAULT_SHIFT_HOURS)
        fields = {
            "role": event.role or (ref.role if ref else None),
            "city": event.city or (ref.city if ref else client.city),
            "state": event.state or (ref.state if ref else client.state),
            "radius_miles": event.radius_miles or (ref.radius_miles if ref else DEFAULT_RADIUS_MILES),
            "requirements": event.requirements or (list(ref.requirements) if ref else []),
            "wishes": [FACTS[key].wish for key in event.wishes] or (list(ref.wishes) if ref else []),
        }
    order = FillOrder(
        **fields,
        count=event.count,
        client_id=client.id,
        shift_start=start,
        shift_end=end,
        task_kind=event.kind,
        event_id=event.id,
        exclude_worker_ids=excluded,
    )
    return PlannedEvent(event=event, order=order, removed=removed, exclusion_reason=reason, buffer=buffer)


def lake_client_ids(lake: Lake, client: Client) -> list[str]:
    """The scenario client's ids in the lake's ``clients`` dataset (see ``client_lake_ids``)."""
    return client_lake_ids(lake, lake_id=client.lake_id, slug=client.id, name=client.name)


# --- the op the learning loop reads -----------------------------------------------------


def record_judged(
    task: DayTask,
    planned: PlannedEvent,
    judgement: Judgement,
    outcome: TaskOutcome | None,
    *,
    error: str | None,
    observer: Observer,
    evidence: dict[str, Any] | None = None,
) -> str | None:
    """Record the ``fill.judged`` op in ``observer``; its id.

    The op carries only what the client said in the task's feedback mode (``voice``): the
    judge's rules and values in explicit mode, the client's words in vague mode, nothing but
    who was refused in silent mode; plus ``evidence`` (``workforce.evidence``: the submitted
    workers' facts, which the staffer can read for itself) and the run's outcome stated for
    the learning loop. The judge's verdicts stay with the results, for evaluation.
    """
    order = planned.order
    scenario = task.scenario
    said = client_says(
        judgement.rejections[:MAX_REJECTIONS_IN_OP],
        task.feedback,
        key=f"{scenario.client.id}|{scenario.scenario}|{planned.event.id}|b{task.batch}|r{task.repetition}",
    )
    refused = judgement.rejected_workers
    text = summary(
        judgement.requested, judgement.filled, judgement.rules_broken(), len(refused), task.feedback
    )
    if error:
        text += f"; staffer failed: {error}"
    attributes: dict[str, Any] = {
        "client_id": scenario.client.id,
        "task_kind": planned.event.kind,
        "requested": judgement.requested,
        "filled": judgement.filled,
        "accepted": judgement.accepted,
        "refused": refused,
        "feedback": task.feedback,
    }
    if task.feedback != "silent":
        attributes["rejections"] = said
    attributes.update(
        {
            "lessons_given": outcome.lessons_given if outcome else [],
            "lessons_cited": outcome.lessons_cited if outcome else [],
            "scenario": scenario.scenario,
            "event_id": planned.event.id,
            "scenario_run_id": task.run_id,
            "batch": task.batch,
            "repetition": task.repetition,
            "buffer": len(outcome.candidates) if outcome else 0,
            # How the run ended, stated for the learning loop (learn.record_outcomes).
            **outcome_attributes(
                order.signature(),
                judgement.success,
                score=judgement.filled / judgement.requested if judgement.requested else 0.0,
            ),
        }
    )
    if evidence is not None and evidence.get("items"):
        attributes["judged"] = evidence
    op = event(
        "fill.judged",
        source="scenario",
        observer=observer,
        agent_id=task.profile.staffer,
        input_summary=order.describe(),
        output_summary=text,
        success=judgement.success,
        error=error,
        duration_ms=outcome.latency_ms if outcome else 0.0,
        run_id=event_run_id(task, planned.event.id),
        labels={
            **order.labels(),
            "staffer_id": task.profile.staffer,
            "event_kind": planned.event.kind,
            "rescue_attempted": outcome.rescue_attempted if outcome else None,
            "rescue_succeeded": outcome.rescue_succeeded if outcome else None,
        },
        attributes=attributes,
    )
    return op.id if op is not None else None


# --- running a day ----------------------------------------------------------------------


@contextmanager
def collecting_observer() -> Iterator[tuple[Observer, MemorySink]]:
    """An observer that collects ops in memory for the duration of a day, standing in for the
    process-wide one in this thread only (``observing``): days running at once in other
    threads each collect their own.

    Model calls are recorded through the LLM accounting hook, which records each call into
    the observer of the thread that made it (the hook of the process-wide observer, which
    ``observing`` replaces here), so a day's ops never hold another day's model calls.
    """
    # The LLM layer loads when the first day runs, not when a run is planned (start-up time).
    from agentlake.observe import install_llm_recording

    sink = MemorySink()
    observer = Observer(sink, ring_size=1000)
    with observing(observer):
        uninstall = None
        with suppress(ImportError):  # the LLM layer is optional for a rules-only day
            uninstall = install_llm_recording(None)
        try:
            yield observer, sink
        finally:
            if uninstall is not None:
                uninstall()


def build_policy(profile: StafferProfile, settings: Settings, scenario: Scenario | None = None) -> Policy:
    """The policy a profile names, with its models per tier (the oracle needs the scenario)."""
    if profile.policy == "oracle":
        if scenario is None:
            raise UserError(
                "the oracle staffer reads a scenario's hidden rules; it only runs inside a scenario day"
            )
        return OraclePolicy(scenario.client, scenario.date)
    if profile.policy == "rules":
        return get_policy("rules")
    models = profile.resolved_models(settings)
    kwargs: dict[str, Any] = {"executor_model": models.executor, "reviewer_model": models.reviewer}
    if profile.turn_budget is not None:
        kwargs["turn_budget"] = profile.turn_budget
    kwargs["think"] = profile.think
    kwargs["review_every"] = profile.review_every
    if models.escalation:
        kwargs["escalation_model"] = models.escalation
    return get_policy("llm", **kwargs)


def run_day(task: DayTask, *, lake: Lake | None = None, matching: Matching | None = None) -> DayResult:
    """Staff one scenario day with one staffer; judge every event; return results and ops.

    ``lake`` lets an inline caller reuse its open lake; otherwise the lake is opened read-only
    from ``task.lake_path``. A policy that raises for one event (``AgentlakeError`` or anything
    else) is recorded as an unfilled event with the error, and the day goes on (one bad turn
    is not a lost day).
    """
    started = time.perf_counter()
    settings = task.settings
    own_lake = lake is None
    if lake is None:
        lake = Lake.open(settings, path=Path(task.lake_path), read_only=True)
    matching = matching or Matching.default()
    scenario = task.scenario
    within = task.profile.learning and task.profile.learn_within_day
    try:
        with (
            collecting_observer() as (observer, sink),
            lesson_snapshot(
                task.lessons_path if task.profile.lessons else None,
                settings,
                semantic=task.semantic_lessons,
                create=within,
            ) as lessons,
        ):
            policy = build_policy(task.profile, settings, scenario)
            client_ids = lake_client_ids(lake, scenario.client)
            # The orders received so far: what a rule learned today must not empty.
            pools = ClientPools(lake, scenario.client, scenario.date, matching=matching) if within else None
            schedule = ScheduleBook(lake)
            ledger = DayLedger()
            results: list[EventResult] = []
            last_ctx: RunContext | None = None
            tier_deltas: list[Any] = []  # T3's drafts, for the learner with the overseer's
            for event in scenario.events:
                planned = plan_event(scenario, event, ledger)
                order = planned.order
                if pools is not None:
                    pools.add(order)
                for worker_id in planned.removed:
                    assert order.shift_start is not None  # a scenario's orders name their shift
                    schedule.remove(worker_id, order.shift_start)
                ctx = RunContext(
                    lake=lake,
                    schedule=schedule,
                    lessons=lessons,
                    run_id=event_run_id(task, event.id),
                    staffer_id=task.profile.staffer,
                    observer=observer,
                    labels={"event_kind": event.kind},
                    states_outcome=False,
                    rescue=task.profile.rescue,
                    overseer=task.profile.overseer,
                    settings=settings,
                    agent_id=task.profile.staffer,
                    buffer=list(planned.buffer),
                )
                outcome, error = _attempt(policy, order, ctx)
                proposed = outcome.proposed if outcome else []
                site = site_of(lake, order.city, order.state)
                facts = load_facts(lake, proposed)
                wanted = scenario.client.acceptance.resume_facts or order.wishes
                resume_facts = load_resume_facts(lake, proposed) if wanted else None
                no_shows = load_no_shows(lake, client_ids, proposed, scenario.date)
                judgement = judge_fill(
                    order,
                    proposed,
                    acceptance=scenario.client.acceptance,
                    site=site,
                    facts=facts,
                    no_shows=no_shows,
                    schedule=schedule,
                    matching=matching,
                    exclusion_reason=planned.exclusion_reason,
                    resume_facts=resume_facts,
                )
                evidence = _evidence(lake, scenario, order, judgement, facts, site, no_shows, schedule)
                for worker_id in judgement.accepted:
                    schedule.add(
                        Booking(
                            worker_id=worker_id,
                            start=order.shift_start,
                            end=order.shift_end,
                            client_id=scenario.client.id,
                            client_name=scenario.client.name,
                            source=f"scenario:{scenario.scenario}:{event.id}",
                        )
                    )
                ledger.orders[event.id] = order
                ledger.placed[event.id] = list(judgement.accepted)
                ledger.ever_placed[event.id] = set(judgement.accepted)
                ledger.buffers[event.id] = list(outcome.candidates) if outcome else []
                if event.ref is not None and planned.buffer:
                    ledger.buffers[event.ref] = [
                        w for w in ledger.buffers.get(event.ref, []) if w not in judgement.accepted
                    ]
                op_id = record_judged(
                    task, planned, judgement, outcome, error=error, observer=observer, evidence=evidence
                )
                tier_deltas += t3_deltas(task.profile, settings, order, op_id, sink.ops, outcome)
                results.append(_event_result(task, planned, judgement, outcome, error, op_id))
                if within and lessons is not None and pools is not None:
                    learn_event(task, event.id, lessons, observer, pools)
                last_ctx = ctx
            deltas = _overseer_end_of_day(task, schedule, last_ctx) if task.profile.overseer else []
            deltas += tier_deltas
            ops = list(sink.ops)
    finally:
        if own_lake:
            lake.close()
    return DayResult(
        results=results, ops=ops, overseer_deltas=deltas, seconds=round(time.perf_counter() - started, 3)
    )


def learn_event(
    task: DayTask, event_id: str, lessons: LessonStore, observer: Observer, pools: ClientPools
) -> None:
    """Learning within the day: the one loop (``learn.learn_recorded``) over this event's ops in
    the day's observer, into the day's private copy of the staffer's lessons, so the next
    event retrieves what this one taught. The parent learns the same ops into the real store
    between batches (idempotent by op id); effects are measured there, not here."""
    learn_recorded(
        lessons,
        observer,
        measure=False,
        maintain=False,
        promote=False,
        pool_check=PoolChecks([pools]),
        gate=gatekeeper(task.profile, task.settings),
        run_id=event_run_id(task, event_id),
    )


def _evidence(
    lake: Lake,
    scenario: Scenario,
    order: FillOrder,
    judgement: Judgement,
    facts: dict[int, Any],
    site: tuple[float, float],
    no_shows: dict[int, Any],
    schedule: ScheduleBook,
) -> dict[str, Any] | None:
    """The submitted workers' facts as evidence for learning (``workforce.evidence``), with the
    refusals the staffer's own verification explains (checked before the day books anyone)."""
    if not judgement.submitted:
        return None
    check = verify_fill(lake, order, judgement.submitted, schedule=schedule, requested=0)
    # The availability floor is the staffer's own setting, not a term of the order.
    explained = {r.worker_id for r in check.rejections if r.rule != "unavailable"}
    return judged_evidence(
        scope=scenario.client.id,
        shape=f"{order.role} in {order.city}, {order.state}",
        submitted=judgement.submitted,
        accepted=set(judgement.accepted),
        facts=facts,
        site=site,
        no_shows=no_shows,
        explained=explained,
        role=order.role,
    )


class _DeltaCollector:
    """Stands in for the lesson store at the end of the day: the overseer's proposals are kept
    and shipped to the parent, which applies them to the staffer's real store after the batch
    (the day only has a private snapshot)."""

    def __init__(self) -> None:
        self.deltas: list[Any] = []

    def propose(self, deltas: Sequence[Any]) -> list[Any]:
        self.deltas.extend(deltas)
        return []


def _overseer_end_of_day(task: DayTask, schedule: ScheduleBook, ctx: Any) -> list[Any]:
    """Cross-day lesson deltas from the day's overseer; only kept for a learning staffer."""
    if not task.profile.learning:
        return []
    import dataclasses

    collector = _DeltaCollector()
    # The profile's overseer tier (its own model, else overseer_model) reaches the overseer.
    model = task.profile.resolved_models(task.settings).overseer
    Overseer.for_day(schedule).end_of_day(dataclasses.replace(ctx, lessons=collector), model=model)
    return collector.deltas


def _attempt(policy: Policy, order: FillOrder, ctx: RunContext) -> tuple[TaskOutcome | None, str | None]:
    """The policy's outcome, or the error that ended the task: a task that fails, whatever
    raised, fails alone (its ops so far are kept with the day's; the day and the days beside
    it go on). A failure that is not ours (a bug) is logged with its traceback."""
    try:
        return policy.run(order, ctx), None
    except AgentlakeError as exc:
        return None, f"{type(exc).__name__}: {exc.message}"
    except Exception as exc:
        log.exception("the staffer's task for %s failed", ctx.run_id)
        return None, f"{type(exc).__name__}: {exc}"


def _event_result(
    task: DayTask,
    planned: PlannedEvent,
    judgement: Judgement,
    outcome: TaskOutcome | None,
    error: str | None,
    op_id: str | None,
) -> EventResult:
    order = planned.order
    return EventResult(
        run_id=task.run_id,
        staffer=task.profile.staffer,
        feedback=task.feedback,
        batch=task.batch,
        scenario=task.scenario.scenario,
        client_id=task.scenario.client.id,
        repetition=task.repetition,
        event_id=planned.event.id,
        kind=planned.event.kind,
        at=planned.event.at,
        role=order.role,
        city=order.city,
        state=order.state,
        requested=judgement.requested,
        filled=judgement.filled,
        success=judgement.success,
        proposed=outcome.proposed if outcome else [],
        accepted=judgement.accepted,
        rejections=judgement.rejections,
        agent_success=bool(outcome and outcome.success),
        failure_reason=outcome.failure_reason if outcome else error,
        error=error,
        **(outcome.effort() if outcome else {}),
        buffer=len(outcome.candidates) if outcome else 0,
        double_bookings_caught=_caught_double_bookings(outcome),
        double_bookings_submitted=judgement.rules_broken().get("double_booked", 0),
        concerns=[c.message for c in outcome.concerns] if outcome else [],
        shift_start=order.shift_start,
        shift_end=order.shift_end,
        op_id=op_id,
        sig_hash=order.signature().sig_hash(),
        tiers=task.profile.tiers(),
    )


_DOUBLE_BOOKED = re.compile(r"(\d+) \(double_booked\)")


def _caught_double_bookings(outcome: TaskOutcome | None) -> int:
    """Workers the staffer's own checks found double-booked before submitting.

    Read from the transcript's verification steps (the rules policy verifies its candidates,
    the LLM policy each proposal) and the overseer's double-booking concerns.
    """
    if outcome is None:
        return 0
    caught: set[int] = set()
    for record in outcome.transcript:
        caught.update(int(w) for w in _DOUBLE_BOOKED.findall(record.detail))
    for concern in outcome.concerns:
        if concern.kind == "double_booking":
            caught.update(concern.worker_ids)
    return len(caught)
