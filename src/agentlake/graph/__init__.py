"""The graph runtime: a conversational pipeline of versioned nodes, defined in YAML.

``node`` (the Node contract and registry) -> ``definition`` (graph YAML, validated) ->
``engine`` (one turn: packets along data/context/control edges) -> ``runtime`` (active graph,
sessions, browser events, one op per turn) with ``trace`` (JSONL, rotated, broadcast). The
built-in nodes are in ``nodes``, the built-in graphs in ``graphs/``; ``machines`` and
``controls`` are the workspace a conversation builds; ``toolbox`` the thinker's tools;
``modelcalls`` the nodes' observed model calls; ``demo`` the model used when none is configured.
The WebSocket and the dashboard are ``agentlake.web``'s.
"""

from agentlake.graph.definition import GraphDef, builtin_graphs, load_graph, load_graph_file, parse_graph
from agentlake.graph.node import (
    EDGE_TYPES,
    REQUIRED_ROLES,
    ROLES,
    Emit,
    Node,
    NodeContext,
    NodeInfo,
    Packet,
    node_class,
    register_node,
    registered_nodes,
)
from agentlake.graph.runtime import GraphRuntime, Resources, parse_client_event
from agentlake.graph.session import SessionState
from agentlake.graph.trace import TraceLog, read_trace

__all__ = [
    "EDGE_TYPES",
    "REQUIRED_ROLES",
    "ROLES",
    "Emit",
    "GraphDef",
    "GraphRuntime",
    "Node",
    "NodeContext",
    "NodeInfo",
    "Packet",
    "Resources",
    "SessionState",
    "TraceLog",
    "builtin_graphs",
    "load_graph",
    "load_graph_file",
    "node_class",
    "parse_client_event",
    "parse_graph",
    "read_trace",
    "register_node",
    "registered_nodes",
]
