"""No secret of the corpus is stored verbatim in any store (issues 17.8 and 30): every one is sent
through every door that stores text (observer events in every text field, OTLP span attributes,
lessons and their history, the gateway's own request ops), in process and to a real
`agentlake serve` on 127.0.0.1, then every table of every DuckDB file and every text file in
the data directory is read back."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import duckdb
import httpx
from gateway_support import running_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "observe"))
from secret_corpus import CLEAN, CORPUS

H = dict[str, dict[str, str]]


def _pieces(secret: str) -> list[str]:
    """What must not be found: the secret, and each whitespace-free piece of 8+ characters of it
    (a stored copy may have its newlines escaped)."""
    return [secret, *(piece for piece in secret.split() if len(piece) >= 8)]


def _otlp(text: str, n: int) -> dict[str, Any]:
    span = {
        "traceId": f"{n:032x}",
        "spanId": f"{n:016x}",
        "name": "tool call",
        "startTimeUnixNano": "1763712000000000000",
        "endTimeUnixNano": "1763712000250000000",
        "attributes": [
            {"key": "agentlake.run_id", "value": {"stringValue": text}},
            {"key": "http.request.header.authorization", "value": {"stringValue": text}},
            {"key": "note", "value": {"stringValue": text}},
        ],
    }
    return {
        "resourceSpans": [
            {"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "s"}, "spans": [span]}]}
        ]
    }


def _send_everywhere(client: Any, keys: H, n: int, text: str) -> None:
    short = text if len(text) <= 120 else text[:120]
    event = {
        "id": f"secret-{n}",
        "endpoint": f"tool.check {short}"[:250],
        "agent_id": short,
        "input_summary": text,
        "output_summary": text,
        "error": text,
        "success": False,
        "provenance": {"run_id": text, "staffer_id": text, "role": text, "city": text},
        "usage": {"model": text, "finish_reason": text},
        "attributes": {"note": text, "password": text, "nested": [{"header": text}]},
    }
    answer = client.post("/observer/event", json=event, headers=keys["write"])
    assert answer.status_code == 200, answer.text
    traced = client.post("/observer/v1/traces", json=_otlp(text, n + 1), headers=keys["write"])
    assert traced.status_code == 200, traced.text
    lesson = {
        "trigger": f"case {n}: {text}"[:300],
        "action": f"act {n} on {text}"[:500],
        "match": {"role": short, "client_id": short},
        "evidence_excerpts": [text],
        "source": "human",
    }
    proposed = client.post(
        "/log", json={"kind": "lesson", "lesson": lesson, "reason": text[:500]}, headers=keys["write"]
    )
    assert proposed.status_code == 200, proposed.text
    lesson_id = proposed.json()["lesson_id"]
    retired = client.post(
        f"/playbooks/{lesson_id}/retire", json={"reason": text[:500]}, headers=keys["admin"]
    )
    assert retired.status_code == 200, retired.text
    client.post("/sql", json={"sql": f"SELECT '{short.replace(chr(39), '')}' AS x"}, headers=keys["read"])


def _unless_vector(value: Any) -> Any:
    """An embedding holds no text, but its floats printed hold every run of digits sooner or later
    (a worker's resume vector printed '-0.0780511200428009', the corpus' SSN 078051120): left out."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(item, float) for item in value):
        return "<vector>"
    return value


def _stored_text(data_dir: Path) -> str:
    chunks: list[str] = []
    for path in sorted(data_dir.rglob("*")):
        if path.suffix == ".duckdb":
            with duckdb.connect(str(path), read_only=True) as conn:
                tables = conn.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()
                for schema, table in tables:
                    rows = [
                        [_unless_vector(value) for value in row]
                        for row in conn.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()
                    ]
                    chunks.append(json.dumps(rows, default=str, ensure_ascii=False))
                    chunks.append(repr(rows))
        elif path.is_file() and path.suffix in (".jsonl", ".json", ".log", ".txt"):
            chunks.append(path.read_text("utf-8", "replace"))
    return "\n".join(chunks)


def test_no_secret_of_the_corpus_is_stored_verbatim(make_gateway: Any, keys: H, data_dir: Path) -> None:
    # Five requests a row, several of them writes: the rate limits are another test's subject.
    client, _ = make_gateway(rate_limit_per_minute=0, rate_limit_write_per_minute=0)
    for n, (_, text, _) in enumerate(CORPUS):
        _send_everywhere(client, keys, n * 2, text)
    client.__exit__(None, None, None)  # close the stores so every commit is in the files
    app_services = client.app.state.services
    app_services.lessons.close()
    app_services.observer.close()
    stored = _stored_text(data_dir)
    assert "secret-0" in stored  # the events really were stored
    found = [name for name, _, secret in CORPUS if any(piece in stored for piece in _pieces(secret))]
    assert found == []


def _event(n: int, text: str) -> dict[str, Any]:
    short = text if len(text) <= 120 else text[:120]
    return {
        "id": f"served-{n}",
        "endpoint": f"tool.check {short}"[:250],
        "agent_id": short,
        "input_summary": text,
        "output_summary": text,
        "error": text,
        "success": False,
        "provenance": {"run_id": text, "staffer_id": text, "role": text, "city": text, "sig_hash": text},
        "usage": {"model": text, "finish_reason": text},
        "attributes": {"note": text, "nested": [{"header": text}], "password": text},
    }


def test_a_served_observer_stores_no_secret_and_every_ordinary_value(data_dir: Path, tmp_path: Path) -> None:
    """Each secret of the corpus, and each ordinary value, POSTed one by one to /observer/event of
    `agentlake serve` on 127.0.0.1 (keys on), then the files read back once the server stopped."""
    key = "served-secrets-write-1"
    with running_server(data_dir, tmp_path / "serve.log", AGENTLAKE_API_KEYS=f"{key}:write") as (url, _):
        with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=30) as client:
            for n, (_, text, _) in enumerate(CORPUS):
                answer = client.post("/observer/event", json=_event(n, text))
                assert answer.status_code == 200, answer.text
            for n, text in enumerate(CLEAN):
                answer = client.post("/observer/event", json={**_event(1000 + n, text), "attributes": {}})
                assert answer.status_code == 200, answer.text
    with duckdb.connect(str(data_dir / "observe.duckdb")) as conn:
        rows = dict(conn.execute("SELECT id, input_summary FROM ops WHERE id LIKE 'served-%'").fetchall())
        # The ordinary values are checked as they are, then left out of the search for secrets:
        # an embedding's float holds the corpus' SSN digits (-0.0780511200428009).
        conn.execute("DELETE FROM ops WHERE id LIKE 'served-1___'")
    assert [text for n, text in enumerate(CLEAN) if rows.get(f"served-{1000 + n}") != text] == []
    stored = _stored_text(data_dir)
    assert "served-0" in stored
    assert f"served-{len(CORPUS) - 1}" in stored
    found = [name for name, _, secret in CORPUS if any(piece in stored for piece in _pieces(secret))]
    assert found == []
