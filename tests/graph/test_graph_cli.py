"""``agentlake graph``: listing, showing and validating graphs, and one message run from the terminal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.graph.definition import GRAPHS_DIR


@pytest.fixture(autouse=True)
def _close_observer() -> Iterator[None]:
    from agentlake.observe import close_default_observer

    yield
    close_default_observer()


def test_list_show_and_nodes(cli) -> None:
    code, out, _ = cli("graph", "list", "--format", "json")
    assert code == 0
    assert {(g["name"], g["nodes"], g["edges"]) for g in json.loads(out)} == {
        ("default", 7, 13),
        ("minimal", 4, 5),
    }
    code, out, _ = cli("graph", "show", "default", "--format", "json")
    view = json.loads(out)
    assert len(view["nodes"]) == 7
    assert len(view["edges"]) == 13
    code, out, _ = cli("graph", "nodes", "--format", "csv")
    assert code == 0
    assert out.count("_v1,") == 7


def test_validate_reports_the_file_and_the_problem(cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\nnodes:\n  - {id: in, type: input_v1}\n  - {id: out, type: output_v1}\n"
        "edges:\n  - {from: in, to: brain, type: data}\n"
    )
    code, out, _ = cli("graph", "validate", str(GRAPHS_DIR / "minimal.yaml"))
    assert code == 0
    assert "graph minimal: 4 nodes, 5 edges" in " ".join(out.split())
    code, _, err = cli("graph", "validate", str(bad))
    err = " ".join(err.split())  # Rich wraps at 80 columns
    assert code == 2
    assert f"graph {bad}: dangling edge 1 (in -> brain): there is no node 'brain'" in err


def test_chat_runs_one_message_with_the_demo_model(cli, lake_dir: Path) -> None:
    code, out, _ = cli("graph", "chat", "how many workers are there per state?", "--trace")
    flat = " ".join(out.split())
    assert code == 0, out
    assert "The query returned 10 rows" in flat
    assert "path: director" in flat
    assert "thinker tool_call" in flat
    assert "┃ state ┃ workers ┃" in flat  # the table


def test_chat_fails_with_the_models_error(cli, lake_dir: Path) -> None:
    code, _, err = cli("graph", "chat", "what do you think", "--model", "ollama:absent", "--graph", "minimal")
    err = " ".join(err.split())  # Rich wraps at 80 columns
    assert code == 1
    assert "cannot reach ollama:absent at http://127.0.0.1:9" in err


def test_chat_without_a_model_runs_the_demo_and_says_so(
    cli, lake_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentlake.llm import packaged

    monkeypatch.setattr(packaged, "installed", lambda model: False)  # no embedded model here
    monkeypatch.setenv("AGENTLAKE_GRAPH_MODEL", "")
    monkeypatch.setenv("AGENTLAKE_DEFAULT_MODEL", "auto")
    code, out, err = cli("graph", "chat", "how many forklift operators are in CA?")
    assert code == 0, err
    assert "(one read-only SQL query)" in " ".join(out.split())  # the demo's answer
    assert "the scripted demo (function:graph-demo) answers" in " ".join(err.split())


def test_chat_as_json_has_the_reply_its_path_and_the_events(cli, lake_dir: Path) -> None:
    code, out, err = cli("graph", "chat", "how many workers are there per state?", "--format", "json")
    assert code == 0, err
    turn = json.loads(out)
    assert "The query returned 10 rows" in turn["reply"]
    assert turn["path"].startswith("director")
    assert any(event["type"] == "controls" for event in turn["events"])


def test_validate_as_csv_is_one_row_a_file(cli) -> None:
    code, out, err = cli("graph", "validate", str(GRAPHS_DIR / "minimal.yaml"), "-f", "csv")
    assert code == 0, err
    assert out.splitlines() == ["file,graph,nodes,edges", f"{GRAPHS_DIR / 'minimal.yaml'},minimal,4,5"]
