"""Lessons in the loop: what a task is given from the lesson store, and what it cites.

Owns the agents' side of the Learn API: retrieving the lessons for one order (prompt block,
ids, the combined machine action and which lessons it came from) and recording citations
(given when retrieved, used when an agent cites a lesson or the rules policy applies one). It
does not own ranking or storage (``agentlake.learn``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentlake.errors import AgentlakeError

if TYPE_CHECKING:
    from agentlake.agents.policy import RunContext
    from agentlake.learn import Lesson, MachineAction
    from agentlake.workforce.order import FillOrder

log = logging.getLogger(__name__)


@dataclass
class TaskLessons:
    """The lessons one task was given."""

    lessons: list[Lesson] = field(default_factory=list)
    text: str = ""
    machine: MachineAction | None = None
    machine_ids: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [lesson.id for lesson in self.lessons]


def lessons_for(
    order: FillOrder, ctx: RunContext, run_id: str | None, *, agent_id: str | None = None
) -> TaskLessons:
    """Retrieve the lessons for ``order`` (recording them as given to ``run_id``).

    No store in ``ctx``: no lessons. The combined machine action follows the retrieval order:
    a lesson whose action conflicts with the ones already taken is left out of it.
    """
    if ctx.lessons is None:
        return TaskLessons()
    # Lazy (start-up time): the learning layer loads on first use.
    from agentlake.learn import retrieve_lessons

    retrieved = retrieve_lessons(
        ctx.lessons,
        order.signature(),
        run_id=run_id,
        agent_id=agent_id or ctx.agent_id,
        project_id=ctx.project_id,
        tools=ctx.tools.names() if ctx.tools is not None else (),
    )
    combined: MachineAction | None = None
    machine_ids: list[str] = []
    for lesson in retrieved.lessons:
        if lesson.machine is None:
            continue
        if combined is None:
            combined = lesson.machine
        elif combined.conflicts_with(lesson.machine) is None:
            combined = combined.merged(lesson.machine)
        else:
            continue
        machine_ids.append(lesson.id)
    return TaskLessons(
        lessons=list(retrieved.lessons), text=retrieved.text, machine=combined, machine_ids=machine_ids
    )


def cite(ctx: RunContext, run_id: str | None, lesson_ids: list[str], given: TaskLessons) -> list[str]:
    """Record ``lesson_ids`` as used by ``run_id``; returns the ids that were really given.

    Ids a model invents (not among the lessons it was given) are dropped, not recorded: a
    citation means "this lesson helped", which only a given lesson can.
    """
    known = set(given.ids)
    cited = [lesson_id for lesson_id in dict.fromkeys(lesson_ids) if lesson_id in known]
    if cited and ctx.lessons is not None and run_id:
        # Lazy (start-up time): the learning layer loads on first use.
        from agentlake.learn import record_citation

        try:
            record_citation(ctx.lessons, run_id, cited, used=True, agent_id=ctx.agent_id)
        except AgentlakeError:  # a citation that cannot be stored must not fail the fill
            log.warning("could not record citations %s for run %s", cited, run_id, exc_info=True)
    return cited
