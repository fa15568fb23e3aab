"""Lessons in the loop: what a task is given from the lesson store, and what it cites.

Owns the agents' side of the Learn API: retrieving the lessons for one order (prompt block,
ids, the combined staffing action and which lessons it came from), turning an order and the
lessons' actions into one candidate search (``search_query``, which the rules policy runs and
the LLM policy checks proposals against) and into the exact ``find_workers`` arguments a
small model can copy (``search_args``, ``lesson_args``), the task's playbook (workers the client
accepted before, ranked first with the lessons behind them: ``playbook_for``), and which given
lessons a task cites.
What a task was given and cited reaches the lesson store only as its ops state it (the
learner reads them). It does not own ranking or storage (``agentlake.learn``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlake.workforce.candidates import CandidateQuery
from agentlake.workforce.learning import DOMAIN, StaffingAction
from agentlake.workforce.tables import resolve_client

if TYPE_CHECKING:
    from agentlake.agents.policy import RunContext
    from agentlake.learn import Lesson
    from agentlake.workforce.order import FillOrder


@dataclass
class TaskLessons:
    """The lessons one task was given."""

    lessons: list[Lesson] = field(default_factory=list)
    text: str = ""
    machine: StaffingAction | None = None
    machine_ids: list[str] = field(default_factory=list)
    playbook: dict[int, list[str]] = field(default_factory=dict)  # worker -> the lessons behind it

    @property
    def ids(self) -> list[str]:
        return [lesson.id for lesson in self.lessons]


def lessons_for(order: FillOrder, ctx: RunContext) -> TaskLessons:
    """The lessons for ``order`` from ``ctx``'s store (a read: the task's ops say what it was
    given). No store in ``ctx``: no lessons. The combined action follows the retrieval order:
    a lesson whose action conflicts with the ones already taken is left out of it."""
    if ctx.lessons is None:
        return TaskLessons()
    # Lazy (start-up time): the learning layer loads on first use.
    from agentlake.learn import combined_action, retrieve_lessons

    retrieved = retrieve_lessons(
        ctx.lessons,
        order.signature(),
        project_id=ctx.project_id,
        tools=ctx.tools.names() if ctx.tools is not None else (),
    )
    combined, machine_ids = combined_action(retrieved.lessons, DOMAIN)
    given = TaskLessons(
        lessons=list(retrieved.lessons),
        text=retrieved.text,
        machine=StaffingAction.model_validate(combined) if combined is not None else None,
        machine_ids=machine_ids,
    )
    given.playbook = ctx.playbook = playbook_for(order, ctx, given.lessons)
    return given


# What a playbook adds to a hybrid search's cosine similarity for a worker the client accepted.
PLAYBOOK_WEIGHT = 0.1


def playbook_for(order: FillOrder, ctx: RunContext, lessons: list[Lesson]) -> dict[int, list[str]]:
    """Workers ``order``'s client accepted before (its judged evidence in the lesson store, the
    latest verdict per worker) -> the ids of the given lessons about that client, which were
    learned from that evidence: the boost that ranks them first. Empty without lessons about the
    client, without a store, or with the ``playbook_boost`` setting off."""
    if not ctx.settings.playbook_boost or ctx.lessons is None or not order.client_id:
        return {}
    behind = [lesson.id for lesson in lessons if lesson.match.get("client_id") == order.client_id]
    if not behind:
        return {}
    _, items = ctx.lessons.evidence(order.client_id, project_id=ctx.project_id)
    verdict: dict[int, bool] = {}
    for item in items:  # oldest first: the latest verdict wins
        verdict[item.item_id] = item.accepted
    return {worker: list(behind) for worker, accepted in verdict.items() if accepted}


def mark_playbook(rows: list[dict[str, Any]], playbook: dict[int, list[str]]) -> list[dict[str, Any]]:
    """``rows`` (candidates, best first) with ``boost`` and ``lesson_ids`` on each one the
    playbook ranked first."""
    for row in rows:
        behind = playbook.get(int(row.get("worker_id", -1)))
        if behind:
            row["boost"] = PLAYBOOK_WEIGHT
            row["lesson_ids"] = list(behind)
    return rows


def cite(lesson_ids: list[str], given: TaskLessons) -> list[str]:
    """The ids among ``lesson_ids`` that were really given, once each, in order.

    Ids a model invents (not among the lessons it was given) are dropped: a citation means
    "this lesson helped", which only a given lesson can. The task's op states the citations.
    """
    known = set(given.ids)
    return [lesson_id for lesson_id in dict.fromkeys(lesson_ids) if lesson_id in known]


def search_query(
    order: FillOrder,
    ctx: RunContext,
    machine: StaffingAction | None,
    *,
    keep: list[int] | None = None,
    limit: int,
) -> CandidateQuery:
    """The candidate search for ``order`` narrowed by ``machine`` (a lesson's action): the
    order's role, place, radius and requirements, the availability floor, then the lesson's
    certifications, minimum scores, tighter distance, WHERE fragment, workers to leave out,
    no-show exclusion and the other roles the client takes; the task's playbook ranks the
    workers the client accepted first. ``keep``: workers already placed, left out of the results."""
    query = order.candidate_query(
        limit=limit, leave_out=keep or [], min_availability=ctx.settings.agent_min_availability
    )
    query.prefer_ids = sorted(ctx.playbook)
    if machine is None:
        return query
    query.requirements += [c for c in machine.require_certifications if c not in query.requirements]
    query.exclude_ids += [w for w in machine.exclude_ids if w not in query.exclude_ids]
    query.min_scores = dict(machine.min_scores)
    query.max_distance_miles = machine.max_distance_miles
    query.extra_where = machine.extra_where
    query.also_roles = list(machine.accept_roles)
    if machine.exclude_prior_no_show_at_client:
        client = resolve_client(ctx.lake, order.client_id)
        if client is not None:
            query.exclude_no_show_client = client[0]
    return query


def lesson_args(machine: StaffingAction, order: FillOrder) -> dict[str, Any]:
    """What ``machine`` adds to a ``find_workers`` call for ``order``, as its arguments
    (``{"requirements": ["OSHA 10"], "min_scores": {"reliability": 0.7}}``): the form a small
    model can copy. Tuning knobs with no search argument (buffer size, rescue radius) are left out."""
    args: dict[str, Any] = {}
    extra = [c for c in machine.require_certifications if c not in order.requirements]
    if extra:
        args["requirements"] = extra
    if machine.min_scores:
        args["min_scores"] = dict(machine.min_scores)
    if machine.max_distance_miles is not None and machine.max_distance_miles < order.radius_miles:
        args["radius_miles"] = machine.max_distance_miles
    if machine.exclude_prior_no_show_at_client and order.client_id:
        args["exclude_no_show_client"] = order.client_id
    if machine.extra_where:
        args["where"] = machine.extra_where
    return args


def search_args(order: FillOrder, machine: StaffingAction | None, *, limit: int = 10) -> dict[str, Any]:
    """The ``find_workers`` arguments that search for ``order`` with every lesson applied."""
    args: dict[str, Any] = {
        "role": order.role,
        "city": order.city,
        "state": order.state,
        "radius_miles": order.radius_miles,
    }
    if order.requirements:
        args["requirements"] = list(order.requirements)
    if machine is not None:
        added = lesson_args(machine, order)
        if "requirements" in added:
            added["requirements"] = [*args.get("requirements", []), *added["requirements"]]
        args.update(added)
    if order.shift_start is not None:
        args["exclude_booked_from"] = order.shift_start.isoformat(timespec="minutes")
        args["exclude_booked_to"] = (order.shift_end or order.shift_start).isoformat(timespec="minutes")
    args["limit"] = max(limit, order.count + 4)
    return args
