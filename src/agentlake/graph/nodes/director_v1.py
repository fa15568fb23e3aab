"""``director_v1``: plans a complex or data request before the thinker acts on it.

One structured model call (``DirectorPlan``: the goal, a few steps, the tools they need), made
with the conversation's compact memory as context, then the request goes on to the thinker
with the plan attached. Like the thinker, it sees one worked plan and the values the question
names (without them the 0.5B planned ``FROM welder WHERE city = 'TX'``), and the plan's tools are
decoded as names of real tools, a few of them (it listed every tool it had read of). A failing planner does not fail the turn: the thinker gets the request
without a plan and the trace says why. It does not call tools or answer.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentlake.errors import AgentlakeError
from agentlake.graph.node import Emit, Node, NodeContext, NodeInfo, NodeResources, Packet, register_node
from agentlake.graph.toolbox import WORKSPACE_TOOLS, question_values
from agentlake.llm import Message

TOOLS = ("sql", "hybrid_search", *WORKSPACE_TOOLS)
MAX_PLAN_TOOLS = 3

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


def plan_schema(max_steps: int) -> dict[str, Any]:
    """``DirectorPlan``'s schema narrowed for decoding: at most ``max_steps`` steps and a few
    tools, each a tool's real name (the reply is still validated as ``DirectorPlan``)."""
    schema = DirectorPlan.model_json_schema()
    schema["properties"]["steps"]["maxItems"] = max_steps
    schema["properties"]["tools"].update(
        items={"type": "string", "enum": list(TOOLS)}, maxItems=MAX_PLAN_TOOLS
    )
    schema["required"] = ["goal", "steps", "tools"]
    return schema


def plan_example(resources: NodeResources) -> tuple[Message, ...]:
    """One worked plan, over the user's own lake (``ask``'s worked count, with the values it
    names): constant while the lake is unchanged, so it stays in the prefix cache. Its steps
    name no value: the 0.5B copies what an example says. None without a lake."""
    # Lazy (start-up time): the agents load on first use.
    from agentlake.agents.examples import worked_count
    from agentlake.agents.linking import named_values_hint

    try:
        count = worked_count(resources.lake)
    except AgentlakeError:
        return ()
    if count is None:
        return ()
    example = DirectorPlan(
        goal=f"count the rows of {count.table} the question asks about",
        steps=[
            "count them with one sql query, filtered on each value the question names",
            "answer with the count",
        ],
        tools=["sql"],
    )
    hint = named_values_hint(list(count.named), {(count.table, c): [v] for c, v in count.named})
    return (
        Message(role="user", content=count.question + hint),
        Message(role="assistant", content=example.model_dump_json()),
    )


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
    config: DirectorConfig  # the loader validates the graph's mapping into it

    def run(self, packet: Packet, ctx: NodeContext) -> list[Emit]:
        text = str(packet.payload["text"])
        memory = ctx.context.get("memorizer")
        context = (
            [
                Message(
                    role="system",
                    content="What the conversation so far established (compact memory):\n"
                    + json.dumps(memory, ensure_ascii=False),
                )
            ]
            if memory
            else []
        )
        try:
            plan = ctx.models.structured(
                [
                    Message(role="system", content=SYSTEM.format(max_steps=self.config.max_steps)),
                    *plan_example(ctx.resources),
                    *context,
                    Message(role="user", content=text + question_values(ctx.resources, text)[1]),
                ],
                DirectorPlan,
                max_tokens=self.config.max_tokens,
                schema=plan_schema(self.config.max_steps),
            )
        except AgentlakeError as exc:
            ctx.trace("plan_failed", error=exc.message)
            return [Emit("message", {**packet.payload, "plan": None}, to="thinker")]
        plan.steps = plan.steps[: self.config.max_steps]
        ctx.trace("plan", goal=plan.goal, steps=plan.steps, tools=plan.tools)
        ctx.hud(plan.goal)
        return [Emit("message", {**packet.payload, "plan": plan.model_dump()}, to="thinker")]
