"""Helpers for the graph tests: scripted replies and reading the events a turn sent."""

from __future__ import annotations

import json
from typing import Any


def step(say: str = "", *calls: tuple[str, dict[str, Any]]) -> str:
    """A thinker reply: what to say and the tool calls to make."""
    return json.dumps({"say": say, "tool_calls": [{"tool": tool, "args": args} for tool, args in calls]})


def plan(goal: str = "look it up", *tools: str) -> str:
    """A director reply."""
    return json.dumps({"goal": goal, "steps": ["call the tool", "answer"], "tools": list(tools) or ["sql"]})


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def reply_text(events: list[dict[str, Any]]) -> str:
    """The streamed reply: the deltas joined (checked against ``done``)."""
    (done,) = of_type(events, "done")
    streamed = "".join(event["text"] for event in of_type(events, "delta"))
    assert streamed == done["text"]
    return streamed


class FakeContext:
    """A ``NodeContext`` for one node in a unit test: records what the node sends and traces.

    ``reach`` lists the ``(role, edge type)`` pairs the node has outgoing edges to.
    """

    def __init__(
        self,
        session: Any = None,
        *,
        node_id: str = "node",
        reach: tuple[tuple[str, str], ...] = (),
        context: dict[str, Any] | None = None,
        resources: Any = None,
        models: Any = None,
        graph_name: str = "default",
        now: float = 1_000_000.0,
    ) -> None:
        from agentlake.graph import SessionState

        self.node_id = node_id
        self.session = session if session is not None else SessionState()
        self.reach = set(reach)
        self.context = context or {}
        self.resources = resources
        self.models = models
        self.settings = getattr(resources, "settings", None)
        self.graph_name = graph_name
        self.now = now
        self.sent: list[dict[str, Any]] = []
        self.traced: list[tuple[str, dict[str, Any]]] = []

    def send(self, event: dict[str, Any]) -> None:
        self.sent.append(event)

    def trace(self, event: str, **data: Any) -> None:
        self.traced.append((event, data))

    def hud(self, message: str, *, flag: str | None = None) -> None:
        self.sent.append(
            {"type": "hud", "node": self.node_id, "message": message, **({"flag": flag} if flag else {})}
        )

    def can_reach(self, role: str, edge: str = "data") -> bool:
        return (role, edge) in self.reach

    def events(self, name: str) -> list[dict[str, Any]]:
        return [data for event, data in self.traced if event == name]


def without_examples(messages: list[Any], resources: Any) -> list[Any]:
    """A thinker's prompt without the worked examples shown before every request (made from
    ``resources``' lake)."""
    from agentlake.graph.nodes.thinker_v1 import worked_examples
    from agentlake.graph.toolbox import WORKSPACE_ARGS

    shown = [
        message
        for shot in worked_examples(resources, {"sql": {}, **WORKSPACE_ARGS}).values()
        for message in shot
    ]
    return [message for message in messages if message not in shown]


def system_text(messages: list[Any]) -> str:
    """What a prompt's system messages say (the constant one and the turn's context)."""
    return "\n\n".join(message.content for message in messages if message.role == "system")
