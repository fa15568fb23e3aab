"""Feedback on answers through every door: POST /feedback, the MCP feedback tool, `agentlake feedback`.

Each records one ``ask.feedback`` op; the learner turns it into a lesson the next answer gets.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted

QUESTION = "How many workers are there?"
PLAN = json.dumps({"route": "sql", "sql": "SELECT count(*) AS n FROM workers"})


@pytest.fixture
def asker() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider("fb-asker")
    register_scripted("fb-asker", provider)
    yield provider
    unregister_scripted("fb-asker")


def _answer(client: Any, asker: ScriptedProvider, headers: dict[str, str]) -> str:
    asker.enqueue(PLAN)
    asker.enqueue("600 workers [SQL].")
    answer = client.post("/ask", json={"question": QUESTION, "model": "scripted:fb-asker"}, headers=headers)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def test_feedback_over_rest_is_learned_into_a_playbook(
    make_gateway: Any, keys: Any, asker: ScriptedProvider
) -> None:
    client, app = make_gateway()
    answer_id = _answer(client, asker, keys["read"])

    recorded = client.post("/feedback", json={"answer_id": answer_id, "right": True}, headers=keys["write"])
    app.state.learning.run_once()

    assert recorded.status_code == 200, recorded.text
    playbooks = [lesson for lesson in app.state.services.lessons.list(domain="data")]
    assert [lesson.machine["sql"] for lesson in playbooks] == ["SELECT count(*) AS n FROM workers"]


def test_the_lessons_of_one_dataset_are_listed_by_it(
    make_gateway: Any, keys: Any, asker: ScriptedProvider
) -> None:
    client, app = make_gateway()
    answer_id = _answer(client, asker, keys["read"])
    client.post("/feedback", json={"answer_id": answer_id, "right": True}, headers=keys["write"])
    app.state.learning.run_once()

    listed = client.get("/playbooks", params={"dataset": "workers"}, headers=keys["read"]).json()
    other = client.get("/playbooks", params={"dataset": "clients"}, headers=keys["read"]).json()

    assert (listed["total"], other["total"]) == (1, 0)


def test_feedback_needs_a_write_key(make_gateway: Any, keys: Any, asker: ScriptedProvider) -> None:
    client, _ = make_gateway()
    answer_id = _answer(client, asker, keys["read"])

    refused = client.post("/feedback", json={"answer_id": answer_id, "right": True}, headers=keys["read"])

    assert refused.status_code == 403


def test_feedback_on_an_unknown_answer_is_one_line_saying_how_to_list_them(
    make_gateway: Any, keys: Any
) -> None:
    client, _ = make_gateway()

    refused = client.post("/feedback", json={"answer_id": "nope", "right": True}, headers=keys["write"])

    assert "ops query --endpoint ask.answer" in refused.json()["error"]["message"]


def test_the_mcp_feedback_tool_records_what_rest_does(
    make_gateway: Any, keys: Any, asker: ScriptedProvider
) -> None:
    import anyio
    from mcp import Client

    from agentlake.gateway.mcp_server import build_mcp_server

    client, app = make_gateway()
    answer_id = _answer(client, asker, keys["read"])

    async def give() -> Any:
        async with Client(build_mcp_server(app.state.services)) as mcp:
            return await mcp.call_tool(
                "feedback", {"answer_id": answer_id, "right": False, "expected": "601"}
            )

    result = anyio.run(give)

    assert result.structured_content["right"] is False


def test_the_cli_records_feedback_on_an_answer_it_gave(
    data_dir: Path, cli: Any, asker: ScriptedProvider
) -> None:
    asker.enqueue(PLAN)
    asker.enqueue("600 workers [SQL].")
    code, out, err = cli("ask", QUESTION, "--model", "scripted:fb-asker", "--json")
    assert code == 0, err

    code, out, err = cli("feedback", json.loads(out)["id"], "--wrong", "--expected", "601", "--json")

    assert json.loads(out)["right"] is False, err


def test_the_cli_says_an_unknown_answer_id_in_one_line(data_dir: Path, cli: Any) -> None:
    code, _, err = cli("feedback", "nope", "--right")

    assert (code, err.count("\n")) == (2, 1)


def test_the_cli_takes_format_json_as_scripts_do(data_dir: Path, cli: Any, asker: ScriptedProvider) -> None:
    asker.enqueue(PLAN)
    asker.enqueue("600 workers [SQL].")
    code, out, err = cli("ask", QUESTION, "--model", "scripted:fb-asker", "--format", "json")
    assert code == 0, err

    code, out, err = cli("feedback", json.loads(out)["id"], "--right", "--format", "csv")

    header, row = list(csv.reader(out.splitlines()))
    assert dict(zip(header, row, strict=True))["right"] == "True", err
