"""The op store in PostgreSQL: what only that backend has (the shared behaviour is tested on both
backends in test_observe_store.py): its final schema, several stores on one database, and bad
input (an unreachable URL, a schema written by a newer agentlake)."""

from __future__ import annotations

import json
import socket

import psycopg
import pytest

from agentlake.errors import UserError
from agentlake.observe import ObservedOp, Observer
from agentlake.observe.pg_store import MIGRATIONS, PgOpStore


def _op(i: int) -> ObservedOp:
    return ObservedOp(id=f"op-{i:05d}", endpoint="tool.sql", source="agent", duration_ms=float(i))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_final_schema_and_recorded_migrations(database_url: str) -> None:
    PgOpStore(database_url).close()
    with psycopg.connect(database_url) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM agentlake_migrations WHERE store = 'ops'")]
        columns = [
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'ops' "
                "ORDER BY ordinal_position"
            )
        ]
    assert names == [m.name for m in MIGRATIONS]
    assert columns[:3] == ["id", "seq", "ts"]
    assert {"staffer_id", "run_id", "llm_model", "input_tokens", "attributes", "stored_at"} <= set(columns)


def test_two_stores_on_one_database_store_each_id_once(database_url: str) -> None:
    with PgOpStore(database_url) as first, PgOpStore(database_url) as second:
        assert [r.status for r in first.append([_op(1), _op(2)])] == ["stored", "stored"]
        assert [r.status for r in second.append([_op(2), _op(3)])] == ["duplicate", "stored"]
        assert first.count() == 3
        seqs = [op.id for op in second.query(order="asc")]
    assert seqs == ["op-00001", "op-00002", "op-00003"]


def test_a_reader_of_a_database_without_the_schema_is_told_so(database_url: str) -> None:
    with pytest.raises(UserError, match="no observer store in PostgreSQL"):
        PgOpStore(database_url, read_only=True)


def test_a_schema_newer_than_the_code_is_refused_and_left_alone(database_url: str) -> None:
    PgOpStore(database_url).close()
    with psycopg.connect(database_url) as conn:
        conn.execute("INSERT INTO agentlake_migrations (store, name) VALUES ('ops', '9999_future')")
    with pytest.raises(UserError, match=r"unknown to this agentlake version.*upgrade agentlake"):
        PgOpStore(database_url)
    with psycopg.connect(database_url) as conn:
        count = conn.execute("SELECT count(*) FROM agentlake_migrations WHERE store = 'ops'").fetchone()[0]
    assert count == len(MIGRATIONS) + 1


def test_an_unreachable_url_is_one_line_naming_host_and_setting_exit_2(cli, monkeypatch) -> None:
    port = _closed_port()
    monkeypatch.setenv("AGENTLAKE_DATABASE_URL", f"postgresql://someone:hunter2@127.0.0.1:{port}/lake")
    result = cli("ops", "stats")
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert f"127.0.0.1:{port}/lake" in result.err
    assert "AGENTLAKE_DATABASE_URL" in result.err
    assert "hunter2" not in result.err


def test_an_observers_stats_count_every_writers_ops(database_url: str) -> None:
    with Observer(PgOpStore(database_url)) as first, Observer(PgOpStore(database_url)) as second:
        first.record_many([_op(1)])
        second.record_many([_op(2), _op(3)])
        assert first.stats().total == 3
        assert first.health()["sink"] == "postgres"


def test_ops_commands_read_the_database(cli, monkeypatch, database_url: str) -> None:
    with PgOpStore(database_url) as store:
        store.append([_op(i) for i in range(3)])
    monkeypatch.setenv("AGENTLAKE_DATABASE_URL", database_url)
    result = cli("ops", "stats", "--format", "json")
    assert result.code == 0, result.output
    assert json.loads(result.out)["total"] == 3


def test_a_writer_waits_for_an_earlier_writers_commit_so_seq_orders_commits(database_url: str) -> None:
    import threading

    from agentlake.observe.pg_store import SEQ_LOCK

    with PgOpStore(database_url) as store, psycopg.connect(database_url) as holder:
        store.append([_op(1)])
        with holder.transaction():
            # Another writer in the middle of its commit holds the lock.
            holder.execute("SELECT pg_advisory_xact_lock(%s)", [SEQ_LOCK])
            done = threading.Event()
            writer = threading.Thread(target=lambda: (store.append([_op(2)]), done.set()))
            writer.start()
            waited = not done.wait(1.0)
        writer.join(10)

    assert (waited, done.is_set()) == (True, True)
