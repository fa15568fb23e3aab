"""Lake routes: read-only SQL, semantic and hybrid search, workers and their profiles."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Request, Response

from agentlake.gateway.errors import BAD_REQUEST, COMMON_ERRORS, NOT_FOUND
from agentlake.gateway.schemas import (
    MatchRequest,
    SearchHit,
    SearchRequest,
    SearchResponse,
    SQLRequest,
    SQLResponse,
    Worker,
)
from agentlake.gateway.security import require
from agentlake.workforce.profile import WorkerProfile

router = APIRouter(tags=["lake"], dependencies=[Depends(require("read"))], responses=COMMON_ERRORS)
# DuckDB's INTEGER: an id outside it cannot exist, so it is a 422, not a failed lookup.
WorkerId = Path(..., ge=0, le=2**31 - 1, description="The worker's integer key (worker_id).")


@router.post(
    "/sql", response_model=SQLResponse, summary="Run one read-only SQL query.", responses=BAD_REQUEST
)
def sql(body: SQLRequest, request: Request) -> SQLResponse:
    """One SELECT/WITH statement through the lake's guard: refused DDL/DML/file access -> 400;
    interrupted after `sql_timeout_s` -> 500; at most `sql_max_rows` rows, flagged `truncated`."""
    lake = request.app.state.services.lake
    cap = min(body.max_rows or lake.settings.sql_max_rows, lake.settings.sql_max_rows)
    return SQLResponse.from_result(lake.query(body.sql, params=body.params, max_rows=cap))


@router.post(
    "/search",
    response_model=SearchResponse,
    summary="Semantic search over a dataset.",
    responses=BAD_REQUEST | NOT_FOUND,
)
def search(body: SearchRequest, request: Request) -> SearchResponse:
    """Rank the dataset's indexed rows by similarity to the question, after the optional filter."""
    from agentlake.lake.search import hybrid_search

    hits = hybrid_search(
        request.app.state.services.lake, body.dataset, body.question, where=body.where, k=body.k
    )
    return SearchResponse(hits=[SearchHit.from_source(hit) for hit in hits])


@router.post(
    "/match",
    response_model=SearchResponse,
    summary="Hybrid fill search over workers.",
    responses=BAD_REQUEST | NOT_FOUND,
)
def match(body: MatchRequest, request: Request) -> SearchResponse:
    """The SQL filter picks eligible workers (checked by the guard), the question ranks them."""
    from agentlake.lake.search import hybrid_search

    hits = hybrid_search(
        request.app.state.services.lake, "workers", body.question, where=body.where, k=body.k
    )
    return SearchResponse(hits=[SearchHit.from_source(hit) for hit in hits])


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
    from agentlake.workforce.profile import worker_profile

    return worker_profile(request.app.state.services.lake, worker_id)
