"""Graph definitions: YAML files listing nodes and typed edges, validated when loaded.

A definition is::

    name: default
    description: ...
    nodes:
      - {id: input, type: input_v1}
      - {id: thinker, type: thinker_v1, config: {max_tool_rounds: 4}}
    edges:
      - {from: input, to: thinker, type: data}

Loading checks, and names the file and the problem in a ``UserError``: YAML syntax, unknown
keys, an unknown node type, a duplicate node id or role, a dangling edge (an end that is not a
node), an unknown edge type, an edge type the end nodes do not accept or emit, a node config
its class refuses, and a missing required role (input, thinker, output). The built-in graphs
live in ``graphs/`` beside this module. This module does not run graphs (``engine``).
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentlake.errors import NotFoundError, UserError
from agentlake.graph.node import EDGE_TYPES, REQUIRED_ROLES, EdgeType, Node, node_class

GRAPHS_DIR = Path(__file__).with_name("graphs")


class NodeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(..., pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
    type: str
    config: dict[str, Any] = Field(default_factory=dict)


class EdgeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    source: str = Field(..., alias="from")
    target: str = Field(..., alias="to")
    type: str


class _GraphFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    description: str = ""
    nodes: list[NodeSpec] = Field(..., min_length=1)
    edges: list[EdgeSpec] = Field(default_factory=list)


class GraphDef:
    """A validated graph: node specs, their classes, and the typed edges between them."""

    def __init__(
        self, spec: _GraphFile, path: Path | None, classes: dict[str, type[Node]], configs: dict[str, Any]
    ):
        self.name = spec.name
        self.description = spec.description
        self.path = path
        self.nodes = spec.nodes
        self.edges = spec.edges
        self.classes = classes
        self._configs = configs

    @cached_property
    def roles(self) -> dict[str, str]:
        """Node id -> role."""
        return {node.id: self.classes[node.id].info.role for node in self.nodes}

    def node_for_role(self, role: str) -> str | None:
        """The id of the node playing ``role``, if any (roles are unique in a graph)."""
        return next((node_id for node_id, r in self.roles.items() if r == role), None)

    def outgoing(self, node_id: str, edge: EdgeType) -> list[EdgeSpec]:
        return [e for e in self.edges if e.source == node_id and e.type == edge]

    def instantiate(self) -> dict[str, Node]:
        """Fresh node objects, keyed by id (nodes are stateless; this is cheap)."""
        return {node.id: self.classes[node.id](node.id, self._configs[node.id]) for node in self.nodes}

    def summary(self) -> dict[str, Any]:
        """Name, description and counts, for listings."""
        return {
            "name": self.name,
            "description": self.description,
            "nodes": len(self.nodes),
            "edges": len(self.edges),
            "edge_types": sorted({e.type for e in self.edges}),
        }

    def view(self) -> dict[str, Any]:
        """The whole graph as plain data (the dashboard draws it)."""
        return {
            **self.summary(),
            "nodes": [
                {
                    "id": node.id,
                    "type": node.type,
                    "role": self.roles[node.id],
                    "uses_llm": self.classes[node.id].info.uses_llm,
                    "description": self.classes[node.id].info.description,
                }
                for node in self.nodes
            ],
            "edges": [{"source": e.source, "target": e.target, "type": e.type} for e in self.edges],
        }


def _problem(where: str, message: str) -> UserError:
    return UserError(f"graph {where}: {message}")


def parse_graph(data: Any, *, where: str, path: Path | None = None) -> GraphDef:
    """Validate a graph given as plain data (what the YAML holds); ``where`` names it in errors."""
    if not isinstance(data, dict):
        raise _problem(where, f"expected a mapping with name, nodes and edges, got {type(data).__name__}")
    try:
        spec = _GraphFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top)"
        raise _problem(where, f"{field}: {err['msg']}") from None
    ids = Counter(node.id for node in spec.nodes)
    duplicates = sorted(node_id for node_id, n in ids.items() if n > 1)
    if duplicates:
        raise _problem(where, f"duplicate node id {duplicates[0]!r}")
    classes: dict[str, type[Node]] = {}
    configs: dict[str, Any] = {}
    for node in spec.nodes:
        try:
            cls = node_class(node.type)
        except UserError as exc:
            raise _problem(where, f"node {node.id!r}: {exc.message}") from None
        classes[node.id] = cls
        configs[node.id] = _config(where, node, cls)
    roles = Counter(cls.info.role for cls in classes.values())
    twice = sorted(role for role, n in roles.items() if n > 1)
    if twice:
        raise _problem(where, f"two nodes play the role {twice[0]!r}; a graph has at most one node per role")
    for number, edge in enumerate(spec.edges, start=1):
        label = f"edge {number} ({edge.source} -> {edge.target})"
        for end in (edge.source, edge.target):
            if end not in classes:
                raise _problem(where, f"dangling {label}: there is no node {end!r} (nodes: {', '.join(ids)})")
        if edge.type not in EDGE_TYPES:
            raise _problem(
                where, f"{label}: unknown edge type {edge.type!r}; use one of {', '.join(EDGE_TYPES)}"
            )
        src, dst = classes[edge.source].info, classes[edge.target].info
        if edge.type not in src.emits:
            raise _problem(
                where, f"{label}: {src.name} emits no {edge.type} edges (it emits {', '.join(src.emits)})"
            )
        if edge.type not in dst.accepts:
            raise _problem(
                where,
                f"{label}: {dst.name} accepts no {edge.type} edges (it accepts {', '.join(dst.accepts)})",
            )
    pairs = Counter((e.source, e.target, e.type) for e in spec.edges)
    repeated = [pair for pair, n in pairs.items() if n > 1]
    if repeated:
        raise _problem(where, f"edge {repeated[0][0]} -> {repeated[0][1]} ({repeated[0][2]}) is listed twice")
    missing = [role for role in REQUIRED_ROLES if role not in roles]
    if missing:
        raise _problem(
            where, f"missing required role {missing[0]!r} (every graph needs {', '.join(REQUIRED_ROLES)})"
        )
    return GraphDef(spec, path, classes, configs)


def _config(where: str, node: NodeSpec, cls: type[Node]) -> Any:
    if cls.Config is None:
        if node.config:
            raise _problem(where, f"node {node.id!r}: {cls.info.name} takes no config")
        return {}
    try:
        return cls.Config.model_validate(node.config)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "config"
        raise _problem(where, f"node {node.id!r} config {field}: {err['msg']}") from None


def load_graph_file(path: Path | str) -> GraphDef:
    """Load and validate one YAML file; ``UserError`` names the file and the problem."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"graph {path}: cannot read it ({exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _problem(str(path), f"not valid YAML ({str(exc).splitlines()[0]})") from None
    return parse_graph(data, where=str(path), path=path)


def builtin_graphs() -> dict[str, GraphDef]:
    """The graphs shipped in ``graphs/``, by name (a file whose name field differs is an error)."""
    graphs: dict[str, GraphDef] = {}
    for path in sorted(GRAPHS_DIR.glob("*.yaml")):
        graph = load_graph_file(path)
        if graph.name != path.stem:
            raise _problem(str(path), f"name {graph.name!r} must match the file name {path.stem!r}")
        graphs[graph.name] = graph
    return graphs


def load_graph(name_or_path: str | Path) -> GraphDef:
    """A built-in graph by name, or a YAML file by path. ``NotFoundError`` lists the names."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or candidate.exists():
        return load_graph_file(candidate)
    graphs = builtin_graphs()
    if str(name_or_path) not in graphs:
        raise NotFoundError(f"no graph named {str(name_or_path)!r}; known graphs: {', '.join(graphs)}")
    return graphs[str(name_or_path)]
