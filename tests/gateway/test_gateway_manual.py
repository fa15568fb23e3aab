"""The agents' manual as an MCP client meets it (the official `mcp` client, in memory): the rules
in the server's instructions, the whole manual as a resource, docs/agents.md quoting it, and the
tools whose own descriptions back a rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from agentlake.gateway.manual import MANUAL, MANUAL_URI, RULES
from agentlake.gateway.mcp_server import build_mcp_server

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


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
def descriptions(services: Any) -> dict[str, str]:
    async def scenario(client: Any) -> Any:
        return {tool.name: tool.description for tool in (await client.list_tools()).tools}

    return _session(services, scenario)


def test_every_rule_is_in_the_instructions_a_client_gets(services: Any) -> None:
    async def scenario(client: Any) -> Any:
        return client.instructions

    instructions = _session(services, scenario)
    assert [rule for rule in RULES if rule not in instructions] == []


def test_the_instructions_point_to_the_manual(services: Any) -> None:
    async def scenario(client: Any) -> Any:
        return client.instructions

    assert MANUAL_URI in _session(services, scenario)


def test_the_manual_is_listed_as_a_markdown_resource(services: Any) -> None:
    async def scenario(client: Any) -> Any:
        return {str(r.uri): r.mime_type for r in (await client.list_resources()).resources}

    assert _session(services, scenario)[MANUAL_URI] == "text/markdown"


def test_reading_the_manual_resource_gives_the_manual(services: Any) -> None:
    async def scenario(client: Any) -> Any:
        return await client.read_resource(MANUAL_URI)

    (content,) = _session(services, scenario).contents
    assert content.text == MANUAL


def test_the_manual_holds_every_rule() -> None:
    assert [rule for rule in RULES if f"**{rule}**" not in MANUAL] == []


def test_docs_agents_md_starts_with_the_manual() -> None:
    assert DOC.read_text().startswith(MANUAL)


def test_the_sql_tool_says_sql_first_for_structured_questions(descriptions: dict[str, str]) -> None:
    assert descriptions["sql"].startswith("structured question (a count, a sum, an exact filter): SQL first.")


@pytest.mark.parametrize("tool", ["hybrid_search", "search", "match"])
def test_the_search_tools_say_they_are_for_matching_text(descriptions: dict[str, str], tool: str) -> None:
    assert descriptions[tool].lower().startswith("matching text")


def test_the_feedback_tool_asks_for_feedback_on_every_checked_answer(descriptions: dict[str, str]) -> None:
    assert "give it on every answer you checked, the witness learns from it" in descriptions["feedback"]


def test_the_lessons_tool_says_to_check_it_before_a_complex_task(descriptions: dict[str, str]) -> None:
    assert descriptions["lessons"].startswith("Check before a complex task")
