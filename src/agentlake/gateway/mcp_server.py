"""The MCP server (official ``mcp`` SDK): the gateway's tools for Claude Code and other clients.

Owns the MCP surface: the agents' tools (``find_workers``, ``hybrid_search``, ``sql``,
``get_worker``, ``worker_schedule``, ``schedule_conflicts``, ``nearby_cities``, the same
registry as ``GET /tools``) plus tools mirroring the other gateway routes (``search``,
``match``, ``worker_profile``, ``ask``, ``lessons``, ``lesson``, ``log_outcome``,
``propose_lesson``, ``models``), and the lessons as resources (``agentlake://lessons`` and
``agentlake://lessons/{lesson_id}``). Served over stdio by ``agentlake mcp`` (:func:`run_stdio`)
and over streamable HTTP at the gateway's ``/mcp`` (mounted by ``gateway.app``).

Every tool call is observed as one op with source "mcp" and endpoint ``mcp.<tool>`` (a registry
tool's own ``tool.<name>`` op nests inside it). A ``UserError``/``RunError`` becomes the tool's
error result, with its message. It does not own any of the logic behind the tools, nor the key
check of the HTTP transport (``gateway.security`` runs before a request reaches MCP).

Scopes over HTTP: any valid key may use the read tools; ``log_outcome`` and ``propose_lesson``
need a write key. Over stdio the client launched the process itself and holds every scope.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import ConfigDict

from agentlake import __version__
from agentlake.agents.ask import Answer
from agentlake.errors import AgentlakeError, NotFoundError
from agentlake.gateway.schemas import (
    AskRequest,
    LessonDetail,
    LessonList,
    LogLesson,
    LogOutcome,
    LogResponse,
    MatchRequest,
    ModelsResponse,
    SearchHit,
    SearchRequest,
    SearchResponse,
)
from agentlake.gateway.security import OPEN, Principal, Scope, forbid
from agentlake.gateway.services import Services
from agentlake.learn import LessonDraft, TaskSignature
from agentlake.workforce.profile import WorkerProfile

INSTRUCTIONS = """\
agentlake: operational data (workers, clients, placements) in a DuckDB lakehouse, and lessons
learned from earlier agent runs. Use `sql` for counts and exact filters (one read-only SELECT),
`match`/`search`/`hybrid_search` for free-text questions over workers (optionally narrowed by a
SQL WHERE fragment), `find_workers` to shortlist a role near a city, `get_worker` and
`worker_profile` for one worker, `ask` for a written answer with cited sources, and `lessons`
(or the agentlake://lessons resources) for what earlier runs learned.
"""


def _principal(ctx: Any) -> Principal:
    """The HTTP caller's principal (set by the gateway's auth middleware); stdio holds every scope."""
    try:
        request = ctx.request_context.request
    except (AttributeError, ValueError):
        return OPEN
    principal = (
        getattr(request, "scope", {}).get("state", {}).get("principal") if request is not None else None
    )
    return principal if isinstance(principal, Principal) else OPEN


def _run(
    name: str, arguments: dict[str, Any], body: Callable[[], Any], *, ctx: Any = None, needs: Scope = "read"
) -> Any:
    """One tool call: scope check, observed as ``mcp.<name>``, our errors as the tool's error."""
    from mcp.server.mcpserver.exceptions import ToolError

    from agentlake.observe import observe

    try:
        with observe(f"mcp.{name}", source="mcp", input=arguments) as op:
            if ctx is not None:
                forbid(_principal(ctx), needs, f"the MCP tool {name}")
            result = body()
            op.set_output(result)
            return result
    except AgentlakeError as exc:
        raise ToolError(exc.message) from None


def _registry_tools(services: Services) -> list[Any]:
    """The agents' registry as MCP tools, with the registry's own JSON schemas."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
    from mcp_types import CallToolResult, TextContent

    class Arguments(ArgModelBase):
        # Any arguments pass through: the registry validates them against the tool's own model
        # and answers a readable error, which the advertised schema already describes.
        model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

        def model_dump_one_level(self) -> dict[str, Any]:
            return dict(self.model_extra or {})

    def runner(name: str) -> Callable[..., Any]:
        def call(**arguments: Any) -> Any:
            def body() -> Any:
                result = services.tools.call(name, arguments, ctx=services.run_context(agent_id="mcp"))
                if not result.ok:
                    raise ToolError(result.error or result.text)
                return result

            result = _run(name, arguments, body)
            structured = result.model_dump(mode="json", exclude={"args", "text"})
            return CallToolResult(
                content=[TextContent(type="text", text=result.text)], structured_content=structured
            )

        return call

    return [
        Tool(
            fn=runner(schema["name"]),
            name=schema["name"],
            description=schema["description"],
            parameters=schema["parameters"],
            fn_metadata=FuncMetadata(arg_model=Arguments),
            is_async=False,
        )
        for schema in services.tools.schemas()
    ]


def build_mcp_server(services: Services) -> MCPServer:
    """The MCP server over ``services`` (the same handles the gateway uses)."""
    server = MCPServer(
        "agentlake",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=_registry_tools(services),
    )

    @server.tool(
        description="Semantic search over a dataset's indexed text, optionally narrowed first by a SQL "
        "WHERE fragment (no 'WHERE'). Mirrors POST /search."
    )
    def search(
        question: str, dataset: str = "workers", where: str | None = None, k: int = 10
    ) -> SearchResponse:
        from agentlake.lake.search import hybrid_search

        def body() -> SearchResponse:
            request = SearchRequest(question=question, dataset=dataset, where=where, k=k)
            hits = hybrid_search(
                services.lake, request.dataset, request.question, where=request.where, k=request.k
            )
            return SearchResponse(hits=[SearchHit.from_source(hit) for hit in hits])

        return _run("search", {"question": question, "dataset": dataset, "where": where, "k": k}, body)

    @server.tool(
        description="Hybrid fill search over workers: a SQL WHERE fragment picks who is eligible, the "
        "question ranks them. Mirrors POST /match."
    )
    def match(where: str, question: str, k: int = 10) -> SearchResponse:
        from agentlake.lake.search import hybrid_search

        def body() -> SearchResponse:
            request = MatchRequest(where=where, question=question, k=k)
            hits = hybrid_search(services.lake, "workers", request.question, where=request.where, k=request.k)
            return SearchResponse(hits=[SearchHit.from_source(hit) for hit in hits])

        return _run("match", {"where": where, "question": question, "k": k}, body)

    @server.tool(
        description="A worker's record, placements (newest first, with client names), counts by status "
        "and the clients where they did not show. Mirrors GET /profile/{id}."
    )
    def worker_profile(worker_id: int) -> WorkerProfile:
        from agentlake.workforce.profile import worker_profile as profile

        return _run("worker_profile", {"worker_id": worker_id}, lambda: profile(services.lake, worker_id))

    @server.tool(
        description="Answer a question over the lake with an LLM: SQL first for structured questions, "
        "hybrid search otherwise; the answer cites its sources. Mirrors POST /ask."
    )
    def ask(question: str, model: str | None = None, dataset: str | None = None, k: int = 8) -> Answer:
        from agentlake.agents.ask import ask as ask_lake

        def body() -> Answer:
            request = AskRequest(question=question, model=model, dataset=dataset, k=k)
            return ask_lake(
                request.question,
                lake=services.lake,
                model=request.model,
                dataset=request.dataset,
                k=request.k,
                settings=services.settings,
            )

        return _run("ask", {"question": question, "model": model, "dataset": dataset, "k": k}, body)

    @server.tool(
        description="Lessons learned from earlier runs, highest confidence first, filtered by status "
        "and by what they match. Mirrors GET /playbooks."
    )
    def lessons(
        status: list[Literal["pending", "active", "conflict-hold", "retired"]] | None = None,
        role: str | None = None,
        client_id: str | None = None,
        task_kind: str | None = None,
        city: str | None = None,
        state: str | None = None,
        domain: str | None = None,
        limit: int = 50,
    ) -> LessonList:
        arguments = {
            "status": status,
            "role": role,
            "client_id": client_id,
            "task_kind": task_kind,
            "city": city,
            "state": state,
            "domain": domain,
            "limit": limit,
        }

        def body() -> LessonList:
            found = services.lessons.list(
                status=status or None,
                domain=domain,
                role=role,
                client_id=client_id,
                task_kind=task_kind,
                city=city,
                state=state,
            )
            return LessonList(lessons=found[: max(1, min(limit, 1000))], total=len(found))

        return _run("lessons", arguments, body)

    @server.tool(description="One lesson and its full history. Mirrors GET /playbooks/{id}.")
    def lesson(lesson_id: str) -> LessonDetail:
        return _run("lesson", {"lesson_id": lesson_id}, lambda: _lesson_detail(services, lesson_id))

    @server.tool(
        description="Record how a run ended so the lessons given to it get measured (needs a write key "
        "over HTTP). Mirrors POST /log with kind=outcome."
    )
    def log_outcome(
        run_id: str, task: TaskSignature, success: bool, ctx: Context, score: float | None = None
    ) -> LogResponse:
        from agentlake.learn import record_outcome

        def body() -> LogResponse:
            request = LogOutcome(run_id=run_id, task=task, success=success, score=score)
            record_outcome(services.lessons, request.run_id, request.task, request.success, request.score)
            return LogResponse(kind="outcome", run_id=request.run_id)

        arguments = {"run_id": run_id, "task": task.model_dump(), "success": success, "score": score}
        return _run("log_outcome", arguments, body, ctx=ctx, needs="write")

    @server.tool(
        description="Propose a lesson; curation adds it as pending, merges it, or rejects it with the "
        "reason (needs a write key over HTTP). Mirrors POST /log with kind=lesson."
    )
    def propose_lesson(lesson: LessonDraft, ctx: Context, reason: str = "") -> LogResponse:
        def body() -> LogResponse:
            request = LogLesson(lesson=lesson, reason=reason)
            applied = services.lessons.add(
                request.lesson, reason=request.reason, activate=_principal(ctx).allows("admin")
            )
            return LogResponse(
                kind="lesson",
                outcome=applied.outcome,
                lesson_id=applied.lesson_id,
                version=applied.version,
                reason=applied.reason,
            )

        return _run(
            "propose_lesson", {"lesson": lesson.model_dump(), "reason": reason}, body, ctx=ctx, needs="write"
        )

    @server.tool(
        description="Model providers, reachability, context windows and loaded models. Mirrors GET /models."
    )
    def models() -> ModelsResponse:
        from agentlake.llm.inventory import model_statuses

        return _run("models", {}, lambda: ModelsResponse.from_statuses(model_statuses(services.settings)))

    @server.resource(
        "agentlake://lessons",
        name="lessons",
        mime_type="application/json",
        description="Active and pending lessons (the ones agents are given), highest confidence first.",
    )
    def lessons_resource() -> str:
        current = services.lessons.list(status=["active", "pending"])
        return json.dumps([item.model_dump(mode="json") for item in current], ensure_ascii=False)

    @server.resource(
        "agentlake://lessons/{lesson_id}",
        name="lesson",
        mime_type="application/json",
        description="One lesson (any status) with its history.",
    )
    def lesson_resource(lesson_id: str) -> str:
        return _lesson_detail(services, lesson_id).model_dump_json()

    return server


def _lesson_detail(services: Services, lesson_id: str) -> LessonDetail:
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError

    try:
        return LessonDetail(
            lesson=services.lessons.get(lesson_id), history=services.lessons.history(lesson_id)
        )
    except NotFoundError as exc:
        raise ResourceNotFoundError(exc.message) from None


def run_stdio(settings: Any = None) -> None:
    """Serve the MCP tools over stdin/stdout until the client closes the pipe.

    Opens the lake, the lesson store and the observer of ``settings`` in this process, so it
    cannot run beside a gateway holding the same data dir (DuckDB allows one writer per file);
    point such a client at the gateway's ``/mcp`` instead.
    """
    from agentlake.settings import load_settings

    services = Services(settings or load_settings())
    server = build_mcp_server(services)
    try:
        server.run("stdio")
    finally:
        services.close()
