"""The MCP server (official ``mcp`` SDK): the gateway's tools for Claude Code and other clients.

Owns the MCP surface: the agents' tools (``find_workers``, ``hybrid_search``, ``sql``,
``get_worker``, ``worker_schedule``, ``schedule_conflicts``, ``nearby_cities``, the same
registry as ``GET /tools``) plus tools mirroring the other gateway routes (``search``,
``match``, ``worker_profile``, ``ask``, ``feedback``, ``fill``, ``lessons``, ``lesson``,
``log_outcome``, ``propose_lesson``, ``models``), the lessons as resources (``agentlake://lessons``
and ``agentlake://lessons/{lesson_id}``) and the agents' manual (``manual.py``: its rules in the
``instructions`` every client gets, the whole text as ``agentlake://manual``). Served over stdio by ``agentlake mcp`` (:func:`run_stdio`)
and over streamable HTTP at the gateway's ``/mcp`` (mounted by ``gateway.app``).

Every tool call is observed as one op with source "mcp" and endpoint ``mcp.<tool>`` (a registry
tool's own ``tool.<name>`` op nests inside it). Every failure (arguments the schema refuses, a
``UserError``/``RunError``, a missing scope, a bug) is the tool's error result: ``isError`` and
one line of text, never a traceback. A tool's input schema is its request model's JSON schema
(the REST route's, with the same bounds and descriptions), and each tool carries annotations
(``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``) saying what it
really does. It does not own any of the logic behind the tools, nor the key check of the HTTP
transport (``gateway.security`` runs before a request reaches MCP).

Scopes over HTTP: any valid key may use the read tools; ``feedback``, ``fill``, ``log_outcome``
and ``propose_lesson`` need a write key. Over stdio the client launched the process itself and holds every scope.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from agentlake import __version__
from agentlake.agents import TaskOutcome
from agentlake.agents.ask import Answer
from agentlake.errors import AgentlakeError, NotFoundError
from agentlake.gateway import manual, operations
from agentlake.gateway.limits import Bucket, charge_scope
from agentlake.gateway.schemas import (
    AskRequest,
    FillRequest,
    LessonDetail,
    LessonList,
    LessonQuery,
    LessonRef,
    LogLesson,
    LogOutcome,
    LogResponse,
    MatchRequest,
    ModelsResponse,
    SearchRequest,
    SearchResponse,
    WorkerRef,
)
from agentlake.gateway.services import Services
from agentlake.http.keys import OPEN, Principal, Scope, forbid
from agentlake.observe import observe, observe_context
from agentlake.questions.feedback import Feedback, FeedbackRecorded
from agentlake.settings import Settings, load_settings
from agentlake.workforce.profile import WorkerProfile

log = logging.getLogger(__name__)
MAX_ERROR_CHARS = 2000

# Sent to every client at initialize: the lake, the tools and the manual's rules (manual.py).
INSTRUCTIONS = manual.INSTRUCTIONS


def _http_scope(ctx: Any) -> dict[str, Any]:
    """The ASGI scope of the HTTP request carrying this tool call; empty over stdio."""
    try:
        request = ctx.request_context.request
    except (AttributeError, ValueError):
        return {}
    return getattr(request, "scope", None) or {}


def _principal(ctx: Any) -> Principal:
    """The HTTP caller's principal (set by the gateway's auth middleware); stdio holds every scope."""
    principal = _http_scope(ctx).get("state", {}).get("principal")
    return principal if isinstance(principal, Principal) else OPEN


# Annotations are hints a client may show or act on; each says what the tool really does.
READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Reads that ask a model server (possibly a hosted one): an answer may differ next time.
READ_VIA_MODELS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)
# Writes that only add (an outcome replaces the same run's outcome; nothing is deleted).
RECORDS_OUTCOME = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# A fill runs agents (with policy llm: a model server, possibly a hosted one) and records its
# ops and the lessons' outcomes: additive, and a second fill may choose other workers.
FILLS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)
# A proposal may add a lesson or confirm (raise) an existing one: additive, not idempotent.
PROPOSES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)


def _failure(text: str) -> CallToolResult:
    """A tool failure as the client sees it: ``isError`` and one line of text."""
    line = " ".join(text.split())
    return CallToolResult(content=[TextContent(type="text", text=line[:MAX_ERROR_CHARS])], is_error=True)


def _bad_arguments(name: str, exc: ValidationError) -> CallToolResult:
    """Arguments the tool's schema refuses, named field by field on one line."""
    problems = []
    for error in exc.errors(include_url=False)[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        given = error.get("input")
        shown = f" (got {given!r})" if isinstance(given, (int, float, str)) and len(repr(given)) <= 40 else ""
        problems.append(f"{where}: {error['msg']}{shown}")
    more = f" (and {len(exc.errors()) - 5} more)" if len(exc.errors()) > 5 else ""
    return _failure(f"bad arguments for {name}: {'; '.join(problems)}{more}")


def _run(
    name: str,
    arguments: dict[str, Any],
    body: Callable[[], Any],
    *,
    ctx: Any = None,
    needs: Scope = "read",
    buckets: tuple[Bucket, ...] = (),
) -> Any:
    """One tool call: scope check, the key's rate limits of ``buckets`` (the POST to /mcp took
    its general token), observed as ``mcp.<name>``; any failure becomes the tool's error result
    (``isError``, one line), never an exception the SDK would log or wrap."""
    try:
        # The tool's nested ops (a registry tool's tool.<name>, model calls) came through MCP:
        # the learner tells them from the agents' own work by this origin.
        with observe_context(origin="mcp"), observe(f"mcp.{name}", source="mcp", input=arguments) as op:
            if ctx is not None:
                forbid(_principal(ctx), needs, f"the MCP tool {name}")
                if buckets:
                    charge_scope(_http_scope(ctx), buckets, f"the MCP tool {name}")
            result = body()
            op.set_output(result)
            return result
    except AgentlakeError as exc:
        return _failure(exc.message)
    except ValidationError as exc:
        return _bad_arguments(name, exc)
    except Exception as exc:
        log.warning("the MCP tool %s failed", name, exc_info=True)
        return _failure(f"{name} failed unexpectedly ({type(exc).__name__}); the server log has the details")


class _Arguments(ArgModelBase):
    """Whatever the client sent, passed through unvalidated: each tool validates it with its own
    model and answers a one-line error (the SDK's own validation would answer pydantic's text).
    The advertised input schema is the model's, so clients see the real bounds."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def _registry_tools(services: Services) -> list[Any]:
    """The agents' registry as MCP tools, with the registry's own JSON schemas."""

    def runner(name: str) -> Callable[..., Any]:
        def call(**arguments: Any) -> Any:
            def body() -> Any:
                result = operations.call_tool(services, name, arguments, agent_id="mcp")
                if not result.ok:
                    return _failure(result.error or result.text)
                structured = result.model_dump(mode="json", exclude={"args", "text"})
                return CallToolResult(
                    content=[TextContent(type="text", text=result.text)], structured_content=structured
                )

            return _run(name, arguments, body)

        return call

    return [
        Tool(
            fn=runner(schema["name"]),
            name=schema["name"],
            description=schema["description"],
            parameters=schema["parameters"],
            fn_metadata=FuncMetadata(arg_model=_Arguments),
            is_async=False,
            # The registry's tools read the lake (POST /tools/{name}/call needs a read key).
            annotations=READ_ONLY,
        )
        for schema in services.tools.schemas()
    ]


def _model_tool(
    services: Services,
    name: str,
    description: str,
    request_model: type[BaseModel],
    output_model: type[BaseModel],
    operation: Callable[[Services, Any, Principal], Any],
    *,
    annotations: ToolAnnotations,
    needs: Scope = "read",
    calls_model: bool = False,
) -> Tool:
    """An MCP tool whose arguments are exactly ``request_model`` (the REST route's body or
    query): its input schema is the model's JSON schema, so both doors share one definition of
    defaults, bounds and descriptions; it runs ``operation(services, request, principal)``, the
    REST route's own function."""

    def call(ctx: Any = None, **arguments: Any) -> Any:
        def body() -> Any:
            request = request_model.model_validate(arguments)
            result = operation(services, request, _principal(ctx))
            return CallToolResult(
                content=[TextContent(type="text", text=result.model_dump_json())],
                structured_content=result.model_dump(mode="json"),
            )

        # The REST twin's buckets: a write route's, and a model route's when it calls a model.
        wanted: list[Bucket] = ["write"] if needs != "read" else []
        if calls_model:
            wanted.append("model")
        buckets = tuple(wanted)
        return _run(name, arguments, body, ctx=ctx, needs=needs, buckets=buckets)

    return Tool(
        fn=call,
        name=name,
        description=description,
        parameters=request_model.model_json_schema(),
        fn_metadata=FuncMetadata(arg_model=_Arguments, output_model=output_model),
        is_async=False,
        context_kwarg="ctx",
        annotations=annotations,
    )


def _twin_tools(services: Services) -> list[Tool]:
    """The MCP twins of the REST routes, each over the route's operation and request model."""
    return [
        _model_tool(
            services,
            "search",
            "Matching text: semantic search over a dataset's indexed text, optionally narrowed "
            "first by a SQL WHERE fragment (no 'WHERE'). Mirrors POST /search.",
            SearchRequest,
            SearchResponse,
            lambda s, r, _: operations.search(s, r),
            annotations=READ_ONLY,
        ),
        _model_tool(
            services,
            "match",
            "Matching text over workers, a hybrid fill search: a SQL WHERE fragment picks who is "
            "eligible, the question ranks them. Mirrors POST /match.",
            MatchRequest,
            SearchResponse,
            lambda s, r, _: operations.match(s, r),
            annotations=READ_ONLY,
        ),
        _model_tool(
            services,
            "worker_profile",
            "A worker's record, placements (newest first, with client "
            "names), counts by status and the clients where they did not show. Mirrors GET /profile/{id}.",
            WorkerRef,
            WorkerProfile,
            lambda s, r, _: operations.worker_profile(s, r.worker_id),
            annotations=READ_ONLY,
        ),
        _model_tool(
            services,
            "ask",
            "Answer a question over the lake with an LLM: SQL first for structured "
            "questions, hybrid search otherwise; the answer cites its sources. Mirrors POST /ask.",
            AskRequest,
            Answer,
            lambda s, r, _: operations.ask(s, r),
            annotations=READ_VIA_MODELS,
            calls_model=True,
        ),
        _model_tool(
            services,
            "feedback",
            "Say whether an answer of the ask tool was right, or wrong and what it should have "
            "been: give it on every answer you checked, the witness learns from it (needs a write "
            "key over HTTP). Mirrors POST /feedback.",
            Feedback,
            FeedbackRecorded,
            lambda s, r, _: operations.feedback(s, r),
            annotations=RECORDS_OUTCOME,
            needs="write",
        ),
        _model_tool(
            services,
            "fill",
            "Fill one staffing order against the lake: verified workers, spares, every rejection's "
            "reason and the transcript; success false when unfilled (needs a write key over HTTP). "
            "The order may be in words ('need two welders near Cleveland OH tomorrow morning'): the "
            "reading says what was understood; an order without a role, count or place is an error "
            "whose text is the question to ask the user. Mirrors POST /fill.",
            FillRequest,
            TaskOutcome,
            lambda s, r, _: operations.fill_order(s, r),
            annotations=FILLS,
            needs="write",
            calls_model=True,
        ),
        _model_tool(
            services,
            "lessons",
            "Check before a complex task: lessons learned from earlier runs, highest confidence "
            "first, filtered by status and by what they match, one page at a time. Mirrors GET /lessons.",
            LessonQuery,
            LessonList,
            lambda s, r, _: operations.list_lessons(s, r),
            annotations=READ_ONLY,
        ),
        _model_tool(
            services,
            "lesson",
            "One lesson and its full history. Mirrors GET /lessons/{id}.",
            LessonRef,
            LessonDetail,
            lambda s, r, _: operations.lesson_detail(s, r.lesson_id),
            annotations=READ_ONLY,
        ),
        _model_tool(
            services,
            "log_outcome",
            "Record how a run ended so the lessons given to it get "
            "measured (needs a write key over HTTP). Mirrors POST /log with kind=outcome.",
            LogOutcome,
            LogResponse,
            lambda s, r, _: operations.log_outcome(s, r),
            annotations=RECORDS_OUTCOME,
            needs="write",
        ),
        _model_tool(
            services,
            "propose_lesson",
            "Propose a lesson; curation adds it as pending, merges it, "
            "or rejects it with the reason (needs a write key over HTTP; it stays pending unless "
            "an admin key proposes it). Mirrors POST /log with kind=lesson.",
            LogLesson,
            LogResponse,
            operations.propose_lesson,
            annotations=PROPOSES,
            needs="write",
        ),
        _model_tool(
            services,
            "models",
            "Model providers, reachability, context windows and loaded models. Mirrors GET /models.",
            _NoArguments,
            ModelsResponse,
            lambda s, _r, _p: operations.models(s),
            # It asks every configured model server whether it answers (possibly a hosted one).
            annotations=READ_VIA_MODELS,
        ),
    ]


class _NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


def build_mcp_server(services: Services) -> MCPServer:
    """The MCP server over ``services`` (the same handles the gateway uses)."""
    server = MCPServer(
        "agentlake",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=_registry_tools(services) + _twin_tools(services),
    )

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
        try:
            return operations.lesson_detail(services, lesson_id).model_dump_json()
        except NotFoundError as exc:
            raise ResourceNotFoundError(exc.message) from None

    @server.resource(
        manual.MANUAL_URI,
        name="manual",
        mime_type="text/markdown",
        description="The agents' manual: how to use these tools (answer from tools, SQL first, "
        "hybrid search for text, feedback, lessons), each rule with its why.",
    )
    def manual_resource() -> str:
        return manual.MANUAL

    return server


def run_stdio(settings: Settings | None = None) -> None:
    """Serve the MCP tools over stdin/stdout until the client closes the pipe.

    Opens the lake, the lesson store and the observer of ``settings`` in this process, so it
    cannot run beside a gateway holding the same data dir (DuckDB allows one writer per file);
    point such a client at the gateway's ``/mcp`` instead.
    """
    services = Services(settings or load_settings())
    server = build_mcp_server(services)
    try:
        server.run("stdio")
    finally:
        services.close()
