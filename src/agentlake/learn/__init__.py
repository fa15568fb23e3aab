"""The learning loop: lessons out of observed operations, curated by code, back into prompts.

``model`` (the Lesson vocabulary) -> ``store`` (DuckDB, append-only history) -> ``curation``
(the rules that change lessons) -> ``retrieval`` (lessons for a task, citations) -> ``effect``
(outcomes, measured helpful/harmful). Extractors (``extract``: heuristic, induction, llm) turn ops into
deltas (``evidence``: the judged items an op states, kept for induction); ``loop`` is the one learning loop: it reads what the observer recorded (outcomes,
citations, rejections) and runs on demand, between scenario batches and on a schedule.
"""

from agentlake.learn.effect import measure_effects, record_outcome
from agentlake.learn.extractor import (
    ExtractContext,
    Extractor,
    extractor_names,
    get_extractor,
    register_extractor,
)
from agentlake.learn.heuristic import HeuristicExtractor
from agentlake.learn.induction import InductionExtractor
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
    MachineAction,
    TaskSignature,
    estimate_tokens,
)
from agentlake.learn.retrieval import RetrievedLessons, record_citation, retrieve_lessons
from agentlake.learn.store import ImportReport, LessonStore, lesson_snapshot

__all__ = [
    "AppliedDelta",
    "CycleReport",
    "Delta",
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
    "MachineAction",
    "RetrievedLessons",
    "TaskSignature",
    "estimate_tokens",
    "extractor_names",
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
    "record_citation",
    "record_outcome",
    "record_outcomes",
    "register_extractor",
    "retrieve_lessons",
]
