"""Lake routes: read-only SQL, semantic and hybrid search, workers and their profiles."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Request, Response

from agentlake.gateway import operations
from agentlake.gateway.schemas import (
    WORKER_ID_MAX,
    MatchRequest,
    SearchRequest,
    SearchResponse,
    SQLRequest,
    SQLResponse,
    Worker,
)
from agentlake.gateway.security import require
from agentlake.http.errors import BAD_REQUEST, COMMON_ERRORS, NOT_FOUND
from agentlake.workforce.profile import WorkerProfile

router = APIRouter(tags=["lake"], dependencies=[Depends(require("read"))], responses=COMMON_ERRORS)
WorkerId = Path(..., ge=0, le=WORKER_ID_MAX, description="The worker's integer key (worker_id).")


@router.post(
    "/sql", response_model=SQLResponse, summary="Run one read-only SQL query.", responses=BAD_REQUEST
)
def sql(body: SQLRequest, request: Request) -> SQLResponse:
    """One SELECT/WITH statement through the lake's guard: refused DDL/DML/file access, internal
    tables and unbounded value builders -> 400; interrupted after `sql_timeout_s` or past
    `duckdb_memory_limit` -> 500; at most `sql_max_rows` rows and about `sql_max_result_bytes`
    bytes, flagged `truncated`."""
    return operations.run_sql(request.app.state.services, body)


@router.post(
    "/search",
    response_model=SearchResponse,
    summary="Semantic search over a dataset.",
    responses=BAD_REQUEST | NOT_FOUND,
)
def search(body: SearchRequest, request: Request) -> SearchResponse:
    """Rank the dataset's indexed rows by similarity to the question, after the optional filter."""
    return operations.search(request.app.state.services, body)


@router.post(
    "/match",
    response_model=SearchResponse,
    summary="Hybrid fill search over workers.",
    responses=BAD_REQUEST | NOT_FOUND,
)
def match(body: MatchRequest, request: Request) -> SearchResponse:
    """The SQL filter picks eligible workers (checked by the guard), the question ranks them."""
    return operations.match(request.app.state.services, body)


@router.get(
    "/worker/{worker_id}",
    response_model=Worker,
    summary="One worker's record.",
    responses=BAD_REQUEST | NOT_FOUND,
)
async def worker(request: Request, worker_id: int = WorkerId) -> Response:
    # The hottest route: a cached record is answered on the event loop as the bytes the Worker
    # model rendered when it was read (gateway.worker_cache); misses share grouped reads.
    workers = request.app.state.services.workers
    body = workers.cached(worker_id) or await workers.read(worker_id)
    return Response(body, media_type="application/json")


@router.get(
    "/profile/{worker_id}",
    response_model=WorkerProfile,
    summary="A worker with placement history.",
    responses=BAD_REQUEST | NOT_FOUND,
)
def profile(request: Request, worker_id: int = WorkerId) -> WorkerProfile:
    """The worker's record, their placements (newest first, with client names), counts by status
    and the clients where they did not show."""
    return operations.worker_profile(request.app.state.services, worker_id)
