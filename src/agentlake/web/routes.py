"""The dashboard's doors on the gateway: the page, its assets, the WebSocket and its JSON routes.

``mount_web(app, services)`` builds the process's ``GraphRuntime`` over the gateway's services
(its lake, tools and observer) and includes the router:

* ``GET /`` the page and ``GET /static/{name}`` its assets (built bundle included, nothing
  from a CDN); not in the OpenAPI document;
* ``WS /ws`` the graph runtime (``web.socket``);
* ``GET /api/graphs``, ``GET /api/graphs/active``, ``PUT /api/graphs/active``,
  ``GET /api/graphs/{name}``: list, show, switch graphs;
* ``GET /api/scenarios/latest``: the newest scenario run's leaderboard and learning curve.

The page also reads ``/playbooks`` (lessons) and ``/observer/`` (ops stream, stats), served by
the gateway. Routes are thin: the runtime and ``web.panels`` do the work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request, WebSocket
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, HTMLResponse

from agentlake.errors import NotFoundError
from agentlake.gateway.errors import COMMON_ERRORS, NOT_FOUND
from agentlake.gateway.security import require
from agentlake.web.schemas import GraphList, GraphView, ScenarioRun, SwitchGraph, graph_view

STATIC_DIR = Path(__file__).with_name("static")
_MEDIA = {".js": "text/javascript", ".css": "text/css", ".txt": "text/plain", ".svg": "image/svg+xml"}

router = APIRouter(tags=["dashboard"], responses=COMMON_ERRORS)
read = [Depends(require("read"))]


def _runtime(request: Request) -> Any:
    return request.app.state.graph_runtime


@router.get("/", include_in_schema=False)
def page() -> HTMLResponse:
    return HTMLResponse((STATIC_DIR / "index.html").read_text(encoding="utf-8"))


@router.get("/static/{name}", include_in_schema=False)
def asset(name: str) -> FileResponse:
    # Only files of the static directory itself, by plain name: no path ever leaves it.
    path = STATIC_DIR / name
    if "/" in name or name.startswith(".") or path.suffix not in _MEDIA or not path.is_file():
        raise NotFoundError(f"no dashboard asset {name!r}")
    return FileResponse(path, media_type=_MEDIA[path.suffix], headers={"Cache-Control": "no-cache"})


@router.websocket("/ws")
async def socket(websocket: WebSocket) -> None:
    from agentlake.web.socket import serve_socket

    await serve_socket(websocket, websocket.app.state.graph_runtime)


@router.get(
    "/api/graphs", response_model=GraphList, dependencies=read, summary="Graphs that can be made active."
)
def graphs(request: Request) -> GraphList:
    runtime = _runtime(request)
    return GraphList(graphs=runtime.graphs(), active=runtime.active.name)


@router.get(
    "/api/graphs/active",
    response_model=GraphView,
    dependencies=read,
    summary="The active graph: nodes and typed edges.",
)
def active_graph(request: Request) -> GraphView:
    runtime = _runtime(request)
    return graph_view(runtime.active.view(), runtime.active.name)


@router.put(
    "/api/graphs/active",
    response_model=GraphView,
    dependencies=[Depends(require("write"))],
    responses=NOT_FOUND,
    summary="Switch the active graph (every session's next message uses it).",
)
def switch_graph(body: SwitchGraph, request: Request) -> GraphView:
    graph = _runtime(request).switch(body.name)
    return graph_view(graph.view(), graph.name)


@router.get(
    "/api/graphs/{name}",
    response_model=GraphView,
    dependencies=read,
    responses=NOT_FOUND,
    summary="One graph by name.",
)
def show_graph(
    request: Request,
    name: str = PathParam(
        ..., max_length=64, pattern=r"^[a-z][a-z0-9_-]*$", description="A graph name from GET /api/graphs."
    ),
) -> GraphView:
    runtime = _runtime(request)
    return graph_view(runtime.graph(name).view(), runtime.active.name)


@router.get(
    "/api/scenarios/latest",
    response_model=ScenarioRun,
    dependencies=read,
    responses=NOT_FOUND,
    summary="The newest scenario run: leaderboard and learning curve.",
)
def latest_scenarios(request: Request) -> ScenarioRun:
    from agentlake.web.panels import latest_scenario_run

    return ScenarioRun(**latest_scenario_run(request.app.state.settings.runs_dir))


def mount_web(app: FastAPI, services: Any) -> None:
    """Serve the dashboard from ``app``: a ``GraphRuntime`` over ``services`` and the routes above."""
    from agentlake.graph import GraphRuntime

    app.state.graph_runtime = GraphRuntime(services.settings, resources=services)
    app.include_router(router)
