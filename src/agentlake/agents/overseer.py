"""The overseer tier: watches completed events and whole days, not single turns.

Owns ``Overseer`` and ``Concern``. Per completed event (``review_event``) it checks, in code,
what a single task cannot see: a proposed worker also booked by another event of the run
over an overlapping shift (double-booking across events), certifications that only match
through a non-canonical spelling or that the catalogue does not know (certification drift),
and a spare buffer thinner than the order or a lesson asks for (thin buffer). At the end of a
day (``end_of_day``) it turns concerns that recur across events, and fills that ran short,
into cross-day lessons proposed as pending through the Learn API (``LessonStore.propose``,
actor ``overseer``), so that measurement decides whether they stay. It does not stop or
change a fill: concerns are advice for the next task, recorded as ops.

The checks and the lesson drafts are deterministic; with a model (a staffer profile's overseer
tier, else the ``overseer_model`` setting; off by default) a model also drafts cross-day lessons
from the day (``overseer_model.py``).
"""

from __future__ import annotations

import logging
import math
import threading
import weakref
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentlake.agents.outcome import Concern, ConcernKind, TurnRecord
from agentlake.observe import event, get_observer
from agentlake.workforce.catalogue import CERTIFICATIONS
from agentlake.workforce.roles import normalize_certification
from agentlake.workforce.tables import fetch_workers

if TYPE_CHECKING:
    from agentlake.agents.outcome import TaskOutcome
    from agentlake.agents.policy import RunContext
    from agentlake.learn import AppliedDelta
    from agentlake.workforce.schedule import ScheduleBook
# A day needs this many events with the same concern (same client and role) before the
# overseer proposes a lesson: one occurrence is an anecdote.
RECURRING = 2


_days: weakref.WeakKeyDictionary[ScheduleBook, Overseer] = weakref.WeakKeyDictionary()
_days_lock = threading.Lock()


class Overseer:
    """Reviews completed events of one day and proposes cross-day lessons.

    It remembers the day's proposals, concerns and outcomes; :meth:`for_day` gives the one
    overseer of a day, which is identified by its ``ScheduleBook`` (a scenario day shares one
    book across its events).
    """

    def __init__(self, *, min_buffer: int | None = None) -> None:
        self.min_buffer = min_buffer
        self.outcomes: list[TaskOutcome] = []
        self.concerns: list[Concern] = []
        self._proposed: list[tuple[int, datetime, datetime, str]] = []
        self._lock = threading.Lock()

    @classmethod
    def for_day(cls, schedule: ScheduleBook) -> Overseer:
        """The overseer of the day whose bookings ``schedule`` holds (created on first use)."""
        with _days_lock:
            overseer = _days.get(schedule)
            if overseer is None:
                overseer = _days[schedule] = cls()
            return overseer

    def review_event(self, outcome: TaskOutcome, ctx: RunContext) -> list[Concern]:
        """Concerns about one completed event, each also recorded as an ``overseer.concern`` op."""
        order = outcome.order
        concerns: list[Concern] = []

        def concern(
            kind: ConcernKind, message: str, worker_ids: list[int] | None = None, value: Any = None
        ) -> None:
            concerns.append(
                Concern(
                    kind=kind,
                    message=message,
                    worker_ids=worker_ids or [],
                    event_id=order.event_id,
                    client_id=order.client_id,
                    role=order.role,
                    value=value,
                )
            )

        label = order.event_id or outcome.run_id or "this event"
        if order.shift_start is not None and order.shift_end is not None:
            with self._lock:
                earlier = list(self._proposed)
                self._proposed += [(w, order.shift_start, order.shift_end, label) for w in outcome.proposed]
            for worker_id in outcome.proposed:
                clash = next(
                    (
                        e
                        for e in earlier
                        if e[0] == worker_id and e[1] < order.shift_end and order.shift_start < e[2]
                    ),
                    None,
                )
                if clash is not None:
                    concern(
                        "double_booking",
                        f"worker {worker_id} was also proposed for event {clash[3]} "
                        f"({clash[1]:%H:%M}-{clash[2]:%H:%M}), overlapping this shift",
                        [worker_id],
                        clash[3],
                    )
        if outcome.proposed and order.requirements:
            rows = fetch_workers(ctx.lake, outcome.proposed, ["certifications"])
            for requirement in order.requirements:
                drift = _drifted(requirement, rows)
                if drift is not None:
                    concern("certification_drift", drift[0], drift[1], requirement)
        wanted = self._wanted_buffer(outcome)
        if wanted and len(outcome.candidates) < wanted:
            concern(
                "thin_buffer",
                f"only {len(outcome.candidates)} spare(s) kept for {order.count} x {order.role}; "
                f"want {wanted} for a no-show or an emergency",
                [],
                wanted,
            )
        with self._lock:
            self.outcomes.append(outcome)
            self.concerns += concerns
        _record(concerns, outcome, ctx)
        return concerns

    def _wanted_buffer(self, outcome: TaskOutcome) -> int:
        if self.min_buffer is not None:
            return self.min_buffer
        return max(1, math.ceil(outcome.order.count / 2))

    def end_of_day(
        self,
        ctx: RunContext,
        outcomes: Sequence[TaskOutcome] | None = None,
        concerns: Sequence[Concern] | None = None,
        *,
        model: str | None = None,
    ) -> list[AppliedDelta]:
        """Propose cross-day lessons (pending) for concerns that recurred and fills that ran short.

        ``outcomes`` and ``concerns`` default to what this overseer reviewed today. ``model``:
        the model that also drafts lessons (a staffer profile's overseer tier), else the
        ``overseer_model`` setting, else none. Without a lesson store in ``ctx`` nothing is
        proposed. Returns what the store did with each.
        """
        if ctx.lessons is None:
            return []
        # Lazy (start-up time): the learning layer loads on first use.
        from agentlake.learn import Delta, LessonDraft, LessonMatch
        from agentlake.workforce.learning import StaffingAction

        outcomes = list(self.outcomes if outcomes is None else outcomes)
        concerns = list(self.concerns if concerns is None else concerns)
        deltas: list[Delta] = []
        by_key: dict[tuple[str, str | None, str | None], list[Concern]] = defaultdict(list)
        for item in concerns:
            by_key[(item.kind, item.client_id, item.role)].append(item)
        for (kind, client_id, role), items in sorted(
            by_key.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2] or "")
        ):
            if len({c.event_id for c in items}) < RECURRING and len(items) < RECURRING:
                continue
            match = LessonMatch(fields={"role": role, "client_id": client_id})
            if kind == "thin_buffer":
                buffer = max(int(c.value or 1) for c in items)
                draft = LessonDraft(
                    trigger=f"staffing {role or 'any role'} for {client_id or 'any client'}",
                    action=f"keep at least {buffer} verified spare candidates: buffers ran thin on {len(items)} events",
                    match=match,
                    machine=StaffingAction(min_candidate_buffer=buffer).model_dump(),
                    domain="staffing",
                    source="overseer",
                    confidence=0.4,
                )
            elif kind == "double_booking":
                draft = LessonDraft(
                    trigger=f"staffing {role or 'any role'} for {client_id or 'any client'} on a busy day",
                    action="check every worker's schedule for the shift before proposing; "
                    f"{len(items)} proposals double-booked a worker across events",
                    match=match,
                    machine=StaffingAction(exclude_double_booked=True).model_dump(),
                    domain="staffing",
                    source="overseer",
                    confidence=0.4,
                )
            else:
                spellings = sorted({str(c.value) for c in items})
                draft = LessonDraft(
                    trigger=f"orders for {role or 'any role'} requiring {', '.join(spellings)}",
                    action="certifications on file are spelled many ways; compare canonical names "
                    "(e.g. 'OSHA-30 Hour' is OSHA 30) before rejecting or accepting a worker",
                    match=match,
                    domain="staffing",
                    source="overseer",
                    confidence=0.3,
                )
            deltas.append(
                Delta(
                    op="ADD",
                    lesson=draft,
                    reason=f"overseer: {kind} on {len(items)} events",
                    actor="overseer",
                )
            )
        short = Counter(
            (o.order.client_id, o.order.role)
            for o in outcomes
            if not o.success and o.order.task_kind == "emergency"
        )
        for (client_id, role), runs in sorted(short.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
            biggest = max(
                o.order.count for o in outcomes if (o.order.client_id, o.order.role) == (client_id, role)
            )
            deltas.append(
                Delta(
                    op="ADD",
                    lesson=LessonDraft(
                        trigger=f"emergency fills of {role} for {client_id or 'any client'}",
                        action=f"shortlist spares ahead: {runs} emergency fill(s) ran short today",
                        match=LessonMatch(fields={"role": role, "client_id": client_id}),
                        machine=StaffingAction(min_candidate_buffer=max(2, biggest)).model_dump(),
                        domain="staffing",
                        source="overseer",
                        confidence=0.4,
                    ),
                    reason=f"overseer: {runs} emergency fill(s) short",
                    actor="overseer",
                )
            )
        model = model or getattr(ctx.settings, "overseer_model", None)
        if model:
            # Lazy (start-up time): only a model-backed overseer loads the LLM layer.
            from agentlake.agents.overseer_model import model_deltas

            deltas += model_deltas(model, outcomes, concerns, temperature=ctx.settings.overseer_temperature)
        return ctx.lessons.propose(deltas) if deltas else []


def _drifted(requirement: str, rows: dict[int, dict[str, Any]]) -> tuple[str, list[int]] | None:
    """A message when the requirement or the workers' records use non-canonical spellings."""
    canonical = normalize_certification(requirement)
    if canonical not in CERTIFICATIONS:
        return (
            f"requirement {requirement!r} is not a certification the catalogue knows; it is matched only by its exact text",
            list(rows),
        )
    variant_holders = []
    for worker_id, row in rows.items():
        value = row.get("certifications") or ""
        spellings = [part.strip() for part in str(value).split(",") if part.strip()]
        matching = [s for s in spellings if normalize_certification(s) == canonical]
        if matching and canonical not in matching:
            variant_holders.append((worker_id, matching[0]))
    if not variant_holders:
        return None
    shown = ", ".join(f"{w} ({s!r})" for w, s in variant_holders[:5])
    return (
        f"{canonical} matched only through other spellings on file: {shown}",
        [w for w, _ in variant_holders],
    )


def _record(concerns: list[Concern], outcome: TaskOutcome, ctx: RunContext) -> None:
    """One ``overseer.concern`` op per concern (failed = something to look at), in the task's
    trace; inside ``task_scope`` they are held and durable with the task's other ops."""
    if not concerns:
        return

    try:
        observer = ctx.observer or get_observer(ctx.settings)
    except Exception:  # a witness never fails the work
        logging.getLogger(__name__).warning("could not record overseer concerns", exc_info=True)
        return
    labels = ctx.order_labels(outcome.order)
    for c in concerns:
        event(
            "overseer.concern",
            source="agent",
            observer=observer,
            agent_id=f"{ctx.agent_id}.overseer",
            success=False,
            error=c.message,
            run_id=ctx.run_id,
            labels=labels,
            attributes={
                "kind": c.kind,
                "worker_ids": c.worker_ids,
                "client_id": c.client_id,
                "event_id": c.event_id,
                "value": c.value,
                "task_kind": outcome.order.task_kind,
            },
        )


def oversee(outcome: TaskOutcome, ctx: RunContext) -> None:
    """When ``ctx.overseer`` is on: the day's overseer reviews ``outcome``; its concerns go into
    the outcome and the transcript (and the live view)."""
    if not ctx.overseer:
        return

    outcome.concerns = Overseer.for_day(ctx.schedule).review_event(outcome, ctx)
    for item in outcome.concerns:
        record = TurnRecord(turn=0, agent="overseer", kind=item.kind, summary=item.message, ok=False)
        outcome.transcript.append(record)
        ctx.emit(record)
