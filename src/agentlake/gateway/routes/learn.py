"""Learn routes: lessons ("playbooks") with filters and history, curation by admins, and /log."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Path, Query, Request

from agentlake.gateway.errors import BAD_REQUEST, COMMON_ERRORS, NOT_FOUND
from agentlake.gateway.schemas import (
    LESSON_ID_PATTERN,
    LessonDetail,
    LessonList,
    LogRequest,
    LogResponse,
    RetireRequest,
    RollbackRequest,
)
from agentlake.gateway.security import Principal, require
from agentlake.learn import Lesson

router = APIRouter(tags=["learn"], responses=COMMON_ERRORS)
read = [Depends(require("read"))]
LessonId = Path(..., pattern=LESSON_ID_PATTERN, description="A lesson id, e.g. L-3fa2b1c9d0.")


@router.get("/playbooks", response_model=LessonList, dependencies=read, summary="Lessons, filtered.")
def playbooks(
    request: Request,
    status: list[Literal["pending", "active", "conflict-hold", "retired"]] = Query(
        default_factory=list, description="Any of these statuses (repeat the parameter); default: all."
    ),
    domain: str | None = Query(None, max_length=64),
    scope: Literal["project", "global"] | None = None,
    task_kind: str | None = Query(None, max_length=64),
    role: str | None = Query(None, max_length=128),
    client_id: str | None = Query(None, max_length=128),
    city: str | None = Query(None, max_length=128),
    state: str | None = Query(None, max_length=32),
    tool: str | None = Query(None, max_length=128),
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=1_000_000),
) -> LessonList:
    """Current lessons, highest confidence first; match filters compare case-insensitively."""
    lessons = request.app.state.services.lessons.list(
        status=status or None,
        domain=domain,
        scope=scope,
        task_kind=task_kind,
        role=role,
        client_id=client_id,
        city=city,
        state=state,
        tool=tool,
    )
    return LessonList(lessons=lessons[offset : offset + limit], total=len(lessons))


@router.get(
    "/playbooks/{lesson_id}",
    response_model=LessonDetail,
    dependencies=read,
    summary="One lesson and its history.",
    responses=NOT_FOUND,
)
def playbook(request: Request, lesson_id: str = LessonId) -> LessonDetail:
    lessons = request.app.state.services.lessons
    return LessonDetail(lesson=lessons.get(lesson_id), history=lessons.history(lesson_id))


@router.post(
    "/playbooks/{lesson_id}/retire",
    response_model=Lesson,
    summary="Retire a lesson (admin).",
    dependencies=[Depends(require("admin"))],
    responses=NOT_FOUND | BAD_REQUEST,
)
def retire(body: RetireRequest, request: Request, lesson_id: str = LessonId) -> Lesson:
    """The lesson stops being given to agents; it stays in history and can be rolled back."""
    return request.app.state.services.lessons.retire(lesson_id, body.reason, actor="human")


@router.post(
    "/playbooks/{lesson_id}/rollback",
    response_model=Lesson,
    summary="Restore an earlier version (admin).",
    dependencies=[Depends(require("admin"))],
    responses=NOT_FOUND | BAD_REQUEST,
)
def rollback(body: RollbackRequest, request: Request, lesson_id: str = LessonId) -> Lesson:
    """The content of `version` becomes a new version; history is never rewritten."""
    return request.app.state.services.lessons.rollback(
        lesson_id, body.version, reason=body.reason, actor="human"
    )


@router.post(
    "/log",
    response_model=LogResponse,
    summary="Record a run's outcome or propose a lesson.",
    responses=BAD_REQUEST,
)
def log(
    body: LogRequest, request: Request, principal: Principal = Depends(require("write"))
) -> LogResponse:
    """`kind: outcome` records how a run ended (lessons given to it get measured); `kind: lesson`
    proposes a lesson, which curation adds as pending, merges, or answers 400 when it rejects it.
    A lesson proposed with a write key stays pending whatever its confidence; only an admin
    key's proposal can become active at once."""
    from agentlake.learn import record_outcome

    lessons = request.app.state.services.lessons
    if body.kind == "outcome":
        record_outcome(lessons, body.run_id, body.task, body.success, body.score)
        return LogResponse(kind="outcome", run_id=body.run_id)
    applied = lessons.add(body.lesson, reason=body.reason, activate=principal.allows("admin"))
    return LogResponse(
        kind="lesson",
        outcome=applied.outcome,
        lesson_id=applied.lesson_id,
        version=applied.version,
        reason=applied.reason,
    )
