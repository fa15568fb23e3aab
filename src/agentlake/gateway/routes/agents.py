"""Agent routes: the agents' tools (list and call), /fill (one staffing order), /ask (an answer
from a model, with sources) and /feedback (a verdict on an answer)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Request

from agentlake.agents import TaskOutcome
from agentlake.agents.ask import Answer
from agentlake.gateway import operations
from agentlake.gateway.schemas import AskRequest, FillRequest, ToolCall, ToolCallResult, ToolInfo, ToolList
from agentlake.gateway.security import require
from agentlake.http.errors import BAD_REQUEST, COMMON_ERRORS, NOT_FOUND, UNAVAILABLE
from agentlake.questions.feedback import Feedback, FeedbackRecorded

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
    result = operations.call_tool(request.app.state.services, name, body.arguments, agent_id="gateway")
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
    return operations.ask(request.app.state.services, body)


@router.post(
    "/feedback",
    response_model=FeedbackRecorded,
    dependencies=[Depends(require("write"))],
    summary="Say whether an answer was right (and what it should have been): the learner learns from it.",
    responses=BAD_REQUEST,
)
def feedback(body: Feedback, request: Request) -> FeedbackRecorded:
    """Recorded as one `ask.feedback` op: a right answer's query becomes a worked example for
    questions like it, a wrong one with the expected value is corrected if a query gives it.
    400 for an id that names no answer (GET /observer/ops?endpoint=ask.answer lists them)."""
    return operations.feedback(request.app.state.services, body)


@router.post(
    "/fill",
    response_model=TaskOutcome,
    dependencies=[Depends(require("write"))],
    summary="Fill one staffing order against the lake.",
    responses=BAD_REQUEST | UNAVAILABLE,
)
def fill(body: FillRequest, request: Request) -> TaskOutcome:
    """Verified workers, spares, every rejection's reason and the transcript (what `agentlake
    fill` shows); `success: false` when unfilled. An order in words is read by the server's model
    (`reading`: what was understood, disagreements with the order's words shown); one that lacks
    a role, count or place, or names a role the catalogue lacks, is a 400 whose `detail` is the
    question back and whose `error.details.reading` holds what was understood. Recorded as the
    fill's ops; lessons are given and measured as in any fill. Write scope: it runs agents and
    may spend model budget."""
    return operations.fill_order(request.app.state.services, body)
