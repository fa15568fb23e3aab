"""Lake routes: read-only SQL, semantic and hybrid search, workers and their profiles."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from agentlake.gateway.errors import BAD_REQUEST, COMMON_ERRORS
from agentlake.gateway.schemas import SQLRequest, SQLResponse
from agentlake.gateway.security import require

router = APIRouter(tags=["lake"], dependencies=[Depends(require("read"))], responses=COMMON_ERRORS)


@router.post(
    "/sql", response_model=SQLResponse, summary="Run one read-only SQL query.", responses=BAD_REQUEST
)
def sql(body: SQLRequest, request: Request) -> SQLResponse:
    """One SELECT/WITH statement through the lake's guard: refused DDL/DML/file access -> 400;
    interrupted after `sql_timeout_s` -> 500; at most `sql_max_rows` rows, flagged `truncated`."""
    lake = request.app.state.services.lake
    cap = min(body.max_rows or lake.settings.sql_max_rows, lake.settings.sql_max_rows)
    return SQLResponse.from_result(lake.query(body.sql, params=body.params, max_rows=cap))
