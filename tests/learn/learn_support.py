"""What the learning-loop tests share: a run given the lessons retrieval chooses for its task.

Retrieval is a read; a run's ops state what it was given and the learner records it. These
helpers do the learner's part directly for tests of measurement and decay.
"""

from __future__ import annotations

from agentlake.learn import LessonStore, TaskKey, retrieve_lessons


def give(store: LessonStore, task: TaskKey, run_id: str, **retrieval: object) -> list[str]:
    """Retrieve the lessons for ``task`` and record them as given to ``run_id`` (as the
    learner does from the run's op); returns their ids."""
    ids = retrieve_lessons(store, task, semantic=False, **retrieval).ids  # type: ignore[arg-type]
    if ids:
        store.record_citations(run_id, ids, used=False)
    return ids
