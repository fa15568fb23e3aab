"""Every gateway call observed through the core recording path, as one op with source "gateway".

Owns :class:`RecordRequests`, the outermost ASGI middleware. Each HTTP request becomes one op
named ``"<METHOD> <route template>"`` (``GET /worker/{worker_id}``, so ids do not explode the
endpoint list), with the method, path, query, a short body excerpt and the key's fingerprint
as input, and the status and a short response excerpt as output. Any status >= 400 marks the
op failed, with the error message the handlers rendered.

It records through ``agentlake.observe.wrap_tool``, whose async path opens the span in the
request's context (ops recorded inside the route, such as tool and model calls, become its
children in the same trace) and commits the op from a worker thread, so the event loop never
waits on the store. It does not record the mounted apps: the observer's ingest records the ops
it receives, and MCP calls are recorded per tool with source "mcp" (``gateway.mcp_server``).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.routing import BaseRoute, Match, Route

log = logging.getLogger(__name__)

_EXCERPT_BYTES = 600
# Not recorded as gateway ops: see the module docstring.
_UNRECORDED_PREFIXES = ("/observer", "/mcp")


def _flat_routes(routes: list[BaseRoute]) -> Any:
    """Plain routes, descending into included routers (FastAPI keeps them as ``original_router``)."""
    for route in routes:
        if isinstance(route, Route):
            yield route
        elif getattr(route, "original_router", None) is not None:
            yield from _flat_routes(route.original_router.routes)  # type: ignore[attr-defined]


class HTTPFailure(Exception):
    """Raised (and caught here) after a >= 400 response was sent, so the op is marked failed."""


class RecordRequests:
    """ASGI middleware: one observed op per HTTP request to the gateway's own routes."""

    def __init__(self, app: Any, services: Any) -> None:
        self.app = app
        self.services = services
        self._routes: list[BaseRoute] | None = None

    def _endpoint(self, scope: dict[str, Any]) -> str:
        if self._routes is None:
            self._routes = list(_flat_routes(getattr(scope.get("app"), "routes", [])))
        # "(unrouted)" keeps scanners' random paths out of the endpoint list.
        template = "(unrouted)"
        for route in self._routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return f"{scope.get('method', 'GET')} {route.path}"
            if match is Match.PARTIAL and template == "(unrouted)":  # the path, not the method
                template = route.path
        return f"{scope.get('method', 'GET')} {template}"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(_UNRECORDED_PREFIXES):
            await self.app(scope, receive, send)
            return
        from agentlake.observe import wrap_tool

        state = scope.setdefault("state", {})
        body_excerpt = bytearray()
        status = 0
        response_excerpt = bytearray()

        async def recording_receive() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "http.request" and len(body_excerpt) < _EXCERPT_BYTES:
                body_excerpt.extend(message.get("body", b"")[: _EXCERPT_BYTES - len(body_excerpt)])
            return message

        async def recording_send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and len(response_excerpt) < _EXCERPT_BYTES:
                response_excerpt.extend(message.get("body", b"")[: _EXCERPT_BYTES - len(response_excerpt)])
            await send(message)

        async def gateway_call(request: dict[str, Any]) -> dict[str, Any]:
            await self.app(scope, recording_receive, recording_send)
            # Read after the app ran: the body was only received inside it.
            request["body"] = body_excerpt.decode("utf-8", "replace")
            request["key"] = getattr(state.get("principal"), "key_id", None)
            output = {"status": status, "body": response_excerpt.decode("utf-8", "replace")}
            if status >= 400:
                raise HTTPFailure(f"{status} {state.get('error_message') or ''}".strip())
            return output

        # Filled in further inside gateway_call: the op's input is summarized when it ends.
        request = {
            "method": scope.get("method"),
            "path": path,
            "query": scope.get("query_string", b"").decode("latin-1"),
        }
        recorded = wrap_tool(
            gateway_call, endpoint=self._endpoint(scope), source="gateway", observer=self.services.observer
        )
        try:
            await recorded(request)
        except HTTPFailure:
            pass  # the response went out; the op says it failed
