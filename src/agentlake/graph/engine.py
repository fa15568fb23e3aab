"""Running one turn of a graph: packets routed along typed edges until nothing is left to do.

Owns the routing rules and the per-node context. A turn starts with one packet injected into
the input node. Each node's :class:`~agentlake.graph.node.Emit` goes along the node's outgoing
edges of that type (to the node playing ``to``'s role, or to all of them): over ``data`` and
``control`` edges it queues the destination's run; over ``context`` edges it is stored as the
destination's latest context from that source and triggers nothing. Nodes run one at a time in
arrival order, at most ``MAX_STEPS`` runs per turn (a cycle in a graph is a ``RunError``, not
a hang). Every run is traced (``start``/``end`` with its duration, plus the node's own events).
It does not own the nodes' behaviour, the session store or the transport.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from agentlake.errors import RunError
from agentlake.graph.definition import GraphDef
from agentlake.graph.modelcalls import NodeModels
from agentlake.graph.node import EdgeType, NodeResources, Packet
from agentlake.graph.session import SessionState
from agentlake.graph.trace import TraceLog

MAX_STEPS = 64


@dataclass
class Turn:
    """What a turn needs besides the graph: where events go, and its ids."""

    session: SessionState
    send: Any  # Callable[[dict], None]
    trace_log: TraceLog
    resources: NodeResources
    number: int
    tag: str
    trace_id: str
    events: list[dict[str, Any]] = field(default_factory=list)  # trace events of this turn, in order


class TurnContext:
    """The ``NodeContext`` one node sees during one run."""

    def __init__(self, graph: GraphDef, turn: Turn, node_id: str) -> None:
        self.graph = graph
        self.turn = turn
        self.node_id = node_id
        self.session = turn.session
        self.settings = turn.resources.settings
        self.resources = turn.resources
        self.graph_name = graph.name
        self.now = time.time()
        self.context = turn.session.context.get(node_id, {})
        self._models: NodeModels | None = None

    @property
    def models(self) -> NodeModels:
        if self._models is None:
            self._models = NodeModels(self.settings, self.node_id, self.turn.tag, self.turn.trace_id)
        return self._models

    def send(self, event: dict[str, Any]) -> None:
        self.turn.send(event)

    def trace(self, event: str, **data: Any) -> None:
        record = self.turn.trace_log.emit(
            session=self.session.id, turn=self.turn.number, node=self.node_id, event=event, data=data
        )
        self.turn.events.append(record)

    def hud(self, message: str, *, flag: str | None = None) -> None:
        """A status line (and optional flag) for the browser's HUD."""
        event: dict[str, Any] = {"type": "hud", "node": self.node_id, "message": message}
        if flag:
            event["flag"] = flag
        self.send(event)

    def can_reach(self, role: str, edge: EdgeType = "data") -> bool:
        return any(self.graph.roles[e.target] == role for e in self.graph.outgoing(self.node_id, edge))


def run_turn(graph: GraphDef, turn: Turn, packet: Packet) -> list[dict[str, Any]]:
    """Run ``packet`` through ``graph`` from its input node; returns the turn's trace events.

    Raises what a node raises (``UserError``/``RunError``), after tracing it as ``error``;
    ``RunError`` when the turn exceeds ``MAX_STEPS`` node runs.
    """
    nodes = graph.instantiate()
    start = graph.node_for_role("input")
    assert start is not None  # validated on load: every graph has an input node
    queue: deque[tuple[str, Packet]] = deque([(start, packet)])
    steps = 0
    while queue:
        node_id, incoming = queue.popleft()
        steps += 1
        if steps > MAX_STEPS:
            raise RunError(
                f"graph {graph.name!r} did not settle within {MAX_STEPS} node runs (a cycle of data edges?)"
            )
        ctx = TurnContext(graph, turn, node_id)
        ctx.trace("start", kind=incoming.kind, edge=incoming.edge, source=incoming.source)
        started = time.perf_counter()
        try:
            emits = nodes[node_id].run(incoming, ctx)
        except Exception as exc:
            ctx.trace("error", error=getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")
            raise
        ctx.trace("end", ms=round((time.perf_counter() - started) * 1000, 2), emitted=[e.kind for e in emits])
        for emit in emits:
            edges = [
                e
                for e in graph.outgoing(node_id, emit.edge)
                if emit.to is None or graph.roles[e.target] == emit.to
            ]
            if not edges:
                ctx.trace("unrouted", kind=emit.kind, edge=emit.edge, to=emit.to)
            for edge in edges:
                if emit.edge == "context":
                    store = turn.session.context.setdefault(edge.target, {})
                    store[graph.roles[node_id]] = emit.payload
                else:
                    queue.append((edge.target, Packet(emit.kind, emit.payload, emit.edge, source=node_id)))
    return turn.events
