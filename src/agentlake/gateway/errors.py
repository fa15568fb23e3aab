"""The gateway's one JSON error shape, and the handlers that render every failure in it.

Owns: :class:`ErrorResponse` (``{"error": {"type", "status", "message", "details"}}``), the
mapping from agentlake's ``UserError``/``RunError`` (and their subclasses), Starlette's HTTP
errors and request validation errors to that shape with the right status, and the OpenAPI
``responses`` entries that document it. It does not decide *when* to fail (routes, security
and limits do) and it does not own the error classes (``agentlake.errors``).
"""

from __future__ import annotations

import logging
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
_TYPE_BY_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    422: "validation_error",
    500: "internal_error",
    503: "unavailable",
}


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


class ErrorResponse(BaseModel):
    """Every error the gateway returns has this shape."""

    error: ErrorDetail


def error_response(
    status: int,
    message: str,
    *,
    type: str | None = None,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """Build the JSON error response; used by handlers and by the ASGI middlewares."""
    body = ErrorResponse(
        error=ErrorDetail(
            type=type or _TYPE_BY_STATUS.get(status, "http_error"),
            status=status,
            message=message,
            details=jsonable_encoder(details or {}),
        )
    )
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


def error_type(exc: AgentlakeError) -> str:
    """The ``type`` of an agentlake error: the most specific kind we document."""
    if isinstance(exc, NotFoundError):
        return "not_found"
    if isinstance(exc, UnavailableError):
        return "unavailable"
    if isinstance(exc, UserError):
        return "bad_request" if exc.http_status == 400 else _TYPE_BY_STATUS.get(exc.http_status, "user_error")
    if isinstance(exc, RunError):
        return "run_error" if exc.http_status == 500 else _TYPE_BY_STATUS.get(exc.http_status, "run_error")
    return "internal_error"


def _plain_details(details: dict[str, Any]) -> dict[str, Any]:
    # Details may hold arbitrary objects (raw model text, numbers); keep only what JSON can carry.
    return {
        key: value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else str(value)
        for key, value in details.items()
    }


async def _agentlake_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AgentlakeError)
    _note(request, exc.message)
    return error_response(
        exc.http_status, exc.message, type=error_type(exc), details=_plain_details(exc.details)
    )


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = f"no endpoint at {request.url.path}; see /docs or /openapi.json for the API"
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    _note(request, message)
    return error_response(exc.status_code, message, headers=getattr(exc, "headers", None))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {
            "loc": [str(part) for part in err.get("loc", ())],
            "msg": str(err.get("msg", "")),
            "type": str(err.get("type", "")),
        }
        for err in exc.errors()
    ]
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    message = f"invalid request: {'.'.join(first['loc'])}: {first['msg']}" + (
        f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    )
    _note(request, message)
    return error_response(422, message, details={"errors": errors})


class CatchUnexpected:
    """ASGI middleware, innermost: an exception no handler took becomes a 500 in the one shape.

    Starlette would otherwise answer from its outermost ``ServerErrorMiddleware`` in plain text
    and re-raise, past the recording middleware. A bug is not the user's fault: the traceback
    goes to the log, the client gets the exception's class name only.
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
            message = f"internal error ({type(exc).__name__}); the server log has the traceback"
            scope.setdefault("state", {})["error_message"] = message
            await error_response(500, message)(scope, receive, send)


def _note(request: Request, message: str) -> None:
    # The recording middleware reads this to put the error's message on the observed op.
    request.state.error_message = message


def install_error_handlers(app: FastAPI) -> None:
    """Render agentlake, HTTP and validation errors on ``app`` in the one shape.

    Unexpected exceptions are rendered by :class:`CatchUnexpected`, which the app factory adds
    as the innermost middleware.
    """
    app.add_exception_handler(AgentlakeError, _agentlake_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)


def _doc(description: str) -> dict[str, Any]:
    return {"model": ErrorResponse, "description": description}


# OpenAPI ``responses`` for the statuses any protected route can answer.
COMMON_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _doc("No API key, or an unknown one (only when keys are configured)."),
    403: _doc("The API key's scope does not allow this endpoint."),
    413: _doc("The request body is larger than max_body_bytes."),
    422: _doc("The request does not match the schema."),
    500: _doc("An unexpected failure; the message names it."),
}
BAD_REQUEST = {400: _doc("Bad input: the message says what to change.")}
NOT_FOUND = {404: _doc("The named thing does not exist.")}
UNAVAILABLE = {503: _doc("A dependency (model server, index) cannot be reached right now.")}
