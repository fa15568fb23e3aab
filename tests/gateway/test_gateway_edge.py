"""One HTTP edge (issue 16.4): the gateway and the observer service render errors and check keys
through the same code, and each REST route and its MCP twin call one operation with one request
model (they had drifted: MCP lessons defaulted to 50). That embed imports no llm and observe no
gateway is tests/test_architecture.py's."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from agentlake.gateway.mcp_server import build_mcp_server
from agentlake.gateway.schemas import LessonQuery, SearchRequest
from agentlake.learn import LessonDraft, LessonMatch
from agentlake.observe import Observer, create_app
from agentlake.observe.sink import MemorySink
from agentlake.settings import load_settings

SRC = Path(__file__).resolve().parents[2] / "src" / "agentlake"
H = dict[str, dict[str, str]]


def test_no_second_error_renderer_or_key_parser_outside_the_edge() -> None:
    for package in ("gateway", "observe", "web"):
        for path in (SRC / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            defined = {
                node.name
                for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            assert not defined & {"error_response", "render_error", "read_body", "_authorize"}, path


@pytest.fixture
def observer_client() -> Any:
    settings = load_settings(api_keys="w-key:write,r-key:read")
    observer = Observer(MemorySink(), ring_size=100)
    with TestClient(create_app(observer, settings)) as client:
        yield client


@pytest.mark.parametrize(
    ("method", "gateway_path", "observer_path", "headers", "status"),
    [
        ("get", "/lessons", "/ops", {"X-API-Key": "nope"}, 401),
        ("get", "/lessons", "/ops", {}, 401),
        ("get", "/lessons?limit=0", "/ops?limit=0", "read", 422),
        ("get", "/nowhere", "/nowhere", "read", 404),
    ],
)
def test_gateway_and_observer_answer_errors_alike(
    gateway: Any,
    keys: H,
    observer_client: Any,
    method: str,
    gateway_path: str,
    observer_path: str,
    headers: Any,
    status: int,
) -> None:
    gateway_headers = keys[headers] if isinstance(headers, str) else headers
    observer_headers = {"X-API-Key": "r-key"} if isinstance(headers, str) else headers
    ours = getattr(gateway, method)(gateway_path, headers=gateway_headers)
    theirs = getattr(observer_client, method)(observer_path, headers=observer_headers)
    assert (ours.status_code, theirs.status_code) == (status, status)
    assert ours.json()["error"]["type"] == theirs.json()["error"]["type"]
    assert set(ours.json()["error"]) == set(theirs.json()["error"])
    assert (ours.json()["type"], set(ours.json())) == (theirs.json()["type"], set(theirs.json()))


def test_validation_errors_name_the_field_alike(gateway: Any, keys: H, observer_client: Any) -> None:
    ours = gateway.get("/lessons", params={"limit": 0}, headers=keys["read"]).json()["error"]["details"]
    theirs = observer_client.get("/ops", params={"limit": 0}, headers={"X-API-Key": "r-key"}).json()
    assert [e["field"] for e in ours["errors"]] == [e["field"] for e in theirs["error"]["details"]["errors"]]


def _call_mcp(services: Any, tool: str, arguments: dict[str, Any]) -> Any:
    async def run() -> Any:
        async with Client(build_mcp_server(services)) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(run)


def _tool_schema(services: Any, tool: str) -> dict[str, Any]:
    async def run() -> Any:
        async with Client(build_mcp_server(services)) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}[tool]

    return anyio.run(run)


def test_rest_and_mcp_lessons_share_defaults_bounds_and_filters(
    make_gateway: Any, keys: H, tmp_path: Path
) -> None:
    client, app = make_gateway()
    services = app.state.services
    for n in range(60):
        draft = LessonDraft(
            trigger=f"Welder fills, case {n}",
            action=f"prefer crew {n}",
            match=LessonMatch(role="Welder", city=f"Town{n}"),
            domain="staffing",
        )
        services.lessons.add(draft)
    rest = client.get("/lessons", headers=keys["read"]).json()
    mcp = _call_mcp(services, "lessons", {})
    assert len(mcp.structured_content["lessons"]) == len(rest["lessons"]) == 60
    assert _tool_schema(services, "lessons")["properties"] == LessonQuery.model_json_schema()["properties"]
    assert _call_mcp(services, "lessons", {"limit": 0}).is_error
    assert client.get("/lessons", params={"limit": 0}, headers=keys["read"]).status_code == 422
    by_tool = _call_mcp(services, "lessons", {"city": "Town7", "offset": 0})
    assert [lesson["match"]["fields"]["city"] for lesson in by_tool.structured_content["lessons"]] == [
        "Town7"
    ]


def test_rest_and_mcp_search_share_one_request_model(make_gateway: Any) -> None:
    _, app = make_gateway()
    schema = _tool_schema(app.state.services, "search")
    assert json.dumps(schema["properties"], sort_keys=True) == json.dumps(
        SearchRequest.model_json_schema()["properties"], sort_keys=True
    )


# --- RFC 9457 problem details -------------------------------------------------------------------


def test_an_error_is_a_problem_detail(gateway: Any, keys: H) -> None:
    answer = gateway.get("/lessons/L-nothere", headers=keys["read"])
    assert answer.headers["content-type"] == "application/problem+json"


def test_a_problem_names_its_kind_title_and_status(gateway: Any, keys: H) -> None:
    problem = gateway.get("/lessons/L-nothere", headers=keys["read"]).json()
    assert (problem["type"], problem["title"], problem["status"]) == (
        "tag:agentlake,2026:problem/not_found",
        "Not Found",
        404,
    )


def test_a_problems_detail_is_the_message_clients_read_before(gateway: Any, keys: H) -> None:
    problem = gateway.get("/lessons/L-nothere", headers=keys["read"]).json()
    assert "L-nothere" in problem["detail"]
    assert problem["error"]["message"] == problem["detail"]


def test_a_validation_problem_keeps_each_field_under_error_details(gateway: Any, keys: H) -> None:
    problem = gateway.get("/lessons", params={"limit": 0}, headers=keys["read"]).json()
    assert (problem["type"], problem["error"]["details"]["errors"][0]["field"]) == (
        "tag:agentlake,2026:problem/validation_error",
        "limit",
    )


def test_the_observer_answers_problems_too(observer_client: Any) -> None:
    answer = observer_client.get("/ops", params={"limit": -1}, headers={"X-API-Key": "r-key"})
    assert (answer.headers["content-type"], answer.json()["status"]) == ("application/problem+json", 422)


def test_openapi_documents_errors_as_problems(gateway: Any, keys: H) -> None:
    spec = gateway.get("/openapi.json", headers=keys["read"]).json()
    missing = spec["paths"]["/lessons/{lesson_id}"]["get"]["responses"]["404"]["content"]
    assert list(missing) == ["application/problem+json"]
