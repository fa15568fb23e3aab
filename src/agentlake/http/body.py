"""The one request-body reader: a body past the limit is refused before it is parsed.

Owns :func:`read_body`: a declared ``Content-Length`` over the limit is refused (413) without
reading a byte, an undeclared or chunked body as soon as it passes the limit, and a
``Content-Length`` that is not a number is a 400. The gateway's ``BodyLimit`` middleware and
the observer's ingest routes read bodies through it. It does not own the limit's value
(``Settings.max_body_bytes``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from starlette.requests import ClientDisconnect

from agentlake.errors import UserError

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


def declared_length(raw_headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    """The request's ``Content-Length``, or ``None``; ``UserError`` (400) when it is not a number."""
    for name, value in raw_headers:
        if name.lower() == b"content-length":
            try:
                size = int(value)
            except ValueError:
                raise UserError("Content-Length is not a number") from None
            if size < 0:
                raise UserError("Content-Length is negative")
            return size
    return None


def too_large(size: str, max_bytes: int) -> UserError:
    return UserError(
        f"request body {size} is larger than the limit of {max_bytes} bytes (max_body_bytes)", http_status=413
    )


async def read_body(scope: MutableMapping[str, Any], receive: Receive, max_bytes: int) -> bytes:
    """The whole body of an ASGI HTTP request, at most ``max_bytes``.

    Raises ``UserError``: 413 past the limit (from ``Content-Length`` before reading anything,
    else while reading), 400 for a bad ``Content-Length``; ``ClientDisconnect`` when the
    client leaves before the body ends.
    """
    declared = declared_length(scope.get("headers", ()))
    if declared is not None and declared > max_bytes:
        raise too_large(f"of {declared} bytes", max_bytes)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        body = message.get("body", b"")
        size += len(body)
        if size > max_bytes:
            raise too_large(f"of more than {max_bytes} bytes", max_bytes)
        chunks.append(body)
        if not message.get("more_body", False):
            return b"".join(chunks)
