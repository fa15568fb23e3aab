"""Per-key rate limits at the gateway's edge (issue 30): a burst from one key meets 429 with
Retry-After after its limit while another key is served; write routes and routes that call a
model have stricter limits of their own (REST, graph chat on /ws, the MCP ask tool); the
observer's ingest is not counted; a negative limit is a settings error naming the setting."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_support import running_server

from agentlake.errors import UserError
from agentlake.gateway import limits as limits_module
from agentlake.gateway.limits import RateLimit, RateLimits
from agentlake.http.keys import KeyRing, fingerprint
from agentlake.observe import open_reader
from agentlake.settings import load_settings

H = dict[str, dict[str, str]]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_holds_a_minute_and_refills_continuously() -> None:
    clock = Clock()
    limits = RateLimits({"all": 60}, clock=clock)
    assert [limits.take("key-a", ("all",))[0] for _ in range(60)] == [0.0] * 60
    wait, empty = limits.take("key-a", ("all",))
    assert empty == "all"
    assert wait == pytest.approx(1.0)  # 60 a minute: one token a second
    assert limits.take("key-b", ("all",)) == (0.0, None)  # another caller has its own bucket
    clock.now += 1.0
    assert limits.take("key-a", ("all",)) == (0.0, None)
    assert limits.take("key-a", ("all",))[1] == "all"


def test_a_refused_request_takes_no_token_from_the_other_buckets() -> None:
    clock = Clock()
    limits = RateLimits({"all": 10, "model": 1}, clock=clock)
    assert limits.take("key-a", ("all", "model")) == (0.0, None)
    assert limits.take("key-a", ("all", "model"))[1] == "model"
    # nine reads still fit: the refused model call took nothing from the general bucket
    assert [limits.take("key-a", ("all",))[1] for _ in range(9)] == [None] * 9
    assert limits.take("key-a", ("all",))[1] == "all"


def test_a_limit_of_zero_is_no_limit() -> None:
    limits = RateLimits({"all": 0, "model": 0})
    assert not limits
    assert {limits.take("key-a", ("all", "model"))[1] for _ in range(1000)} == {None}


def test_the_error_names_the_setting_and_the_wait() -> None:
    limits = RateLimits({"all": 100, "write": 1}, clock=Clock())
    limits.charge("key-a", ("all", "write"), "POST /log")
    with pytest.raises(UserError) as refused:
        limits.charge("key-a", ("all", "write"), "POST /log")
    assert refused.value.http_status == 429
    assert refused.value.details == {"retry_after": 60}
    assert "rate_limit_write_per_minute" in refused.value.message


def test_idle_callers_are_forgotten() -> None:
    clock = Clock()
    limits = RateLimits({"all": 600}, clock=clock)
    for n in range(10_000):  # the most kept
        limits.take(f"client 10.0.{n // 256}.{n % 256}", ("all",))
    clock.now += 60  # all of them full again
    limits.take("key-late", ("all",))
    assert len(limits._buckets) == 1
    for n in range(10_001):  # none full: the oldest half goes
        limits.take(f"client 10.1.{n // 256}.{n % 256}", ("all",))
    assert len(limits._buckets) <= 5_002


@pytest.mark.parametrize(
    "name", ["rate_limit_per_minute", "rate_limit_write_per_minute", "rate_limit_model_per_minute"]
)
def test_a_negative_limit_is_a_settings_error_naming_it(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"AGENTLAKE_{name.upper()}", "-1")
    with pytest.raises(UserError, match=f"AGENTLAKE_{name.upper()}"):
        load_settings()
    monkeypatch.setenv(f"AGENTLAKE_{name.upper()}", "0")
    assert getattr(load_settings(), name) == 0


def test_a_burst_from_one_key_meets_its_limit_and_another_key_does_not(make_gateway: Any, keys: H) -> None:
    client, _ = make_gateway()
    started = time.monotonic()
    answers = [client.get("/tools", headers=keys["write"]) for _ in range(2000)]
    elapsed = time.monotonic() - started
    statuses = [answer.status_code for answer in answers]
    assert statuses[:600] == [200] * 600  # a minute's worth at once (rate_limit_per_minute=600)
    # then only what refilled meanwhile (10 a second)
    assert statuses.count(200) <= 600 + 10 * elapsed + 1
    refused = [answer for answer in answers if answer.status_code == 429]
    assert len(refused) >= 2000 - 600 - 10 * elapsed - 1
    assert {answer.headers["Retry-After"] for answer in refused} == {"1"}
    assert refused[0].json()["error"]["type"] == "rate_limited"
    assert "rate_limit_per_minute" in refused[0].json()["error"]["message"]
    # another key is served, and the observer's ingest is not counted for the limited key
    assert client.get("/tools", headers=keys["read"]).status_code == 200
    event = {"endpoint": "tool.check", "input_summary": "after the burst"}
    assert client.post("/observer/event", json=event, headers=keys["write"]).status_code == 200
    assert client.get("/health").status_code == 200


def test_writes_and_model_calls_have_stricter_limits(make_gateway: Any, keys: H) -> None:
    client, _ = make_gateway(rate_limit_write_per_minute=2, rate_limit_model_per_minute=2)
    outcome = {"kind": "outcome", "run_id": "r-1", "task": {"task_kind": "fill"}, "success": True}
    writes = [client.post("/log", json=outcome, headers=keys["write"]).status_code for _ in range(3)]
    assert writes == [200, 200, 429]
    asks = [
        client.post("/ask", json={"question": "how many welders?"}, headers=keys["read"]) for _ in range(3)
    ]
    assert [answer.status_code for answer in asks[:2]] == [503, 503]  # no model here: tried
    assert asks[2].status_code == 429
    assert "rate_limit_model_per_minute" in asks[2].json()["error"]["message"]
    # reads of the same keys are still served
    assert client.get("/tools", headers=keys["write"]).status_code == 200
    assert client.get("/tools", headers=keys["read"]).status_code == 200


def test_each_graph_chat_message_takes_a_model_token(make_gateway: Any, keys: H) -> None:
    client, _ = make_gateway(rate_limit_model_per_minute=1)
    with client.websocket_connect("/ws", headers=keys["read"]) as socket:
        assert socket.receive_json()["type"] == "hello"
        socket.send_json({"type": "message", "text": "how many welders in Cleveland?"})
        while (event := socket.receive_json())["type"] != "done":
            pass
        assert not event.get("error")
        socket.send_json({"type": "message", "text": "and in Akron?"})
        events = []
        while not events or events[-1]["type"] != "done":
            event = socket.receive_json()
            if event["type"] != "trace":
                events.append(event)
    assert events[0]["type"] == "error"
    assert "rate_limit_model_per_minute" in events[0]["message"]
    assert events[-1] == {"type": "done", "text": "", "error": "rate limited"}


def test_the_mcp_ask_tool_takes_a_model_token(make_gateway: Any, keys: H) -> None:
    client, _ = make_gateway(rate_limit_model_per_minute=1)
    headers = {**keys["read"], "Accept": "application/json, text/event-stream"}

    def ask() -> dict[str, Any]:
        call = {"name": "ask", "arguments": {"question": "how many welders?"}}
        answer = client.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, headers=headers
        )
        assert answer.status_code == 200, answer.text
        return answer.json()["result"]

    assert "rate_limit" not in ask()["content"][0]["text"]  # tried: no model here
    refused = ask()
    assert refused["isError"] is True
    assert "rate_limit_model_per_minute" in refused["content"][0]["text"]


def test_without_keys_each_client_address_is_a_caller(make_gateway: Any) -> None:
    client, _ = make_gateway(keys=None, rate_limit_per_minute=3)
    assert [client.get("/tools").status_code for _ in range(4)] == [200, 200, 200, 429]


def test_a_served_gateway_answers_429_with_retry_after(data_dir: Path, tmp_path: Path) -> None:
    served = {
        "AGENTLAKE_API_KEYS": "limited-read-1:read,other-admin-1:admin",
        "AGENTLAKE_RATE_LIMIT_PER_MINUTE": "5",
    }
    with running_server(data_dir, tmp_path / "serve.log", **served) as (url, _):
        with httpx.Client(base_url=url, timeout=30) as client:
            statuses = [
                client.get("/tools", headers={"X-API-Key": "limited-read-1"}).status_code for _ in range(7)
            ]
            refused = client.get("/tools", headers={"X-API-Key": "limited-read-1"})
            other = client.get("/tools", headers={"Authorization": "Bearer other-admin-1"})
    assert statuses == [200] * 5 + [429] * 2
    assert refused.status_code == 429
    assert 10 <= int(refused.headers["Retry-After"]) <= 12  # 5 a minute: a token every 12 s
    assert other.status_code == 200


def test_requests_the_key_check_refuses_are_not_charged(make_gateway: Any, keys: H) -> None:
    client, _ = make_gateway(rate_limit_per_minute=3)
    bad = [client.get("/tools", headers={"X-API-Key": "no-such-key-1"}).status_code for _ in range(5)]
    assert bad == [401] * 5  # answered by the key check, not the limit
    assert [client.get("/tools", headers=keys["read"]).status_code for _ in range(4)] == [200, 200, 200, 429]


def test_a_flood_of_429s_is_recorded_as_one_op_per_caller(
    make_gateway: Any, keys: H, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits_module, "REFUSALS_WINDOW_S", 0.3)
    client, app = make_gateway(rate_limit_per_minute=3)
    statuses = [client.get("/tools", headers=keys["read"]).status_code for _ in range(10)]
    statuses += [client.get("/worker/3", headers=keys["read"]).status_code]
    assert statuses == [200] * 3 + [429] * 8
    observer = app.state.services.observer
    deadline = time.monotonic() + 10
    while not any(op.endpoint == "gateway.rate_limited" for op in observer.recent(50)):
        assert time.monotonic() < deadline, "no rate_limited op within 10 s"
        time.sleep(0.05)
    ops = [op for op in observer.recent(50) if op.source == "gateway"]
    # the answered requests one op each; the 8 refused ones none of their own, but one together
    assert sorted(op.endpoint for op in ops) == ["GET /tools"] * 3 + ["gateway.rate_limited"]
    (refused,) = [op for op in ops if op.endpoint == "gateway.rate_limited"]
    assert not refused.success
    assert refused.error.startswith("429 x 8 in ")
    assert "rate_limit_per_minute" in refused.error
    assert json.loads(refused.input_summary) == {
        "caller": fingerprint(keys["read"]["X-API-Key"]),
        "requests": {"GET /tools": 7, "GET /worker/3": 1},
    }
    assert json.loads(refused.output_summary)["refused"] == 8
    # a later refusal opens a new tally
    assert client.get("/tools", headers=keys["read"]).status_code == 429
    while sum(op.endpoint == "gateway.rate_limited" for op in observer.recent(50)) < 2:
        assert time.monotonic() < deadline + 10, "no second rate_limited op"
        time.sleep(0.05)


def test_a_served_gateway_records_its_refusals_when_it_stops(data_dir: Path, tmp_path: Path) -> None:
    served = {"AGENTLAKE_API_KEYS": "limited-read-1:read", "AGENTLAKE_RATE_LIMIT_PER_MINUTE": "5"}
    with running_server(data_dir, tmp_path / "serve.log", **served) as (url, _):
        with httpx.Client(base_url=url, timeout=30, headers={"X-API-Key": "limited-read-1"}) as client:
            statuses = [client.get("/tools").status_code for _ in range(12)]
    assert statuses == [200] * 5 + [429] * 7
    # stopped within the window: the shutdown recorded the tally
    reader = open_reader(load_settings(data_dir=data_dir))
    try:
        (refused,) = reader.query(endpoint="gateway.rate_limited")
        answered = reader.query(endpoint="GET /tools")
    finally:
        reader.close()
    assert json.loads(refused.output_summary)["refused"] == 7
    assert json.loads(refused.input_summary)["requests"] == {"GET /tools": 7}
    assert [op.success for op in answered] == [True] * 5


# --- one key's requests take turns ----------------------------------------------------------


RING = KeyRing({"key-a": "read", "key-b": "read"})


def _scope(key: str, method: str = "GET", path: str = "/tools", accept: bytes = b"*/*") -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(b"accept", accept), (b"x-api-key", key.encode())],
    }


def _key(scope: dict[str, Any]) -> str:
    return dict(scope["headers"])[b"x-api-key"].decode()


def _entered(*requests: dict[str, Any], clock: Callable[[], float] = time.monotonic) -> list[str]:
    """Which ``requests`` the app saw, sent in order under rate_limit_concurrent=1, while the
    first (key-a's) was still in progress; each later one is given a moment to get in."""

    async def scenario() -> list[str]:
        entered: list[str] = []
        release = asyncio.Event()

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            entered.append(f"{_key(scope)} {scope['method']} {scope['path']}")
            if len(entered) == 1:
                await release.wait()

        middleware = RateLimit(app, RateLimits({"all": 600}, clock, concurrent=1), RING)
        tasks = []
        for request in requests:
            tasks.append(asyncio.create_task(middleware(request, None, None)))
            await asyncio.sleep(0.01)
        seen = list(entered)
        release.set()
        await asyncio.gather(*tasks)
        return seen

    return asyncio.run(scenario())


def test_a_caller_alone_runs_its_requests_at_once() -> None:
    assert _entered(_scope("key-a"), _scope("key-a")) == ["key-a GET /tools", "key-a GET /tools"]


def test_with_another_key_about_a_keys_second_request_waits_its_turn() -> None:
    entered = _entered(_scope("key-a"), _scope("key-b"), _scope("key-a"), _scope("key-b"))
    assert entered == ["key-a GET /tools", "key-b GET /tools", "key-b GET /tools"]


def test_a_request_arriving_as_another_ends_does_not_go_ahead_of_those_waiting() -> None:
    async def scenario() -> list[str]:
        turns = RateLimits({"all": 600}, concurrent=1).turns()
        turns.seen["key-b"] = time.monotonic()  # another key is about: key-a takes turns
        order: list[str] = []
        first_may_end = asyncio.Event()

        async def call(name: str, hold: asyncio.Event | None = None) -> None:
            order.append(name)
            if hold is not None:
                await hold.wait()

        first = asyncio.create_task(turns.run("key-a", lambda: call("a1", first_may_end)))
        await asyncio.sleep(0)
        second = asyncio.create_task(turns.run("key-a", lambda: call("a2")))
        await asyncio.sleep(0)  # a2 waits its turn
        first_may_end.set()
        # a3 arrives in the very step where a1 ends and hands its place to a2
        third = asyncio.create_task(turns.run("key-a", lambda: call("a3")))
        await asyncio.gather(first, second, third)
        return order

    assert asyncio.run(scenario()) == ["a1", "a2", "a3"]


def _yielding(hold_b1_s: float) -> list[str]:
    """key-a's a1 in progress and a2 waiting; key-b's b1 (no backlog) starts; a1 ends; b1 ends
    ``hold_b1_s`` later. What had started when a1 ended, and by the end."""

    async def scenario() -> list[str]:
        turns = RateLimits({"all": 600}, concurrent=1).turns()
        started: list[str] = []
        holds = {"a1": asyncio.Event(), "b1": asyncio.Event()}

        async def call(name: str) -> None:
            started.append(name)
            if name in holds:
                await holds[name].wait()

        a1 = asyncio.create_task(turns.run("key-a", lambda: call("a1")))
        await asyncio.sleep(0)
        b1 = asyncio.create_task(turns.run("key-b", lambda: call("b1")))
        await asyncio.sleep(0)
        a2 = asyncio.create_task(turns.run("key-a", lambda: call("a2")))
        await asyncio.sleep(0)
        holds["a1"].set()
        await asyncio.sleep(hold_b1_s)
        seen = [*started, "|"]
        holds["b1"].set()
        await asyncio.gather(a1, b1, a2)
        return seen + started[len(seen) - 1 :]

    return asyncio.run(scenario())


def test_a_key_with_a_backlog_yields_to_a_key_without() -> None:
    # a2 does not start beside b1: key-a has a backlog, key-b sends one request at a time
    assert _yielding(0.02) == ["a1", "b1", "|", "a2"]


def test_a_key_yields_at_most_yield_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits_module, "YIELD_S", 0.02)
    assert _yielding(0.2) == ["a1", "b1", "a2", "|"]


def test_a_model_call_of_the_same_key_takes_no_turn() -> None:
    entered = _entered(_scope("key-a"), _scope("key-b"), _scope("key-a", "POST", "/ask"))
    assert entered == ["key-a GET /tools", "key-b GET /tools", "key-a POST /ask"]


def test_a_stream_of_the_same_key_takes_no_turn() -> None:
    entered = _entered(
        _scope("key-a"), _scope("key-b"), _scope("key-a", path="/mcp", accept=b"text/event-stream")
    )
    assert entered == ["key-a GET /tools", "key-b GET /tools", "key-a GET /mcp"]


def test_a_caller_not_seen_for_a_second_is_forgotten() -> None:
    clock = Clock()

    async def scenario() -> bool:
        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            return None

        limits = RateLimits({"all": 600}, clock, concurrent=1)
        await RateLimit(app, limits, RING)(_scope("key-b"), None, None)
        clock.now += 1.5
        return limits.turns().contended(fingerprint("key-a"))

    assert asyncio.run(scenario()) is False
