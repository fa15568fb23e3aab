"""The observer's HTTP ingest service (``create_app``) and ``serve`` (uvicorn).

Routes are thin: read the body (413 past ``max_body_bytes`` before parsing), check the API key,
parse (``ingest``/``otlp``), call the ``Observer`` and render. An ingest is answered 200 only
after the ops are committed; a full write queue answers 503 with ``Retry-After``. The two
ingest routes skip FastAPI's middleware stack (``_ObserverApp``): their cost per event
matters. The body reader, the key check and the error renderer are the shared HTTP edge's
(``agentlake.http``), the gateway's own: every error, GET included, is an RFC 9457 problem
detail (``application/problem+json``) carrying ``{"error": {"type", "status", "message",
"details"}}`` too.

Owns the routes of the standalone service; the gateway mounts this app under ``/observer/``.
It does not own storage, parsing or the op model.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from pydantic import Field
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Send
from starlette.types import Scope as ASGIScope

from agentlake.errors import AgentlakeError, RunError
from agentlake.http.body import read_body
from agentlake.http.errors import (
    BAD_REQUEST,
    COMMON_ERRORS,
    UNAVAILABLE,
    CatchUnexpected,
    agentlake_error_response,
    install_error_handlers,
    internal_error_response,
)
from agentlake.http.keys import KeyRing, Scope, authorize
from agentlake.http.methods import MethodFallbacks
from agentlake.observe import otlp
from agentlake.observe.default_observer import open_observer, set_observer
from agentlake.observe.filters import OpFilter, OpFilterFields, parse_labels
from agentlake.observe.ingest import parse_event, parse_events
from agentlake.observe.model import Source
from agentlake.observe.observer import Observer
from agentlake.settings import Settings

log = logging.getLogger(__name__)
# DuckDB's OFFSET is a BIGINT; nobody pages through more ops than this.
MAX_OFFSET = 2**53


Endpoint = Callable[[Request], Awaitable[Response]]


class OpsQuery(OpFilterFields):
    """``GET /ops``'s query parameters: the op filters (``OpFilterFields``) with the HTTP edge's
    bounds (a page of 1 to 1000 ops, an offset DuckDB can hold, a known source), the labels as
    repeated ``label=key=value``."""

    id: str | None = Field(None, max_length=128, description="One op, by its id.")
    source: Source | None = Field(None, description="gateway, mcp, scenario, agent, llm, otlp or external.")
    label: list[str] = Field(
        [], description="A label the op must carry, as key=value (repeatable; compared as text)."
    )
    # No upper bound here: one past what the store holds is a bad filter (``OpFilter``, 400),
    # not a malformed request (422), as before the parameters were a model.
    after_seq: int | None = Field(
        None, ge=0, description="Only ops committed after this sequence number, by sequence."
    )
    limit: int = Field(100, ge=1, le=1000, description="Page size.")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Ops to skip.")

    def filter(self) -> OpFilter:
        """The ``OpFilter`` these parameters ask for; ``UserError`` for a label without ``=``."""
        return OpFilter.of(**self.model_dump(exclude={"label"}), labels=parse_labels(self.label))


class _ObserverApp(FastAPI):
    """FastAPI, except that the ingest routes skip its middleware stack and router.

    ``POST /event`` and ``POST /events`` are nearly all of the service's traffic, and for a
    single event FastAPI's per-request machinery (error, telemetry, body-limit and exit-stack
    middlewares, routing, dependency solving) cost about as much CPU as parsing, storing and
    answering it (measured ~220 us of ~360 us per event on the event loop). Those routes are
    declared like the others, so they are in the OpenAPI schema, and ``__call__`` hands their
    requests straight to the same endpoint functions; errors are rendered by the same shared
    renderer (``agentlake.http.errors``). Everything else goes through FastAPI as usual.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ingest: dict[str, Endpoint] = {}

    def ingest_route(self, path: str) -> Callable[[Endpoint], Endpoint]:
        """Register ``endpoint`` as the direct handler of ``POST path`` (see the class doc)."""

        def register(endpoint: Endpoint) -> Endpoint:
            self._ingest[path] = endpoint
            return endpoint

        return register

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            endpoint = self._ingest.get(_route_path(scope))
            if endpoint is not None:
                await self._answer(endpoint, scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    async def _answer(self, endpoint: Endpoint, scope: ASGIScope, receive: Receive, send: Send) -> None:
        scope["app"] = self
        request = Request(scope, receive)
        try:
            response = await endpoint(request)
        except AgentlakeError as exc:
            response = agentlake_error_response(exc)
        except ClientDisconnect:
            return  # nobody is left to answer; nothing was stored (the body was incomplete)
        except Exception as exc:
            # What CatchUnexpected does for the other routes: log, answer 500 in the one shape.
            log.exception("observer ingest failed")
            response, _ = internal_error_response(exc)
        await response(scope, receive, send)


def _route_path(scope: ASGIScope) -> str:
    """The path below the mount point (the gateway mounts this app at /observer)."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] == "/":
        return path[len(root) :]
    return path


def create_app(observer: Observer, settings: Settings) -> FastAPI:
    """The ingest service over ``observer`` (which the caller owns and closes).

    ``POST /event``, ``POST /events``, ``POST /v1/traces`` (OTLP/HTTP protobuf or JSON),
    ``POST /v1/logs`` and ``/v1/metrics`` (decoded, acknowledged and counted, not stored),
    ``GET /health`` (open), ``GET /stats``, ``GET /ops``, ``GET /ops/stream`` (SSE). With
    ``settings.api_key_scopes`` set, writes need a write/admin key and reads any valid key.
    """
    ring = KeyRing(settings.api_key_scopes)
    max_bytes = settings.max_body_bytes
    flat_fields = frozenset(part.strip() for part in settings.observer_flat_fields.split(",") if part.strip())
    app = _ObserverApp(
        title="agentlake observer",
        version="1",
        description="Durable operation log: every acknowledged event is committed to DuckDB first.",
        middleware=[Middleware(MethodFallbacks), Middleware(CatchUnexpected)],
        responses={**COMMON_ERRORS, **BAD_REQUEST, **UNAVAILABLE},
    )
    app.state.observer = observer
    install_error_handlers(app)

    def allow(request: Request, needed: Scope) -> None:
        # No keys, nothing to check: the ingest hot path reads no header and builds no URL.
        if ring:
            authorize(request.headers, ring, needed, f"{request.method} {request.scope['path']}")

    @app.post("/event", summary="Record one op; answered once it is durable.")
    @app.ingest_route("/event")
    async def post_event(request: Request) -> JSONResponse:
        allow(request, "write")
        op = parse_event(
            await read_body(request.scope, request.receive, max_bytes),
            flat_fields=flat_fields,
            flat_endpoint=settings.observer_flat_endpoint,
        )
        (result,) = await observer.record_many_async([op])
        # ring_size: ops in the live ring now (the reply of the system agentlake grew from).
        return JSONResponse({**result.as_dict(), "ring_size": observer.ring_depth})

    @app.post(
        "/events", summary="Record a batch of ops (JSON array or {events: [...]}); one result per item."
    )
    @app.ingest_route("/events")
    async def post_events(request: Request) -> JSONResponse:
        allow(request, "write")
        ops = parse_events(await read_body(request.scope, request.receive, max_bytes))
        results = await observer.record_many_async(ops)
        stored = sum(1 for result in results if result.status == "stored")
        return JSONResponse(
            {
                "accepted": len(results),
                "stored": stored,
                "duplicates": len(results) - stored,
                "results": [result.as_dict() for result in results],
            }
        )

    @app.post("/v1/traces", summary="OTLP/HTTP trace export (protobuf or JSON); spans become ops.")
    async def post_traces(request: Request) -> Response:
        allow(request, "write")
        content_type = request.headers.get("content-type")
        body = await read_body(request.scope, request.receive, max_bytes)
        ops = otlp.ops_from_export(body, content_type, request.headers.get("content-encoding"), max_bytes)
        if ops:
            await observer.record_many_async(ops)
        payload, media = otlp.export_response(content_type)
        return Response(payload, media_type=media)

    async def acknowledge(request: Request, signal: otlp.Signal) -> Response:
        allow(request, "write")
        content_type = request.headers.get("content-type")
        body = await read_body(request.scope, request.receive, max_bytes)
        count = otlp.count_export(
            body, content_type, request.headers.get("content-encoding"), max_bytes, signal
        )
        observer.acknowledge(signal, count)
        payload, media = otlp.export_response(content_type, signal)
        return Response(payload, media_type=media)

    @app.post(
        "/v1/logs",
        summary="OTLP/HTTP logs export: decoded, acknowledged and counted (GET /stats), not stored.",
    )
    async def post_logs(request: Request) -> Response:
        return await acknowledge(request, "logs")

    @app.post(
        "/v1/metrics",
        summary="OTLP/HTTP metrics export: decoded, acknowledged and counted (GET /stats), not stored.",
    )
    async def post_metrics(request: Request) -> Response:
        return await acknowledge(request, "metrics")

    @app.get("/health", summary="Status, ring depth and store lag (no key needed).")
    async def health() -> dict[str, Any]:
        return observer.health()

    @app.get(
        "/stats",
        summary="Totals, successes, failures, by source and endpoint, latency p50/p95, recent scenario ops.",
    )
    async def stats(request: Request) -> JSONResponse:
        allow(request, "read")
        return JSONResponse(observer.stats().model_dump(mode="json"))

    @app.get("/ops", summary="Stored ops, newest first, filtered and paginated.")
    def ops(request: Request, query: Annotated[OpsQuery, Query()]) -> JSONResponse:
        # A plain def: DuckDB reads run in the threadpool, not on the event loop.
        allow(request, "read")
        found = observer.query(query.filter())
        return JSONResponse(
            {
                "ops": [op.model_dump(mode="json") for op in found],
                "limit": query.limit,
                "offset": query.offset,
                "next_offset": query.offset + len(found) if len(found) == query.limit else None,
            }
        )

    @app.get(
        "/ops/stream",
        summary="Server-sent events: every op as it is stored (event 'op', data = the op as JSON).",
    )
    async def stream(
        request: Request,
        source: Source | None = Query(None, description="Only ops from this source."),
        backlog: int = Query(0, ge=0, le=1000, description="First send this many recent ops."),
    ) -> Response:
        import asyncio

        from sse_starlette import EventSourceResponse, ServerSentEvent

        allow(request, "read")
        subscription = observer.subscribe(loop=asyncio.get_running_loop())

        async def events() -> Any:
            try:
                for op in observer.recent(backlog) if backlog else []:
                    if source is None or op.source == source:
                        yield ServerSentEvent(op.model_dump_json(), event="op", id=op.id)
                while True:
                    arrived = await subscription.aget(timeout=1.0)
                    if arrived is not None and (source is None or arrived.source == source):
                        yield ServerSentEvent(arrived.model_dump_json(), event="op", id=arrived.id)
            finally:
                subscription.close()

        return EventSourceResponse(events(), ping=15)

    return app


def serve(
    settings: Settings,
    *,
    host: str | None = None,
    port: int | None = None,
    on_start: Callable[[Observer], Callable[[], None]] | None = None,
) -> None:
    """Run the service with uvicorn until interrupted. It opens the embedded store itself (this
    process becomes the file's one writer) and installs itself as the process observer.
    ``on_start(observer)`` runs once the store is open (the door starts the learner there) and
    returns what to call when the service stops."""
    import uvicorn

    # Lazy (start-up time): grpcio loads and the collector is tuned only in a server process.
    from agentlake.observe.otlp_grpc import start_receiver
    from agentlake.serving import announce, client_url, tune_collector

    observer = open_observer(settings.model_copy(update={"observer_sink": "embedded"}))
    previous = set_observer(observer)
    receiver = None
    stop: Callable[[], None] | None = None
    try:
        if on_start is not None:
            stop = on_start(observer)
        app = create_app(observer, settings)
        receiver = start_receiver(observer, settings, host or settings.observer_host)
        tune_collector()
        bound, bound_port = host or settings.observer_host, port or settings.observer_port
        url = client_url(bound, bound_port)
        with announce(settings, kind="observer", url=url, stores=[settings.observer_path], observer_url=url):
            uvicorn.run(
                app,
                host=bound,
                port=bound_port,
                log_level="warning",
                access_log=False,
                timeout_graceful_shutdown=5,
            )
    finally:
        if receiver is not None:
            receiver.stop()
        if stop is not None:
            stop()
        set_observer(previous)
        observer.close()


@contextmanager
def running_service(
    observer: Observer, settings: Settings, *, host: str = "127.0.0.1", port: int = 0
) -> Iterator[str]:
    """Serve ``create_app(observer, settings)`` with uvicorn in a background thread of THIS
    process and yield its base URL (``port=0``: a free port). For tests and demos that need a
    real HTTP observer (e.g. other suites with ``observer_sink = "http"``); the observer is
    not closed on exit, so the same port can be served again to simulate a restart."""
    import threading

    import uvicorn

    config = uvicorn.Config(
        create_app(observer, settings),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"observer-service-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RunError(f"the observer service did not start on {host}:{port}")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(10)
