"""Every gateway call observed through the core recording path, as one op with source "gateway".

Owns :class:`RecordRequests`, the outermost ASGI middleware. Each HTTP request becomes one op
named ``"<METHOD> <route template>"`` (``GET /worker/{worker_id}``, so ids do not explode the
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
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.routing import BaseRoute, Match

log = logging.getLogger(__name__)

_EXCERPT_BYTES = 600
# Not recorded as gateway ops: see the module docstring.
_UNRECORDED_PREFIXES = ("/observer", "/mcp")


class HTTPFailure(Exception):
    """Raised (and caught here) after a >= 400 response was sent, so the op is marked failed."""


class RecordRequests:
    """ASGI middleware: one observed op per HTTP request to the gateway's own routes."""

    def __init__(self, app: Any, services: Any, pending: set[asyncio.Future[Any]] | None = None) -> None:
        self.app = app
        self.services = services
        self._routes: list[BaseRoute] | None = None
        # Recordings still committing; shared with the app factory so shutdown can drain them.
        self._pending: set[asyncio.Future[Any]] = pending if pending is not None else set()

    def _endpoint(self, scope: dict[str, Any]) -> str:
        if self._routes is None:
            from agentlake.gateway.routes import flat_routes

            self._routes = list(flat_routes(getattr(scope.get("app"), "routes", [])))
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

        finished = asyncio.Event()
        failure: list[BaseException] = []

        async def gateway_call(request: dict[str, Any]) -> dict[str, Any]:
            try:
                await self.app(scope, recording_receive, recording_send)
            except BaseException as exc:  # recorded as the op's error, then handed back to the server
                failure.append(exc)
                raise
            finally:
                finished.set()
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
        # The op is committed after the response has gone out: the server moves on to the
        # connection's next request instead of waiting for the commit (wrap_tool commits from a
        # worker thread, grouped with other requests' ops). A task copies this context, so the
        # route's own ops still nest under the request's span.
        task = asyncio.ensure_future(recorded(request))
        self._pending.add(task)
        task.add_done_callback(self._settled)
        # Also woken if the recording itself failed before the app ran, so a request never hangs.
        task.add_done_callback(lambda _: finished.set())
        await finished.wait()
        if failure and not isinstance(failure[0], HTTPFailure):
            raise failure[0]
        if not failure and task.done() and not task.cancelled():
            error = task.exception()
            if error is not None and not isinstance(error, HTTPFailure):
                raise error

    def _settled(self, task: asyncio.Future[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a real failure was already handed to the server by __call__


async def drain(pending: set[asyncio.Future[Any]], timeout: float = 10.0) -> None:
    """Wait for ops still being committed; the app's shutdown calls this before closing the store."""
    if pending:
        await asyncio.wait(list(pending), timeout=timeout)
