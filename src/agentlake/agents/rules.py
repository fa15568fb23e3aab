"""The rules policy: a deterministic executor with no LLM, the reference baseline.

Owns ``RulesPolicy``: it builds the candidate search from the order (role and synonyms,
distance within the radius, stated certifications, the availability floor) plus the machine
actions of the lessons it is given (required certifications, minimum scores, a tighter
distance, no prior no-show at this client, an extra WHERE fragment, workers to leave out, a
larger buffer, other roles the client takes), ranks by
reliability then distance, verifies in code, proposes ``count`` workers and keeps verified
spares in the ledger. Candidates handed over in ``RunContext.buffer`` (an earlier event's
spares, for an emergency) are verified again and placed first; the search fills the rest.
On a failed fill it makes one rescue attempt with a widened radius
(a lesson's ``widen_radius_miles``, else the radius times ``RESCUE_WIDEN_FACTOR``), keeping
the workers already verified. It does not own the search SQL (``workforce.candidates``) or
verification (``workforce.verify``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from agentlake.agents.lessons import cite, lessons_for, mark_playbook, search_query
from agentlake.agents.outcome import TaskOutcome, TurnRecord, new_run_id, record_task, task_scope
from agentlake.agents.overseer import oversee
from agentlake.agents.policy import register_policy
from agentlake.workforce.candidates import CandidateQuery, find_candidates
from agentlake.workforce.verify import Verification, verify_fill

if TYPE_CHECKING:
    from agentlake.agents.policy import RunContext
    from agentlake.workforce.learning import StaffingAction
    from agentlake.workforce.order import FillOrder

DEFAULT_SPARES = 2
RESCUE_WIDEN_FACTOR = 1.5
# Candidates fetched beyond need + spares, so that verification (bookings, availability)
# can drop some without a second search.
SEARCH_SLACK = 15


class _Attempt:
    def __init__(
        self,
        order: FillOrder,
        proposed: list[int],
        spares: list[int],
        verification: Verification,
        applied: bool,
    ) -> None:
        self.order = order
        self.proposed = proposed
        self.spares = spares
        self.verification = verification
        self.applied = applied  # a lesson's machine action narrowed this search


class RulesPolicy:
    """Search with the order's filters and the lessons' machine actions, verify, propose."""

    name = "rules"

    def __init__(self, *, spares: int = DEFAULT_SPARES, widen_factor: float = RESCUE_WIDEN_FACTOR) -> None:
        self.spares = spares
        self.widen_factor = widen_factor

    def run(self, order: FillOrder, ctx: RunContext) -> TaskOutcome:
        """Fill ``order``; see the module docstring. Raises ``UserError`` for an unknown city or a
        lake without workers."""
        started = time.perf_counter()
        run_id = ctx.run_id or new_run_id()
        transcript: list[TurnRecord] = []

        def step(kind: str, summary: str, detail: str = "", ok: bool = True) -> None:
            record = TurnRecord(turn=0, agent="rules", kind=kind, summary=summary, detail=detail, ok=ok)
            transcript.append(record)
            ctx.emit(record)

        with task_scope(order, ctx):
            given = lessons_for(order, ctx)
            if given.lessons:
                action = given.machine.describe() if given.machine else "none machine-usable"
                step("lessons", f"{len(given.lessons)} lesson(s) given; applying: {action}", given.text)
            held = self._held(order, ctx, given.machine, step)
            attempt = self._attempt(order, ctx, given.machine, held, step)
            rescue_attempted = rescue_succeeded = False
            if not attempt.verification.ok and ctx.rescue:
                rescue_attempted = True
                wider = self._rescue_radius(order, given.machine)
                step(
                    "rescue",
                    f"rescue: widening the radius from {order.radius_miles:g} to {wider:g} miles, "
                    f"keeping {len(attempt.verification.accepted)} verified worker(s)",
                )
                rescued = self._attempt(
                    order.model_copy(update={"radius_miles": wider}),
                    ctx,
                    given.machine,
                    attempt.verification.accepted,
                    step,
                )
                rescue_succeeded = rescued.verification.ok
                if rescue_succeeded or len(rescued.verification.accepted) > len(
                    attempt.verification.accepted
                ):
                    attempt = rescued
            cited = cite(given.machine_ids, given) if attempt.applied else []
            success = attempt.verification.ok
            outcome = TaskOutcome(
                order=attempt.order,
                proposed=attempt.proposed,
                verification=attempt.verification,
                success=success,
                failure_reason=None if success else _shortfall(attempt),
                turns=0,
                latency_ms=round((time.perf_counter() - started) * 1000, 3),
                lessons_given=given.ids,
                lessons_cited=cited,
                rescue_attempted=rescue_attempted,
                rescue_succeeded=rescue_succeeded,
                candidates=attempt.spares,
                transcript=transcript,
                policy=self.name,
                run_id=run_id,
            )
            oversee(outcome, ctx)
            record_task(outcome, ctx)
        return outcome

    def _held(
        self,
        order: FillOrder,
        ctx: RunContext,
        machine: StaffingAction | None,
        step,
    ) -> list[int]:
        """The handed-over buffer's workers that still pass verification (bookings made since
        included) and the lessons' filters (learned since they were kept, within the day), at
        most ``count`` of them."""
        if not ctx.buffer:
            return []
        buffer = list(dict.fromkeys(ctx.buffer))
        if machine is not None and not machine.is_empty():
            query = search_query(order, ctx, machine, limit=len(buffer))
            query.only_ids = buffer
            passing = {row["worker_id"] for row in find_candidates(ctx.lake, query)}
            buffer = [w for w in buffer if w in passing]
        check = verify_fill(
            ctx.lake, order, buffer, schedule=ctx.schedule, requested=0, also_roles=_also(machine)
        )
        held = check.accepted[: order.count]
        step(
            "buffer",
            f"buffer: {len(check.accepted)} of {len(ctx.buffer)} held candidate(s) still verify"
            f"{' and pass the lessons' if len(buffer) < len(set(ctx.buffer)) else ''}; placing {held}",
            "\n".join(f"{r.worker_id} ({r.rule}): {r.reason}" for r in check.rejections[:10]),
        )
        return held

    def _rescue_radius(self, order: FillOrder, machine: StaffingAction | None) -> float:
        if (
            machine is not None
            and machine.widen_radius_miles
            and machine.widen_radius_miles > order.radius_miles
        ):
            return machine.widen_radius_miles
        return round(order.radius_miles * self.widen_factor, 1)

    def _attempt(
        self, order: FillOrder, ctx: RunContext, machine: StaffingAction | None, keep: list[int], step
    ) -> _Attempt:
        spares = self.spares
        if machine is not None and machine.min_candidate_buffer:
            spares = max(spares, machine.min_candidate_buffer)
        need = max(0, order.count - len(keep))
        query = search_query(order, ctx, machine, keep=keep, limit=need * 2 + spares + SEARCH_SLACK)
        rows = mark_playbook(find_candidates(ctx.lake, query), ctx.playbook)
        step(
            "search",
            f"search {_describe(query)}: {len(rows)} candidate(s)",
            "; ".join(
                f"{r['worker_id']} {r['distance_miles']:g}mi rel {r.get('reliability')}"
                + (f" playbook {','.join(r['lesson_ids'])}" if r.get("lesson_ids") else "")
                for r in rows[:10]
            ),
        )
        loose = verify_fill(
            ctx.lake,
            order,
            [r["worker_id"] for r in rows],
            schedule=ctx.schedule,
            requested=0,
            also_roles=_also(machine),
        )
        if loose.rejections:
            step(
                "verification",
                f"{len(loose.rejected_ids)} candidate(s) failed verification",
                "\n".join(f"{r.worker_id} ({r.rule}): {r.reason}" for r in loose.rejections[:10]),
            )
        chosen = list(keep) + loose.accepted[:need]
        spare_ids = loose.accepted[need : need + spares]
        final = verify_fill(ctx.lake, order, chosen, schedule=ctx.schedule, also_roles=_also(machine))
        step(
            "propose",
            f"propose {chosen} with {len(spare_ids)} spare(s) {spare_ids}",
            final.summary(),
            ok=final.ok,
        )
        applied = machine is not None and not machine.is_empty()
        return _Attempt(order, chosen, spare_ids, final, applied)


def _also(machine: StaffingAction | None) -> list[str]:
    """The other roles a lesson says the client takes for the ordered one."""
    return list(machine.accept_roles) if machine is not None else []


def _describe(query: CandidateQuery) -> str:
    roles = " or ".join([query.role, *query.also_roles])
    parts = [f"{roles} within {query.effective_radius():g} mi of {query.city}, {query.state}"]
    if query.requirements:
        parts.append("holding " + ", ".join(query.requirements))
    for name, value in query.min_scores.items():
        parts.append(f"{name} >= {value:g}")
    if query.exclude_no_show_client is not None:
        parts.append("no prior no-show here")
    if query.extra_where:
        parts.append(f"WHERE {query.extra_where}")
    return "; ".join(parts)


def _shortfall(attempt: _Attempt) -> str:
    found = len(attempt.verification.accepted)
    return (
        f"only {found} of {attempt.order.count} workers found who pass verification "
        f"({attempt.order.role} within {attempt.order.radius_miles:g} miles of {attempt.order.city}, {attempt.order.state})"
    )


register_policy("rules", RulesPolicy)
