"""The gateway's commands as a user types them: `agentlake ask`, `agentlake serve` refusing bad settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.llm import ScriptedProvider, register_scripted
from agentlake.llm.fakes import unregister_scripted


@pytest.fixture
def asker() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider("cli-asker")
    register_scripted("cli-asker", provider)
    yield provider
    unregister_scripted("cli-asker")


def test_ask_prints_the_answer_and_where_it_came_from(data_dir: Path, asker: ScriptedProvider, cli) -> None:
    asker.enqueue(json.dumps({"route": "sql", "sql": "SELECT count(*) AS n FROM workers"}))
    asker.enqueue("600 workers [SQL].")
    code, out, err = cli("ask", "How many workers?", "--model", "scripted:cli-asker")
    assert code == 0, err
    assert "600 workers [SQL]." in out
    assert "SQL: SELECT count(*) AS n FROM workers" in out


def test_ask_json_has_route_sources_and_citations(data_dir: Path, asker: ScriptedProvider, cli) -> None:
    asker.enqueue(json.dumps({"route": "search", "search_text": "forklift warehouse"}))
    asker.enqueue("See [W-1] maybe.")
    code, out, err = cli("ask", "Who drives forklifts?", "--model", "scripted:cli-asker", "-k", "2", "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["route"] == "search"
    assert len(answer["sources"]) == 2
    assert answer["cited"]
    assert all(source_id.startswith("W-") for source_id in answer["cited"])


def test_ask_without_a_model_says_which_setting_to_set(data_dir: Path, cli) -> None:
    code, out, err = cli("ask", "How many workers?")
    assert code == 1
    assert "AGENTLAKE_EXECUTOR_MODEL" in err
    assert out == ""


def test_serve_refuses_a_bad_port_before_starting(cli) -> None:
    code, _, err = cli("serve", "--port", "70000")
    assert code == 2
    assert "gateway_port" in err
