"""The one error shape of every agentlake HTTP service, and the one renderer of it.

Every error is an RFC 9457 problem detail (``application/problem+json``): ``type`` (a URI
naming the kind, :func:`problem_type`), ``title`` (the status's phrase), ``status`` and
``detail`` (what is wrong and what to do), plus the extension member ``error``, the shape
agentlake answered before (``{"type", "status", "message", "details"}``), kept whole for the
clients that read it. Owns :class:`ProblemDetails`, the status table (:data:`TYPE_BY_STATUS`), the rendering of agentlake's ``UserError``/``RunError``,
Starlette's HTTP errors, request validation errors and unexpected exceptions in that shape
(:func:`install_error_handlers` for a FastAPI app, :class:`CatchUnexpected` for what no
handler took, and the functions they share so a route that skips FastAPI's stack answers the
same), and the OpenAPI ``responses`` entries that document it. Used by the gateway and the
observer service alike.

Rules every rendering follows: messages are cut to :data:`MAX_MESSAGE_CHARS` and ``details``
to about :data:`MAX_DETAILS_CHARS` (an error never echoes a huge value); a 413 closes the
connection (the rest of the body is never read); an error with ``retry_after`` answers
``Retry-After``; a 500 names only the exception's class (the traceback goes to the log) and
leaves a keep-alive connection usable.

It does not decide *when* to fail (routes, security and limits do) and it does not own the
error classes (``agentlake.errors``).
"""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from agentlake.errors import AgentlakeError, NotFoundError, RunError, UnavailableError, UserError

log = logging.getLogger(__name__)

# The machine-readable ``type`` for each status a client can meet; anything else is "http_error".
TYPE_BY_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}
# RFC 9457 recommends an absolute URI for a problem's type; a tag URI (RFC 4151) names it
# without promising a page to dereference. The kinds are listed in docs/http-api.md.
PROBLEM_TYPE_PREFIX = "tag:agentlake,2026:problem/"
PROBLEM_JSON = "application/problem+json"
MAX_MESSAGE_CHARS = 2000
MAX_DETAILS_CHARS = 20_000
MAX_LISTED_ERRORS = 50


class ErrorDetail(BaseModel):
    """What went wrong, for a human (``message``) and a program (``type``, ``status``)."""

    type: str = Field(..., description="Stable error kind, e.g. bad_request, unauthorized, validation_error.")
    status: int = Field(
        ..., description="The HTTP status of the response, repeated for clients that lose it."
    )
    message: str = Field(..., description="What is wrong and what to do about it.")
    details: dict[str, Any] = Field(
        default_factory=dict, description="Structured extras, e.g. the validation errors under 'errors'."
    )


class ProblemDetails(BaseModel):
    """Every error an agentlake HTTP service returns has this shape: an RFC 9457 problem
    detail, with the earlier ``error`` object as an extension member."""

    type: str = Field(
        ...,
        description=f"The kind of problem, a URI: {PROBLEM_TYPE_PREFIX}<kind>, kind as in error.type.",
        examples=[f"{PROBLEM_TYPE_PREFIX}not_found"],
    )
    title: str = Field(..., description="The HTTP status's phrase, e.g. Not Found.")
    status: int = Field(..., description="The HTTP status of the response.")
    detail: str = Field(..., description="What is wrong and what to do about it.")
    error: ErrorDetail = Field(
        ..., description="The same error in agentlake's earlier shape (its clients read error.message)."
    )


def problem_type(kind: str) -> str:
    """The problem ``type`` URI of an error kind (``not_found``, ``validation_error``, ...)."""
    return PROBLEM_TYPE_PREFIX + kind


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"...[+{len(text) - limit} chars]"


def _bounded_details(details: dict[str, Any]) -> dict[str, Any]:
    """``details`` as JSON-able values, lists cut to :data:`MAX_LISTED_ERRORS` items (the
    number left out under ``<key>_omitted``) and the whole to about :data:`MAX_DETAILS_CHARS`."""
    plain: dict[str, Any] = {}
    for key, value in details.items():
        if isinstance(value, list) and len(value) > MAX_LISTED_ERRORS:
            plain[f"{key}_omitted"] = len(value) - MAX_LISTED_ERRORS
            value = value[:MAX_LISTED_ERRORS]
        plain[key] = (
            value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else str(value)
        )
    encoded = jsonable_encoder(plain)
    text = json.dumps(encoded, default=str, ensure_ascii=False)
    if len(text) > MAX_DETAILS_CHARS:
        return {"truncated": _cut(text, MAX_DETAILS_CHARS)}
    return encoded


def error_response(
    status: int,
    message: str,
    *,
    type: str | None = None,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The problem-details response: used by every handler, middleware and fast route."""
    headers = dict(headers or {})
    if status == 413:
        headers.setdefault("Connection", "close")  # the rest of an oversized body is never read
    kind = type or TYPE_BY_STATUS.get(status, "http_error")
    detail = _cut(message, MAX_MESSAGE_CHARS)
    body = {
        "type": problem_type(kind),
        "title": _title(status),
        "status": status,
        "detail": detail,
        "error": {
            "type": kind,
            "status": status,
            "message": detail,
            "details": _bounded_details(details) if details else {},
        },
    }
    return JSONResponse(body, status_code=status, headers=headers or None, media_type=PROBLEM_JSON)


# JSON-RPC error codes for a refused request (the server-defined range).
_JSONRPC_CODES = {401: -32001, 403: -32003}


def jsonrpc_error_response(
    status: int, message: str, *, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The same error for a JSON-RPC client (MCP over HTTP), at the same status: a JSON-RPC
    client shows an error's ``message``, while any other body it reports only as a failed
    request."""
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": _JSONRPC_CODES.get(status, -32000), "message": _cut(message, MAX_MESSAGE_CHARS)},
    }
    return JSONResponse(body, status_code=status, headers=headers or None)


def error_type(exc: AgentlakeError) -> str:
    """The ``type`` of an agentlake error: the most specific kind we document."""
    if isinstance(exc, NotFoundError):
        return "not_found"
    if isinstance(exc, UnavailableError):
        return "unavailable"
    if isinstance(exc, UserError):
        return "bad_request" if exc.http_status == 400 else TYPE_BY_STATUS.get(exc.http_status, "user_error")
    if isinstance(exc, RunError):
        return "run_error" if exc.http_status == 500 else TYPE_BY_STATUS.get(exc.http_status, "run_error")
    return "internal_error"


def agentlake_error_response(exc: AgentlakeError) -> JSONResponse:
    """An ``AgentlakeError`` in the error shape, with its status; ``retry_after`` in its details
    becomes the ``Retry-After`` header (a full queue, a breaker)."""
    details = dict(exc.details)
    headers = {}
    retry_after = details.pop("retry_after", None)
    if isinstance(retry_after, (int, float)):
        headers["Retry-After"] = str(max(1, round(retry_after)))
    if exc.http_status >= 500 and exc.http_status != 503:
        log.warning("request failed: %s", _cut(exc.message, MAX_MESSAGE_CHARS))
    return error_response(
        exc.http_status, exc.message, type=error_type(exc), details=details, headers=headers
    )


def validation_error_response(exc: RequestValidationError) -> tuple[JSONResponse, str]:
    """A request that does not match the schema: 422, each problem under ``details.errors`` as
    ``{loc, field, msg, type}`` (``field``: the dotted path inside the query, path or body)."""
    errors: list[dict[str, Any]] = [
        {
            "loc": [str(part) for part in err.get("loc", ())],
            "field": ".".join(str(part) for part in tuple(err.get("loc", ()))[1:]) or None,
            "msg": str(err.get("msg", "")),
            "type": str(err.get("type", "")),
        }
        for err in exc.errors()
    ]
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    message = f"invalid request: {'.'.join(first['loc'])}: {first['msg']}" + (
        f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    )
    return error_response(422, message, details={"errors": errors}), message


def http_error_message(exc: StarletteHTTPException, method: str, path: str) -> str:
    """Starlette's terse 404/405 texts, said so a client knows what to do."""
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        return f"no endpoint at {path}; see /docs or /openapi.json for the API"
    if exc.status_code == 405:
        return f"{method} is not allowed on {path}"
    return message


def internal_error_response(exc: BaseException) -> tuple[JSONResponse, str]:
    """A bug, not the user's fault: a 500 naming the exception's class only."""
    message = f"internal error ({type(exc).__name__}); the server log has the traceback"
    return error_response(500, message), message


async def _agentlake_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AgentlakeError)
    _note(request, exc.message)
    return agentlake_error_response(exc)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = http_error_message(exc, request.method, request.url.path)
    _note(request, message)
    return error_response(exc.status_code, message, headers=getattr(exc, "headers", None))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    response, message = validation_error_response(exc)
    _note(request, message)
    return response


class CatchUnexpected:
    """ASGI middleware, innermost: an exception no handler took becomes a 500 in the one shape.

    Starlette would otherwise answer from its outermost ``ServerErrorMiddleware`` in plain text
    and re-raise, which makes uvicorn drop the keep-alive connection (the client's next request
    on it is reset) and skips the recording middleware. The traceback goes to the log.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            response, message = internal_error_response(exc)
            scope.setdefault("state", {})["error_message"] = message
            await response(scope, receive, send)


def _note(request: Request, message: str) -> None:
    # The gateway's recording middleware reads this to put the error's message on the op.
    request.state.error_message = _cut(message, MAX_MESSAGE_CHARS)


def install_error_handlers(app: FastAPI) -> None:
    """Render agentlake, HTTP and validation errors on ``app`` in the one shape, and document
    them so in its OpenAPI (:func:`document_problems`).

    Unexpected exceptions are rendered by :class:`CatchUnexpected`, which the app factories
    add as their innermost middleware.
    """
    app.add_exception_handler(AgentlakeError, _agentlake_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    generate = app.openapi
    app.openapi = lambda: document_problems(generate())  # type: ignore[method-assign]


def document_problems(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` (an OpenAPI document, changed in place) with every 4xx and 5xx response's
    schema under ``application/problem+json``, the media type the renderer answers with
    (FastAPI writes it under the route's own, ``application/json``)."""
    for methods in spec.get("paths", {}).values():
        for operation in methods.values():
            for code, response in operation.get("responses", {}).items():
                content = response.get("content", {})
                if str(code)[:1] in "45" and "application/json" in content and PROBLEM_JSON not in content:
                    content[PROBLEM_JSON] = content.pop("application/json")
    return spec


def _doc(description: str) -> dict[str, Any]:
    return {"model": ProblemDetails, "description": description}


# OpenAPI ``responses`` for the statuses any protected route can answer.
COMMON_ERRORS: dict[int | str, dict[str, Any]] = {
    400: _doc("Bad input: the message says what to change (e.g. a Content-Length that is not a number)."),
    401: _doc("No API key, or an unknown one (only when keys are configured)."),
    403: _doc("The API key's scope does not allow this endpoint."),
    413: _doc("The request body is larger than max_body_bytes."),
    422: _doc("The request does not match the schema."),
    429: _doc(
        "Too many requests from this API key (rate_limit_*_per_minute); retry after Retry-After seconds."
    ),
    500: _doc("An unexpected failure; the message names it."),
}
BAD_REQUEST: dict[int | str, dict[str, Any]] = {400: _doc("Bad input: the message says what to change.")}
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: _doc("The named thing does not exist.")}
UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: _doc(
        "A dependency (model server, index, the op store's database or disk) cannot serve right now; "
        "retry after Retry-After seconds."
    )
}
