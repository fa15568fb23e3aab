"""Request body size limit: answer 413 before anything parses an oversized body.

Owns the :class:`BodyLimit` ASGI middleware: it reads each request body through the shared
reader (``agentlake.http.body.read_body``: a declared ``Content-Length`` over the limit is
refused without reading a byte, any other body as soon as it passes the limit) and replays
the buffered body to the app, so a route (or a mounted app) sees an ordinary request. It does
not own the limit's value (``Settings.max_body_bytes``).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect

from agentlake.errors import UserError
from agentlake.http.body import read_body
from agentlake.http.errors import error_response


class BodyLimit:
    """ASGI middleware refusing request bodies larger than ``max_bytes`` with a 413."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(scope, receive, self.max_bytes)
        except ClientDisconnect:
            return  # the client went away; there is nobody to answer
        except UserError as exc:
            scope.setdefault("state", {})["error_message"] = exc.message
            await error_response(exc.http_status, exc.message)(scope, receive, send)
            return

        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            # After the body, the app only waits for a disconnect (e.g. a streaming response).
            return await receive()

        await self.app(scope, replay, send)
