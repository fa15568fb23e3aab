"""Request body size limit: answer 413 before anything parses an oversized body.

Owns the :class:`BodyLimit` ASGI middleware. A declared ``Content-Length`` over the limit is
refused without reading a byte; a chunked or undeclared body is read up to the limit and
refused as soon as it passes it. Bodies under the limit are buffered once and replayed to the
app, so the route (or a mounted app) sees an ordinary request. It does not own the limit's
value (``Settings.max_body_bytes``).
"""

from __future__ import annotations

from typing import Any

from agentlake.gateway.errors import error_response


class BodyLimit:
    """ASGI middleware refusing request bodies larger than ``max_bytes`` with a 413."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _refuse(self, scope: dict[str, Any], size: str) -> Any:
        message = f"request body {size} is larger than the limit of {self.max_bytes} bytes (max_body_bytes)"
        scope.setdefault("state", {})["error_message"] = message
        # Close the connection: the rest of an oversized body is never read.
        return error_response(413, message, headers={"Connection": "close"})

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        declared = None
        for name, value in scope.get("headers", []):
            if name.lower() == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await error_response(400, "Content-Length is not a number")(scope, receive, send)
                    return
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, f"of {declared} bytes")(scope, receive, send)
            return

        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client went away; there is nobody to answer
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._refuse(scope, f"of more than {self.max_bytes} bytes")(scope, receive, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break

        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            # After the body, the app only waits for a disconnect (e.g. a streaming response).
            return await receive()

        await self.app(scope, replay, send)
