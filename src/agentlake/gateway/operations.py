"""One function per gateway operation, called by the REST route and by its MCP twin alike.

Each takes the process's :class:`~agentlake.gateway.services.Services` and the typed request
(``gateway.schemas``: the one place an operation's defaults, bounds and filters are declared)
and returns the typed response. The REST routes (``gateway.routes``) parse into those models
and the MCP tools (``gateway.mcp_server``) validate their arguments against the same models, so
``GET /lessons`` and the MCP tool ``lessons`` cannot drift apart again (they did: a default
of 100 against 50, different filters). The functions call the library and convert; they own
no logic of their own beyond the caller's scope where it changes the outcome (an admin's
lesson may be active at once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlake.errors import NotFoundError, RunError, UnavailableError
from agentlake.gateway.schemas import (
    AskRequest,
    FillRequest,
    LearnStatus,
    LessonDetail,
    LessonList,
    LessonQuery,
    LogLesson,
    LogNote,
    LogOutcome,
    LogResponse,
    MatchRequest,
    ModelsResponse,
    SearchHit,
    SearchRequest,
    SearchResponse,
    SourceAdd,
    SourceInfo,
    SourceList,
    SQLRequest,
    SQLResponse,
    VramResponse,
)
from agentlake.http.keys import Principal
from agentlake.learn import outcome_attributes
from agentlake.llm.inventory import memory_report, model_statuses
from agentlake.observe import event
from agentlake.questions.feedback import Feedback, FeedbackRecorded, give_feedback

if TYPE_CHECKING:
    from agentlake.agents import TaskOutcome
    from agentlake.agents.ask import Answer
    from agentlake.agents.tools import ToolResult
    from agentlake.gateway.services import Services
    from agentlake.learn import Lesson
    from agentlake.workforce.profile import WorkerProfile


# --- lake ---------------------------------------------------------------------------------


def run_sql(services: Services, request: SQLRequest) -> SQLResponse:
    """One guarded read-only query, at most the server's ``sql_max_rows`` rows."""
    lake = services.lake
    cap = min(request.max_rows or lake.settings.sql_max_rows, lake.settings.sql_max_rows)
    return SQLResponse.from_result(lake.query(request.sql, params=request.params, max_rows=cap))


def search(services: Services, request: SearchRequest) -> SearchResponse:
    """Rank a dataset's indexed rows by similarity to the question, after the optional filter."""
    # Lazy (start-up time): search and its embedder load on the first search.
    from agentlake.lake.search import hybrid_search

    hits = hybrid_search(services.lake, request.dataset, request.question, where=request.where, k=request.k)
    return SearchResponse(hits=[SearchHit.from_source(hit) for hit in hits])


def match(services: Services, request: MatchRequest) -> SearchResponse:
    """Hybrid fill search: the filter picks eligible workers, the question ranks them."""
    # Lazy (start-up time): search and its embedder load on the first search; the staffing domain loads on first use.
    from agentlake.lake.search import hybrid_search
    from agentlake.workforce.tables import SEARCH_DATASET

    hits = hybrid_search(services.lake, SEARCH_DATASET, request.question, where=request.where, k=request.k)
    return SearchResponse(hits=[SearchHit.from_source(hit) for hit in hits])


def worker_profile(services: Services, worker_id: int) -> WorkerProfile:
    """A worker's record, placements, counts by status and the clients where they did not show."""
    # Lazy (start-up time): the staffing domain loads on first use.
    from agentlake.workforce.profile import worker_profile as profile

    return profile(services.lake, worker_id)


# --- agents -------------------------------------------------------------------------------


def ask(services: Services, request: AskRequest) -> Answer:
    """An answer from a model over the lake, citing its sources."""
    # Lazy (start-up time): the agents load on first use.
    from agentlake.agents.ask import ask as ask_lake

    return ask_lake(
        request.question,
        lake=services.lake,
        model=request.model,
        dataset=request.dataset,
        k=request.k,
        settings=services.settings,
        observer=services.observer,
        lessons=services.lessons if request.lessons and services.settings.ask_lessons else False,
    )


def feedback(services: Services, request: Feedback) -> FeedbackRecorded:
    """A verdict on an answer, recorded as one op the learner reads (``questions.feedback``)."""
    return give_feedback(request, observer=services.observer)


def fill_order(services: Services, request: FillRequest) -> TaskOutcome:
    """Fill one order with this process's lake, lessons and observer (``agents.fill``)."""
    # Lazy (start-up time): the agents load on first use.
    from agentlake.agents import fill

    options = request.model_dump(
        include={"executor_model", "reviewer_model", "turn_budget"}, exclude_none=True
    )
    return fill(
        request.order,
        policy=request.policy,
        settings=services.settings,
        lake=services.lake,
        lessons=services.lessons,
        observer=services.observer,
        client_id=request.client_id,
        shift_start=request.shift_start,
        shift_end=request.shift_end,
        requirements=request.requirements,
        radius_miles=request.radius_miles,
        rescue=request.rescue,
        overseer=request.overseer,
        now=request.now,
        agent_id="gateway",
        **(options if request.policy == "llm" else {}),
    )


def call_tool(services: Services, name: str, arguments: dict[str, Any], *, agent_id: str) -> ToolResult:
    """Run one of the agents' tools as an agent would (recorded as ``tool.<name>``);
    ``NotFoundError`` for an unknown tool. A failure of the input or the data is the result's
    ``ok: false``, not an exception."""
    if name not in services.tools:
        raise NotFoundError(f"unknown tool {name!r}; known tools: {', '.join(services.tools.names())}")
    return services.tools.call(name, arguments, ctx=services.run_context(agent_id=agent_id))


def models(services: Services) -> ModelsResponse:
    """Every configured model, whether its server answers, its window, whether it is loaded."""
    return ModelsResponse.from_statuses(model_statuses(services.settings))


def vram(services: Services) -> VramResponse:
    """What the model hosts report about loaded models and memory."""
    return VramResponse(hosts=memory_report(services.settings))


# --- learn --------------------------------------------------------------------------------


def list_lessons(services: Services, query: LessonQuery) -> LessonList:
    """Current lessons matching ``query``, highest confidence first, one page of them."""
    found = services.lessons.list(
        status=query.status or None,
        domain=query.domain,
        scope=query.scope,
        task_kind=query.task_kind,
        role=query.role,
        client_id=query.client_id,
        city=query.city,
        state=query.state,
        tool=query.tool,
        dataset=query.dataset,
    )
    return LessonList(lessons=found[query.offset : query.offset + query.limit], total=len(found))


def learn_status(services: Services) -> LearnStatus:
    """What the scheduled learner does (not running when learn_schedule is off)."""
    if services.learning is None:
        return LearnStatus(running=False)
    return LearnStatus.model_validate(services.learning.status())


def learn_now(services: Services) -> LearnStatus:
    """Run one learning cycle now (``agentlake lessons learn`` beside the server), then its status."""
    if services.learning is None:
        raise UnavailableError(
            "this server's learner is off (learn_schedule): run `agentlake lessons learn` instead"
        )
    services.learning.run_once()
    return learn_status(services)


def lesson_detail(services: Services, lesson_id: str) -> LessonDetail:
    """One lesson and its history; ``NotFoundError`` for an unknown id."""
    lessons = services.lessons
    return LessonDetail(lesson=lessons.get(lesson_id), history=lessons.history(lesson_id))


def log_outcome(services: Services, request: LogOutcome) -> LogResponse:
    """Record how a run ended as one op (``task.outcome``), so the learner measures the lessons
    given to it (the learner is the only writer of outcomes)."""
    op = event(
        "task.outcome",
        source="external",
        observer=services.observer,
        run_id=request.run_id,
        success=request.success,
        input_summary=request.task.describe(),
        attributes={
            **outcome_attributes(request.task, request.success, request.score),
            "lessons_given": request.lessons_given,
            "lessons_cited": request.lessons_cited,
        },
    )
    if op is None:
        raise RunError("the outcome could not be recorded: the observer refused it (see the server log)")
    return LogResponse(kind="outcome", run_id=request.run_id, op_id=op.id)


def log_note(services: Services, request: LogNote) -> LogResponse:
    """Record a free-text note of how an operation went as one op (``note.outcome``, source
    ``external``): shown with the other ops, not learned from unless ``learn_sources`` says so."""
    op = event(
        "note.outcome",
        source="external",
        observer=services.observer,
        input_summary=f"{request.operation}: {request.approach}" if request.approach else request.operation,
        output_summary=request.result,
        attributes={"note": request.model_dump(exclude={"kind"})},
    )
    if op is None:
        raise RunError("the note could not be recorded: the observer refused it (see the server log)")
    return LogResponse(kind="note", op_id=op.id)


def propose_lesson(services: Services, request: LogLesson, principal: Principal) -> LogResponse:
    """Propose a lesson to curation. Only an admin's proposal may become active at once; any
    other stays pending (tried and measured) whatever confidence it claims."""
    applied = services.lessons.add(request.lesson, reason=request.reason, activate=principal.allows("admin"))
    return LogResponse(
        kind="lesson",
        outcome=applied.outcome,
        lesson_id=applied.lesson_id,
        version=applied.version,
        reason=applied.reason,
    )


def retire_lesson(services: Services, lesson_id: str, reason: str) -> Lesson:
    """Retire a lesson by hand (admin); it stays in history and can be rolled back."""
    return services.lessons.retire(lesson_id, reason, actor="human")


def rollback_lesson(services: Services, lesson_id: str, version: int, reason: str) -> Lesson:
    """Restore an earlier version's content as a new version (admin)."""
    return services.lessons.rollback(lesson_id, version, reason=reason, actor="human")


def list_sources(services: Services) -> SourceList:
    """The lake's external sources, passwords shown as ``***``."""
    return SourceList(sources=[_source_info(source) for source in services.lake.sources.list()])


def add_source(services: Services, request: SourceAdd) -> SourceInfo:
    """Register a read-only source after listing its tables once (``SourceRegistry.add``)."""
    source, tables = services.lake.sources.add(request.name, request.target)
    return _source_info(source, [f"{source.name}.{table.name}" for table in tables])


def remove_source(services: Services, name: str) -> SourceInfo:
    """Forget a source (its database is not touched); ``NotFoundError`` for an unknown one."""
    return _source_info(services.lake.sources.remove(name))


def _source_info(source: Any, tables: list[str] | None = None) -> SourceInfo:
    return SourceInfo(
        name=source.name, kind=source.kind, target=source.shown, added_at=source.added_at, tables=tables
    )
