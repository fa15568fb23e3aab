"""The gateway as users run it: `agentlake serve` in a real uvicorn subprocess, and MCP through the
official client library over streamable HTTP (against that server) and over stdio (`agentlake mcp`)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from gateway_support import AGENTLAKE, clean_env, free_port, running_server

pytestmark = pytest.mark.slow

KEYS = "srv-read-key-1:read,srv-write-key-1:write"
GRPC_PORT = free_port()


@pytest.fixture
def server(data_dir: Path, tmp_path: Path) -> Iterator[str]:
    """`agentlake serve` on a free loopback port, with keys; yields its base URL."""
    with running_server(
        data_dir, tmp_path / "serve.log", AGENTLAKE_API_KEYS=KEYS, AGENTLAKE_OTLP_GRPC_PORT=str(GRPC_PORT)
    ) as (url, _):
        yield url


def test_served_gateway_authenticates_and_answers(server: str) -> None:
    assert httpx.get(f"{server}/health").json()["auth"] is True
    assert httpx.get(f"{server}/worker/1").status_code == 401
    read = {"X-API-Key": "srv-read-key-1"}
    worker = httpx.get(f"{server}/worker/1", headers=read).json()
    assert worker["worker_id"] == 1
    forbidden = httpx.post(
        f"{server}/log",
        headers=read,
        json={"kind": "outcome", "run_id": "r", "task": {"task_kind": "fill"}, "success": True},
    )
    assert forbidden.status_code == 403
    assert forbidden.json()["error"]["type"] == "forbidden"
    assert forbidden.headers["content-type"] == "application/problem+json"
    assert forbidden.json()["type"] == "tag:agentlake,2026:problem/forbidden"
    spec = httpx.get(f"{server}/openapi.json", headers=read).json()
    assert {
        "/sql",
        "/search",
        "/match",
        "/worker/{worker_id}",
        "/ask",
        "/log",
        "/lessons",
        "/playbooks",
        "/profile/{worker_id}",
        "/models",
        "/health",
        "/tools",
        "/tools/{name}/call",
    } <= set(spec["paths"])


def test_served_gateway_receives_otlp_grpc(server: str) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(
            OTLPSpanExporter(
                endpoint=f"127.0.0.1:{GRPC_PORT}",
                insecure=True,
                headers={"x-api-key": "srv-write-key-1"},
                timeout=10,
            )
        )
    )
    with provider.get_tracer("grpc-client").start_as_current_span("execute_tool lookup") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", "lookup")
    provider.shutdown()
    ops = httpx.get(
        f"{server}/observer/ops", params={"source": "otlp"}, headers={"X-API-Key": "srv-read-key-1"}
    ).json()["ops"]
    assert [op["endpoint"] for op in ops] == ["tool.lookup"]


def test_serve_on_a_taken_port_says_so(data_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [AGENTLAKE, "serve", "--port", str(port)],
            env=clean_env(data_dir),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert "--port" in result.stderr


async def _mcp_session(url: str, key: str, scenario: Any) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"X-API-Key": key} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            return await scenario(client)


def test_mcp_over_http_lists_and_calls_tools_with_key_scopes(server: str) -> None:
    async def read_side(client: Any) -> Any:
        names = {tool.name for tool in (await client.list_tools()).tools}
        sql = await client.call_tool("sql", {"query": "SELECT count(*) AS n FROM workers"})
        profile = await client.call_tool("worker_profile", {"worker_id": 2})
        denied = await client.call_tool(
            "log_outcome", {"run_id": "r1", "task": {"task_kind": "fill"}, "success": True}
        )
        return names, sql, profile, denied

    names, sql, profile, denied = anyio.run(_mcp_session, server, "srv-read-key-1", read_side)
    assert {
        "sql",
        "get_worker",
        "hybrid_search",
        "search",
        "match",
        "worker_profile",
        "ask",
        "lessons",
        "log_outcome",
        "propose_lesson",
        "models",
    } <= names
    assert not sql.is_error
    assert sql.structured_content["data"] == [{"n": 600}]
    assert not profile.is_error
    assert profile.structured_content["worker"]["worker_id"] == 2
    assert denied.is_error
    assert "scope 'write'" in denied.content[0].text

    async def write_side(client: Any) -> Any:
        outcome = await client.call_tool(
            "log_outcome", {"run_id": "r1", "task": {"task_kind": "fill"}, "success": True}
        )
        lesson = {
            "trigger": "Welder fills",
            "action": "require OSHA 30",
            "confidence": 1.0,
            "source": "human",
        }
        proposed = await client.call_tool("propose_lesson", {"lesson": lesson})
        return outcome, proposed

    written, proposed = anyio.run(_mcp_session, server, "srv-write-key-1", write_side)
    assert not written.is_error
    assert written.structured_content["run_id"] == "r1"
    # Issue 17.1: a lesson proposed with a write key stays pending, even at confidence 1.0.
    lesson_id = proposed.structured_content["lesson_id"]
    shown = httpx.get(f"{server}/playbooks/{lesson_id}", headers={"X-API-Key": "srv-read-key-1"})
    assert shown.json()["lesson"]["status"] == "pending"


def test_mcp_over_http_without_a_valid_key_says_why(server: str) -> None:
    from mcp.shared.exceptions import MCPError

    async def list_tools(client: Any) -> Any:
        return await client.list_tools()

    def messages(error: BaseException) -> list[str]:
        # anyio's task groups deliver the client's MCPError inside an ExceptionGroup.
        if isinstance(error, BaseExceptionGroup):
            return [text for inner in error.exceptions for text in messages(inner)]
        return [str(error)] if isinstance(error, MCPError) else []

    failures = []
    for key in ("", "not-a-key"):
        with pytest.raises(BaseException) as refused:
            anyio.run(_mcp_session, server, key, list_tools)
        failures.append(" | ".join(messages(refused.value)))
    assert "API key is required" in failures[0]
    assert "unknown API key" in failures[1]


def test_unknown_well_known_paths_are_404_not_401(server: str) -> None:
    answer = httpx.get(f"{server}/.well-known/oauth-protected-resource")
    assert answer.status_code == 404


def test_mcp_over_stdio_answers_bad_calls_in_one_line_without_a_traceback(
    data_dir: Path, tmp_path: Path
) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=AGENTLAKE, args=["mcp"], env=clean_env(data_dir))
    calls = [("search", {"question": "welder", "k": -1}), ("match", {"where": "", "question": "x"})]

    async def scenario() -> Any:
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return [await client.call_tool(name, arguments) for name, arguments in calls]

    results = anyio.run(scenario)
    assert [result.is_error for result in results] == [True, True]
    assert ["\n" in result.content[0].text for result in results] == [False, False]
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_mcp_over_stdio(data_dir: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=AGENTLAKE, args=["mcp"], env=clean_env(data_dir))

    async def scenario() -> Any:
        async with Client(params) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            worker = await client.call_tool("get_worker", {"worker_id": 5})
            refused = await client.call_tool("sql", {"query": "DROP TABLE workers"})
            proposed = await client.call_tool(
                "propose_lesson",
                {
                    "lesson": {
                        "trigger": "Forklift fills in Ohio",
                        "action": "require a forklift certification",
                        "match": {"role": "Forklift Operator", "state": "OH"},
                    }
                },
            )
            resources = [str(r.uri) for r in (await client.list_resources()).resources]
            listing = await client.read_resource("agentlake://lessons")
            lesson_id = proposed.structured_content["lesson_id"]
            detail = await client.read_resource(f"agentlake://lessons/{lesson_id}")
            return names, worker, refused, proposed, resources, listing, detail

    names, worker, refused, proposed, resources, listing, detail = anyio.run(scenario)
    assert {"sql", "get_worker", "worker_profile", "ask", "lessons"} <= names
    assert not worker.is_error
    assert "worker_id=5" in worker.content[0].text
    assert refused.is_error
    assert "DROP" in refused.content[0].text
    assert not proposed.is_error
    assert proposed.structured_content["outcome"] == "added"
    assert sorted(resources) == ["agentlake://lessons", "agentlake://manual"]
    import json

    assert [lesson["trigger"] for lesson in json.loads(listing.contents[0].text)] == [
        "Forklift fills in Ohio"
    ]
    assert json.loads(detail.contents[0].text)["history"][0]["kind"] == "add"

    # Every MCP call was observed with source "mcp" in the data dir's store.
    from agentlake.observe import OpStore

    store = OpStore(data_dir / "observe.duckdb", read_only=True)
    try:
        endpoints = [op.endpoint for op in store.query(source="mcp", limit=50)]
    finally:
        store.close()
    assert {"mcp.get_worker", "mcp.sql", "mcp.propose_lesson"} <= set(endpoints)
