"""The gateway's app factory: one authenticated FastAPI app over the library.

Owns the assembly: the middleware stack (rate limit -> record -> authenticate -> body limit ->
catch unexpected errors), the error handlers, the routers, the observer's service mounted under
``/observer`` and the MCP server's streamable HTTP endpoint at ``/mcp``, and the lifespan that
starts the MCP session manager, drains pending op commits and closes what the process opened. It does not own any route
logic (``gateway.routes``), the security rules (``gateway.security``) or the MCP tools
(``gateway.mcp_server``).

Middleware order matters: the rate limit is outermost, so a flooding key's requests wait their
turn, or are refused, before anything is spent on them (it reads the key itself; its 429s are
counted, one op per caller every few seconds, not recorded one op each); recording comes next
so a 401 or a 413 is observed too; the key check and the rate limit both come before the body
is read, so an unauthenticated or limited client cannot make us buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from starlette.middleware import Middleware

from agentlake import __version__
from agentlake.errors import AgentlakeError
from agentlake.gateway.limits import BodyLimit, RateLimit, Refusals
from agentlake.gateway.recording import RecordRequests, drain
from agentlake.gateway.security import Authenticate, KeyRing
from agentlake.gateway.services import Services
from agentlake.http.errors import CatchUnexpected, install_error_handlers
from agentlake.http.methods import MethodFallbacks
from agentlake.settings import Settings, load_settings

if TYPE_CHECKING:
    from agentlake.lake import Lake

RECORDING_THREADS = 64

DESCRIPTION = """\
One authenticated HTTP service over agentlake: read-only SQL, semantic and hybrid search over
the lake, workers and their placement history, the agents' tools, lessons, asking questions
with an LLM, the model servers' status, and the observer under `/observer/`. The same tools
are served over MCP (streamable HTTP) at `/mcp`.

**Keys.** When `AGENTLAKE_API_KEYS` is set (`KEY:SCOPE` pairs, scopes `read` < `write` <
`admin`), every endpoint needs a key, sent as `X-API-Key: <key>` or `Authorization: Bearer
<key>`, except these, open by design: `GET /health` (liveness), and the dashboard's page `GET /`,
its assets `GET /static/{name}` and its sign-in `GET|POST|DELETE /api/session` (they reveal
nothing: the page asks for a key, and everything it then reads is protected). Reads need
`read`, `/log` needs `write`, curation needs `admin`. A browser signs in once with
`POST /api/session` and is then known by an HttpOnly, SameSite=Strict session cookie (never the
key itself). A lesson sent to `/log` with a write key stays pending (tried, measured, never
trusted at once); only an admin key's proposal can be active at once. `/ws` sessions belong to
the key that opened them; trace events go to their own session unless an admin asks for all.

**Rate limits.** One API key may make `rate_limit_per_minute` requests a minute (600 by
default), of which `rate_limit_write_per_minute` to routes needing the write or admin scope
(120) and `rate_limit_model_per_minute` that call a model (30: `/fill`, `/ask`, graph chat
messages, the MCP `ask`); past a limit the answer is 429 with `Retry-After`, and other keys are
unaffected. A key's refused requests are counted into one `gateway.rate_limited` op every few
seconds, not recorded one op each. Without keys, one client address is one caller. The limits are counted in each
server process: N gateway processes allow N times them. `/health` and the observer's ingest
routes are not counted (ingest answers 503 with `Retry-After` when its queue is full or the
store cannot commit: its database down, its disk full).

**Caps.** Every request body is at most `max_body_bytes` (413, before it is parsed). SQL (`/sql`,
the `where` filters of `/search` and `/match`, lessons' filters) runs under one timeout
(`sql_timeout_s`, interrupted) and DuckDB's memory limit (`duckdb_memory_limit`); a result is
cut at `sql_max_rows` rows and about `sql_max_result_bytes` bytes (`truncated: true`). Error
messages are cut to 2,000 characters and DuckDB's own text in them to 300.

**Refused.** Anything but one read-only SELECT; files, URLs, the lake's internal tables and
server settings (`current_setting`); values a query builds whose size no interrupt can stop
(`range(100000000)`, `repeat('x', 1e8)`: literal sizes up to 10,000 only); WHERE fragments that
close the caller's parentheses. Every text stored (ops, lessons, their history, traces) has its
secrets masked.

**Methods.** `HEAD` works wherever `GET` does; `OPTIONS` answers 204 with `Allow`.

**Errors** are RFC 9457 problem details (`application/problem+json`): `type`, `title`,
`status`, `detail`, and `error` (`{"type", "status", "message", "details"}`, the shape clients
read before), a 500 included; a 500 leaves the connection usable.
"""


def create_app(
    settings: Settings | None = None,
    *,
    services: Services | None = None,
    mount_observer: bool = True,
    mount_mcp: bool = True,
) -> FastAPI:
    """Build the gateway app.

    ``settings`` default to :func:`agentlake.settings.load_settings`. Pass ``services`` to
    share already-open handles (tests pass a small lake); otherwise the app opens the lake, the
    lesson store and the tool registry lazily and closes them at shutdown.
    """
    settings = settings or load_settings()
    services = services or Services(settings)
    key_ring = KeyRing(settings.api_key_scopes, settings.api_key_names)
    recording: set[Any] = set()  # ops of answered requests still being committed
    # The 429s, counted: one op per caller a window.
    refusals = Refusals(lambda: services.observer, pending=recording)
    mcp_server = None
    if mount_mcp:
        # Lazy (start-up time): the app is assembled when it is built.
        from agentlake.gateway.mcp_server import build_mcp_server

        mcp_server = build_mcp_server(services)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # An embedded store's commit is awaited on the loop (observe.wrap_tool); a sink that
        # blocks (the observer service over HTTP, a full queue) is waited for from a worker
        # thread per op. With asyncio's default pool (cpu + 4 threads) only a handful of those
        # could be in flight and share a commit; enough threads let every in-flight request join.
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=RECORDING_THREADS, thread_name_prefix="gateway-record")
        )
        async with contextlib.AsyncExitStack() as stack:
            if mcp_server is not None:
                # A mounted Starlette app's own lifespan never runs: start MCP's session manager
                # here, a fresh one per start (one can run only once; tests restart apps).
                await stack.enter_async_context(_mcp_session_manager(mcp_server, settings).run())
            # Lessons are learned from the ops this process records, on the settings' interval;
            # a failing cycle is counted by the scheduler and never reaches the gateway.
            scheduler = None
            if settings.learn_schedule:
                # Lazy (start-up time): the learning layer loads on first use.
                from agentlake.learn import LearningScheduler

                scheduler = LearningScheduler(
                    services.lessons, services.observer, lake=_lake_or_none(services)
                ).start()
                app.state.learning = scheduler
                services.learning = scheduler
            try:
                yield
            finally:
                if scheduler is not None:
                    scheduler.stop()
                    services.learning = None
                refusals.flush()
                await drain(recording)
                services.close()

    app = FastAPI(
        title="agentlake gateway",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        middleware=[
            # First: a flood's requests wait their turn, or are refused, before any other work.
            Middleware(RateLimit, limits=services.rate_limits, keys=key_ring, refusals=refusals),
            Middleware(RecordRequests, services=services, pending=recording),
            Middleware(Authenticate, keys=key_ring),
            Middleware(MethodFallbacks),
            Middleware(BodyLimit, max_bytes=settings.max_body_bytes),
            Middleware(CatchUnexpected),
        ],
    )
    app.state.settings = settings
    app.state.services = services
    app.state.key_ring = key_ring  # the dashboard's sign-in exchanges a key for a session cookie
    install_error_handlers(app)

    # Lazy (start-up time): the app is assembled when it is built.
    from agentlake.gateway.routes import ROUTERS

    for router in ROUTERS:
        app.include_router(router)
    # Lazy (start-up time): the dashboard is assembled when it is built.
    from agentlake.web.routes import mount_web

    mount_web(app, services)  # the dashboard: /, /ws, /api/graphs, /api/scenarios (agentlake.web)
    _document_scopes(app)
    if mount_observer:
        _mount_observer(app, services)
    if mcp_server is not None:
        _route_mcp(app, mcp_server)
    return app


def _document_scopes(app: FastAPI) -> None:
    """Every operation in /openapi.json says which key scope it needs (from its dependency)."""
    # Lazy (start-up time): the app is assembled when it is built.
    from agentlake.gateway.apidoc import annotate_scopes

    generate = app.openapi  # install_error_handlers' (problem details documented)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = annotate_scopes(generate(), app.routes)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _mount_observer(app: FastAPI, services: Services) -> None:
    # Lazy (start-up time): the observer loads on the first op.
    from agentlake.observe import create_app as create_observer_app

    # The gateway has already authenticated every /observer request (Authenticate with
    # mount_scope: writes need write, reads need read), by key or by the dashboard's session
    # cookie, which the observer's own key check cannot know: it runs without keys behind it.
    gated = services.settings.model_copy(update={"api_keys": None})
    for cached in ("api_key_scopes", "api_key_names"):  # cached properties, copied along with the fields
        gated.__dict__.pop(cached, None)
    app.mount("/observer", create_observer_app(services.observer, gated))


def _mcp_session_manager(mcp_server: Any, settings: Settings) -> Any:
    """Configure the MCP server's streamable HTTP transport; returns its new session manager."""
    from mcp.server.transport_security import TransportSecuritySettings

    # The gateway authenticates before MCP sees a request; DNS-rebinding protection stays on
    # for loopback binds, where a browser page is the threat.
    local = settings.gateway_host in ("127.0.0.1", "localhost", "::1")
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=local,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "testserver"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    # Stateless JSON: each POST is one complete exchange, so any worker thread or replica can
    # answer it and nothing is kept per client between requests.
    mcp_server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=security,
        max_request_body_size=settings.max_body_bytes,
        host=settings.gateway_host,
    )
    return mcp_server.session_manager


class _MCPEndpoint:
    """ASGI endpoint for /mcp: the session manager of the current run (see the lifespan)."""

    def __init__(self, mcp_server: Any) -> None:
        self.mcp_server = mcp_server

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.mcp_server.session_manager.handle_request(scope, receive, send)


def _route_mcp(app: FastAPI, mcp_server: Any) -> None:
    from starlette.routing import Route

    # A plain route (not a Mount) so /mcp answers without a redirect to /mcp/, and stays out
    # of the OpenAPI document, which describes the REST surface only.
    app.router.routes.append(
        Route("/mcp", endpoint=_MCPEndpoint(mcp_server), methods=["GET", "POST", "DELETE"])
    )


def _lake_or_none(services: Services) -> Lake | None:
    """The lake the learner checks lessons on, or ``None`` before there is one."""
    try:
        return services.lake
    except AgentlakeError:
        return None
