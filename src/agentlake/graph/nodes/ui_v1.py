"""``ui_v1``: the controls on the browser's workspace, and local actions resolved here.

After the thinker's tools ran it redraws the workspace: per state machine a label with its
current state and a button per transition out of it (action ``go:MACHINE:STATE``), a label per
count or switch the session keeps, the controls the thinker asked for, and the latest query or
search result as a table. A ``go:`` click arrives over a control edge and is resolved here,
with no model call: the machine moves, a ``transition`` event and the new controls go out. An
``inc:``, ``dec:`` or ``toggle:`` click changes the session's value the same way (a ``value``
event). A ``resend`` from the sensor sends the
controls again. The ids it gives controls are stable, so the sensor can compare what was sent
with what the browser reports. It does not decide anything a model should.
"""

from __future__ import annotations

from typing import Any

from agentlake.errors import UserError
from agentlake.graph import machines as machine_ops
from agentlake.graph.controls import apply_local, table, value_text
from agentlake.graph.node import Emit, Node, NodeContext, NodeInfo, Packet, register_node
from agentlake.graph.session import SessionState


def _result_table(result: dict[str, Any]) -> dict[str, Any] | None:
    data = result.get("data")
    if not result.get("ok") or not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return None
    if result["tool"] == "hybrid_search":
        rows = [[d.get("doc_id"), round(float(d.get("score") or 0), 3), d.get("chunk_text")] for d in data]
        return table(["doc", "score", "profile"], rows, title=f"search: {result['args'].get('question', '')}")
    columns = list(data[0])
    title = result.get("query") or result["tool"]
    return table(
        columns, [[row.get(c) for c in columns] for row in data], title=f"{result['tool']}: {title}"[:120]
    )


def workspace_controls(session: SessionState) -> list[dict[str, Any]]:
    """Every control the workspace shows now, each with a stable ``id``."""
    controls: list[dict[str, Any]] = []
    for machine in session.machines.values():
        controls.append(
            {
                "id": f"m-{machine.name}-state",
                "kind": "label",
                "machine": machine.name,
                "text": f"{machine.name}: {machine.current}",
            }
        )
        for move in machine.moves():
            controls.append(
                {
                    "id": f"m-{machine.name}-go-{move.target}",
                    "kind": "button",
                    "machine": machine.name,
                    "label": move.label or move.target,
                    "action": f"go:{machine.name}:{move.target}",
                }
            )
    for name, value in session.values.items():
        controls.append({"id": f"v-{name}", "kind": "label", "value": name, "text": value_text(name, value)})
    for number, control in enumerate(session.requested_controls, start=1):
        controls.append({"id": f"c-{number}", **control})
    if session.table is not None:
        controls.append({"id": "t-1", **session.table})
    return controls


@register_node
class UiV1(Node):
    info = NodeInfo(
        name="ui_v1",
        role="ui",
        version=1,
        description="Draws buttons, labels and tables; moves state machines and counts on clicks, locally.",
        accepts=("data", "control"),
        emits=(),
    )

    def run(self, packet: Packet, ctx: NodeContext) -> list[Emit]:
        session = ctx.session
        if packet.kind == "go":
            action = str(packet.payload["action"])
            try:
                machine, transition, previous = machine_ops.go(session.machines, action)
            except UserError as exc:
                ctx.trace("transition_refused", action=action, error=exc.message)
                ctx.send({"type": "error", "message": exc.message})
                self._send(ctx)  # the browser showed a stale button: give it the real ones
                return []
            ctx.trace("transition", machine=machine.name, source=previous, target=machine.current, local=True)
            ctx.send(
                {
                    "type": "transition",
                    "machine": machine.name,
                    "from": previous,
                    "to": machine.current,
                    "label": transition.label or transition.target,
                }
            )
        elif packet.kind == "local":
            action = str(packet.payload["action"])
            try:
                name, before, after = apply_local(session.values, action)
            except UserError as exc:
                ctx.trace("local_refused", action=action, error=exc.message)
                ctx.send({"type": "error", "message": exc.message})
                return []
            ctx.trace("value", name=name, source=before, target=after, local=True)
            ctx.send(
                {"type": "value", "name": name, "from": before, "to": after, "text": value_text(name, after)}
            )
        elif packet.kind == "tool_results":
            for result in packet.payload.get("results", []):
                shown = _result_table(result)
                if shown is not None:
                    session.table = shown
        self._send(ctx)
        return []

    def _send(self, ctx: NodeContext) -> None:
        controls = workspace_controls(ctx.session)
        ctx.session.controls_sent = controls
        ctx.send({"type": "controls", "controls": controls})
        ctx.trace("controls", ids=[c["id"] for c in controls])
