"""``memorizer_v1``: a compact state of the conversation, handed on as context.

After every exchange it updates a small state (turn count, recent topics, facts the tools
established, the last few exchanges shortened, where each state machine stands) and trims it to
``max_chars`` of JSON, oldest items first (the latest exchange, fact and topic go last). The state goes out over
context edges, so the thinker and the director see it on their next run; nothing is triggered.
No model call: the state is built from what the turn produced, so it costs nothing and never
invents a fact. It does not store anything beyond the session.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentlake.graph.node import Emit, Node, NodeContext, NodeInfo, Packet, register_node


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compact(state: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """``state`` trimmed, oldest items first, until its JSON fits ``max_chars``: exchanges, facts
    and topics down to their latest one each, then those too."""
    state = json.loads(json.dumps(state, default=str))
    for keep in (1, 0):
        for key in ("recent", "facts", "topics"):
            while len(json.dumps(state, ensure_ascii=False)) > max_chars and len(state.get(key) or []) > keep:
                state[key].pop(0)
    return state


class MemorizerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_chars: int = Field(1200, ge=200, le=20000)
    recent: int = Field(4, ge=0, le=20)
    facts: int = Field(8, ge=0, le=50)


@register_node
class MemorizerV1(Node):
    info = NodeInfo(
        name="memorizer_v1",
        role="memorizer",
        version=1,
        description="Keeps a compact state of the conversation and hands it on as context.",
        accepts=("data",),
        emits=("context",),
    )
    Config = MemorizerConfig
    config: MemorizerConfig  # the loader validates the graph's mapping into it

    def run(self, packet: Packet, ctx: NodeContext) -> list[Emit]:
        cfg = self.config
        session = ctx.session
        state = dict(session.memory) or {"turns": 0, "topics": [], "facts": [], "recent": [], "machines": {}}
        user, reply = str(packet.payload.get("user", "")), str(packet.payload.get("reply", ""))
        state["turns"] = int(state.get("turns", 0)) + 1
        if packet.payload.get("path") != "reflex" and user:
            state["topics"] = [*state.get("topics", []), _short(user, 80)][-5:]
        state["facts"] = (
            [*state.get("facts", []), *packet.payload.get("facts", [])][-cfg.facts :] if cfg.facts else []
        )
        exchange = {"user": _short(user, 160), "reply": _short(reply, 240)}
        state["recent"] = [*state.get("recent", []), exchange][-cfg.recent :] if cfg.recent else []
        state["machines"] = {m.name: m.current for m in session.machines.values()}
        state = compact(state, cfg.max_chars)
        session.memory = state
        ctx.trace("memory", turns=state["turns"], chars=len(json.dumps(state, ensure_ascii=False)))
        return [Emit("state", state, edge="context")]
