"""Signing the dashboard in once API keys are configured, in-process: the page and its assets stay
open, a key is exchanged for an HttpOnly session cookie that reads, writes (with the key's scope)
and opens the WebSocket from the page's own origin, and the key never lands in a recorded op."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

MakeApp = Callable[..., tuple[TestClient, Any]]
KEYS = "rk-0123456789:read,wk-0123456789:write"
READ, WRITE = "rk-0123456789", "wk-0123456789"
SAME_ORIGIN = {"Origin": "http://testserver"}


def sign_in(client: TestClient, key: str) -> Any:
    return client.post("/api/session", json={"key": key}, headers=SAME_ORIGIN)


def test_the_page_and_its_assets_load_without_a_key_but_nothing_else_does(make_web_app: MakeApp) -> None:
    client, _ = make_web_app(keys=KEYS)
    page = client.get("/")
    assert page.status_code == 200
    assert 'id="signin"' in page.text
    assert client.get("/static/app.js").status_code == 200
    for path in ("/api/graphs", "/playbooks", "/observer/stats", "/docs", "/worker/1"):
        assert client.get(path).status_code == 401, path
    signed_out = client.get("/api/session")
    assert signed_out.status_code == 401
    assert "X-API-Key" in signed_out.json()["error"]["message"]


def test_a_key_is_exchanged_for_an_httponly_strict_cookie_that_is_not_the_key(make_web_app: MakeApp) -> None:
    client, _ = make_web_app(keys=KEYS)
    wrong = sign_in(client, "not-a-key")
    assert wrong.status_code == 401
    assert "set-cookie" not in wrong.headers

    response = sign_in(client, READ)
    assert response.status_code == 200
    assert response.json() == {
        "auth": True,
        "scope": "read",
        "key_id": response.json()["key_id"],
        "via": "session",
        "name": None,
    }
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("agentlake_session=")
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite", "path", "max-age"} <= attributes
    assert "SameSite=Strict" in cookie
    assert READ not in cookie  # the key itself never leaves the request
    assert response.headers["cache-control"] == "no-store"

    # The browser now reads with the cookie alone: the page's JSON, the observer, the lake.
    assert client.get("/api/session").json()["via"] == "session"
    assert client.get("/api/graphs").status_code == 200
    assert client.get("/observer/stats").status_code == 200
    assert client.get("/worker/1").json()["worker_id"] == 1


def test_the_session_has_the_keys_scope_and_refuses_other_origins(make_web_app: MakeApp) -> None:
    client, _ = make_web_app(keys=KEYS)
    sign_in(client, READ)
    switch = {"name": "minimal"}
    refused = client.put("/api/graphs/active", json=switch, headers=SAME_ORIGIN)
    assert refused.status_code == 403
    assert "scope 'write'" in refused.json()["error"]["message"]
    # The observer mounted under the gateway honours the session and its scope too.
    assert client.get("/observer/ops", params={"limit": 5}).status_code == 200
    assert client.post("/observer/event", json={"endpoint": "x"}, headers=SAME_ORIGIN).status_code == 403

    sign_in(client, WRITE)
    assert client.put("/api/graphs/active", json=switch, headers=SAME_ORIGIN).status_code == 200
    # A page on another origin (another port of this host is same-site, so SameSite alone would
    # let the cookie through) cannot change anything with the session.
    evil = {"Origin": "http://127.0.0.1:9999"}
    cross = client.put("/api/graphs/active", json=switch, headers=evil)
    assert cross.status_code == 403
    assert "cross-origin" in cross.json()["error"]["message"]
    assert client.post("/api/session", json={"key": WRITE}, headers=evil).status_code == 403
    # An API key is not ambient, so a key-carrying client needs no Origin check.
    assert (
        client.put("/api/graphs/active", json=switch, headers={"X-API-Key": WRITE, **evil}).status_code == 200
    )


def test_the_websocket_opens_with_the_session_from_the_same_origin_only(make_web_app: MakeApp) -> None:
    from starlette.websockets import WebSocketDisconnect

    client, _ = make_web_app(keys=KEYS)
    sign_in(client, READ)
    with client.websocket_connect("/ws", headers=SAME_ORIGIN) as ws:
        assert ws.receive_json()["type"] == "hello"
    with (
        pytest.raises(WebSocketDisconnect) as closed,
        client.websocket_connect("/ws", headers={"Origin": "http://evil.example"}) as ws,
    ):
        ws.receive_json()
    assert closed.value.code == 1008


def test_tampered_expired_and_revoked_sessions_are_refused(make_web_app: MakeApp, monkeypatch: Any) -> None:
    from agentlake.gateway import sessions

    client, _ = make_web_app(keys=KEYS)
    token = sign_in(client, READ).cookies["agentlake_session"]
    client.cookies.clear()

    def with_cookie(value: str) -> int:
        return client.get("/api/graphs", cookies={"agentlake_session": value}).status_code

    assert with_cookie(token) == 200
    assert with_cookie(token.replace(".read.", ".admin.")) == 401  # a scope cannot be raised
    assert with_cookie(token[:-4] + "0000") == 401
    assert with_cookie("garbage") == 401
    expired = sessions.mint(READ, token.split(".")[1], "read", now=time.time() - sessions.SESSION_TTL_S - 5)
    refused = client.get("/api/graphs", cookies={"agentlake_session": expired})
    assert refused.status_code == 401
    assert "sign in again" in refused.json()["error"]["message"]

    # Another gateway whose keys no longer include this one refuses its sessions.
    other, _ = make_web_app(keys="wk-0123456789:write")
    assert other.get("/api/graphs", cookies={"agentlake_session": token}).status_code == 401


def test_signing_out_removes_the_cookie(make_web_app: MakeApp) -> None:
    client, _ = make_web_app(keys=KEYS)
    sign_in(client, READ)
    response = client.delete("/api/session")
    assert response.status_code == 204
    assert "Max-Age=0" in response.headers["set-cookie"]
    assert client.get("/api/session").status_code == 401


def test_the_key_sent_to_sign_in_is_never_recorded(make_web_app: MakeApp) -> None:
    # Sign-ins are the dashboard's own requests: recorded only when asked for.
    client, app = make_web_app(keys=KEYS, observe_dashboard_requests=True)
    sign_in(client, "wrong-key-that-should-not-leak")
    sign_in(client, READ)
    client.get("/api/graphs")
    observer = app.state.services.observer
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        ops = observer.query(source="gateway", limit=100)
        if len([op for op in ops if op.endpoint == "POST /api/session"]) == 2 and any(
            op.endpoint == "GET /api/graphs" for op in ops
        ):
            break
        time.sleep(0.05)
    sign_ins = [op for op in ops if op.endpoint == "POST /api/session"]
    assert len(sign_ins) == 2
    assert [op.success for op in sign_ins].count(True) == 1
    for op in ops:
        text = f"{op.input_summary} {op.output_summary} {op.error}"
        assert READ not in text
        assert "wrong-key-that-should-not-leak" not in text
    assert all("[REDACTED]" in op.input_summary for op in sign_ins)
    reading = next(op for op in ops if op.endpoint == "GET /api/graphs")
    assert '"key": "key-' in reading.input_summary  # the session's key, by fingerprint


def test_an_open_gateway_needs_no_sign_in(make_web_app: MakeApp) -> None:
    client, _ = make_web_app()
    assert client.get("/api/session").json() == {
        "auth": False,
        "scope": "admin",
        "key_id": None,
        "via": "open",
        "name": None,
    }
    refused = client.post("/api/session", json={"key": "anything"})
    assert refused.status_code == 400
    assert "no sign-in is needed" in refused.json()["error"]["message"]


def test_a_named_keys_session_belongs_to_its_name_and_the_page_is_told(make_web_app: MakeApp) -> None:
    client, _ = make_web_app(keys="ak-0123456789:write:alice,bk-0123456789:read")
    assert sign_in(client, "ak-0123456789").json()["name"] == "alice"
    with client.websocket_connect("/ws", headers=SAME_ORIGIN) as ws:
        hello = ws.receive_json()
    assert hello["owner"] == "alice"
    # Resuming alice's session with her name's key continues it; an unnamed key gets its own.
    with client.websocket_connect(f"/ws?session={hello['session']}", headers=SAME_ORIGIN) as ws:
        assert ws.receive_json()["session"] == hello["session"]
    sign_in(client, "bk-0123456789")
    with client.websocket_connect(f"/ws?session={hello['session']}", headers=SAME_ORIGIN) as ws:
        other = ws.receive_json()
    assert other["session"] != hello["session"]
    assert other["owner"].startswith("key-")


def test_a_trusted_proxys_user_header_names_the_owner_only_when_configured(make_web_app: MakeApp) -> None:
    client, _ = make_web_app(trusted_user_header="X-Forwarded-User")
    with client.websocket_connect(
        "/ws", headers={**SAME_ORIGIN, "X-Forwarded-User": "carol@example.org"}
    ) as ws:
        assert ws.receive_json()["owner"] == "carol@example.org"
    with client.websocket_connect("/ws", headers={**SAME_ORIGIN, "X-Forwarded-User": "bad user; x"}) as ws:
        assert ws.receive_json()["owner"] is None  # not a user name: ignored


def test_without_the_setting_a_user_header_is_ignored(make_web_app: MakeApp) -> None:
    client, _ = make_web_app()
    with client.websocket_connect("/ws", headers={**SAME_ORIGIN, "X-Forwarded-User": "mallory"}) as ws:
        assert ws.receive_json()["owner"] is None
