"""``sensor_v1``: notices what the conversation itself does not say.

* **Idle returns**: a message after more than ``idle_after_s`` without one, or the page becoming
  visible again after being hidden (or idle: open without input, the dashboard's tick says so)
  that long, becomes a note ("the user came back after 12 min").
* **Workspace mismatches**: the browser reports which graph and which controls it shows, after
  each render and on its tick (``graph_sensor_tick_s``) when that changed. A graph other than the
  active one is noted. Controls other than the ones last sent are the audit layer's **controls
  mismatch** flag: traced as an ``audit`` event, shown on the HUD, noted, and the ui node is
  asked (control edge) to send the controls again.
* **What the page shows**: the report's labels with their text, buttons and tables with their
  columns and row counts, kept as lines for the thinker.

Notes and those lines go to the thinker as context (the latest ``max_notes``). No model call.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agentlake.graph.node import Emit, Node, NodeContext, NodeInfo, Packet, register_node


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def shown_line(item: dict) -> str:
    """One control the browser reports showing, as a line for the thinker."""
    text = str(item.get("text") or "")
    if item.get("kind") == "table":
        columns = ", ".join(item.get("columns") or [])
        return f"table {text!r}: columns {columns}; {item.get('rows', 0)} rows shown"
    return f"{item.get('kind')} {text!r}"


class SensorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    idle_after_s: float = Field(300.0, gt=0)
    max_notes: int = Field(5, ge=1, le=50)


@register_node
class SensorV1(Node):
    info = NodeInfo(
        name="sensor_v1",
        role="sensor",
        version=1,
        description="Notes idle returns and workspace mismatches; flags controls the browser does not show.",
        accepts=("control",),
        emits=("context", "control"),
    )
    Config = SensorConfig
    config: SensorConfig  # the loader validates the graph's mapping into it

    def run(self, packet: Packet, ctx: NodeContext) -> list[Emit]:
        session = ctx.session
        notes_before, shown_before = session.notes, session.shown  # both replaced, so identity tells
        emits: list[Emit] = []
        payload = packet.payload
        if packet.kind == "activity":
            previous = payload.get("previous")
            if previous is not None and payload["at"] - previous > self.config.idle_after_s:
                self._note(
                    ctx,
                    "idle_return",
                    f"the user came back after {_minutes(payload['at'] - previous)} without a message",
                )
        elif packet.kind == "presence":
            if payload["state"] in ("hidden", "idle"):
                if session.hidden_since is None:  # idle, then hidden: away since the first
                    session.hidden_since = ctx.now
            else:
                hidden = session.hidden_since
                session.hidden_since = None
                if hidden is not None and ctx.now - hidden > self.config.idle_after_s:
                    self._note(
                        ctx,
                        "idle_return",
                        f"the user returned to the page after {_minutes(ctx.now - hidden)} away",
                    )
        elif packet.kind == "workspace":
            lines = [shown_line(item) for item in payload.get("shown") or []]
            if payload.get("shown") is not None and lines != session.shown:
                session.shown = lines
            shown_graph = payload.get("graph")
            if shown_graph and shown_graph != ctx.graph_name:
                self._note(
                    ctx,
                    "workspace_mismatch",
                    f"the browser shows graph {shown_graph!r}, the active graph is {ctx.graph_name!r}",
                )
            shown = payload.get("controls")
            if shown is not None:
                sent = session.controls_ids()
                if sorted(shown) != sorted(sent):
                    missing = sorted(set(sent) - set(shown))
                    extra = sorted(set(shown) - set(sent))
                    ctx.trace("audit", kind="controls_mismatch", missing=missing, extra=extra)
                    ctx.hud(
                        f"controls mismatch: {len(missing)} missing, {len(extra)} unexpected; resending",
                        flag="controls_mismatch",
                    )
                    self._note(
                        ctx,
                        "controls_mismatch",
                        f"the browser did not show the controls sent (missing {missing}, extra {extra})",
                    )
                    if ctx.can_reach("ui", "control"):
                        emits.append(Emit("resend", {}, edge="control", to="ui"))
        if session.notes is not notes_before or session.shown is not shown_before:
            context = {"notes": session.notes[-self.config.max_notes :], "shown": session.shown}
            emits.append(Emit("notes", context, edge="context"))
        return emits

    def _note(self, ctx: NodeContext, kind: str, text: str) -> None:
        ctx.session.notes = [*ctx.session.notes, text][-self.config.max_notes :]
        ctx.trace(kind, note=text)
        if kind != "controls_mismatch":
            ctx.hud(text, flag=kind)
