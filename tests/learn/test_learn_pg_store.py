"""The lesson store in PostgreSQL: what only that backend has (the shared behaviour runs on both
backends in test_learn_store.py, test_learn_curation.py and test_learn_effect.py): its final
schema, several stores (as several processes) curating the same lessons at once, and bad input."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import psycopg
import pytest

from agentlake.errors import UserError
from agentlake.learn import Delta, LessonDraft, LessonMatch, LessonStore
from agentlake.learn.schema import PG_MIGRATIONS
from agentlake.learn.store import lesson_snapshot
from agentlake.settings import load_settings
from agentlake.workforce.learning import StaffingAction

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


def osha(op: str, confidence: float = 0.6) -> LessonDraft:
    return LessonDraft(
        domain="staffing",
        trigger="Filling any role for riverfront-steel",
        action="Only propose workers with OSHA 30 on file (site policy)",
        match=LessonMatch(client_id="riverfront-steel"),
        machine=StaffingAction(require_certifications=["OSHA 30"]),
        confidence=confidence,
        evidence_op_ids=[op],
    )


def test_final_schema_and_recorded_migrations(store: LessonStore, database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM agentlake_migrations WHERE store = 'lessons'")]
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
        }
    assert names == [m.name for m in PG_MIGRATIONS]
    assert {
        "lessons",
        "lesson_events",
        "citations",
        "outcomes",
        "effects",
        "learned_ops",
        "evidence",
    } <= tables


def test_a_lesson_written_by_one_process_is_read_by_another(open_store) -> None:
    first, second = open_store(), open_store()
    lesson_id = first.add(osha("op-1", confidence=0.9)).lesson_id
    assert [lesson.id for lesson in second.list()] == [lesson_id]
    second.retire(lesson_id, "site policy changed")
    assert first.get(lesson_id).status == "retired"


def test_concurrent_curation_of_the_same_lesson_loses_no_update(open_store) -> None:
    # Two stores = two writers with their own connections and no shared lock in Python: each
    # confirms the same lesson with its own evidence. The database serialises the curation.
    stores = [open_store(), open_store()]
    lesson_id = stores[0].add(osha("op-0")).lesson_id
    rounds = 15
    errors: list[BaseException] = []

    def confirm(k: int) -> None:
        try:
            for i in range(rounds):
                stores[k].propose([Delta(op="ADD", lesson=osha(f"op-{k}-{i}"))])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=confirm, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    lesson = stores[1].get(lesson_id)
    expected = {"op-0"} | {f"op-{k}-{i}" for k in range(2) for i in range(rounds)}
    assert set(lesson.evidence_op_ids) == expected
    assert lesson.version == 1 + 2 * rounds
    assert [e.version for e in stores[0].history(lesson_id)] == list(range(1, 2 * rounds + 2))


def test_a_schema_newer_than_the_code_is_refused(open_store, database_url: str) -> None:
    open_store().close()
    with psycopg.connect(database_url) as conn:
        conn.execute("INSERT INTO agentlake_migrations (store, name) VALUES ('lessons', '999_future')")
    with pytest.raises(UserError, match=r"lessons schema .* unknown to this agentlake version.*upgrade"):
        open_store()


def test_an_unreachable_url_is_one_line_exit_2_and_writes_nothing(
    cli,
    monkeypatch,
    tmp_path: Path,
    backend: str,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("AGENTLAKE_DATABASE_URL", f"postgresql://agentlake:secret@127.0.0.1:{port}/team")
    export = tmp_path / "lessons.json"
    export.write_text('{"format": "agentlake-lessons", "version": 1, "lessons": []}')
    result = cli("lessons", "import", str(export))
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert f"127.0.0.1:{port}/team" in result.err
    assert "AGENTLAKE_DATABASE_URL" in result.err
    # Nothing went to a local file instead.
    data_dir = load_settings().data_dir
    assert not (data_dir / "lessons.duckdb").exists()


def test_lessons_commands_read_the_database(cli, monkeypatch, store: LessonStore, database_url: str) -> None:
    lesson_id = store.add(osha("op-1", confidence=0.9)).lesson_id
    monkeypatch.setenv("AGENTLAKE_DATABASE_URL", database_url)
    result = cli("lessons", "list", "--format", "json")
    assert result.code == 0, result.output
    assert [row["id"] for row in json.loads(result.out)] == [lesson_id]


def test_a_scenario_days_private_copy_of_the_project_store_is_filled_from_the_database(
    store: LessonStore, settings
) -> None:
    lesson_id = store.add(osha("op-1", confidence=0.9)).lesson_id
    with lesson_snapshot(settings.data_dir / settings.learn_file, settings) as copy:
        assert copy is not None
        assert [lesson.id for lesson in copy.list()] == [lesson_id]
        copy.retire(lesson_id, "a day's own change")
    assert store.get(lesson_id).status == "active"  # the copy was private
