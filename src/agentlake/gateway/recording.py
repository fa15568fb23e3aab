"""Every gateway call observed through the core recording path, as one op with source "gateway".

Owns :class:`RecordRequests`, the ASGI middleware just inside the rate limit. Each HTTP request
it sees becomes one op named ``"<METHOD> <route template>"`` (``GET /worker/{worker_id}``, so ids do not explode the
endpoint list), with the method, path, query, a short body excerpt and the key's fingerprint
as input, and the status and a short response excerpt as output. Any status >= 400 marks the
op failed, with the error message the handlers rendered.

It records through ``agentlake.observe.wrap_tool``, whose async path opens the span in the
request's context (ops recorded inside the route, such as tool and model calls, become its
children in the same trace) and commits the op from a worker thread, so the event loop never
waits on the store. The request is answered first and its op committed right after (grouped
with concurrent requests' ops): a client never waits for an fsync of the log, and shutdown
drains the commits still pending. So an op may appear a few milliseconds after its response. It does not record the mounted apps: the observer's ingest records the ops
it receives, and MCP calls are recorded per tool with source "mcp" (``gateway.mcp_server``).
Nor, unless ``observe_dashboard_requests`` is on, the dashboard's own requests (the page, its
assets, its sign-in and the reads that draw it: the endpoints the dashboard puts in
``app.state.dashboard_requests``, ``web.routes.DASHBOARD_OWN_REQUESTS``), so that the live ops
show the work rather than the page watching it; the ops of its chat turns are recorded. Nor the
requests the rate limit refuses before they reach it: those are counted and recorded as one
``gateway.rate_limited`` op per caller every few seconds (``gateway.limits.Refusals``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from starlette.routing import BaseRoute, Match

from agentlake.observe import observe_context

log = logging.getLogger(__name__)

_EXCERPT_BYTES = 600
# Not recorded as gateway ops: see the module docstring.
_UNRECORDED_PREFIXES = ("/observer", "/mcp")
# Request bodies that carry a secret (the dashboard's sign-in sends an API key, a source's URL
# may hold its password): never recorded.
_SECRET_BODY_PATHS = frozenset({"/api/session", "/sources"})
# Standard methods get a wrapped recorder each, made once; any other method string a client
# invents is recorded through a fresh one, so the table cannot grow without bound.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class HTTPFailure(Exception):
    """Raised (and caught here) after a >= 400 response was sent, so the op is marked failed."""


class _Exchange:
    """One request's ASGI callables and what recording collects from them."""

    __slots__ = ("scope", "receive", "send", "body", "status", "response", "finished", "failure")

    def __init__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scope, self.receive, self.send = scope, receive, send
        self.body = bytearray()
        self.status = 0
        self.response = bytearray()
        self.finished = asyncio.Event()
        self.failure: BaseException | None = None


# How the request's exchange reaches the recorded call: the op's input is the call's arguments,
# and the ASGI callables must not be part of it. The recording task copies this context.
_exchange: contextvars.ContextVar[_Exchange] = contextvars.ContextVar("gateway_exchange")


class RecordRequests:
    """ASGI middleware: one observed op per HTTP request to the gateway's own routes."""

    def __init__(self, app: Any, services: Any, pending: set[asyncio.Future[Any]] | None = None) -> None:
        self.app = app
        self.services = services
        self._routes: dict[str, list[BaseRoute]] | None = None
        # The endpoints left unrecorded; read from the app on the first request (see the docstring).
        self._unrecorded: frozenset[str] | None = (
            frozenset() if services.settings.observe_dashboard_requests else None
        )
        self._recorders: dict[str, Callable[[dict[str, Any]], Coroutine[Any, Any, Any]]] = {}
        # Recordings still committing; shared with the app factory so shutdown can drain them.
        self._pending: set[asyncio.Future[Any]] = pending if pending is not None else set()

    def _endpoint(self, scope: dict[str, Any]) -> str:
        if self._routes is None:
            # Lazy (start-up time): the app is assembled when it is built.
            from agentlake.gateway.routes import flat_routes

            # Routes by their literal first path segment: a request is matched against the few
            # routes that can match it, not all of them. A route whose first segment is a
            # parameter could match any path: it is tried for every request ("*").
            by_segment: dict[str, list[BaseRoute]] = {"*": []}
            for route in flat_routes(getattr(scope.get("app"), "routes", [])):
                first = _first_segment(route.path)
                by_segment.setdefault("*" if "{" in first else first, []).append(route)
            self._routes = by_segment
        path = scope.get("path", "")
        # "(unrouted)" keeps scanners' random paths out of the endpoint list.
        template = "(unrouted)"
        candidates = self._routes.get(_first_segment(path), [])
        for candidate in (candidates + self._routes["*"]) if self._routes["*"] else candidates:
            match, _ = candidate.matches(scope)
            if match is Match.FULL:
                return f"{scope.get('method', 'GET')} {candidate.path}"  # type: ignore[attr-defined]
            if match is Match.PARTIAL and template == "(unrouted)":  # the path, not the method
                template = candidate.path  # type: ignore[attr-defined]
        return f"{scope.get('method', 'GET')} {template}"

    def _recorder(self, endpoint: str, method: str) -> Callable[[dict[str, Any]], Coroutine[Any, Any, Any]]:
        recorder = self._recorders.get(endpoint)
        if recorder is None:
            # Lazy (start-up time): the observer loads on the first op.
            from agentlake.observe import wrap_tool

            recorder = wrap_tool(
                self._gateway_call, endpoint=endpoint, source="gateway", observer=self.services.observer
            )
            if method in _METHODS:
                self._recorders[endpoint] = recorder
        return recorder

    async def _gateway_call(self, request: dict[str, Any]) -> dict[str, Any]:
        exchange = _exchange.get()
        state = exchange.scope.setdefault("state", {})

        async def recording_receive() -> dict[str, Any]:
            message = await exchange.receive()
            if message["type"] == "http.request" and len(exchange.body) < _EXCERPT_BYTES:
                exchange.body.extend(message.get("body", b"")[: _EXCERPT_BYTES - len(exchange.body)])
            return message

        async def recording_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
            elif message["type"] == "http.response.body" and len(exchange.response) < _EXCERPT_BYTES:
                exchange.response.extend(message.get("body", b"")[: _EXCERPT_BYTES - len(exchange.response)])
            await exchange.send(message)

        try:
            # Ops recorded while the route runs (tool calls, model calls) came through the
            # gateway: the learner tells them from the agents' own work by this origin.
            with observe_context(origin="gateway"):
                await self.app(exchange.scope, recording_receive, recording_send)
        except BaseException as exc:  # recorded as the op's error, then handed back to the server
            exchange.failure = exc
            raise
        finally:
            exchange.finished.set()
        # Read after the app ran: the body was only received inside it.
        if request["path"] in _SECRET_BODY_PATHS:
            request["body"] = "[REDACTED]" if exchange.body else ""
        else:
            request["body"] = exchange.body.decode("utf-8", "replace")
        request["key"] = getattr(state.get("principal"), "key_id", None)
        status = exchange.status
        output = {"status": status, "body": exchange.response.decode("utf-8", "replace")}
        if status >= 400:
            raise HTTPFailure(f"{status} {state.get('error_message') or ''}".strip())
        return output

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(_UNRECORDED_PREFIXES):
            await self.app(scope, receive, send)
            return
        endpoint = self._endpoint(scope)
        if self._unrecorded is None:
            state = getattr(scope.get("app"), "state", None)
            self._unrecorded = frozenset(getattr(state, "dashboard_requests", ()))
        if endpoint in self._unrecorded:
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})
        exchange = _Exchange(scope, receive, send)
        # Filled in further inside _gateway_call: the op's input is summarized when it ends.
        request = {
            "method": scope.get("method"),
            "path": path,
            "query": scope.get("query_string", b"").decode("latin-1"),
        }
        recorded = self._recorder(endpoint, scope.get("method", "GET"))
        # The op is committed after the response has gone out: the server moves on to the
        # connection's next request instead of waiting for the commit (wrap_tool commits from a
        # worker thread, grouped with other requests' ops). A task copies this context, so the
        # route's own ops still nest under the request's span, and it carries the exchange.
        token = _exchange.set(exchange)
        try:
            task = asyncio.ensure_future(recorded(request))
        finally:
            _exchange.reset(token)
        self._pending.add(task)
        task.add_done_callback(self._settled)
        # Also woken if the recording itself failed before the app ran, so a request never hangs.
        task.add_done_callback(lambda _: exchange.finished.set())
        await exchange.finished.wait()
        failure = exchange.failure
        if failure is not None and not isinstance(failure, HTTPFailure):
            raise failure
        if failure is None and task.done() and not task.cancelled():
            error = task.exception()
            if error is not None and not isinstance(error, HTTPFailure):
                raise error

    def _settled(self, task: asyncio.Future[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a real failure was already handed to the server by __call__


def _first_segment(path: str) -> str:
    return path.split("/", 2)[1] if path.count("/") else path


async def drain(pending: set[asyncio.Future[Any]], timeout: float = 10.0) -> None:
    """Wait for ops still being committed; the app's shutdown calls this before closing the store."""
    if pending:
        await asyncio.wait(list(pending), timeout=timeout)
