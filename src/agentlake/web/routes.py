"""The dashboard's doors on the gateway: the page, its assets, the WebSocket and its JSON routes.

``mount_web(app, services)`` builds the process's ``GraphRuntime`` over the gateway's services
(its lake, tools and observer) and includes the router:

* ``GET /`` the page and ``GET /static/{name}`` its assets (built bundle included, nothing
  from a CDN); not in the OpenAPI document;
* ``WS /ws`` the graph runtime (``web.socket``);
* ``GET /api/graphs``, ``GET /api/graphs/active``, ``PUT /api/graphs/active``,
  ``GET /api/graphs/{name}``: list, show, switch graphs;
* ``GET /api/scenarios/latest``: the newest scenario run's leaderboard and learning curve;
* ``GET|POST|DELETE /api/session``: who the page is signed in as, sign in with an API key (an
  HttpOnly session cookie, ``gateway.sessions``), sign out. The page, its assets and these are
  open when keys are configured; everything the page then reads needs the session.

The page also reads ``/lessons`` and ``/observer/`` (ops stream, stats), served by
the gateway. Routes are thin: the runtime and ``web.panels`` do the work.

The page's own requests (``DASHBOARD_OWN_REQUESTS``: loading it, its assets, its sign-in and the
reads that draw it) are not recorded as ops unless ``observe_dashboard_requests`` is on
(``gateway.recording``); what the page makes happen is: chat turns over ``/ws``, a graph switch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request, Response, WebSocket
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from agentlake.errors import NotFoundError
from agentlake.gateway.security import require, same_origin
from agentlake.gateway.sessions import clear_cookie_header
from agentlake.http.errors import BAD_REQUEST, COMMON_ERRORS, NOT_FOUND
from agentlake.web.schemas import (
    GraphList,
    GraphView,
    ScenarioRun,
    SessionInfo,
    SignIn,
    SwitchGraph,
    graph_view,
)

STATIC_DIR = Path(__file__).with_name("static")
_MEDIA = {".js": "text/javascript", ".css": "text/css", ".txt": "text/plain", ".svg": "image/svg+xml"}

# As the gateway's recording names requests ("<METHOD> <route template>"); HEAD is GET's twin.
DASHBOARD_OWN_REQUESTS = frozenset(
    f"{method} {path}"
    for method, path in (
        ("GET", "/"),
        ("GET", "/static/{name}"),
        ("GET", "/api/session"),
        ("POST", "/api/session"),
        ("DELETE", "/api/session"),
        ("GET", "/api/graphs"),
        ("GET", "/api/graphs/active"),
        ("GET", "/api/graphs/{name}"),
        ("GET", "/api/scenarios/latest"),
    )
    for method in ((method, "HEAD") if method == "GET" else (method,))
)

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
    # Lazy (start-up time): the dashboard is assembled when it is built.
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
    # Lazy (start-up time): the dashboard is assembled when it is built.
    from agentlake.web.panels import latest_scenario_run

    return ScenarioRun(**latest_scenario_run(request.app.state.settings.runs_dir))


def _session_info(request: Request, principal: Any) -> SessionInfo:
    return SessionInfo(
        auth=bool(request.app.state.key_ring),
        scope=principal.scope,
        key_id=principal.key_id,
        via=principal.via,
        name=principal.name,
    )


@router.get(
    "/api/session",
    response_model=SessionInfo,
    responses={401: COMMON_ERRORS[401]},
    summary="Who the caller is: scope and key fingerprint (401 when signed out).",
)
def session(request: Request) -> SessionInfo:
    """The dashboard asks this first: 200 on an open gateway or with a key or live session
    cookie, 401 when it must ask for a key."""
    principal = request.scope["state"].get("principal")
    if principal is None:
        request.app.state.key_ring.principal(None)  # the 401 saying how to send a key
    return _session_info(request, principal)


@router.post(
    "/api/session",
    response_model=SessionInfo,
    responses=BAD_REQUEST | {401: COMMON_ERRORS[401], 403: COMMON_ERRORS[403]},
    summary="Sign in: exchange an API key for an HttpOnly session cookie.",
)
def sign_in(body: SignIn, request: Request) -> JSONResponse:
    """Sets `agentlake_session` (HttpOnly, SameSite=Strict, 12 h; the key never leaves the
    request). 401 for an unknown key; 400 when the gateway has no keys configured; 403 when a
    page of another origin posts it."""
    # Inside: the route function is itself named sign_in.
    from agentlake.gateway.sessions import set_cookie_header, sign_in

    same_origin(request.scope, request.headers.get("origin"), request.headers.get("host"))
    principal, token = sign_in(request.app.state.key_ring, body.key)
    response = JSONResponse(_session_info(request, principal).model_dump())
    response.headers["Set-Cookie"] = set_cookie_header(token, secure=request.url.scheme == "https")
    response.headers["Cache-Control"] = "no-store"
    return response


@router.delete("/api/session", status_code=204, summary="Sign out: remove the session cookie.")
def sign_out(request: Request) -> Response:
    return Response(
        status_code=204, headers={"Set-Cookie": clear_cookie_header(secure=request.url.scheme == "https")}
    )


def mount_web(app: FastAPI, services: Any) -> None:
    """Serve the dashboard from ``app``: a ``GraphRuntime`` over ``services`` and the routes above."""
    # Lazy (start-up time): the graph runtime loads on first use.
    from agentlake.graph import GraphRuntime

    app.state.graph_runtime = GraphRuntime(services.settings, resources=services)
    app.state.dashboard_requests = DASHBOARD_OWN_REQUESTS  # what recording leaves out (by default)
    app.include_router(router)
