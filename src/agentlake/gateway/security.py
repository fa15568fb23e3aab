"""API keys with scopes: who may call which gateway endpoint.

Owns: reading a key from a request (``X-API-Key`` or ``Authorization: Bearer``), checking it
against ``settings.api_key_scopes`` (constant-time), the scope order read < write < admin, the
:class:`Authenticate` ASGI middleware (every path but ``/health`` once any key is configured,
including the mounted observer and MCP apps) and the :func:`require` route dependency that
enforces a route's scope and documents the schemes in OpenAPI. It does not own the keys
(``Settings.api_keys``) or the error shape (``gateway.errors``).

With no key configured the gateway is open, which is why ``agentlake serve`` binds 127.0.0.1
by default.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from agentlake.errors import UserError
from agentlake.gateway.errors import error_response

Scope = Literal["read", "write", "admin"]
_RANK = {"read": 0, "write": 1, "admin": 2}
OPEN_PATHS = frozenset({"/health"})

api_key_header = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="An API key from AGENTLAKE_API_KEYS (KEY:SCOPE pairs)."
)
bearer = HTTPBearer(auto_error=False, description="The same API key, as `Authorization: Bearer <key>`.")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's scope and a fingerprint that is safe to log (never the key)."""

    scope: Scope
    key_id: str | None  # None when no keys are configured (an open, local gateway)

    def allows(self, needed: Scope) -> bool:
        return _RANK[self.scope] >= _RANK[needed]


OPEN = Principal(scope="admin", key_id=None)


def fingerprint(key: str) -> str:
    """A short, non-reversible id of a key for logs and observed ops."""
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:10]


def key_from_headers(headers: Any) -> str | None:
    """The API key of a request: ``X-API-Key``, else a bearer token; ``None`` when absent."""
    key = headers.get("x-api-key")
    if key:
        return key.strip()
    auth = headers.get("authorization") or ""
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


def authenticate(key: str | None, keys: dict[str, str]) -> Principal:
    """Resolve a key against the configured ``KEY -> scope`` map.

    Returns :data:`OPEN` when no keys are configured. Raises ``UserError`` with status 401 when
    keys are configured and ``key`` is missing or unknown.
    """
    if not keys:
        return OPEN
    if not key:
        raise UserError(
            "an API key is required: send it as the X-API-Key header or 'Authorization: Bearer <key>'",
            http_status=401,
        )
    # Compare against every key so the time taken does not reveal which prefix matched.
    found: str | None = None
    for candidate, scope in keys.items():
        if hmac.compare_digest(candidate.encode(), key.encode()):
            found = scope
    if found is None:
        raise UserError("unknown API key; check AGENTLAKE_API_KEYS on the server", http_status=401)
    return Principal(scope=found, key_id=fingerprint(key))  # type: ignore[arg-type]


def forbid(principal: Principal, needed: Scope, what: str) -> None:
    """Raise ``UserError`` (403) unless ``principal`` may do something that needs ``needed``."""
    if not principal.allows(needed):
        raise UserError(
            f"{what} needs a key with scope '{needed}' (this key has '{principal.scope}')", http_status=403
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

    Once any key is configured, every path except :data:`OPEN_PATHS` needs a valid key (401),
    including ``/docs``, ``/openapi.json``, unknown paths and the mounted apps; mounted apps
    also get their scope checked here (403) via ``scope_for``.
    """

    def __init__(
        self, app: Any, keys: dict[str, str], scope_for: Callable[[str, str], Scope | None] = mount_scope
    ) -> None:
        self.app = app
        self.keys = keys
        self.scope_for = scope_for

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        path = scope.get("path", "")
        if not self.keys or path in OPEN_PATHS:
            state["principal"] = OPEN if not self.keys else None
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            principal = authenticate(key_from_headers(headers), self.keys)
            needed = self.scope_for(scope.get("method", "GET"), path)
            if needed is not None:
                forbid(principal, needed, f"{scope.get('method', 'GET')} {path}")
        except UserError as exc:
            state["error_message"] = exc.message
            extra = {"WWW-Authenticate": 'Bearer realm="agentlake"'} if exc.http_status == 401 else None
            response = error_response(exc.http_status, exc.message, headers=extra)
            if scope["type"] == "http":
                await response(scope, receive, send)
            else:  # a websocket: refuse the handshake
                await send({"type": "websocket.close", "code": 1008, "reason": exc.message[:120]})
            return
        state["principal"] = principal
        await self.app(scope, receive, send)


def principal_of(request: Request, keys: dict[str, str]) -> Principal:
    """The caller of ``request``: from the middleware when it ran, else authenticated here."""
    principal = request.scope.get("state", {}).get("principal")
    if isinstance(principal, Principal):
        return principal
    return authenticate(key_from_headers(request.headers), keys)


def require(needed: Scope) -> Callable[..., Principal]:
    """A route dependency: the caller must hold ``needed`` (or a higher scope).

    The ``Security`` parameters make OpenAPI list both ways of sending a key; the check itself
    uses the principal resolved by :class:`Authenticate`.
    """

    def dependency(
        request: Request,
        _key: str | None = Security(api_key_header),
        _bearer: HTTPAuthorizationCredentials | None = Security(bearer),
    ) -> Principal:
        keys = request.app.state.settings.api_key_scopes
        principal = principal_of(request, keys)
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
    return max(found, key=_RANK.__getitem__) if found else None
