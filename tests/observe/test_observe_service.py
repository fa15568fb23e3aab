"""The ingest service in-process (FastAPI TestClient): statuses, messages, nothing partially stored."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agentlake.observe import ObservedOp, Observer, OpStore, create_app
from agentlake.settings import load_settings


def _snapshot(observer: Observer) -> list[dict]:
    return [op.model_dump() for op in observer.query(limit=1000, order="asc")]


@pytest.fixture
def observer(tmp_path: Path) -> Iterator[Observer]:
    with Observer(OpStore(tmp_path / "o.duckdb")) as obs:
        obs.record_many([ObservedOp(id=f"seed-{i}", endpoint="tool.sql", source="agent") for i in range(3)])
        yield obs


@pytest.fixture
def client(observer: Observer) -> Iterator[TestClient]:
    with TestClient(create_app(observer, load_settings(max_body_bytes=4096))) as test_client:
        yield test_client


def test_post_event_is_stored_and_idempotent(client: TestClient, observer: Observer) -> None:
    answer = client.post(
        "/event", json={"id": "e-1", "endpoint": "tool.search", "source": "mcp", "duration_ms": 3.5}
    )
    assert answer.status_code == 200
    body = answer.json()
    assert {key: value for key, value in body.items() if key != "ring_size"} == {
        "id": "e-1",
        "accepted": True,
        "status": "stored",
        "duplicate": False,
    }
    assert body["ring_size"] >= 1  # ops in the live ring now (tests/gateway/test_gateway_seed_clients.py)
    assert observer.query(endpoint="tool.search")[0].duration_ms == 3.5
    again = client.post("/event", json={"id": "e-1", "endpoint": "tool.search"})
    assert again.status_code == 200
    assert again.json()["duplicate"] is True
    assert observer.stats().total == 4
    generated = client.post("/event", json={"endpoint": "x"}).json()
    assert generated["accepted"]
    assert observer.query(endpoint="x")[0].id == generated["id"]


def test_post_events_gives_a_result_per_item(client: TestClient, observer: Observer) -> None:
    batch = [
        {"id": "b-1", "endpoint": "a"},
        {"id": "seed-0", "endpoint": "a"},
        {"id": "b-2", "endpoint": "a", "success": False},
    ]
    answer = client.post("/events", json=batch)
    assert answer.status_code == 200
    body = answer.json()
    assert (body["accepted"], body["stored"], body["duplicates"]) == (3, 2, 1)
    assert [item["status"] for item in body["results"]] == ["stored", "duplicate", "stored"]
    wrapped = client.post("/events", json={"events": [{"id": "b-3", "endpoint": "a"}]})
    assert wrapped.status_code == 200
    assert wrapped.json()["results"][0]["id"] == "b-3"
    assert observer.stats().by_endpoint["a"] == 3


@pytest.mark.parametrize(
    ("path", "body", "status", "message", "field"),
    [
        ("/event", b'{"endpoint": "a",', 400, "malformed JSON", None),
        ("/events", b"not json", 400, "malformed JSON", None),
        (
            "/event",
            json.dumps({"endpoint": "a", "success": "perhaps", "duration_ms": "slow"}).encode(),
            400,
            "success",
            "success",
        ),
        ("/event", json.dumps({"source": "agent"}).encode(), 400, "endpoint: Field required", "endpoint"),
        ("/event", json.dumps({"endpoint": "a", "sauce": 1}).encode(), 400, "sauce", "sauce"),
        ("/event", json.dumps({"endpoint": "a", "source": "martians"}).encode(), 400, "source", "source"),
        (
            "/events",
            json.dumps(
                [{"id": "ok-1", "endpoint": "fine"}, {"id": "bad", "endpoint": "x", "duration_ms": -1}]
            ).encode(),
            400,
            "item 1: duration_ms",
            "duration_ms",
        ),
        ("/events", b"[]", 400, "empty", None),
        ("/events", json.dumps({"endpoint": "a"}).encode(), 400, "POST /event", "events"),
    ],
)
def test_bad_input_is_refused_with_field_messages_and_touches_nothing(
    client: TestClient,
    observer: Observer,
    path: str,
    body: bytes,
    status: int,
    message: str,
    field: str | None,
) -> None:
    before = _snapshot(observer)
    answer = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == status
    error = answer.json()["error"]
    assert error["status"] == status
    assert message in error["message"]
    if field is not None:
        assert field in {item["field"] for item in error["details"]["errors"]}
    assert _snapshot(observer) == before  # the valid item of a bad batch was not stored either


def test_oversized_bodies_are_refused_before_parsing(client: TestClient, observer: Observer) -> None:
    before = _snapshot(observer)
    big = json.dumps([{"endpoint": "a", "input_summary": "x" * 1000} for _ in range(10)]).encode()
    declared = client.post("/events", content=big, headers={"Content-Type": "application/json"})
    assert declared.status_code == 413
    assert "4096 bytes" in declared.json()["error"]["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: refused while streaming
        for start in range(0, len(big), 1000):
            yield big[start : start + 1000]

    streamed = client.post("/events", content=chunks(), headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413
    assert _snapshot(observer) == before


def test_api_keys_guard_writes_and_reads_but_not_health(observer: Observer) -> None:
    settings = load_settings(api_keys="w-key:write,r-key:read,a-key:admin")
    event = {"id": "k-1", "endpoint": "a"}
    with TestClient(create_app(observer, settings)) as client:
        before = _snapshot(observer)
        assert client.post("/event", json=event).status_code == 401
        wrong = client.post("/event", json=event, headers={"X-API-Key": "nope"})
        assert wrong.status_code == 401
        assert "unknown API key" in wrong.json()["error"]["message"]
        read_only = client.post("/event", json=event, headers={"Authorization": "Bearer r-key"})
        assert read_only.status_code == 403
        assert "'write'" in read_only.json()["error"]["message"]
        assert client.post("/v1/traces", json={}, headers={"X-API-Key": "r-key"}).status_code == 403
        assert _snapshot(observer) == before
        assert client.get("/ops").status_code == 401
        assert client.get("/stats", headers={"X-API-Key": "bad"}).status_code == 401
        assert client.get("/health").status_code == 200
        assert client.post("/event", json=event, headers={"X-API-Key": "w-key"}).status_code == 200
        assert (
            client.post(
                "/events", json=[{"endpoint": "b"}], headers={"Authorization": "Bearer a-key"}
            ).status_code
            == 200
        )
        listed = client.get("/ops", params={"endpoint": "a"}, headers={"X-API-Key": "r-key"})
        assert listed.status_code == 200
        assert [op["id"] for op in listed.json()["ops"]] == ["k-1"]


class _GatedStore(OpStore):
    def __init__(self, *args: object, **kwargs: object) -> None:
        self.gate = threading.Event()
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def _commit(self, batch):  # type: ignore[no-untyped-def]
        self.gate.wait(10)
        return super()._commit(batch)


def test_full_queue_answers_503_with_retry_after(tmp_path: Path) -> None:
    store = _GatedStore(tmp_path / "o.duckdb", queue_max=2)
    observer = Observer(store)
    try:
        with TestClient(create_app(observer, load_settings())) as client:
            held = store.submit([ObservedOp(id="h-1", endpoint="a"), ObservedOp(id="h-2", endpoint="a")])
            refused = client.post("/event", json={"id": "late", "endpoint": "a"})
            assert refused.status_code == 503
            assert refused.headers["Retry-After"] == "1"
            assert refused.json()["error"]["type"] == "unavailable"
            store.gate.set()
            held.wait(10)
            assert client.post("/event", json={"id": "late", "endpoint": "a"}).json()["status"] == "stored"
    finally:
        store.gate.set()
        observer.close()


def test_ops_filters_pagination_and_query_errors(client: TestClient) -> None:
    client.post(
        "/events",
        json=[
            {
                "id": f"r-{i}",
                "endpoint": "task.fill",
                "source": "scenario",
                "success": i != 2,
                "provenance": {"staffer_id": "st-1", "run_id": f"run-{i % 2}"},
            }
            for i in range(5)
        ],
    )
    page = client.get("/ops", params={"source": "scenario", "limit": 2}).json()
    assert [op["id"] for op in page["ops"]] == ["r-4", "r-3"]
    assert page["next_offset"] == 2
    rest = client.get("/ops", params={"source": "scenario", "limit": 2, "offset": 4}).json()
    assert [op["id"] for op in rest["ops"]] == ["r-0"]
    assert rest["next_offset"] is None
    failures = client.get("/ops", params={"success": "false"}).json()["ops"]
    assert [op["id"] for op in failures] == ["r-2"]
    run = client.get("/ops", params={"run_id": "run-1", "label": "staffer_id=st-1", "order": "asc"}).json()[
        "ops"
    ]
    assert [op["id"] for op in run] == ["r-1", "r-3"]
    assert (
        client.get("/ops", params={"since": "2000-01-01T00:00:00Z", "until": "2001-01-01"}).json()["ops"]
        == []
    )
    bad = client.get("/ops", params={"limit": 0, "success": "perhaps"})
    assert bad.status_code == 422  # the gateway's status and shape for a request the schema refuses
    assert {item["field"] for item in bad.json()["error"]["details"]["errors"]} == {"limit", "success"}


def test_stats_and_health(client: TestClient) -> None:
    client.post(
        "/events",
        json=[
            {"endpoint": "task.fill", "source": "scenario", "duration_ms": 10.0},
            {"endpoint": "task.fill", "source": "scenario", "duration_ms": 30.0, "success": False},
        ],
    )
    stats = client.get("/stats").json()
    assert (stats["total"], stats["successes"], stats["failures"]) == (5, 4, 1)
    assert stats["by_source"] == {"agent": 3, "scenario": 2}
    assert stats["by_endpoint"]["task.fill"] == 2
    assert stats["latency_p95_ms"] == pytest.approx(
        26.0
    )  # [0, 0, 0, 10, 30] at rank 3.8 and len(stats["recent_scenario"]) == 2
    health = client.get("/health").json()
    assert health["status"] == "ok"
    assert health["ring_depth"] == 5
    assert health["store_lag"]["queued_ops"] == 0


def test_unknown_routes_and_methods_use_the_error_shape(client: TestClient) -> None:
    missing = client.get("/nope")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found"
    wrong = client.get("/events")
    assert wrong.status_code == 405
    assert wrong.json()["error"]["status"] == 405


def test_ingest_routes_are_in_the_openapi_schema_and_work_under_a_mount(observer: Observer) -> None:
    from fastapi import FastAPI

    app = create_app(observer, load_settings())
    paths = app.openapi()["paths"]
    assert "post" in paths["/event"]
    assert "post" in paths["/events"]
    outer = FastAPI()
    outer.mount("/observer", app)
    with TestClient(outer) as mounted:
        answer = mounted.post("/observer/event", json={"id": "m-1", "endpoint": "tool.mounted"})
        assert answer.status_code == 200
        assert answer.json()["status"] == "stored"
        bad = mounted.post("/observer/events", content=b"[{]")
        assert bad.status_code == 400
        assert bad.json()["error"]["message"].startswith("malformed JSON")
    assert observer.query(endpoint="tool.mounted")[0].id == "m-1"
