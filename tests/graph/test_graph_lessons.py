"""The graph's thinker learns like ``ask``: it is given the data lessons about the tables a
question is about, code writes the names a lesson corrects, and a turn that looked data up is
an answer the dashboard's buttons give feedback on.

A real lake and lesson store on disk, the scripted model; the lessons are added to the store
before the runtime opens it (read-only, as the CLI's graph does).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from graph_support import of_type, plan, step

from agentlake.graph import GraphRuntime
from agentlake.learn import LessonStore
from agentlake.learn.model import Delta, LessonDraft, LessonMatch
from agentlake.llm import ScriptedProvider
from agentlake.questions.domain import DOMAIN, TASK_KIND, DataAction
from agentlake.questions.feedback import Feedback, give_feedback
from agentlake.settings import load_settings

MakeRuntime = Callable[..., GraphRuntime]
PLAYBOOK_SQL = "SELECT count(*) AS n FROM workers WHERE state = 'TX'"


def _draft(action: DataAction, words: str, trigger: str) -> LessonDraft:
    return LessonDraft(
        trigger=trigger,
        action=words,
        match=LessonMatch(task_kind=TASK_KIND, fields={"dataset": "workers"}),
        machine=action,
        domain=DOMAIN,
        confidence=0.8,
        evidence_op_ids=["op-test"],
    )


@pytest.fixture
def lessons(lake_dir: Path) -> dict[str, str]:
    """A playbook and a rename about ``workers`` in the project's store; their ids by kind."""
    settings = load_settings(data_dir=lake_dir)
    drafts = {
        "playbook": _draft(
            DataAction(kind="playbook", question="How many workers live in TX?", sql=PLAYBOOK_SQL),
            f"This query answers it: {PLAYBOOK_SQL}",
            "Questions like 'How many workers live in TX?'",
        ),
        "rename": _draft(
            DataAction(kind="rename", wrong="worker", right="workers"),
            "The table worker does not exist: write workers",
            "Writing SQL over workers",
        ),
    }
    with LessonStore.open(settings, embedder=False) as store:
        applied = store.propose([Delta(op="ADD", lesson=draft) for draft in drafts.values()])
    return {kind: result.lesson_id for kind, result in zip(drafts, applied, strict=True)}  # type: ignore[misc]


def _chat(runtime: GraphRuntime, model: ScriptedProvider, query: str) -> list[dict[str, Any]]:
    model.enqueue(plan("count the workers in OH", "sql"))
    model.enqueue(step("", ("sql", {"query": query})))
    model.enqueue(step("There are some workers in OH."))
    _, sent = runtime.chat("How many workers live in OH?")
    return sent


def _answer(runtime: GraphRuntime) -> Any:
    (answer,) = runtime.resources.observer.query(endpoint="ask.answer")
    return answer


def test_the_thinker_is_shown_the_query_of_an_alike_question(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider, lessons: dict[str, str]
) -> None:
    runtime = make_runtime(data_dir=lake_dir)

    _chat(runtime, model, "SELECT count(*) AS n FROM workers WHERE state = 'OH'")

    thinker_first = "\n".join(m.content for m in model.history[1][0])
    assert PLAYBOOK_SQL in thinker_first


def test_what_lessons_say_reaches_the_thinker_fenced_as_data(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider, lessons: dict[str, str]
) -> None:
    runtime = make_runtime(data_dir=lake_dir)

    _chat(runtime, model, "SELECT count(*) AS n FROM workers WHERE state = 'OH'")

    fenced = re.findall(r"<data>(.*?)</data>", "\n".join(m.content for m in model.history[1][0]), re.DOTALL)
    assert any(PLAYBOOK_SQL in block for block in fenced)


def test_a_name_a_lesson_corrects_is_written_by_code_before_the_query_runs(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider, lessons: dict[str, str]
) -> None:
    runtime = make_runtime(data_dir=lake_dir)

    _chat(runtime, model, "SELECT count(*) AS n FROM worker WHERE state = 'OH'")

    assert _answer(runtime).attributes["sql"] == "SELECT count(*) AS n FROM workers WHERE state = 'OH'"


def test_the_answer_cites_the_lessons_its_query_used(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider, lessons: dict[str, str]
) -> None:
    runtime = make_runtime(data_dir=lake_dir)

    _chat(runtime, model, "SELECT count(*) AS n FROM worker WHERE state = 'OH'")

    assert set(_answer(runtime).attributes["lessons_cited"]) == {lessons["rename"], lessons["playbook"]}


def test_the_reply_carries_the_id_feedback_is_given_on(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    sent = _chat(runtime, model, "SELECT count(*) AS n FROM workers WHERE state = 'OH'")
    (done,) = of_type(sent, "done")

    recorded = give_feedback(
        Feedback(answer_id=done["answer_id"], right=True), observer=runtime.resources.observer
    )

    assert recorded.answer_id == _answer(runtime).id


def test_with_ask_lessons_off_the_thinker_is_given_none(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider, lessons: dict[str, str]
) -> None:
    runtime = make_runtime(data_dir=lake_dir, ask_lessons=False)

    _chat(runtime, model, "SELECT count(*) AS n FROM workers WHERE state = 'OH'")

    assert _answer(runtime).attributes["lessons_given"] == []


def test_small_talk_is_no_answer_to_give_feedback_on(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)

    _, sent = runtime.chat("Hi there!")

    assert "answer_id" not in of_type(sent, "done")[0]


def test_feedback_from_the_dashboard_is_recorded_for_the_learner(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    model.enqueue(plan("count the workers in OH", "sql"))
    model.enqueue(step("", ("sql", {"query": "SELECT count(*) AS n FROM workers WHERE state = 'OH'"})))
    model.enqueue(step("There are some workers in OH."))
    session, sent = runtime.chat("How many workers live in OH?")
    (done,) = of_type(sent, "done")
    replies: list[dict[str, Any]] = []

    runtime.handle(
        session,
        {"type": "feedback", "answer_id": done["answer_id"], "right": False, "expected": "7"},
        replies.append,
    )

    (feedback,) = runtime.resources.observer.query(endpoint="ask.feedback")
    assert (feedback.attributes["answer_id"], feedback.attributes["expected"]) == (done["answer_id"], "7")


def test_feedback_on_an_answer_of_another_conversation_is_refused(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    sent = _chat(runtime, model, "SELECT count(*) AS n FROM workers WHERE state = 'OH'")
    (done,) = of_type(sent, "done")
    replies: list[dict[str, Any]] = []

    runtime.handle(
        runtime.session(), {"type": "feedback", "answer_id": done["answer_id"], "right": True}, replies.append
    )

    assert replies == [{"type": "error", "message": f"no answer {done['answer_id']!r} in this conversation"}]
