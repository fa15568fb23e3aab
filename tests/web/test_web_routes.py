"""The dashboard's doors on the gateway, in-process: the page and its local assets, the graph
API (list, show, switch, with key scopes), the latest scenario run, and the WebSocket protocol."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentlake.llm import ScriptedProvider, register_scripted

MakeApp = Callable[..., tuple[TestClient, Any]]
KEYS = "rk-0123456789:read,wk-0123456789:write"


def test_the_page_and_its_assets_are_served_locally(make_web_app: MakeApp) -> None:
    client, _ = make_web_app()
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert re.findall(r'(?:src|href)="([^"]+)"', page.text) == ["/static/app.css", "data:,", "/static/app.js"]
    bundle = client.get("/static/app.js")
    assert bundle.status_code == 200
    assert bundle.headers["content-type"].startswith("text/javascript")
    assert "cytoscape" in bundle.text.lower()
    assert len(bundle.text) > 100_000
    # Served from the package: nothing is fetched from a CDN at run time.
    for text in (page.text, bundle.text, client.get("/static/app.css").text):
        assert not re.search(r"(src|href)=[\"']https?://", text)
        assert not re.search(r"(cdn\.jsdelivr|unpkg\.com|cdnjs|googleapis)", text)
    assert client.get("/static/app.js.LEGAL.txt").status_code == 200  # cytoscape's licence notice


@pytest.mark.parametrize("name", ["missing.js", ".hidden.js", "..%2Fschemas.py", "schemas.py", "index.html"])
def test_only_the_static_directorys_assets_are_served(make_web_app: MakeApp, name: str) -> None:
    client, _ = make_web_app()
    response = client.get(f"/static/{name}")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found"


def test_graphs_are_listed_shown_and_switched(make_web_app: MakeApp) -> None:
    client, app = make_web_app()
    listed = client.get("/api/graphs").json()
    assert listed["active"] == "default"
    assert {(g["name"], g["nodes"], g["edges"]) for g in listed["graphs"]} >= {
        ("default", 7, 13),
        ("minimal", 4, 5),
    }
    active = client.get("/api/graphs/active").json()
    assert active["name"] == "default"
    assert active["active"] is True
    assert len(active["nodes"]) == 7
    assert len(active["edges"]) == 13
    assert {e["type"] for e in active["edges"]} == {"data", "context", "control"}
    switched = client.put("/api/graphs/active", json={"name": "minimal"})
    assert switched.status_code == 200
    assert switched.json()["name"] == "minimal"
    assert client.get("/api/graphs").json()["active"] == "minimal"
    assert app.state.graph_runtime.active.name == "minimal"
    assert client.get("/api/graphs/default").json()["active"] is False
    missing = client.put("/api/graphs/active", json={"name": "nope"})
    assert missing.status_code == 404
    assert "known graphs: default" in missing.json()["error"]["message"]
    assert client.get("/api/graphs/nope").status_code == 404
    assert client.put("/api/graphs/active", json={"name": "Bad Name!"}).status_code == 422


def test_switching_needs_a_write_key_once_keys_are_configured(make_web_app: MakeApp) -> None:
    client, _ = make_web_app(keys=KEYS)
    assert client.get("/api/graphs").status_code == 401
    assert client.get("/api/graphs", headers={"X-API-Key": "rk-0123456789"}).status_code == 200
    refused = client.put(
        "/api/graphs/active", json={"name": "minimal"}, headers={"X-API-Key": "rk-0123456789"}
    )
    assert refused.status_code == 403
    allowed = client.put(
        "/api/graphs/active", json={"name": "minimal"}, headers={"X-API-Key": "wk-0123456789"}
    )
    assert allowed.status_code == 200
    spec = client.get("/openapi.json", headers={"X-API-Key": "rk-0123456789"}).json()["paths"]
    assert spec["/api/graphs/active"]["put"]["x-required-scope"] == "write"
    assert spec["/api/graphs"]["get"]["x-required-scope"] == "read"
    assert "/" not in spec
    assert "/ws" not in spec


def test_the_latest_scenario_run_with_its_learning_curve(make_web_app: MakeApp, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    client, _ = make_web_app(runs_dir=runs)
    missing = client.get("/api/scenarios/latest")
    assert missing.status_code == 404
    assert "agentlake run" in missing.json()["error"]["message"]
    for run_id, gain in (("20261120-100000-aaaa", 0.1), ("20261121-090000-bbbb", 0.3)):
        (runs / run_id).mkdir(parents=True)
        board = {
            "run_id": run_id,
            "batches": [1, 2],
            "leaderboard": [
                {
                    "rank": 1,
                    "staffer": "rules-learning",
                    "score": 71.5,
                    "fill_rate": 0.8,
                    "pass_k": 0.6,
                    "precision": 0.9,
                    "gain_points": 100 * gain,
                    "events": 20,
                    "cost_usd": 0.0,
                }
            ],
            "learning_curve": {"rules-learning": [0.5, 0.5 + gain]},
        }
        (runs / run_id / "leaderboard.json").write_text(json.dumps(board))
    (runs / "20261122-000000-cccc").mkdir()  # a run still being written: no leaderboard yet
    latest = client.get("/api/scenarios/latest").json()
    assert latest["run_id"] == "20261121-090000-bbbb"
    assert latest["leaderboard"][0]["staffer"] == "rules-learning"
    assert latest["learning_curve"] == {"rules-learning": [0.5, 0.8]}
    assert latest["batches"] == [1, 2]
    assert latest["leaderboard"][0]["gain_points"] == 30.0


def _receive_until(ws: Any, kind: str, limit: int = 200) -> list[dict[str, Any]]:
    events = []
    for _ in range(limit):
        event = ws.receive_json()
        events.append(event)
        if event["type"] == kind:
            return events
    raise AssertionError(f"no {kind} event in {limit} events: {[e['type'] for e in events]}")


def test_the_websocket_streams_a_reply_then_done_and_broadcasts_the_trace(make_web_app: MakeApp) -> None:
    provider = ScriptedProvider("graph")
    register_scripted("graph", provider)
    client, _ = make_web_app(graph_model="scripted:graph")
    with client.websocket_connect("/ws") as ws, client.websocket_connect("/ws?trace=all") as watcher:
        hello = ws.receive_json()
        assert hello["type"] == "hello"
        assert hello["graph"]["name"] == "default"
        assert hello["model"] == "scripted:graph"
        assert re.match(r"^s-[0-9a-f]{12}$", hello["session"])
        assert watcher.receive_json()["type"] == "hello"

        ws.send_json({"type": "message", "text": "thank you"})
        events = _receive_until(ws, "done")
        chat = [e for e in events if e["type"] in ("delta", "done")]
        assert [e["type"] for e in chat][-1] == "done"
        assert chat[0]["type"] == "delta"
        assert "".join(e["text"] for e in chat[:-1]) == chat[-1]["text"] == "You're welcome."
        nodes = [e["node"] for e in events if e["type"] == "trace" and e["event"] == "start"]
        assert nodes[:3] == ["input", "sensor", "output"]
        # An admin's dashboard that asks for every session's trace sees them (the operator's HUD;
        # an open gateway's caller is an admin).
        watched = _receive_until(watcher, "trace")
        assert watched[-1]["session"] == hello["session"]

        provider.enqueue(json.dumps({"goal": "count", "steps": ["sql"], "tools": ["sql"]}))
        provider.enqueue(
            json.dumps(
                {
                    "say": "",
                    "tool_calls": [{"tool": "sql", "args": {"query": "SELECT count(*) AS n FROM workers"}}],
                }
            )
        )
        provider.enqueue(json.dumps({"say": "200 workers.", "tool_calls": []}))
        ws.send_json({"type": "message", "text": "how many workers are there?"})
        events = _receive_until(ws, "controls")
        assert [e for e in events if e["type"] == "done"][0]["text"] == "200 workers."
        assert events[-1]["controls"][0]["rows"] == [[200]]
        assert any(e["type"] == "hud" and e["node"] == "thinker" for e in events)


def test_the_dashboard_picks_the_embedded_model_when_none_is_configured(
    make_web_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentlake.llm import packaged

    monkeypatch.setattr(packaged, "installed", lambda model: model.name == "qwen2.5-coder-0.5b")
    client, _ = make_web_app(graph_model="", default_model="auto")
    with client.websocket_connect("/ws") as ws:
        hello = ws.receive_json()
        ws.send_json({"type": "message", "text": "thank you"})  # the reflex path: no model call
        events = _receive_until(ws, "done")
    assert hello["model"] == "local:qwen2.5-coder-0.5b"
    assert [e for e in events if e.get("flag") == "demo_model"] == []


def test_without_a_model_the_dashboard_runs_the_demo_and_says_so(
    make_web_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentlake.llm import packaged

    monkeypatch.setattr(packaged, "installed", lambda model: False)
    client, _ = make_web_app(graph_model="", default_model="auto")
    with client.websocket_connect("/ws") as ws:
        hello = ws.receive_json()
        note = ws.receive_json()
        ws.send_json({"type": "message", "text": "how many forklift operators are in CA?"})
        done = _receive_until(ws, "done")[-1]
    assert hello["model"] == "function:graph-demo"
    assert note["type"] == "hud"
    assert note["flag"] == "demo_model"
    assert "install an embedded model (`agentlake models install 0.5b`)" in note["message"]
    assert "(one read-only SQL query)" in done["text"]  # the demo answered


def test_a_reconnecting_browser_gets_its_session_back(make_web_app: MakeApp) -> None:
    client, app = make_web_app()
    with client.websocket_connect("/ws") as ws:
        session = ws.receive_json()["session"]
        ws.send_json({"type": "message", "text": "set up an order workflow"})  # the demo model builds it
        controls = _receive_until(ws, "controls")[-1]["controls"]
        assert [c["id"] for c in controls] == ["m-order-state", "m-order-go-packed"]
        ws.send_json({"type": "action", "action": "go:order:packed"})
        moved = _receive_until(ws, "controls")
        assert [e for e in moved if e["type"] == "transition"][0]["to"] == "packed"
    with client.websocket_connect(f"/ws?session={session}") as ws:
        hello = ws.receive_json()
        assert hello["session"] == session
        assert [c["text"] for c in hello["controls"] if c["kind"] == "label"] == ["order: packed"]
    with client.websocket_connect("/ws?session=not-a-session") as ws:
        assert ws.receive_json()["session"] != "not-a-session"


def test_the_websocket_answers_bad_frames_with_an_error(make_web_app: MakeApp) -> None:
    client, _ = make_web_app()
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_text("not json")
        assert "send JSON text frames" in ws.receive_json()["message"]
        ws.send_json({"type": "message", "text": "x" * 5000})
        error = ws.receive_json()
        assert error["type"] == "error"
        assert "bad event (message.text" in error["message"]


def test_the_websocket_is_refused_without_a_key_once_keys_are_configured(make_web_app: MakeApp) -> None:
    from starlette.websockets import WebSocketDisconnect

    client, _ = make_web_app(keys=KEYS)
    with pytest.raises(WebSocketDisconnect) as closed, client.websocket_connect("/ws") as ws:
        ws.receive_json()
    assert closed.value.code == 1008
    with client.websocket_connect("/ws", headers={"X-API-Key": "rk-0123456789"}) as ws:
        assert ws.receive_json()["type"] == "hello"


def _hello_and_trace(ws: Any) -> tuple[str, list[dict[str, Any]]]:
    session = ws.receive_json()["session"]
    ws.send_json({"type": "message", "text": "thank you"})
    return session, _receive_until(ws, "done")


def test_sessions_and_their_trace_belong_to_the_key_that_opened_them(make_web_app: MakeApp) -> None:
    # Issue 17.9: every /ws client with any read key received every other session's trace
    # events, and another key could continue a session by its id.
    client, _ = make_web_app(keys=KEYS + ",ak-0123456789:admin")
    read, write, admin = ({"X-API-Key": k} for k in ("rk-0123456789", "wk-0123456789", "ak-0123456789"))
    with client.websocket_connect("/ws", headers=read) as ws:
        session, events = _hello_and_trace(ws)
    assert {e["session"] for e in events if e["type"] == "trace"} == {session}
    with client.websocket_connect(f"/ws?session={session}", headers=write) as other:
        assert other.receive_json()["session"] != session
    with client.websocket_connect(f"/ws?session={session}", headers=read) as same:
        assert same.receive_json()["session"] == session


def test_trace_events_reach_only_their_own_session_unless_an_admin_asks(make_web_app: MakeApp) -> None:
    client, _ = make_web_app(keys=KEYS + ",ak-0123456789:admin")
    read, write, admin = ({"X-API-Key": k} for k in ("rk-0123456789", "wk-0123456789", "ak-0123456789"))
    with (
        client.websocket_connect("/ws?trace=all", headers=write) as nosy,
        client.websocket_connect("/ws?trace=all", headers=admin) as operator,
        client.websocket_connect("/ws", headers=read) as ws,
    ):
        nosy_session = nosy.receive_json()["session"]
        operator.receive_json()
        session, _ = _hello_and_trace(ws)
        seen = _receive_until(operator, "trace")
        nosy.send_json({"type": "message", "text": "thank you"})
        mine = _receive_until(nosy, "done")
    assert seen[-1]["session"] == session
    assert {e["session"] for e in mine if e["type"] == "trace"} == {nosy_session}
