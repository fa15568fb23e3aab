"""The gateway's commands as a user types them: `agentlake ask`, `agentlake serve` refusing bad settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.cli.main import main
from agentlake.llm import ScriptedProvider, register_scripted
from agentlake.llm.fakes import unregister_scripted


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`agentlake ARGS` as the console script runs it (errors rendered, exit codes)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def asker() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider("cli-asker")
    register_scripted("cli-asker", provider)
    yield provider
    unregister_scripted("cli-asker")


def test_ask_prints_the_answer_and_where_it_came_from(
    data_dir: Path, asker: ScriptedProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    asker.enqueue(json.dumps({"route": "sql", "sql": "SELECT count(*) AS n FROM workers"}))
    asker.enqueue("600 workers [SQL].")
    code, out, err = run(capsys, "ask", "How many workers?", "--model", "scripted:cli-asker")
    assert code == 0, err
    assert "600 workers [SQL]." in out
    assert "SQL: SELECT count(*) AS n FROM workers" in out


def test_ask_json_has_route_sources_and_citations(
    data_dir: Path, asker: ScriptedProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    asker.enqueue(json.dumps({"route": "search", "search_text": "forklift warehouse"}))
    asker.enqueue("See [W-1] maybe.")
    code, out, err = run(
        capsys, "ask", "Who drives forklifts?", "--model", "scripted:cli-asker", "-k", "2", "--json"
    )
    assert code == 0, err
    answer = json.loads(out)
    assert answer["route"] == "search" and len(answer["sources"]) == 2
    assert answer["cited"] and all(source_id.startswith("W-") for source_id in answer["cited"])


def test_ask_without_a_model_says_which_setting_to_set(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "ask", "How many workers?")
    assert code == 1
    assert "AGENTLAKE_EXECUTOR_MODEL" in err and out == ""


def test_serve_refuses_a_bad_port_before_starting(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "serve", "--port", "70000")
    assert code == 2
    assert "gateway_port" in err
