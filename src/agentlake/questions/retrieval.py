"""The lessons a question is given: what was learned about the tables it is likely about.

Owns choosing a question's data lessons (through ``learn.rank_lessons``, per table the
question is likely about, so scope, status and project rules are the machinery's), putting
them into words for the plan (the notes block), the worked examples they become (a playbook's
question and query, shown before the question when it is alike), the names code rewrites in a
query (``rename``), and which given lessons an answer's query shows it used (``cited``). A
playbook is alike when the two questions share at least ``ALIKE`` of their words (Jaccard).
It does not own ranking, storage or measurement (``agentlake.learn``) nor answering
(``agentlake.agents.ask``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentlake.learn.model import TaskKey, estimate_tokens
from agentlake.learn.retrieval import rank_lessons
from agentlake.questions.domain import DOMAIN, TASK_KIND, action_of
from agentlake.questions.lessons import tables_of

if TYPE_CHECKING:
    from agentlake.learn import Lesson, LessonStore
    from agentlake.settings import Settings

log = logging.getLogger(__name__)

ALIKE = 0.25
# A note says what was wrong with one question's answer (its right value among it): given only
# to the same question asked again (the same words), never to one of the same shape about
# other values ("in 2008" after "in 2007").
NOTE_ALIKE = 1.0
MAX_PLAYBOOKS = 2
HEADER = "Notes learned from earlier questions about these tables:"
_WORD = re.compile(r"[a-z0-9]+")


def task_for(datasets: list[str]) -> TaskKey:
    """The task key of a question about ``datasets`` (the first is the one it is measured by)."""
    return TaskKey(domain=DOMAIN, task_kind=TASK_KIND, fields={"dataset": datasets[0]} if datasets else {})


def alike(a: str, b: str) -> float:
    """How alike two questions are: the share of their words they have in common (Jaccard)."""
    first, second = set(_WORD.findall(a.casefold())), set(_WORD.findall(b.casefold()))
    return len(first & second) / len(first | second) if first and second else 0.0


@dataclass
class QuestionLessons:
    """What a question was given: the lessons, the notes for the plan, the worked examples
    (question, query) and the names to rewrite (wrong -> right, with the lesson saying so)."""

    lessons: list[Lesson] = field(default_factory=list)
    notes: str = ""
    examples: list[tuple[str, str, str]] = field(default_factory=list)  # (question, sql, lesson id)
    renames: dict[str, tuple[str, str]] = field(default_factory=dict)  # wrong (folded) -> (right, lesson id)

    @property
    def ids(self) -> list[str]:
        return [lesson.id for lesson in self.lessons]

    def cited(self, sql: str, renamed: list[str]) -> list[str]:
        """The given lessons ``sql`` shows it used: the renames applied to it (``renamed``: their
        ids), a worked example over a table it reads, a cast or value it writes."""
        used = list(renamed)
        read = {table.casefold() for table in tables_of(sql)}
        folded = sql.casefold()
        for lesson in self.lessons:
            action = action_of(lesson)
            if action is None or lesson.id in used:
                continue
            if action.kind == "playbook" and read & {t.casefold() for t in tables_of(action.sql or "")}:
                used.append(lesson.id)
            elif action.kind == "cast" and f"try_cast({(action.column or '').casefold()}" in folded.replace(
                " ", ""
            ):
                used.append(lesson.id)
            elif action.kind == "value" and f"'{(action.value or '').casefold()}'" in folded:
                used.append(lesson.id)
        return [lesson_id for lesson_id in self.ids if lesson_id in used]


def lessons_for_question(
    store: LessonStore,
    question: str,
    datasets: list[str],
    *,
    budget_tokens: int | None = None,
    project_id: str | None = None,
) -> QuestionLessons:
    """The data lessons for ``question`` about ``datasets`` (the tables it is likely about):
    the alike playbooks (at most ``MAX_PLAYBOOKS``, most alike first), then renames, casts,
    values and notes of those tables, within ``budget_tokens`` (default the store's
    ``lesson_token_budget``). A read: nothing is written."""
    budget = store.settings.lesson_token_budget if budget_tokens is None else budget_tokens
    eligible: dict[str, Lesson] = {}
    for dataset in datasets:
        for lesson in rank_lessons(store, task_for([dataset]), project_id=project_id, semantic=False):
            if lesson.domain == DOMAIN:
                eligible.setdefault(lesson.id, lesson)
    actions = {lesson_id: action_of(lesson) for lesson_id, lesson in eligible.items()}
    playbooks = sorted(
        (
            (alike(question, action.question or ""), lesson)
            for lesson_id, lesson in eligible.items()
            if (action := actions[lesson_id]) is not None and action.kind == "playbook"
        ),
        key=lambda pair: (-pair[0], -pair[1].confidence, pair[1].id),
    )
    found = QuestionLessons()
    for score, lesson in playbooks[:MAX_PLAYBOOKS]:
        action = actions[lesson.id]
        if score < ALIKE or action is None:
            continue
        found.lessons.append(lesson)
        found.examples.append((action.question or "", action.sql or "", lesson.id))
    lines: list[str] = []
    for lesson in eligible.values():
        action = actions[lesson.id]
        if action is None or action.kind == "playbook":
            continue
        if action.kind == "note" and alike(question, action_question(lesson)) < NOTE_ALIKE:
            continue
        line = f"- [{lesson.id}] {lesson.action}"
        if estimate_tokens("\n".join([HEADER, *lines, line])) > budget:
            continue
        lines.append(line)
        found.lessons.append(lesson)
        if action.kind == "rename" and action.wrong and action.right:
            found.renames[action.wrong.casefold()] = (action.right, lesson.id)
    found.notes = "\n".join([HEADER, *lines]) if lines else ""
    return found


def action_question(lesson: Lesson) -> str:
    """The question a lesson was learned from (its first evidence excerpt), else its trigger."""
    return lesson.evidence_excerpts[0] if lesson.evidence_excerpts else lesson.trigger


def apply_renames(sql: str, renames: dict[str, tuple[str, str]]) -> tuple[str, list[str]]:
    """``sql`` with every name a rename lesson says is wrong written right (outside string
    literals), and the ids of the lessons applied."""
    # Lazy (start-up time): the lake's SQL helpers load with the first query.
    from agentlake.lake.repair import rename_identifier

    applied = []
    for wrong, (right, lesson_id) in renames.items():
        fixed = rename_identifier(sql, wrong, right)
        if fixed != sql:
            sql = fixed
            applied.append(lesson_id)
    return sql, applied


def project_lessons(settings: Settings) -> LessonStore | None:
    """The project's lesson store opened read-only without similarity (the caller closes it),
    or ``None``: ``ask_lessons`` is off, there is no store yet, or a running server holds it
    (the answer then goes without lessons, logged)."""
    if not settings.ask_lessons:
        return None
    # Lazy (start-up time): the learning layer loads on first use.
    from agentlake.errors import AgentlakeError
    from agentlake.learn import LessonStore

    path = None if settings.database_url is not None else settings.data_dir / settings.learn_file
    if path is not None and not path.exists():
        return None
    try:
        return LessonStore.open(settings, path=path, read_only=True, embedder=False)
    except AgentlakeError as exc:
        log.warning("lessons not read for this answer: %s", exc.message)
        return None
