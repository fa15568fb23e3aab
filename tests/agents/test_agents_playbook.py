"""The playbook boost: workers a client accepted before (its judged evidence in the lesson store)
rank first in the agents' candidate searches once the task has lessons about that client; each
hit names the lessons behind it. The rules policy and the LLM policy's find_workers use it."""

from __future__ import annotations

import pytest

from agentlake.agents import RulesPolicy
from agentlake.agents.tools import default_tools
from agentlake.learn import LessonDraft, LessonMatch, LessonStore
from agentlake.learn.evidence import EvidenceItem, JudgedOp
from agentlake.workforce.learning import StaffingAction

CLIENT = "riverfront-steel"


@pytest.fixture
def store(tmp_path):
    opened = LessonStore.open(path=tmp_path / "lessons.duckdb", embedder=False)
    yield opened
    opened.close()


def _client_knows(store: LessonStore, accepted: list[int], refused: list[int]) -> str:
    """A lesson about the client and its judged evidence: ``accepted`` taken, ``refused`` not."""
    lesson = store.add(
        LessonDraft(
            trigger=f"orders for {CLIENT}",
            action="keep spares",
            match=LessonMatch(client_id=CLIENT),
            machine=StaffingAction(min_candidate_buffer=3),
            domain="staffing",
        )
    )
    items = [
        EvidenceItem(
            "op-1", worker, CLIENT, "Warehouse Associate", worker in accepted, False, {"reliability": 0.5}
        )
        for worker in accepted + refused
    ]
    store.record_evidence([JudgedOp("op-1", CLIENT, "Warehouse Associate", {}, items)], project_id=None)
    return lesson.lesson_id


def test_the_rules_policy_ranks_a_worker_the_client_accepted_first(make_ctx, store, order, qualified) -> None:
    order = order.model_copy(update={"client_id": CLIENT})
    favourite = qualified[5]  # sixth by reliability: not proposed without the playbook
    lesson_id = _client_knows(store, accepted=[favourite], refused=[qualified[0]])

    outcome = RulesPolicy().run(order, make_ctx(lessons=store))

    assert outcome.proposed[0] == favourite
    search = next(record for record in outcome.transcript if record.kind == "search")
    assert f"{favourite} " in search.detail.split(";")[0]
    assert f"playbook {lesson_id}" in search.detail.split(";")[0]


def test_with_the_boost_off_lessons_only_filter(make_ctx, store, order, qualified) -> None:
    order = order.model_copy(update={"client_id": CLIENT})
    _client_knows(store, accepted=[qualified[5]], refused=[])
    ctx = make_ctx(lessons=store)
    ctx.settings = ctx.settings.model_copy(update={"playbook_boost": False})

    assert RulesPolicy().run(order, ctx).proposed == qualified[:3]


def test_a_refused_worker_after_an_acceptance_gets_no_boost(make_ctx, store, order, qualified) -> None:
    order = order.model_copy(update={"client_id": CLIENT})
    _client_knows(store, accepted=[qualified[5]], refused=[])
    # Judged again later and refused: the latest verdict wins.
    late = EvidenceItem(
        "op-2", qualified[5], CLIENT, "Warehouse Associate", False, False, {"reliability": 0.5}
    )
    store.record_evidence([JudgedOp("op-2", CLIENT, "Warehouse Associate", {}, [late])], project_id=None)

    assert RulesPolicy().run(order, make_ctx(lessons=store)).proposed == qualified[:3]


def test_find_workers_ranks_the_playbook_first_and_says_why(make_ctx, store, order, qualified) -> None:
    from agentlake.agents.lessons import lessons_for

    order = order.model_copy(update={"client_id": CLIENT})
    favourite = qualified[6]
    lesson_id = _client_knows(store, accepted=[favourite], refused=[])
    ctx = make_ctx(lessons=store)
    given = lessons_for(order, ctx)  # what the LLM policy does first, too
    assert given.playbook == {favourite: [lesson_id]}

    args = {"role": order.role, "city": order.city, "state": order.state, "limit": 5}
    result = default_tools().call("find_workers", args, ctx=ctx)

    assert result.data[0]["worker_id"] == favourite
    assert result.data[0]["lesson_ids"] == [lesson_id]
    assert "boost" not in result.data[1]
