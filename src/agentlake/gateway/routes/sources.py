"""Source routes: the lake's external read-only databases (``agentlake sources`` over HTTP).

Listing needs a write key (a target names hosts and databases), adding and removing an admin
key. A target's password is never echoed: every answer shows it as ``***``, and the gateway's
op of a request to ``/sources`` records no body (``gateway.recording``).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, status
from fastapi import Path as PathParam

from agentlake.gateway import operations
from agentlake.gateway.schemas import SourceAdd, SourceInfo, SourceList
from agentlake.gateway.security import require
from agentlake.http.errors import BAD_REQUEST, COMMON_ERRORS, NOT_FOUND

router = APIRouter(prefix="/sources", tags=["sources"], responses=COMMON_ERRORS)
SourceName = PathParam(..., min_length=1, max_length=31, description="The source's name.")


@router.get(
    "",
    response_model=SourceList,
    summary="External read-only sources.",
    dependencies=[Depends(require("write"))],
)
def sources(request: Request) -> SourceList:
    """Every registered source: its name, kind, target (a URL's password as ***) and when it was added."""
    return operations.list_sources(request.app.state.services)


@router.post(
    "",
    response_model=SourceInfo,
    status_code=status.HTTP_201_CREATED,
    summary="Register a read-only source (admin).",
    dependencies=[Depends(require("admin"))],
    responses=BAD_REQUEST,
)
def add(body: SourceAdd, request: Request) -> SourceInfo:
    """Its tables are listed once (an unreachable source is refused, 503) and join the catalog
    as NAME.table at once; `POST /sql`, `ask` and the agents' `sql` tool read them in place."""
    return operations.add_source(request.app.state.services, body)


@router.delete(
    "/{name}",
    response_model=SourceInfo,
    summary="Forget a source (admin).",
    dependencies=[Depends(require("admin"))],
    responses=NOT_FOUND,
)
def remove(request: Request, name: str = SourceName) -> SourceInfo:
    """The source's tables leave the catalog; its database is not touched."""
    return operations.remove_source(request.app.state.services, name)
