"""The learning loop: lessons out of observed operations, curated by code, back into prompts.

``model`` (the Lesson vocabulary, any domain's) -> ``db`` (the tables in DuckDB or PostgreSQL,
``schema`` their migrations; transactions, append-only history) -> ``curation`` (the rules that
change lessons), ``effect`` (citations, outcomes, measured helpful/harmful), ``evidence`` and
``transfer`` (export, import), each a function over one transaction -> ``store`` (the service
callers open) -> ``retrieval`` (lessons for a task, a read). ``domain`` is the extension point a
domain fills in (its task key, its machine action, its extractors; the built-in domains
register through the ``agentlake.domains`` entry points, as a third party's do). Extractors (``extractor``:
heuristic, induction, llm) turn ops into deltas (``evidence``: the judged items an op states,
kept for induction); ``loop`` is the one learning loop and the only input: it reads what the
observer recorded (outcomes, feedback, citations, rejections) and runs on demand, between
a scenario's batches and on a schedule.
"""

from agentlake.learn.domain import Domain, domain_names, find_domain, register_domain
from agentlake.learn.effect import measure_effects
from agentlake.learn.extractor import (
    ExtractContext,
    Extractor,
    extractor_names,
    get_extractor,
    register_extractor,
)
from agentlake.learn.heuristic import HeuristicExtractor, InductionExtractor
from agentlake.learn.llm_extractor import LLMExtractor
from agentlake.learn.loop import (
    CycleReport,
    LearningScheduler,
    learn_between_batches,
    learn_cycle,
    learn_from_ops,
    learn_recorded,
    learnable_ops,
    outcome_attributes,
    read_ops,
    read_recent_ops,
    record_outcomes,
)
from agentlake.learn.model import (
    AppliedDelta,
    Delta,
    EffectReport,
    Lesson,
    LessonDraft,
    LessonEvent,
    LessonMatch,
    TaskKey,
    estimate_tokens,
)
from agentlake.learn.retrieval import RetrievedLessons, combined_action, retrieve_lessons
from agentlake.learn.store import ImportReport, LessonStore, lesson_snapshot

__all__ = [
    "AppliedDelta",
    "CycleReport",
    "Delta",
    "Domain",
    "EffectReport",
    "ExtractContext",
    "Extractor",
    "HeuristicExtractor",
    "ImportReport",
    "InductionExtractor",
    "LLMExtractor",
    "LearningScheduler",
    "Lesson",
    "LessonDraft",
    "LessonEvent",
    "LessonMatch",
    "LessonStore",
    "RetrievedLessons",
    "TaskKey",
    "combined_action",
    "domain_names",
    "estimate_tokens",
    "extractor_names",
    "find_domain",
    "get_extractor",
    "learn_between_batches",
    "learn_cycle",
    "learn_from_ops",
    "learn_recorded",
    "learnable_ops",
    "lesson_snapshot",
    "measure_effects",
    "outcome_attributes",
    "read_ops",
    "read_recent_ops",
    "record_outcomes",
    "register_domain",
    "register_extractor",
    "retrieve_lessons",
]
