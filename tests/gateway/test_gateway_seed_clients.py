"""Clients of the system agentlake grew from keep working: its flat POST /event body, its free-text
POST /log note and GET /vram, over real HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from agentlake.llm import ScriptedProvider
from agentlake.llm.fakeserver import serve_fake_ollama
from agentlake.observe import Observer, OpStore
from agentlake.observe.service import running_service
from agentlake.settings import load_settings

FLAT = {
    "staffer_id": "st-2",
    "sig_hash": "9f2c41d07a6b3e58",
    "event_kind": "baseline_fill",
    "role": "Welder",
    "city": "Cleveland",
    "state": "OH",
    "count": 3,
    "rescue_attempted": True,
    "rescue_succeeded": False,
    "filled": 2,
}


@pytest.fixture
def observer(tmp_path: Path) -> Any:
    with Observer(OpStore(tmp_path / "o.duckdb")) as opened:
        yield opened


def test_a_flat_event_is_a_scenario_fill_with_its_fields_as_labels(observer: Observer) -> None:
    with running_service(observer, load_settings()) as url:
        answer = httpx.post(f"{url}/event", json=FLAT, timeout=5)
    assert answer.status_code == 200
    (op,) = observer.query()
    assert op.endpoint == "scenario:fill"
    assert op.source == "scenario"
    assert op.labels == {key: value for key, value in FLAT.items() if key != "filled"}
    assert op.attributes == {"filled": 2}  # nothing the client sent is lost


def test_the_reply_to_an_event_carries_the_ring_size(observer: Observer) -> None:
    with running_service(observer, load_settings()) as url:
        httpx.post(f"{url}/event", json=FLAT, timeout=5)
        second = httpx.post(f"{url}/event", json={**FLAT, "count": 1}, timeout=5).json()
    assert second["ring_size"] == 2


def test_a_flat_event_with_a_bad_value_is_a_400_naming_it(observer: Observer) -> None:
    with running_service(observer, load_settings()) as url:
        answer = httpx.post(f"{url}/event", json={**FLAT, "duration_ms": "slow"}, timeout=5)
    assert answer.status_code == 400
    assert "duration_ms" in answer.json()["error"]["message"]


NOTE = {
    "operation": "fill 3 x Welder for Riverfront Steel",
    "approach": "searched within 25 miles, OSHA 30 first",
    "result": "3/3 accepted",
    "context": "second shift",
}


def test_a_free_text_log_is_recorded_as_an_outcome_note(gateway: Any, keys: dict) -> None:
    answer = gateway.post("/log", json=NOTE, headers=keys["write"])
    body = answer.json()
    ops = gateway.get("/observer/ops", params={"endpoint": "note.outcome"}, headers=keys["read"]).json()[
        "ops"
    ]
    assert answer.status_code == 200
    assert body["kind"] == "note"
    assert [op["id"] for op in ops] == [body["op_id"]]
    assert ops[0]["output_summary"] == "3/3 accepted"
    assert ops[0]["attributes"]["note"]["context"] == "second shift"


def test_a_log_body_of_no_known_kind_says_what_it_may_be(gateway: Any, keys: dict) -> None:
    answer = gateway.post("/log", json={"whatever": 1}, headers=keys["write"])
    assert answer.status_code == 422
    assert "operation" in answer.json()["error"]["message"]


def test_vram_reports_what_ollama_has_loaded(make_gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentlake.llm import generate

    provider = ScriptedProvider("qwen3:4b")
    provider.enqueue("hello")
    with serve_fake_ollama(provider) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        generate("ollama:qwen3:4b", "hi", settings=load_settings())  # now it is loaded
        client, _ = make_gateway(keys=None)
        hosts = {host["host"]: host for host in client.get("/vram").json()["hosts"]}
    ollama = hosts[f"ollama {url}"]
    assert ollama["reachable"] is True
    assert [m["model"] for m in ollama["loaded"]] == ["ollama:qwen3:4b"]
    assert hosts["in process"]["process_rss_bytes"] > 0


def test_vram_says_when_ollama_cannot_be_reached(make_gateway: Any) -> None:
    client, _ = make_gateway(keys=None)
    (ollama,) = [host for host in client.get("/vram").json()["hosts"] if host["host"].startswith("ollama")]
    assert ollama["reachable"] is False
    assert "OLLAMA_HOST" in ollama["detail"]
