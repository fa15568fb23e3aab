"""The learning loop: lessons out of observed operations, curated by code, back into prompts.

``model`` (the Lesson vocabulary) -> ``store`` (DuckDB, append-only history) -> ``curation``
(the rules that change lessons) -> ``retrieval`` (lessons for a task, citations) -> ``effect``
(outcomes, measured helpful/harmful). Extractors (``extract``: heuristic, llm) turn ops into
deltas; ``loop`` runs them on demand and on a schedule.
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
from agentlake.learn.llm_extractor import LLMExtractor
from agentlake.learn.loop import CycleReport, LearningScheduler, learn_cycle, learn_from_ops, read_recent_ops
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
from agentlake.learn.store import ImportReport, LessonStore

__all__ = [
    "AppliedDelta",
    "CycleReport",
    "Delta",
    "EffectReport",
    "ExtractContext",
    "Extractor",
    "HeuristicExtractor",
    "ImportReport",
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
    "learn_cycle",
    "learn_from_ops",
    "measure_effects",
    "read_recent_ops",
    "record_citation",
    "record_outcome",
    "register_extractor",
    "retrieve_lessons",
]
