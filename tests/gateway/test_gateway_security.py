"""Keys and scopes, body size limits and the one error shape, as an HTTP client meets them."""

from __future__ import annotations

from typing import Any

import pytest

from agentlake.http.errors import problem_type


def assert_error(response: Any, status: int, kind: str) -> dict[str, Any]:
    """The RFC 9457 problem of ``response``; its ``error`` member (the earlier shape) returned."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert set(body) == {"type", "title", "status", "detail", "error"}
    assert (body["type"], body["status"]) == (problem_type(kind), status)
    error = body["error"]
    assert error["status"] == status
    assert error["type"] == kind
    assert isinstance(error["message"], str)
    assert error["message"]
    assert body["detail"] == error["message"]
    return error


def test_health_is_open_and_everything_else_needs_a_key(gateway: Any) -> None:
    assert gateway.get("/health").json()["auth"] is True
    for method, path in [
        ("get", "/worker/1"),
        ("get", "/openapi.json"),
        ("get", "/docs"),
        ("get", "/no/such/path"),
        ("get", "/tools"),
        ("get", "/observer/stats"),
    ]:
        response = getattr(gateway, method)(path)
        error = assert_error(response, 401, "unauthorized")
        assert "X-API-Key" in error["message"]
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_mcp_is_refused_as_a_json_rpc_error(gateway: Any) -> None:
    response = gateway.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 401
    assert "X-API-Key" in response.json()["error"]["message"]


def test_a_wrong_key_is_refused(gateway: Any) -> None:
    error = assert_error(gateway.get("/worker/1", headers={"X-API-Key": "nope"}), 401, "unauthorized")
    assert "unknown API key" in error["message"]
    assert_error(gateway.get("/worker/1", headers={"Authorization": "Bearer nope"}), 401, "unauthorized")


def test_read_key_reads_by_header_or_bearer(gateway: Any, keys: dict[str, dict[str, str]]) -> None:
    assert gateway.get("/worker/1", headers=keys["read"]).json()["worker_id"] == 1
    bearer = {"Authorization": "Bearer " + keys["read"]["X-API-Key"]}
    assert gateway.get("/worker/1", headers=bearer).status_code == 200


def test_write_needs_a_write_key(gateway: Any, keys: dict[str, dict[str, str]]) -> None:
    outcome = {"kind": "outcome", "run_id": "run-1", "task": {"task_kind": "fill"}, "success": True}
    error = assert_error(gateway.post("/log", json=outcome, headers=keys["read"]), 403, "forbidden")
    assert "'write'" in error["message"]
    assert "'read'" in error["message"]
    recorded = gateway.post("/log", json=outcome, headers=keys["write"]).json()
    assert {key: value for key, value in recorded.items() if key != "op_id"} == {
        "kind": "outcome",
        "run_id": "run-1",
        "outcome": None,
        "lesson_id": None,
        "version": None,
        "reason": "",
    }
    assert recorded["op_id"], "the outcome is recorded as an op, which the learner reads"
    assert gateway.post("/log", json=outcome, headers=keys["admin"]).status_code == 200


def test_curation_is_admin_only(gateway: Any, keys: dict[str, dict[str, str]]) -> None:
    draft = {
        "trigger": "Welder fills for riverfront-steel",
        "action": "require OSHA 30",
        "match": {"client_id": "riverfront-steel", "role": "Welder"},
        "machine": {"require_certifications": ["OSHA 30"]},
        "source": "human",
    }
    lesson_id = gateway.post("/log", json={"kind": "lesson", "lesson": draft}, headers=keys["write"]).json()[
        "lesson_id"
    ]
    retire = {"reason": "the client dropped the rule"}
    assert_error(
        gateway.post(f"/playbooks/{lesson_id}/retire", json=retire, headers=keys["write"]), 403, "forbidden"
    )
    assert (
        gateway.post(f"/playbooks/{lesson_id}/retire", json=retire, headers=keys["admin"]).json()["status"]
        == "retired"
    )


def test_observer_mount_writes_need_write_scope(gateway: Any, keys: dict[str, dict[str, str]]) -> None:
    event = {"endpoint": "external.check", "source": "external", "success": True}
    assert_error(gateway.post("/observer/event", json=event, headers=keys["read"]), 403, "forbidden")
    assert gateway.post("/observer/event", json=event, headers=keys["write"]).status_code == 200
    ops = gateway.get("/observer/ops", params={"endpoint": "external.check"}, headers=keys["read"]).json()
    assert len(ops["ops"]) == 1


def test_without_keys_the_gateway_is_open(make_gateway: Any) -> None:
    client, _ = make_gateway(keys=None)
    assert client.get("/health").json()["auth"] is False
    assert client.get("/worker/2").status_code == 200
    assert (
        client.post(
            "/log", json={"kind": "outcome", "run_id": "r", "task": {"task_kind": "fill"}, "success": False}
        ).status_code
        == 200
    )


def test_declared_oversized_body_is_refused_before_parsing(
    make_gateway: Any, keys: dict[str, dict[str, str]]
) -> None:
    client, _ = make_gateway(max_body_bytes=1000)
    body = '{"sql": "SELECT 1", "params": [' + ",".join(["1"] * 600) + "]}"
    error = assert_error(
        client.post("/sql", content=body, headers=keys["read"] | {"content-type": "application/json"}),
        413,
        "payload_too_large",
    )
    assert "1000 bytes" in error["message"]
    # Under the limit the same route works.
    assert client.post("/sql", json={"sql": "SELECT 1 AS one"}, headers=keys["read"]).json()["rows"] == [[1]]


def test_chunked_oversized_body_is_refused(make_gateway: Any, keys: dict[str, dict[str, str]]) -> None:
    client, _ = make_gateway(max_body_bytes=1000)

    def chunks() -> Any:  # no Content-Length: the limit is enforced while reading
        yield b'{"sql": "SELECT 1", "params": ['
        for _ in range(100):
            yield b"1,1,1,1,1,1,1,1,1,1,"
        yield b"1]}"

    response = client.post(
        "/sql", content=chunks(), headers=keys["read"] | {"content-type": "application/json"}
    )
    assert_error(response, 413, "payload_too_large")


@pytest.mark.parametrize(
    ("method", "path", "payload", "status", "kind", "words"),
    [
        ("get", "/no/such/path", None, 404, "not_found", "no endpoint"),
        ("get", "/sql", None, 405, "method_not_allowed", "GET is not allowed"),
        ("post", "/sql", {"query": "SELECT 1"}, 422, "validation_error", "body.sql"),
        ("post", "/sql", {"sql": "DROP TABLE workers"}, 400, "bad_request", "DROP"),
        ("post", "/sql", {"sql": "SELECT * FROM read_csv('/etc/passwd')"}, 400, "bad_request", "read_csv"),
        ("post", "/sql", {"sql": "SELECT nope FROM workers"}, 400, "bad_request", "nope"),
        ("get", "/worker/999999", None, 404, "not_found", "999999"),
        ("get", "/worker/abc", None, 422, "validation_error", "worker_id"),
        ("get", "/playbooks/L-missing", None, 404, "not_found", "L-missing"),
        ("post", "/tools/no_such_tool/call", {}, 404, "not_found", "known tools"),
    ],
)
def test_errors_have_one_shape_and_the_right_status(
    gateway: Any,
    keys: dict[str, dict[str, str]],
    method: str,
    path: str,
    payload: Any,
    status: int,
    kind: str,
    words: str,
) -> None:
    kwargs = {"json": payload} if payload is not None else {}
    error = assert_error(getattr(gateway, method)(path, headers=keys["read"], **kwargs), status, kind)
    assert words in error["message"]


def test_validation_errors_list_every_problem(gateway: Any, keys: dict[str, dict[str, str]]) -> None:
    error = assert_error(
        gateway.post("/sql", json={"sql": "", "max_rows": 0}, headers=keys["read"]), 422, "validation_error"
    )
    locations = {tuple(item["loc"]) for item in error["details"]["errors"]}
    assert locations == {("body", "sql"), ("body", "max_rows")}


def test_an_unexpected_failure_is_a_500_in_the_same_shape(
    make_gateway: Any, keys: dict[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, app = make_gateway()

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("agentlake.workforce.profile.worker_profile", broken)
    error = assert_error(client.get("/profile/1", headers=keys["read"]), 500, "internal_error")
    assert "ZeroDivisionError" in error["message"]
    assert "boom" not in error["message"]
