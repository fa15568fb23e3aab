"""``director_v1``: plans a complex or data request before the thinker acts on it.

One structured model call (``DirectorPlan``: the goal, a few steps, the tools they need), made
with the conversation's compact memory as context, then the request goes on to the thinker
with the plan attached. A failing planner does not fail the turn: the thinker gets the request
without a plan and the trace says why. It does not call tools or answer.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field

from agentlake.errors import AgentlakeError
from agentlake.graph.node import Emit, Node, NodeContext, NodeInfo, Packet, register_node
from agentlake.llm import Message

SYSTEM = """\
ROLE: director
You are the director of agentlake's conversational graph: you plan, you do not answer.
A thinker will carry out your plan with these tools: sql (one read-only SELECT over the lake's
datasets), hybrid_search (worker profiles by meaning, optional SQL WHERE filter), machine_create /
machine_extend / machine_reset / machine_destroy (state machines with buttons), show_controls.
Give the goal in one line, at most {max_steps} short steps, and the tools they need."""


class DirectorPlan(BaseModel):
    model_config = ConfigDict(extra="ignore")

    goal: str = Field(..., max_length=300)
    steps: list[str] = Field(default_factory=list, max_length=8)
    tools: list[str] = Field(default_factory=list, max_length=8)


class DirectorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(4, ge=1, le=8)
    max_tokens: int = Field(600, ge=64)


@register_node
class DirectorV1(Node):
    info = NodeInfo(
        name="director_v1",
        role="director",
        version=1,
        description="Plans complex and data requests (one model call) before the thinker acts.",
        accepts=("data", "context"),
        emits=("data",),
        uses_llm=True,
    )
    Config = DirectorConfig

    def run(self, packet: Packet, ctx: NodeContext) -> list[Emit]:
        text = str(packet.payload["text"])
        system = SYSTEM.format(max_steps=self.config.max_steps)
        memory = ctx.context.get("memorizer")
        if memory:
            system += "\n\nWhat the conversation so far established (compact memory):\n" + json.dumps(
                memory, ensure_ascii=False
            )
        try:
            plan = ctx.models.structured(
                [Message(role="system", content=system), Message(role="user", content=text)],
                DirectorPlan,
                max_tokens=self.config.max_tokens,
            )
        except AgentlakeError as exc:
            ctx.trace("plan_failed", error=exc.message)
            return [Emit("message", {**packet.payload, "plan": None}, to="thinker")]
        plan.steps = plan.steps[: self.config.max_steps]
        ctx.trace("plan", goal=plan.goal, steps=plan.steps, tools=plan.tools)
        ctx.hud(plan.goal)
        return [Emit("message", {**packet.payload, "plan": plan.model_dump()}, to="thinker")]
