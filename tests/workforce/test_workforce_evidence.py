"""The evidence a judged fill carries: a worker of another role than the ordered one says so."""

from __future__ import annotations

from datetime import UTC, datetime

from agentlake.learn import LessonStore, learn_cycle
from agentlake.observe.model import ObservedOp
from agentlake.workforce.evidence import judged_evidence
from agentlake.workforce.facts import WorkerFacts
from agentlake.workforce.learning import action_of

SITE = (32.814, -96.949)  # Irving, TX


def facts(worker_id: int, role: str) -> WorkerFacts:
    return WorkerFacts(
        worker_id=worker_id, role=role, lat=32.82, lon=-96.95, certifications=(), reliability=0.9
    )


def evidence(role_of_2: str) -> dict:
    return judged_evidence(
        scope="las-colinas-distribution",
        shape="Material Handler in Irving, TX",
        submitted=[1, 2],
        accepted={1, 2},
        facts={1: facts(1, "Material Handler"), 2: facts(2, role_of_2)},
        site=SITE,
        no_shows={},
        role="Material Handler",
    )


def test_a_worker_of_another_role_carries_it_and_the_ordered_role() -> None:
    items = {item["id"]: item["values"] for item in evidence("Warehouse Associate")["items"]}
    assert "role" not in items[1]
    assert (items[2]["role"], items[2]["ordered_role"]) == ("Warehouse Associate", "Material Handler")


def test_a_catalogue_synonym_is_the_ordered_role() -> None:
    # A Forklift Driver is a Forklift Operator by the catalogue: nothing for a client to teach.
    found = judged_evidence(
        scope="x",
        shape="Forklift Operator in Irving, TX",
        submitted=[3],
        accepted={3},
        facts={3: facts(3, "forklift driver")},
        site=SITE,
        no_shows={},
        role="Forklift Operator",
    )
    assert "role" not in found["items"][0]["values"]


def test_the_learner_reads_the_clients_synonym_off_a_silent_acceptance(tmp_path) -> None:
    judged = evidence("Warehouse Associate")
    op = ObservedOp(
        id="op-1",
        ts=datetime(2026, 4, 27, 6, 30, tzinfo=UTC),
        endpoint="fill.judged",
        source="scenario",
        success=True,
        attributes={"client_id": judged["scope"], "accepted": [1, 2], "refused": [], "judged": judged},
    )
    with LessonStore.open(path=tmp_path / "lessons.duckdb", embedder=False) as store:
        learn_cycle(store, [op], extractor="induction", measure=False)
        (lesson,) = store.list(source="induction")
        assert action_of(lesson).accept_roles == ["Warehouse Associate"]
        assert lesson.match.get("role") == "Material Handler"
