"""Lessons for one task: structured match first, then semantic similarity, within a token budget.

Owns the ranking, the prompt block (``[L-abc123] trigger: action``), the combined machine
action a rules policy applies, and recording which lessons were given to which run. It does
not own lesson storage (``store``) or what runs did with them (``effect``).

Ranking, in order, until the budget is spent (a lesson that does not fit is skipped, a
shorter one after it may still fit):

1. active lessons whose match pins at least one task field and agrees on every field it pins;
2. active lessons that apply to any task, and active lessons that agree on client, role and
   task kind but disagree on a soft field (city, state) yet whose text is semantically close
   to the task (cosine >= ``SEMANTIC_FLOOR``): a fill in Akron still finds the lessons learned
   on the same client's fills in Cleveland;
3. the same two stages for pending lessons, marked "(trial)" so their effect can be measured.

A lesson's scope must match the task for it to be given: a lesson pinned to another client,
role or task kind is never given (a client's rules are that client's, a Welder's cert must not
filter Electricians, an emergency's buffer is for emergencies), and a lesson about a tool is
given only to a task that has that tool (``tools``; none given: no tool lessons).
Tokens are estimated without a tokenizer (characters / 4, see ``model.estimate_tokens``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, computed_field

from agentlake.errors import UserError
from agentlake.learn.model import TASK_FIELDS, Lesson, MachineAction, TaskSignature, estimate_tokens

if TYPE_CHECKING:
    from agentlake.learn.store import LessonStore

HEADER = "Lessons from earlier runs (cite the [L-...] ids you rely on):"
SEMANTIC_FLOOR = 0.5
HARD_FIELDS = ("client_id", "role", "task_kind")


class RetrievedLessons(BaseModel):
    """The lessons given to one task, their prompt text and what they cost."""

    lessons: list[Lesson] = Field(default_factory=list)
    text: str = Field("", description="The prompt block; empty when no lesson applies.")
    tokens: int = Field(0, description="Estimated tokens of ``text`` (chars / 4).")
    budget_tokens: int
    sig_hash: str
    run_id: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ids(self) -> list[str]:
        return [lesson.id for lesson in self.lessons]

    def machine(self) -> MachineAction | None:
        """All machine actions combined (stricter limit, larger knob); ``None`` if there are none.

        Lessons come in rank order; one whose action conflicts with those already combined is
        skipped, so the better-matched lesson wins.
        """
        combined: MachineAction | None = None
        for lesson in self.lessons:
            if lesson.machine is None:
                continue
            if combined is None:
                combined = lesson.machine
            elif combined.conflicts_with(lesson.machine) is None:
                combined = combined.merged(lesson.machine)
        return combined


def _fold(value: str | None) -> str | None:
    return value.casefold() if value is not None else None


def _agrees(lesson: Lesson, task: TaskSignature, fields: tuple[str, ...]) -> bool:
    for name in fields:
        want = _fold(getattr(lesson.match, name))
        if want is not None and want != _fold(getattr(task, name)):
            return False
    return True


def _has_tool(lesson: Lesson, tools: frozenset[str]) -> bool:
    return lesson.match.tool is None or lesson.match.tool.casefold() in tools


def rank_lessons(
    store: LessonStore,
    task: TaskSignature,
    *,
    project_id: str | None = None,
    include_pending: bool = True,
    semantic: bool = True,
    tools: Collection[str] = (),
) -> list[Lesson]:
    """Eligible lessons for ``task`` in the order they are given (no budget applied).
    ``tools``: the tools the task can call; a lesson about another tool is not eligible."""
    statuses = ("active", "pending") if include_pending else ("active",)
    known = frozenset(tool.casefold() for tool in tools)
    pool = [
        lesson
        for lesson in store.retrievable(task.client_id)
        if lesson.status in statuses
        and (project_id is None or lesson.scope == "global" or lesson.project_id == project_id)
        and _agrees(lesson, task, HARD_FIELDS)
        and _has_tool(lesson, known)
    ]
    ordered: list[Lesson] = []
    for status in statuses:
        lessons = [lesson for lesson in pool if lesson.status == status]
        exact = [
            lesson
            for lesson in lessons
            if lesson.match.specificity() > 0 and _agrees(lesson, task, TASK_FIELDS)
        ]
        exact.sort(key=lambda lesson: (-lesson.match.specificity(), -lesson.confidence, lesson.id))
        taken = {lesson.id for lesson in exact}
        rest = [lesson for lesson in lessons if lesson.id not in taken]
        general = [lesson for lesson in rest if lesson.match.specificity() == 0]
        soft = [lesson for lesson in rest if lesson.match.specificity() > 0]
        scored: list[tuple[float, Lesson]] = [(0.0, lesson) for lesson in general]
        if semantic and rest:
            vectors = store.lesson_vectors(rest)
            query = store.vectors([task.describe()])
            if vectors is not None and query is not None:
                sims = vectors @ query[0]
                by_id = {lesson.id: float(sim) for lesson, sim in zip(rest, sims, strict=True)}
                scored = [(by_id[lesson.id], lesson) for lesson in general]
                scored += [
                    (by_id[lesson.id], lesson) for lesson in soft if by_id[lesson.id] >= SEMANTIC_FLOOR
                ]
        scored.sort(key=lambda pair: (-pair[0], -pair[1].confidence, pair[1].id))
        ordered += exact + [lesson for _, lesson in scored]
    return ordered


def retrieve_lessons(
    store: LessonStore,
    task: TaskSignature,
    *,
    budget_tokens: int | None = None,
    run_id: str | None = None,
    agent_id: str | None = None,
    project_id: str | None = None,
    include_pending: bool = True,
    semantic: bool = True,
    tools: Collection[str] = (),
) -> RetrievedLessons:
    """The lessons for ``task`` that fit ``budget_tokens`` (default ``settings.lesson_token_budget``).

    ``tools``: the tools the task can call (lessons about a tool are given only to tasks that
    have it).

    With ``run_id``, records a citation (lesson given to run) for each returned lesson, which
    also marks them used for decay. ``project_id`` limits project lessons to that project
    (global lessons always apply). ``semantic=False`` skips the embedding stage. The returned
    ``text`` (header included) never exceeds the budget.
    """
    budget = store.settings.lesson_token_budget if budget_tokens is None else budget_tokens
    if budget < 0:
        raise UserError(f"budget_tokens must be >= 0, got {budget}")
    chosen: list[Lesson] = []
    lines: list[str] = []
    for lesson in rank_lessons(
        store, task, project_id=project_id, include_pending=include_pending, semantic=semantic, tools=tools
    ):
        line = lesson.prompt_line()
        if estimate_tokens("\n".join([HEADER, *lines, line])) <= budget:
            chosen.append(lesson)
            lines.append(line)
    text = "\n".join([HEADER, *lines]) if lines else ""
    if run_id and chosen:
        store.record_citations(
            run_id, [lesson.id for lesson in chosen], used=False, agent_id=agent_id, sig_hash=task.sig_hash()
        )
    return RetrievedLessons(
        lessons=chosen,
        text=text,
        tokens=estimate_tokens(text),
        budget_tokens=budget,
        sig_hash=task.sig_hash(),
        run_id=run_id,
    )


def record_citation(
    store: LessonStore, run_id: str, lesson_ids: list[str], *, used: bool, agent_id: str | None = None
) -> None:
    """Record lessons given to a run (``used=False``) or that the agent says it used (``used=True``).

    Unknown lesson ids raise ``NotFoundError`` and nothing is written.
    """
    store.record_citations(run_id, lesson_ids, used=used, agent_id=agent_id)
