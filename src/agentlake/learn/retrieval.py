"""Lessons for one task: structured match first, then semantic similarity, within a token budget.

Owns the ranking, the prompt block (``[L-abc123] trigger: action``) and the combined machine
action a policy without a model applies (``combined_action``). Retrieval is a read: what a
run was given and cited reaches the store as ops (``loop``). It does not own lesson storage
(``store``) or what runs did with them (``effect``).

Ranking, in order, until the budget is spent (a lesson that does not fit is skipped, a
shorter one after it may still fit):

1. active lessons whose match pins at least one task field and agrees on every field it pins;
2. active lessons that apply to any task, and active lessons that agree on the task kind and
   the domain's hard fields but disagree on a soft one, yet whose text is semantically close to
   the task (cosine >= ``SEMANTIC_FLOOR``): a task in one city still finds the lessons learned
   on the same customer's tasks in the next;
3. the same two stages for pending lessons, marked "(trial)" so their effect can be measured.

A lesson is given to a task of its own domain, or is a lesson about any task (its domain is
none registered: ``tools``, ``playbook``, ``general``). Its scope must match the task: a
lesson pinned to another value of a hard field (the task kind, and the domain's, e.g. a
data question's dataset) is never given, and a lesson about a tool
is given only to a task that has that tool (``tools``; none given: no tool lessons). Tokens
are estimated without a tokenizer (characters / 4, see ``model.estimate_tokens``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, computed_field

from agentlake.errors import UserError
from agentlake.learn.domain import find_domain
from agentlake.learn.model import Lesson, TaskKey, estimate_tokens

if TYPE_CHECKING:
    from agentlake.learn.store import LessonStore

HEADER = "Lessons from earlier runs (cite the [L-...] ids you rely on):"
SEMANTIC_FLOOR = 0.5


class RetrievedLessons(BaseModel):
    """The lessons given to one task, their prompt text and what they cost."""

    lessons: list[Lesson] = Field(default_factory=list)
    text: str = Field("", description="The prompt block; empty when no lesson applies.")
    tokens: int = Field(0, description="Estimated tokens of ``text`` (chars / 4).")
    budget_tokens: int
    sig_hash: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ids(self) -> list[str]:
        return [lesson.id for lesson in self.lessons]


def combined_action(lessons: Sequence[Lesson], domain: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The machine actions of ``lessons`` of ``domain`` combined by its rules (the stricter
    limit, the larger knob), and the ids of the lessons combined. Lessons come in rank order;
    one whose action conflicts with those already combined is left out, so the better-matched
    lesson wins. ``(None, [])`` when none has an action (or the domain is not registered)."""
    registered = find_domain(domain)
    combined: dict[str, Any] | None = None
    ids: list[str] = []
    if registered is None:
        return None, ids
    for lesson in lessons:
        if lesson.machine is None or lesson.domain != domain:
            continue
        if combined is None:
            combined = lesson.machine
        elif registered.action_conflict(combined, lesson.machine) is None:
            combined = registered.merge_actions(combined, lesson.machine)
        else:
            continue
        ids.append(lesson.id)
    return combined, ids


def _fold(value: str | None) -> str | None:
    return value.casefold() if value is not None else None


def _agrees(lesson: Lesson, task: TaskKey, fields: Collection[str]) -> bool:
    for name in fields:
        want = _fold(lesson.match.get(name))
        if want is not None and want != _fold(task.get(name)):
            return False
    return True


def _pinned(lesson: Lesson) -> list[str]:
    return ["task_kind", *lesson.match.fields]


def _has_tool(lesson: Lesson, tools: frozenset[str]) -> bool:
    return lesson.match.tool is None or lesson.match.tool.casefold() in tools


def _for_task(lesson: Lesson, task: TaskKey) -> bool:
    """Whether ``lesson`` may be given to a task of ``task``'s domain."""
    return lesson.domain == task.domain or find_domain(lesson.domain) is None


def rank_lessons(
    store: LessonStore,
    task: TaskKey,
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
    registered = find_domain(task.domain)
    hard = ("task_kind", *(registered.hard_fields if registered is not None else ()))
    pool = [
        lesson
        for lesson in store.retrievable(task)
        if lesson.status in statuses
        and (project_id is None or lesson.scope == "global" or lesson.project_id == project_id)
        and _for_task(lesson, task)
        and _agrees(lesson, task, hard)
        and _has_tool(lesson, known)
    ]
    ordered: list[Lesson] = []
    for status in statuses:
        lessons = [lesson for lesson in pool if lesson.status == status]
        exact = [
            lesson
            for lesson in lessons
            if lesson.match.specificity() > 0 and _agrees(lesson, task, _pinned(lesson))
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
    task: TaskKey,
    *,
    budget_tokens: int | None = None,
    project_id: str | None = None,
    include_pending: bool = True,
    semantic: bool = True,
    tools: Collection[str] = (),
) -> RetrievedLessons:
    """The lessons for ``task`` that fit ``budget_tokens`` (default ``settings.lesson_token_budget``).

    A pure read: the run states what it was given on its outcome op (``lessons_given``), and
    the learner records that. ``tools``: the tools the task can call (lessons about a tool are
    given only to tasks that have it). ``project_id`` limits project lessons to that project
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
    return RetrievedLessons(
        lessons=chosen,
        text=text,
        tokens=estimate_tokens(text),
        budget_tokens=budget,
        sig_hash=task.sig_hash(),
    )
