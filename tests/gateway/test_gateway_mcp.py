"""The MCP tools as a model sees them, through the official `mcp` client (in memory; stdio and
streamable HTTP against real processes are in test_gateway_server.py): every failure is
`isError` with one line, schemas carry the REST models' bounds and descriptions, annotations
say what each tool does."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from agentlake.gateway.mcp_server import build_mcp_server
from agentlake.gateway.schemas import (
    AskRequest,
    FillRequest,
    LessonQuery,
    LessonRef,
    LogLesson,
    LogOutcome,
    MatchRequest,
    SearchRequest,
    WorkerRef,
)
from agentlake.questions.feedback import Feedback

TWINS = {
    "search": SearchRequest,
    "match": MatchRequest,
    "worker_profile": WorkerRef,
    "ask": AskRequest,
    "feedback": Feedback,
    "fill": FillRequest,
    "lessons": LessonQuery,
    "lesson": LessonRef,
    "log_outcome": LogOutcome,
    "propose_lesson": LogLesson,
}
WRITERS = {"feedback", "fill", "log_outcome", "propose_lesson"}


@pytest.fixture
def services(make_gateway: Any) -> Any:
    _, app = make_gateway()
    return app.state.services


def _session(services: Any, scenario: Any) -> Any:
    async def run() -> Any:
        async with Client(build_mcp_server(services)) as client:
            return await scenario(client)

    return anyio.run(run)


@pytest.fixture
def tools(services: Any) -> dict[str, Any]:
    async def scenario(client: Any) -> Any:
        return {tool.name: tool for tool in (await client.list_tools()).tools}

    return _session(services, scenario)


BAD_CALLS = [
    ("search", {"question": "welder", "k": -1}, "k"),
    ("match", {"where": "", "question": "welder"}, "where"),
    ("match", {"where": "state = 'OH'", "question": "welder", "k": 100000}, "k"),
    ("lessons", {"limit": -1}, "limit"),
    ("lessons", {"status": ["nonsense"]}, "status"),
    ("log_outcome", {"run_id": "r1"}, "task"),
    ("propose_lesson", {"lesson": {}}, "lesson.trigger"),
    ("worker_profile", {"worker_id": "seven"}, "worker_id"),
    ("lesson", {"lesson_id": "../etc"}, "lesson_id"),
    ("fill", {"order": ""}, "order"),
    ("fill", {"order": "3 x Welder in Atlantis, ZZ"}, "Atlantis"),
    ("search", {"question": "welder", "surprise": 1}, "surprise"),
    ("sql", {"query": "DROP TABLE workers"}, "DROP"),
    ("get_worker", {"worker_id": 99999999}, "99999999"),
    ("match", {"where": "nonexistent_column = 1", "question": "welder"}, "nonexistent_column"),
]


@pytest.mark.parametrize(("tool", "arguments", "named"), BAD_CALLS, ids=[f"{t}-{n}" for t, _, n in BAD_CALLS])
def test_a_bad_call_is_an_error_result_of_one_line(
    services: Any, tool: str, arguments: dict, named: str
) -> None:
    async def scenario(client: Any) -> Any:
        return await client.call_tool(tool, arguments)

    result = _session(services, scenario)
    (content,) = result.content
    assert result.is_error
    assert "\n" not in content.text
    assert named in content.text
    assert "pydantic" not in content.text


def test_every_twin_tools_schema_is_its_rest_request_model(tools: dict[str, Any]) -> None:
    assert {name: tools[name].input_schema for name in TWINS} == {
        name: model.model_json_schema() for name, model in TWINS.items()
    }


def _undescribed(schema: dict[str, Any]) -> list[str]:
    missing = []
    for owner in [schema, *schema.get("$defs", {}).values()]:
        for name, prop in owner.get("properties", {}).items():
            if not prop.get("description"):
                missing.append(f"{owner.get('title')}.{name}")
    return missing


@pytest.mark.parametrize("name", sorted(TWINS))
def test_every_parameter_of_a_twin_tool_is_described(tools: dict[str, Any], name: str) -> None:
    assert _undescribed(tools[name].input_schema) == []


def test_bounds_reach_the_client(tools: dict[str, Any]) -> None:
    k = tools["search"].input_schema["properties"]["k"]
    assert (k["minimum"], k["maximum"]) == (1, 100)


def test_every_tool_is_annotated(tools: dict[str, Any]) -> None:
    assert [name for name, tool in tools.items() if tool.annotations is None] == []


def test_only_the_writers_are_not_read_only(tools: dict[str, Any]) -> None:
    assert {name for name, tool in tools.items() if not tool.annotations.read_only_hint} == WRITERS


def test_no_tool_is_destructive(tools: dict[str, Any]) -> None:
    assert [name for name, tool in tools.items() if tool.annotations.destructive_hint] == []


def test_only_tools_asking_model_servers_are_open_world(tools: dict[str, Any]) -> None:
    assert {name for name, tool in tools.items() if tool.annotations.open_world_hint} == {
        "ask",
        "fill",
        "models",
    }


def test_a_good_call_still_answers(services: Any) -> None:
    async def scenario(client: Any) -> Any:
        return await client.call_tool("lessons", {"limit": 5})

    result = _session(services, scenario)
    assert (result.is_error, result.structured_content["total"]) == (False, 0)


ORDER = "2 x Welder in Cleveland, OH for Riverfront Steel at 08:00 on 2026-04-22"


def test_the_fill_tool_fills_as_post_fill_does(make_gateway: Any, keys: Any) -> None:
    client, app = make_gateway()
    rest = client.post("/fill", json={"order": ORDER}, headers=keys["write"]).json()

    async def scenario(mcp: Any) -> Any:
        return await mcp.call_tool("fill", {"order": ORDER})

    result = _session(app.state.services, scenario)
    assert (result.is_error, result.structured_content["proposed"]) == (False, rest["proposed"])
