"""HEAD and OPTIONS for every route, as HTTP clients expect them.

Owns the :class:`MethodFallbacks` ASGI middleware: ``HEAD`` on a path with a ``GET`` route runs
that route and sends its headers without the body; ``OPTIONS`` answers 204 with the ``Allow``
header listing every method the path's routes take. FastAPI routes answer only the methods
they declare (HEAD /health and OPTIONS on any path were 405). Paths no route matches (unknown
paths, mounted apps) pass through untouched. It owns no route.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import Match, Route


def _allowed(app: Any, scope: dict[str, Any]) -> set[str]:
    """The methods the routes of ``app`` take at the request's path (empty: no route there)."""
    methods: set[str] = set()
    for route in flat_routes(getattr(app, "routes", [])):
        match, _ = route.matches({**scope, "method": "GET", "type": "http"})
        if match is not Match.NONE and route.methods:
            methods |= set(route.methods)
    return methods


def flat_routes(routes: list[Any]) -> list[Route]:
    """Plain routes of an app, descending into included routers (FastAPI keeps ``original_router``)."""
    found: list[Route] = []
    for route in routes:
        if isinstance(route, Route):
            found.append(route)
        else:
            included = getattr(route, "original_router", None)
            if included is not None:
                found.extend(flat_routes(included.routes))
    return found


class MethodFallbacks:
    """ASGI middleware: HEAD as GET without the body, OPTIONS as 204 with ``Allow``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        method = scope.get("method")
        if scope["type"] != "http" or method not in ("HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        allowed = _allowed(scope.get("app"), scope)
        if not allowed or method in allowed:
            await self.app(scope, receive, send)
            return
        if "GET" in allowed:
            allowed |= {"HEAD"}
        if method == "OPTIONS":
            allow = ", ".join(sorted(allowed | {"OPTIONS"}))
            await Response(status_code=204, headers={"Allow": allow})(scope, receive, send)
            return
        if "GET" not in allowed:
            await self.app(scope, receive, send)  # the router's 405, with its Allow header
            return

        async def headers_only(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
