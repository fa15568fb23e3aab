"""The lesson store: lifecycle transitions, history, rollback, export/import, schema."""

from __future__ import annotations

import json

import pytest

from agentlake.errors import NotFoundError, UserError
from agentlake.learn import Delta, LessonDraft, LessonMatch, LessonStore
from agentlake.learn.schema import MIGRATIONS
from agentlake.workforce.learning import StaffingAction, action_of

RIVERFRONT = LessonMatch(client_id="riverfront-steel")

# The same tests on both backends of the lesson store (tests/learn/conftest.py: backend).
pytestmark = pytest.mark.parametrize("backend", ["duckdb", "postgres"], indirect=True)


def osha(confidence: float = 0.8, op: str = "op-1", **extra: object) -> LessonDraft:
    return LessonDraft(
        trigger="Filling any role for riverfront-steel",
        action="Only propose workers with OSHA 30 on file (site policy)",
        match=RIVERFRONT,
        machine=StaffingAction(require_certifications=["OSHA 30"]),
        confidence=confidence,
        evidence_op_ids=[op],
        evidence_excerpts=["worker 9 rejected: no OSHA 30 on file; site policy"],
        **{"domain": "staffing", **extra},
    )


def reliability(value: float, confidence: float = 0.8, op: str = "op-r") -> LessonDraft:
    return LessonDraft(
        domain="staffing",
        trigger="Filling any role for riverfront-steel",
        action=f"Only propose workers with reliability >= {value}",
        match=RIVERFRONT,
        machine=StaffingAction(min_scores={"reliability": value}),
        confidence=confidence,
        evidence_op_ids=[op],
    )


def add(store: LessonStore, draft: LessonDraft) -> str:
    applied = store.propose([Delta(op="ADD", lesson=draft)])[0]
    assert applied.lesson_id is not None, applied
    return applied.lesson_id


def test_add_starts_pending_below_threshold_and_active_at_it(store: LessonStore) -> None:
    weak = add(store, osha(confidence=0.5))
    lesson = store.get(weak)
    assert (lesson.status, lesson.confidence, lesson.version) == ("pending", 0.5, 1)
    strong = store.add(reliability(0.7)).lesson_id
    assert store.get(strong).status == "active"
    assert [e.kind for e in store.history(weak)] == ["add"]


def test_confirmations_raise_confidence_and_activate_a_pending_lesson(store: LessonStore) -> None:
    lesson_id = add(store, osha(confidence=0.7, op="op-1"))
    assert store.propose([Delta(op="ADD", lesson=osha(confidence=0.7, op="op-2"))])[0].outcome == "confirmed"
    assert store.get(lesson_id).confidence == pytest.approx(0.75)
    assert store.get(lesson_id).status == "pending"
    store.propose([Delta(op="ADD", lesson=osha(confidence=0.7, op="op-3"))])
    lesson = store.get(lesson_id)
    assert (lesson.status, lesson.confidence) == ("active", pytest.approx(0.8))
    assert lesson.evidence_op_ids == ["op-1", "op-2", "op-3"]
    assert [e.kind for e in store.history(lesson_id)] == ["add", "confirm", "confirm"]


def test_the_same_ops_learned_twice_change_nothing(store: LessonStore) -> None:
    lesson_id = add(store, osha(confidence=0.6, op="op-1"))
    applied = store.propose([Delta(op="ADD", lesson=osha(confidence=0.6, op="op-1"))])[0]
    assert applied.outcome == "unchanged"
    assert store.get(lesson_id).confidence == 0.6
    assert store.get(lesson_id).version == 1


def test_contradicting_machine_values_put_both_on_hold_and_lower_both(store: LessonStore) -> None:
    first = add(store, reliability(0.7))
    applied = store.propose([Delta(op="ADD", lesson=reliability(0.8, op="op-r2"))])[0]
    assert applied.outcome == "contradiction"
    assert applied.related_ids == [first]
    for lesson_id in (first, applied.lesson_id):
        lesson = store.get(lesson_id)
        assert lesson.status == "conflict-hold"
        assert lesson.confidence == pytest.approx(0.7)
        assert store.history(lesson_id)[-1].kind == "contradict"
    assert "min_scores.reliability" in applied.reason


def test_compatible_lessons_for_the_same_client_coexist(store: LessonStore) -> None:
    a = add(store, osha())
    b = add(store, reliability(0.7))
    assert a != b
    assert {store.get(a).status, store.get(b).status} == {"active"}


def test_rollback_restores_content_as_a_new_version(store: LessonStore) -> None:
    first = add(store, reliability(0.7))
    store.propose([Delta(op="ADD", lesson=reliability(0.8, op="op-r2"))])
    assert store.get(first).status == "conflict-hold"
    restored = store.rollback(first, 1, reason="the client confirmed 0.7")
    assert (restored.status, restored.confidence, restored.version) == ("active", 0.8, 3)
    history = store.history(first)
    assert [e.kind for e in history] == ["add", "contradict", "rollback"]
    assert history[-1].data == {"to_version": 1, "from_version": 2}
    assert history[-1].reason == "the client confirmed 0.7"
    with pytest.raises(NotFoundError, match="versions are 1..3"):
        store.rollback(first, 9)
    with pytest.raises(NotFoundError):
        store.rollback("L-nothere", 1)


def test_edit_merge_and_retire_deltas(store: LessonStore) -> None:
    a = add(store, osha(confidence=0.6))
    b = add(store, reliability(0.7, confidence=0.7))
    edited = store.propose(
        [Delta(op="EDIT", target_id=a, changes={"action": "Require OSHA 30 for every worker"})]
    )[0]
    assert edited.outcome == "edited"
    assert store.get(a).action == "Require OSHA 30 for every worker"
    # an extractor may not set confidence; a person may
    refused = store.propose([Delta(op="EDIT", target_id=a, changes={"confidence": 1.0}, actor="llm")])[0]
    assert refused.outcome == "rejected"
    assert "confidence" in refused.reason
    merged = store.propose([Delta(op="MERGE", target_id=a, merge_ids=[b], reason="same client policy")])[0]
    assert merged.outcome == "merged"
    target = store.get(a)
    assert action_of(target) == StaffingAction(
        require_certifications=["OSHA 30"], min_scores={"reliability": 0.7}
    )
    assert target.confidence == pytest.approx(0.7)
    assert (store.get(b).status, store.get(b).merged_into) == ("retired", a)
    # re-observing the folded lesson confirms the survivor
    again = store.propose([Delta(op="ADD", lesson=reliability(0.7, op="op-new"))])[0]
    assert (again.outcome, again.lesson_id) == ("merged", a)
    assert store.get(a).evidence_op_ids[-1] == "op-new"
    retired = store.propose(
        [Delta(op="RETIRE", target_id=a, reason="client dropped the rule", actor="human")]
    )[0]
    assert retired.outcome == "retired"
    assert store.get(a).status == "retired"
    assert store.propose([Delta(op="RETIRE", target_id="L-nothere")])[0].outcome == "rejected"


def test_invalid_delta_is_rejected_and_the_rest_applied(store: LessonStore) -> None:
    bad_where = {
        "trigger": "x",
        "action": "y",
        "domain": "staffing",
        "machine": {"extra_where": "1=1; DROP TABLE workers"},
    }
    with pytest.raises(ValueError, match="extra_where"):
        LessonDraft.model_validate(bad_where)
    results = store.propose(
        [
            Delta(op="ADD", lesson=osha()),
            Delta(op="EDIT", target_id="L-missing", changes={"action": "z"}),
            Delta(op="EDIT", target_id=None or "L-x", changes={"trigger": ""}),
        ]
    )
    assert [r.outcome for r in results] == ["added", "rejected", "rejected"]
    assert len(store.list()) == 1


def test_extra_where_that_passes_the_guard_is_kept(store: LessonStore) -> None:
    draft = osha()
    draft.machine = StaffingAction(extra_where="reliability >= 0.7 AND state = 'OH'")
    lesson = store.get(store.add(draft).lesson_id)
    assert lesson.machine is not None
    assert action_of(lesson).extra_where == "reliability >= 0.7 AND state = 'OH'"


def test_lessons_survive_reopen_and_read_only_refuses_writes(open_store, settings) -> None:
    store = open_store()
    lesson_id = add(store, osha())
    store.close()
    reader = open_store(read_only=True)
    assert reader.get(lesson_id).trigger == "Filling any role for riverfront-steel"
    assert [e.kind for e in reader.history(lesson_id)] == ["add"]
    with pytest.raises(UserError, match="read-only"):
        reader.add(osha(op="op-9"))


def test_read_only_open_of_a_missing_store_says_what_to_do(tmp_path, settings, duckdb_only) -> None:
    with pytest.raises(UserError, match="agentlake lessons learn"):
        LessonStore.open(settings, path=tmp_path / "none.duckdb", read_only=True)


def test_export_import_round_trip(open_store, tmp_path) -> None:
    source = open_store()
    add(source, osha())
    add(source, reliability(0.7, confidence=0.5))
    exported = json.loads(source.export_json())
    target = open_store(path=tmp_path / "other.duckdb")
    report = target.import_json(json.dumps(exported))
    assert sorted(report.added) == sorted(lesson["id"] for lesson in exported["lessons"])
    again = json.loads(target.export_json())

    def content(doc: dict) -> list[dict]:
        return [
            {k: v for k, v in lesson.items() if k not in ("version", "updated_at", "status_since")}
            for lesson in doc["lessons"]
        ]

    assert content(again) == content(exported)
    # importing the same export again keeps everything (equal confidence: the local one stays)
    assert sorted(target.import_json(json.dumps(exported)).kept) == sorted(report.added)


def test_import_keeps_higher_confidence_and_project_beats_global(open_store, tmp_path) -> None:
    store = open_store()
    lesson_id = add(store, osha(confidence=0.6))
    doc = json.loads(store.export_json())
    higher = json.loads(json.dumps(doc))
    higher["lessons"][0]["confidence"] = 0.9
    assert store.import_json(json.dumps(higher)).replaced == [lesson_id]
    assert store.get(lesson_id).confidence == 0.9
    lower = json.loads(json.dumps(doc))
    assert store.import_json(json.dumps(lower)).kept == [lesson_id]
    as_global = json.loads(json.dumps(doc))
    as_global["lessons"][0].update(scope="global", project_id=None, confidence=1.0)
    assert store.import_json(json.dumps(as_global)).kept == [lesson_id], (
        "a global copy never beats the project lesson"
    )
    assert store.get(lesson_id).scope == "project"
    # and the other way round: a project lesson replaces a global one with the same id
    other = open_store(path=tmp_path / "g.duckdb")
    other.import_json(json.dumps(as_global))
    assert other.import_json(json.dumps(lower)).replaced == [lesson_id]
    assert other.get(lesson_id).scope == "project"
    assert [e.kind for e in other.history(lesson_id)] == ["add", "edit"]


def test_bad_import_writes_nothing(store: LessonStore) -> None:
    add(store, osha())
    doc = json.loads(store.export_json())
    doc["lessons"].append({**doc["lessons"][0], "id": "L-second"})
    doc["lessons"].append({**doc["lessons"][0], "id": "L-third", "confidence": 7})
    events = store.count_events()
    with pytest.raises(UserError, match=r"lesson #2 .*confidence"):
        store.import_json(json.dumps(doc))
    assert store.count_events() == events
    with pytest.raises(NotFoundError):
        store.get("L-second")
    with pytest.raises(UserError, match="not a lesson export"):
        store.import_json('{"lessons": []}')
    with pytest.raises(UserError, match="invalid JSON"):
        store.import_json("{nope")


def test_list_filters(store: LessonStore) -> None:
    a = add(store, osha())
    b = add(store, reliability(0.7, confidence=0.5))
    assert [lesson.id for lesson in store.list(status="active")] == [a]
    assert [lesson.id for lesson in store.list(status=["pending"])] == [b]
    assert {lesson.id for lesson in store.list(client_id="Riverfront-Steel")} == {a, b}
    assert store.list(client_id="acme-foods") == []
    assert store.list(dataset="orders") == [], "a key field no lesson pins matches none"
    with pytest.raises(UserError, match="invalid match filter"):
        store.list(**{"Client ID": "x"})


def test_final_schema(store: LessonStore, duckdb_only: None) -> None:
    tables = {
        name: [col for col, *_ in store.query(f"DESCRIBE {name}")]
        for (name,) in store.query("SELECT table_name FROM information_schema.tables ORDER BY table_name")
    }
    assert tables == {
        "_migrations": ["name", "applied_at"],
        "citations": ["run_id", "lesson_id", "agent_id", "sig_hash", "given_at", "used"],
        "effects": ["lesson_id", "run_id", "delta", "verdict", "measured_at"],
        "learn_cursor": ["source", "seq", "updated_at"],
        "evidence": ["op_id", "item_id", "accepted", "explained", "said", "item_values"],
        "evidence_ops": ["op_id", "project_id", "scope", "shape", "features", "recorded_at", "rules_stated"],
        "learned_ops": ["op_id", "learned_at"],
        "lesson_events": [
            "seq",
            "lesson_id",
            "version",
            "kind",
            "event_at",
            "actor",
            "reason",
            "data",
            "snapshot",
        ],
        "lessons": [
            "id",
            "status",
            "domain",
            "scope",
            "project_id",
            "confidence",
            "task_kind",
            "role",
            "client_id",
            "city",
            "state",
            "tool",
            "source",
            "version",
            "updated_at",
            "last_used_at",
            "body",
            "match_fields",
        ],
        "outcomes": ["run_id", "sig_hash", "task", "success", "score", "recorded_at"],
    }
    assert [name for (name,) in store.query("SELECT name FROM _migrations")] == [m.name for m in MIGRATIONS]


def test_a_second_writer_process_gets_a_clear_error(store: LessonStore, duckdb_only: None) -> None:
    import subprocess
    import sys

    probe = (
        "import sys\nfrom pathlib import Path\nfrom agentlake.learn import LessonStore\nfrom agentlake.errors import UserError\n"
        "try:\n LessonStore.open(path=Path(sys.argv[1]), embedder=False)\nexcept UserError as e:\n print(e.message)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(store.path)], capture_output=True, text=True, timeout=60
    )
    assert "open in another process" in out.stdout, out.stderr


def test_a_person_may_release_a_held_lesson_an_extractor_may_not(store: LessonStore) -> None:
    first = add(store, reliability(0.7))
    store.propose([Delta(op="ADD", lesson=reliability(0.8, op="op-r2"))])
    refused = store.propose(
        [Delta(op="EDIT", target_id=first, changes={"status": "active"}, actor="heuristic")]
    )[0]
    assert refused.outcome == "rejected"
    assert store.get(first).status == "conflict-hold"
    released = store.propose(
        [
            Delta(
                op="EDIT",
                target_id=first,
                changes={"status": "active"},
                actor="human",
                reason="client confirmed 0.7",
            )
        ]
    )[0]
    assert released.outcome == "edited"
    assert store.get(first).status == "active"
    assert store.history(first)[-1].actor == "human"
    no_retire = store.propose(
        [Delta(op="EDIT", target_id=first, changes={"status": "retired"}, actor="human")]
    )[0]
    assert no_retire.outcome == "rejected"
    assert "RETIRE" in no_retire.reason


def test_a_transaction_restored_to_its_savepoint_writes_nothing_of_the_undone_part(
    store: LessonStore,
) -> None:
    kept = add(store, osha(confidence=0.6))
    events = store.count_events()
    with store.transaction() as txn:
        point = txn.savepoint()
        lesson = txn.get(kept)
        assert lesson is not None
        txn.record("confirm", lesson.model_copy(update={"confidence": 0.9}), actor="human")
        txn.record("add", lesson.model_copy(update={"id": "L-temporary"}), actor="human")
        txn.restore(point)
        assert txn.get("L-temporary") is None
        assert txn.get(kept).confidence == 0.6  # type: ignore[union-attr]
    assert store.count_events() == events
    assert store.get(kept).version == 1
    with pytest.raises(NotFoundError):
        store.get("L-temporary")
