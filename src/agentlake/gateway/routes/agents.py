"""Agent routes: the agents' tools (list and call) and /ask (an answer from a model, with sources)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Request

from agentlake.agents.ask import Answer
from agentlake.errors import NotFoundError
from agentlake.gateway.errors import BAD_REQUEST, COMMON_ERRORS, NOT_FOUND, UNAVAILABLE
from agentlake.gateway.schemas import AskRequest, ToolCall, ToolCallResult, ToolInfo, ToolList
from agentlake.gateway.security import require

router = APIRouter(tags=["agents"], dependencies=[Depends(require("read"))], responses=COMMON_ERRORS)


@router.get("/tools", response_model=ToolList, summary="The agents' tools and their argument schemas.")
def tools(request: Request) -> ToolList:
    return ToolList(tools=[ToolInfo(**schema) for schema in request.app.state.services.tools.schemas()])


@router.post(
    "/tools/{name}/call",
    response_model=ToolCallResult,
    summary="Call one of the agents' tools.",
    responses=NOT_FOUND,
)
def call_tool(
    body: ToolCall,
    request: Request,
    name: str = Path(..., max_length=64, description="A tool name from GET /tools."),
) -> ToolCallResult:
    """Runs the tool as an agent would (recorded as `tool.<name>`); bad arguments or a failing
    query come back as `ok: false` with the error."""
    services = request.app.state.services
    if name not in services.tools:
        raise NotFoundError(f"unknown tool {name!r}; known tools: {', '.join(services.tools.names())}")
    result = services.tools.call(name, body.arguments, ctx=services.run_context(agent_id="gateway"))
    return ToolCallResult(**result.model_dump(exclude={"args"}))


@router.post(
    "/ask",
    response_model=Answer,
    summary="Answer a question over the lake with an LLM, citing sources.",
    responses=BAD_REQUEST | UNAVAILABLE,
)
def ask(body: AskRequest, request: Request) -> Answer:
    """SQL first for structured questions, hybrid search otherwise; the answer cites `[SQL]` or
    document ids like `[W-7995]`. 503 when no model is configured or reachable."""
    from agentlake.agents.ask import ask as ask_lake

    services = request.app.state.services
    return ask_lake(
        body.question,
        lake=services.lake,
        model=body.model,
        dataset=body.dataset,
        k=body.k,
        settings=services.settings,
    )
