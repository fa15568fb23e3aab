"""Graph YAML: the built-in graphs, validation errors that name the file and the problem, and a
third-party node registered through the same door as the built-ins."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentlake.errors import NotFoundError, UserError
from agentlake.graph import (
    Emit,
    Node,
    NodeInfo,
    Packet,
    builtin_graphs,
    load_graph,
    load_graph_file,
    node_class,
    register_node,
    registered_nodes,
)
from agentlake.graph.definition import GRAPHS_DIR


def test_default_graph_mirrors_the_original_pipeline() -> None:
    graph = load_graph("default")
    assert len(graph.nodes) == 7
    assert len(graph.edges) == 13
    assert Counter(edge.type for edge in graph.edges) == {"data": 7, "context": 3, "control": 3}
    assert sorted(graph.roles.values()) == sorted(
        ["input", "thinker", "output", "ui", "memorizer", "director", "sensor"]
    )
    assert {node.type for node in graph.nodes} == {
        "input_v1",
        "thinker_v1",
        "output_v1",
        "ui_v1",
        "memorizer_v1",
        "director_v1",
        "sensor_v1",
    }
    view = graph.view()
    assert {(e["source"], e["target"], e["type"]) for e in view["edges"]} >= {
        ("input", "output", "data"),
        ("input", "director", "data"),
        ("memorizer", "thinker", "context"),
        ("input", "ui", "control"),
    }
    assert [n["uses_llm"] for n in view["nodes"] if n["role"] in ("thinker", "director")] == [True, True]


def test_every_built_in_graph_loads_and_is_named_after_its_file() -> None:
    graphs = builtin_graphs()
    assert {"default", "minimal"} <= set(graphs)
    assert len(graphs["minimal"].nodes) == 4
    for name, graph in graphs.items():
        assert graph.path == GRAPHS_DIR / f"{name}.yaml"


def test_every_built_in_node_is_registered_with_its_capabilities() -> None:
    infos = {info.name: info for info in registered_nodes()}
    assert {
        "input_v1",
        "thinker_v1",
        "output_v1",
        "ui_v1",
        "memorizer_v1",
        "director_v1",
        "sensor_v1",
    } <= set(infos)
    assert infos["thinker_v1"].uses_llm
    assert infos["director_v1"].uses_llm
    assert not infos["input_v1"].uses_llm
    assert not infos["ui_v1"].uses_llm
    assert "context" in infos["memorizer_v1"].emits
    assert "context" not in infos["output_v1"].accepts


def _write(tmp_path: Path, data: Any, name: str = "g.yaml") -> Path:
    path = tmp_path / name
    path.write_text(
        data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8"
    )
    return path


def _base() -> dict[str, Any]:
    return {
        "name": "tiny",
        "nodes": [
            {"id": "in", "type": "input_v1"},
            {"id": "brain", "type": "thinker_v1"},
            {"id": "out", "type": "output_v1"},
        ],
        "edges": [
            {"from": "in", "to": "brain", "type": "data"},
            {"from": "brain", "to": "out", "type": "data"},
        ],
    }


def test_a_small_valid_graph_loads(tmp_path: Path) -> None:
    graph = load_graph_file(_write(tmp_path, _base()))
    assert graph.name == "tiny"
    assert graph.node_for_role("thinker") == "brain"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda g: g["nodes"][1].update(type="thinker_v9"),
            "node 'brain': unknown node type 'thinker_v9'; known: ",
        ),
        (
            lambda g: g["edges"].append({"from": "brain", "to": "planner", "type": "data"}),
            "dangling edge 3 (brain -> planner): there is no node 'planner'",
        ),
        (lambda g: (g["nodes"].pop(2), g["edges"].pop(1)), "missing required role 'output'"),
        (
            lambda g: g["edges"].append({"from": "in", "to": "out", "type": "telepathy"}),
            "unknown edge type 'telepathy'; use one of data, context, control",
        ),
        (
            lambda g: g["edges"].append({"from": "in", "to": "out", "type": "context"}),
            "input_v1 emits no context edges",
        ),
        (lambda g: g["nodes"].append({"id": "in", "type": "ui_v1"}), "duplicate node id 'in'"),
        (
            lambda g: g["nodes"].append({"id": "brain2", "type": "thinker_v1"}),
            "two nodes play the role 'thinker'",
        ),
        (
            lambda g: g["nodes"][1].update(config={"max_tool_rounds": 0}),
            "node 'brain' config max_tool_rounds",
        ),
        (
            lambda g: g["nodes"][1].update(config={"colour": "red"}),
            "node 'brain' config colour: Extra inputs",
        ),
        (lambda g: g["edges"].append(dict(g["edges"][0])), "edge in -> brain (data) is listed twice"),
        (lambda g: g.update(extra=1), "extra: Extra inputs are not permitted"),
    ],
)
def test_invalid_graphs_name_the_file_and_the_problem(tmp_path: Path, change: Any, expected: str) -> None:
    data = _base()
    change(data)
    path = _write(tmp_path, data)
    with pytest.raises(UserError) as caught:
        load_graph_file(path)
    assert str(path) in caught.value.message
    assert expected in caught.value.message


def test_unreadable_and_malformed_files_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read it"):
        load_graph_file(tmp_path / "missing.yaml")
    with pytest.raises(UserError, match="not valid YAML"):
        load_graph_file(_write(tmp_path, "name: [unclosed\n"))
    with pytest.raises(UserError, match="expected a mapping"):
        load_graph_file(_write(tmp_path, "- just\n- a list\n"))
    with pytest.raises(NotFoundError, match="known graphs: default"):
        load_graph("no-such-graph")


def test_a_third_party_node_registers_through_the_same_door(tmp_path: Path) -> None:
    @register_node
    class ShoutV1(Node):
        info = NodeInfo(
            name="shout_v1",
            role="output",
            version=1,
            description="Replies in capitals.",
            accepts=("data",),
            emits=(),
        )

        def run(self, packet: Packet, ctx: Any) -> list[Emit]:
            ctx.send({"type": "done", "text": str(packet.payload["text"]).upper(), "path": "shout"})
            return []

    assert node_class("shout_v1") is ShoutV1
    data = _base()
    data["nodes"][2]["type"] = "shout_v1"
    graph = load_graph_file(_write(tmp_path, data))
    assert graph.classes["out"] is ShoutV1

    with pytest.raises(UserError, match="is not a graph node"):
        register_node(object)  # type: ignore[arg-type]


def test_the_docs_list_the_default_graphs_edges() -> None:
    import re

    docs = (Path(__file__).resolve().parents[2] / "docs" / "graph.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| (\w+) -> (\w+) \| (data|context|control) \|", docs, re.MULTILINE))
    assert documented == {(e.source, e.target, e.type) for e in load_graph("default").edges}
