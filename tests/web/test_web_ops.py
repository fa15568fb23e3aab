"""What a dashboard visit leaves in the op log, through the real gateway in-process: the page's
own requests (page, assets, sign-in, the reads that draw it) leave nothing unless
``observe_dashboard_requests`` is on; its chat turns and a graph switch are recorded either way."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentlake.llm import ScriptedProvider, register_scripted
from agentlake.web.routes import DASHBOARD_OWN_REQUESTS

MakeApp = Callable[..., tuple[TestClient, Any]]


def visit(client: TestClient) -> None:
    """What the page's script asks for when it opens (static/index.html, app.js), then the
    scenarios tab."""
    assert client.get("/").status_code == 200
    for asset in ("app.js", "app.css"):
        assert client.get(f"/static/{asset}").status_code == 200
    assert client.head("/static/app.js").status_code == 200
    assert client.get("/api/session").status_code == 200
    assert client.get("/api/graphs").status_code == 200
    assert client.get("/api/graphs/active").status_code == 200
    assert client.get("/api/graphs/minimal").status_code == 200
    assert client.get("/api/scenarios/latest").status_code == 404  # no run yet: still the page's own


def chat(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        assert ws.receive_json()["type"] == "hello"
        ws.send_json({"type": "message", "text": "thank you"})
        for _ in range(200):
            if ws.receive_json()["type"] == "done":
                return
    raise AssertionError("the chat turn never ended")


def ops_after(client: TestClient, app: Any) -> list[Any]:
    """Every gateway and agent op, once the op of a marker request sent last has landed
    (a request's op is committed just after its response)."""
    assert client.get("/health").status_code == 200
    observer = app.state.services.observer
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ops = observer.query(limit=10_000)
        if any(op.endpoint == "GET /health" for op in ops):
            time.sleep(0.2)  # the ops of the requests before it, committed from other threads
            return observer.query(limit=10_000)
        time.sleep(0.05)
    raise AssertionError("the marker request's op never landed")


@pytest.fixture(autouse=True)
def _scripted_graph_model() -> None:
    register_scripted("dashboard-ops", ScriptedProvider("dashboard-ops"))


def test_a_dashboard_visit_leaves_no_op_but_its_chat_turn_and_graph_switch_do(make_web_app: MakeApp) -> None:
    client, app = make_web_app(graph_model="scripted:dashboard-ops")
    visit(client)
    chat(client)
    switched = client.put("/api/graphs/active", json={"name": "minimal"})
    assert switched.status_code == 200
    ops = ops_after(client, app)
    endpoints = [op.endpoint for op in ops]
    assert not set(endpoints) & DASHBOARD_OWN_REQUESTS, endpoints
    assert not [e for e in endpoints if "/static/" in e or "/api/session" in e or e == "GET /"]
    assert any(op.endpoint == "graph.turn" and op.source == "agent" for op in ops), "the chat turn"
    assert "PUT /api/graphs/active" in endpoints, "a graph switch changes what agents run"


def test_with_the_setting_on_the_dashboards_own_requests_are_recorded(make_web_app: MakeApp) -> None:
    client, app = make_web_app(graph_model="scripted:dashboard-ops", observe_dashboard_requests=True)
    visit(client)
    chat(client)
    endpoints = {op.endpoint for op in ops_after(client, app) if op.source == "gateway"}
    assert {
        "GET /",
        "GET /static/{name}",
        "HEAD /static/{name}",
        "GET /api/session",
        "GET /api/graphs",
        "GET /api/graphs/active",
        "GET /api/graphs/{name}",
        "GET /api/scenarios/latest",
    } <= endpoints
