"""The observer under hostile and careless clients (issue 17.5-17.7): values the store cannot hold
are refused with their event, never failing other clients' events in the same group commit;
every error, GET included, has the JSON shape; a 500 leaves a keep-alive connection usable."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from agentlake.observe import ObservedOp, Observer, OpStore, create_app
from agentlake.observe.service import running_service
from agentlake.settings import load_settings


@pytest.fixture
def observer(tmp_path: Path) -> Iterator[Observer]:
    with Observer(OpStore(tmp_path / "o.duckdb")) as obs:
        yield obs


@pytest.fixture
def client(observer: Observer) -> Iterator[TestClient]:
    with TestClient(create_app(observer, load_settings()), raise_server_exceptions=False) as test_client:
        yield test_client


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return response.json()["error"]


# --- 17.5: out-of-range values are refused with their own event --------------------------------


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"endpoint": "a", "labels": {"count": 2**70}}, "labels"),
        ({"endpoint": "a", "usage": {"input_tokens": 2**70}}, "usage.input_tokens"),
        ({"endpoint": "a", "usage": {"attempts": 2**31}}, "usage.attempts"),
        ({"endpoint": "a", "duration_ms": 1e400}, "duration_ms"),
    ],
)
def test_values_the_store_cannot_hold_are_refused(client: TestClient, event: dict, field: str) -> None:
    error = _error(client.post("/event", content=json.dumps(event).replace("Infinity", "1e400")), 400)
    assert field in [item["field"] for item in error["details"]["errors"]]


def test_a_poisoning_client_never_fails_other_clients_events(observer: Observer) -> None:
    settings = load_settings()
    poison = [
        {"endpoint": "bad", "labels": {"count": 2**70}},
        {"endpoint": "bad", "usage": {"input_tokens": 2**70}},
    ]
    statuses: dict[str, list[int]] = {"good": [], "bad": []}

    def send(url: str, kind: str, rounds: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as http:
            for n in range(rounds):
                if kind == "bad":
                    body = [poison[n % 2]]
                else:
                    body = [{"id": f"{threading.get_ident()}-{n}-{i}", "endpoint": "good"} for i in range(5)]
                statuses[kind].append(http.post("/events", json=body).status_code)

    with running_service(observer, settings) as url:
        threads = [threading.Thread(target=send, args=(url, "good", 40)) for _ in range(3)]
        threads.append(threading.Thread(target=send, args=(url, "bad", 120)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert set(statuses["good"]) == {200}
    assert set(statuses["bad"]) == {400}
    assert observer.stats().total == 3 * 40 * 5


def test_one_callers_op_that_fails_at_commit_fails_that_caller_alone(tmp_path: Path) -> None:
    # An op past validation that the INSERT still refuses (built with model_construct, as no
    # client can): the other callers sharing the group commit are stored.
    store = OpStore(tmp_path / "iso.duckdb")
    try:
        bad = ObservedOp(endpoint="bad")
        bad.__dict__["duration_ms"] = "slow"  # not a DOUBLE, past the model's check
        good = [store.submit([ObservedOp(id=f"g-{i}", endpoint="good")]) for i in range(5)]
        poisoned = store.submit([bad])
        more = [store.submit([ObservedOp(id=f"h-{i}", endpoint="good")]) for i in range(5)]
        for ticket in good + more:
            assert ticket.wait(10)[0].status == "stored"
        with pytest.raises(Exception, match="commit"):
            poisoned.wait(10)
        assert store.count(endpoint="good") == 10
    finally:
        store.close()


# --- 17.6: a stored non-finite number cannot break reads -------------------------------------


def test_non_finite_numbers_are_refused(client: TestClient) -> None:
    body = '{"endpoint": "llm.chat", "usage": {"cost_usd": Infinity}}'
    error = _error(client.post("/event", content=body), 400)
    assert "usage.cost_usd" in [item["field"] for item in error["details"]["errors"]]


def test_non_finite_attributes_are_stored_as_text(client: TestClient, observer: Observer) -> None:
    client.post("/event", content='{"id": "nan-1", "endpoint": "x", "attributes": {"score": NaN}}')
    listed = client.get("/ops")
    assert listed.status_code == 200
    assert listed.json()["ops"][0]["attributes"] == {"score": "nan"}


def test_rows_stored_before_the_rule_still_read(client: TestClient, observer: Observer) -> None:
    client.post(
        "/event", json={"id": "old-1", "endpoint": "llm.chat", "usage": {"cost_usd": 1.0, "input_tokens": 5}}
    )
    store = observer.sink
    store._conn.execute(
        "UPDATE ops SET cost_usd = 'Infinity'::DOUBLE, attributes = '{\"x\": NaN}' WHERE id = 'old-1'"
    )
    listed = client.get("/ops")
    assert listed.status_code == 200
    assert listed.json()["ops"][0]["usage"]["cost_usd"] is None


# --- 17.7: more 500s, and the error shape of GETs ---------------------------------------------


@pytest.mark.parametrize("ts", ["9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+14:00"])
def test_timestamps_outside_utc_range_are_refused(client: TestClient, ts: str) -> None:
    error = _error(client.post("/event", json={"endpoint": "a", "ts": ts}), 400)
    assert "ts" in [item["field"] for item in error["details"]["errors"]]


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"since": "0001-01-01T00:00:00+14:00"}, 400),
        ({"until": "9999-12-31T23:59:59-12:00"}, 400),
        ({"offset": "1000000000000000000000000000000"}, 422),
        ({"limit": "0"}, 422),
        ({"after_seq": str(2**63)}, 400),
    ],
)
def test_bad_reads_answer_the_json_error_shape(client: TestClient, params: dict, status: int) -> None:
    error = _error(client.get("/ops", params=params), status)
    assert error["status"] == status


def test_an_unexpected_failure_is_a_json_500_and_the_connection_stays_usable(
    observer: Observer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(observer, "query", broken)
    with running_service(observer, load_settings()) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            first = _exchange(sock, "/ops")
            second = _exchange(sock, "/health")
    assert first.startswith("HTTP/1.1 500")
    assert '"type":"internal_error"' in first.replace(" ", "")
    assert second.startswith("HTTP/1.1 200")


def _exchange(sock: socket.socket, path: str) -> str:
    """One keep-alive request on ``sock`` and its whole response (by Content-Length)."""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data.decode("latin-1")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return (head + b"\r\n\r\n" + body).decode("latin-1")


def test_a_batch_is_scrubbed_like_single_events_and_before_any_cap(
    client: TestClient, observer: Observer
) -> None:
    secret = "ghp_" + "a1B2" * 9
    batch = [{"id": f"c-{i}", "endpoint": "x"} for i in range(50)]
    batch.append({"id": "s-1", "endpoint": "x", "input_summary": "x" * 1995 + " " + secret})
    assert client.post("/events", json=batch).status_code == 200
    summaries = [op.input_summary for op in observer.query(endpoint="x", limit=100)]
    assert len(summaries) == 51
    assert not any("ghp_a1B2" in summary for summary in summaries)
