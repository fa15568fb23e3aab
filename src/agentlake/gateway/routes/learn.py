"""Learn routes: lessons with filters and history, curation by admins, /log, and the scheduled
learner's status and a cycle now (/learn/status, /learn/run).

``/lessons`` is the lessons' canonical path; ``/playbooks``, the name the seed gave them, stays
as an alias served by the same handlers and marked deprecated in OpenAPI (:func:`_lessons_route`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request

from agentlake.gateway import operations
from agentlake.gateway.schemas import (
    LESSON_ID_PATTERN,
    LearnStatus,
    LessonDetail,
    LessonList,
    LessonQuery,
    LogRequest,
    LogResponse,
    RetireRequest,
    RollbackRequest,
)
from agentlake.gateway.security import require
from agentlake.http.errors import BAD_REQUEST, COMMON_ERRORS, NOT_FOUND, UNAVAILABLE
from agentlake.http.keys import Principal
from agentlake.learn import Lesson

router = APIRouter(tags=["learn"], responses=COMMON_ERRORS)
read = [Depends(require("read"))]
LessonId = Path(..., pattern=LESSON_ID_PATTERN, description="A lesson id, e.g. L-3fa2b1c9d0.")
ALIAS = "/playbooks"


def _lessons_route(
    method: str, tail: str, **options: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The handler at ``/lessons{tail}``, and at ``/playbooks{tail}`` (the seed's name, kept so
    its clients keep working) marked deprecated: one handler, two paths."""

    def register(handler: Callable[..., Any]) -> Callable[..., Any]:
        router.add_api_route(f"/lessons{tail}", handler, methods=[method], **options)
        alias = options | {
            "summary": f"Deprecated alias of {method} /lessons{tail}.",
            "openapi_extra": {"x-alias-of": f"/lessons{tail}"},
        }
        router.add_api_route(f"{ALIAS}{tail}", handler, methods=[method], deprecated=True, **alias)
        return handler

    return register


@router.get(
    "/learn/status",
    response_model=LearnStatus,
    dependencies=read,
    summary="The scheduled learner's last cycles.",
)
def learn_status(request: Request) -> LearnStatus:
    """Whether the learner runs, how far it has read the op log and what each of its last
    cycles read and changed (the status lines it logs)."""
    return operations.learn_status(request.app.state.services)


@router.post(
    "/learn/run",
    response_model=LearnStatus,
    dependencies=[Depends(require("write"))],
    summary="Run one learning cycle now.",
    responses=UNAVAILABLE,
)
def learn_run(request: Request) -> LearnStatus:
    """What `agentlake lessons learn` does beside a running server: one cycle over the ops not
    read yet, then the status. 503 when this server's learner is off."""
    return operations.learn_now(request.app.state.services)


@_lessons_route("GET", "", response_model=LessonList, dependencies=read, summary="Lessons, filtered.")
def lessons(request: Request, query: Annotated[LessonQuery, Query()]) -> LessonList:
    """Current lessons, highest confidence first; match filters compare case-insensitively."""
    return operations.list_lessons(request.app.state.services, query)


@_lessons_route(
    "GET",
    "/{lesson_id}",
    response_model=LessonDetail,
    dependencies=read,
    summary="One lesson and its history.",
    responses=NOT_FOUND,
)
def lesson(request: Request, lesson_id: str = LessonId) -> LessonDetail:
    return operations.lesson_detail(request.app.state.services, lesson_id)


@_lessons_route(
    "POST",
    "/{lesson_id}/retire",
    response_model=Lesson,
    summary="Retire a lesson (admin).",
    dependencies=[Depends(require("admin"))],
    responses=NOT_FOUND | BAD_REQUEST,
)
def retire(body: RetireRequest, request: Request, lesson_id: str = LessonId) -> Lesson:
    """The lesson stops being given to agents; it stays in history and can be rolled back."""
    return operations.retire_lesson(request.app.state.services, lesson_id, body.reason)


@_lessons_route(
    "POST",
    "/{lesson_id}/rollback",
    response_model=Lesson,
    summary="Restore an earlier version (admin).",
    dependencies=[Depends(require("admin"))],
    responses=NOT_FOUND | BAD_REQUEST,
)
def rollback(body: RollbackRequest, request: Request, lesson_id: str = LessonId) -> Lesson:
    """The content of `version` becomes a new version; history is never rewritten."""
    return operations.rollback_lesson(request.app.state.services, lesson_id, body.version, body.reason)


@router.post(
    "/log",
    response_model=LogResponse,
    summary="Record a run's outcome or propose a lesson.",
    responses=BAD_REQUEST,
)
def log(body: LogRequest, request: Request, principal: Principal = Depends(require("write"))) -> LogResponse:
    """`kind: outcome` records how a run ended (lessons given to it get measured); `kind: lesson`
    proposes a lesson, which curation adds as pending, merges, or answers 400 when it rejects it.
    A lesson proposed with a write key stays pending whatever its confidence; only an admin
    key's proposal can become active at once. A free-text note `{operation, approach, result,
    context}` (`kind: note`, or no kind) is recorded as one op, `note.outcome`."""
    services = request.app.state.services
    if body.kind == "outcome":
        return operations.log_outcome(services, body)
    if body.kind == "note":
        return operations.log_note(services, body)
    return operations.propose_lesson(services, body, principal)
