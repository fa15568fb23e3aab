"""Who may call which gateway endpoint: keys or a browser's session, checked once per request.

Owns the :class:`Authenticate` ASGI middleware (every path but :data:`OPEN_PATHS` once any key
is configured, including the mounted observer and MCP apps), reading a browser's session
cookie and its origin (:func:`identify`, :func:`same_origin`), the scope the mounted apps need
(:func:`mount_scope`) and the :func:`require` route dependency that enforces a route's scope
and documents the schemes in OpenAPI. Keys, the key parser, the key ring and the scope rank
are the shared HTTP edge's (``agentlake.http.keys``), the same the observer service checks
with; sessions are ``gateway.sessions``; the error shape is ``agentlake.http.errors``.

With no key configured the gateway is open, which is why ``agentlake serve`` binds 127.0.0.1
by default.

A session cookie is only as good as the request it rides on: a cookie-authenticated request
that changes something (any method but GET/HEAD/OPTIONS) or opens a WebSocket must come from
the gateway's own origin (its ``Origin`` header, when present, names this host), because
``SameSite`` does not separate two ports of one host.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from agentlake.errors import UserError
from agentlake.gateway.sessions import cookie_from_header, session_principal
from agentlake.http.errors import error_response, jsonrpc_error_response
from agentlake.http.keys import (
    OPEN,
    RANK,
    KeyRing,
    Principal,
    Scope,
    forbid,
    key_from_headers,
    key_from_scope,
)

__all__ = ["OPEN", "OPEN_PATHS", "Authenticate", "KeyRing", "Principal", "Scope", "forbid", "require"]

# Never need a key: liveness, and the dashboard's page, assets and sign-in, which reveal nothing
# (the page asks for a key and everything it then reads is protected).
OPEN_PATHS = frozenset({"/health", "/", "/api/session"})
# /.well-known/ serves nothing here: a client probing for OAuth metadata (an MCP client does,
# after a 401) must learn that with a 404, not with another 401.
OPEN_PREFIXES = ("/static/", "/.well-known/")
MCP_PATH = "/mcp"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

api_key_header = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="An API key from AGENTLAKE_API_KEYS (KEY:SCOPE pairs)."
)
bearer = HTTPBearer(auto_error=False, description="The same API key, as `Authorization: Bearer <key>`.")


def is_open_path(path: str) -> bool:
    """Whether ``path`` is served without a key even when keys are configured."""
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)


def credentials(scope: dict[str, Any]) -> tuple[str | None, str | None, str | None, str | None]:
    """``(api key, session token, Origin, Host)`` of an ASGI request."""
    token = origin = host = None
    headers = scope.get("headers", ())
    for raw_name, raw_value in headers:
        name = raw_name.lower()
        if name == b"cookie":
            token = cookie_from_header(raw_value.decode("latin-1")) or token
        elif name == b"origin":
            origin = raw_value.decode("latin-1")
        elif name == b"host":
            host = raw_value.decode("latin-1")
    return key_from_scope(headers), token, origin, host


def identify(scope: dict[str, Any], ring: KeyRing) -> Principal | None:
    """Who sends this ASGI request: by API key first, else by session cookie; ``None`` if neither.

    Raises ``UserError``: 401 for an unknown key or a dead session cookie, 403 for a session
    cookie on a cross-origin request that changes something or opens a WebSocket.
    """
    if not ring:
        return OPEN
    key, token, origin, host = credentials(scope)
    if key is not None:
        return ring.principal(key)
    if token is None:
        return None
    principal = session_principal(ring, token)
    if principal is None:
        raise UserError(
            "the dashboard session has expired or its key was removed: sign in again with an API key",
            http_status=401,
        )
    if scope["type"] == "websocket" or scope.get("method", "GET") not in _SAFE_METHODS:
        same_origin(scope, origin, host)
    return principal


def same_origin(scope: MutableMapping[str, Any], origin: str | None, host: str | None) -> None:
    """Raise ``UserError`` (403) when a browser sent this request from another origin.

    ``origin`` and ``host`` are the request's ``Origin`` and ``Host`` headers; no ``Origin``
    (not a browser, or a same-origin GET) passes.
    """
    if origin is None:
        return
    secure = scope.get("scheme") in ("https", "wss")
    if origin != f"{'https' if secure else 'http'}://{host}":
        raise UserError(
            f"cross-origin request from {origin} refused: the dashboard's session is only accepted "
            "from its own origin (other clients send the key as X-API-Key)",
            http_status=403,
        )


def mount_scope(method: str, path: str) -> Scope | None:
    """The scope the mounted sub-apps need: the observer's ingest writes, everything else reads.

    Routes of the gateway itself declare their own scope with :func:`require`; this covers only
    the apps the gateway mounts, which cannot carry gateway dependencies.
    """
    if path.startswith("/observer"):
        return "write" if method in ("POST", "PUT", "PATCH", "DELETE") else "read"
    return None


class Authenticate:
    """ASGI middleware: resolves the caller once per request into ``scope["state"]["principal"]``.

    Once any key is configured, every path except the open ones (:func:`is_open_path`) needs a
    valid key or session cookie (401), including ``/docs``, ``/openapi.json``, unknown paths and
    the mounted apps; mounted apps also get their scope checked here (403) via ``scope_for``.
    A refused ``/mcp`` request is answered as a JSON-RPC error (same status), whose message an
    MCP client shows its user.
    On an open path the caller is resolved when it sent credentials, and ``None`` otherwise.
    """

    def __init__(
        self,
        app: Any,
        keys: dict[str, str] | KeyRing,
        scope_for: Callable[[str, str], Scope | None] = mount_scope,
    ) -> None:
        self.app = app
        self.ring = keys if isinstance(keys, KeyRing) else KeyRing(keys)
        self.scope_for = scope_for

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        if not self.ring:
            state["principal"] = OPEN
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if is_open_path(path):
            try:
                state["principal"] = identify(scope, self.ring)
            except UserError:
                state["principal"] = None
            await self.app(scope, receive, send)
            return
        try:
            principal = identify(scope, self.ring)
            if principal is None:
                self.ring.principal(None)  # raises the 401 that says how to send a key
            assert principal is not None
            needed = self.scope_for(scope.get("method", "GET"), path)
            if needed is not None:
                forbid(principal, needed, f"{scope.get('method', 'GET')} {path}")
        except UserError as exc:
            state["error_message"] = exc.message
            extra = {"WWW-Authenticate": 'Bearer realm="agentlake"'} if exc.http_status == 401 else None
            if path == MCP_PATH:
                # An MCP client shows a JSON-RPC error's message; any other body it reports
                # only as "Server returned an error response".
                response = jsonrpc_error_response(exc.http_status, exc.message, headers=extra)
            else:
                response = error_response(exc.http_status, exc.message, headers=extra)
            if scope["type"] == "http":
                await response(scope, receive, send)
            else:  # a websocket: refuse the handshake
                await send({"type": "websocket.close", "code": 1008, "reason": exc.message[:120]})
            return
        state["principal"] = principal
        await self.app(scope, receive, send)


def principal_of(request: Request) -> Principal:
    """The caller of ``request``: from the middleware when it ran, else authenticated here."""
    principal = request.scope.get("state", {}).get("principal")
    if isinstance(principal, Principal):
        return principal
    ring = getattr(request.app.state, "key_ring", None) or KeyRing(
        request.app.state.settings.api_key_scopes, request.app.state.settings.api_key_names
    )
    return ring.principal(key_from_headers(request.headers))


def require(needed: Scope) -> Callable[..., Awaitable[Principal]]:
    """A route dependency: the caller must hold ``needed`` (or a higher scope).

    The ``Security`` parameters make OpenAPI list both ways of sending a key; the check itself
    uses the principal resolved by :class:`Authenticate`.
    """

    # async: FastAPI would run a plain function in its thread pool, a thread hop per request
    # for a check that only reads what the middleware already resolved.
    async def dependency(
        request: Request,
        _key: str | None = Security(api_key_header),
        _bearer: HTTPAuthorizationCredentials | None = Security(bearer),
    ) -> Principal:
        principal = principal_of(request)
        forbid(principal, needed, f"{request.method} {request.url.path}")
        return principal

    dependency.__name__ = f"require_{needed}"
    dependency.required_scope = needed  # type: ignore[attr-defined]  # read by route_scope for the docs
    return dependency


def route_scope(route: Any) -> Scope | None:
    """The scope a route's :func:`require` dependency asks for (the highest, if several)."""
    found: list[Scope] = []
    stack = list(getattr(getattr(route, "dependant", None), "dependencies", []))
    while stack:
        dependant = stack.pop()
        scope = getattr(dependant.call, "required_scope", None)
        if scope is not None:
            found.append(scope)
        stack.extend(dependant.dependencies)
    if not found:
        return None
    return max(found, key=RANK.__getitem__)
