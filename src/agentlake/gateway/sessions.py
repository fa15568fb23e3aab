"""Browser sessions: an API key exchanged once for an HttpOnly cookie the gateway accepts.

A browser cannot put a header on a page load, an ``EventSource`` or a ``WebSocket``, so the
dashboard signs in once (``POST /api/session`` with the key) and the gateway answers with the
``agentlake_session`` cookie: ``HttpOnly`` (page scripts cannot read it), ``SameSite=Strict``,
``Path=/``, ``Secure`` over HTTPS, valid for :data:`SESSION_TTL_S`.

The cookie never carries the key. Its value is ``v1.<key fingerprint>.<scope>.<expiry>.<mac>``
where the MAC is an HMAC-SHA256 keyed by the API key itself, so the gateway keeps no session
state, a session survives a restart, and it dies with its key: removing the key (or changing
its scope) from ``AGENTLAKE_API_KEYS`` invalidates every cookie made from it.

Owns minting and checking session tokens, signing in with a key and resolving a cookie to its
caller (:func:`sign_in`, :func:`session_principal`), and the cookie header strings. It does not decide
which requests may use a cookie (``gateway.security``) or serve the sign-in routes
(``web.routes``).
"""

from __future__ import annotations

import hashlib
import hmac
import time

from agentlake.errors import UserError
from agentlake.http.keys import KeyRing, Principal

COOKIE = "agentlake_session"
# A working day: a dashboard left open overnight asks for the key again.
SESSION_TTL_S = 12 * 3600
_VERSION = "v1"


def _mac(key: str, key_id: str, scope: str, expires: int) -> str:
    message = f"agentlake-session|{_VERSION}|{key_id}|{scope}|{expires}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def mint(key: str, key_id: str, scope: str, *, now: float | None = None, ttl_s: int = SESSION_TTL_S) -> str:
    """A session token for an already authenticated ``key`` (``key_id`` is its fingerprint)."""
    expires = int(now if now is not None else time.time()) + ttl_s
    return f"{_VERSION}.{key_id}.{scope}.{expires}.{_mac(key, key_id, scope, expires)}"


def check(
    token: str, keys_by_id: dict[str, list[tuple[str, str]]], *, now: float | None = None
) -> tuple[str, str] | None:
    """``(key_id, scope)`` when ``token`` is a live session of a configured key, else ``None``.

    ``keys_by_id`` maps a key's fingerprint to the ``(key, scope)`` pairs configured with it
    (a list: two keys could share a fingerprint). Expired, tampered, malformed tokens and
    tokens of removed keys or changed scopes all give ``None``.
    """
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != _VERSION or not parts[3].isdigit():
        return None
    _, key_id, scope, expires_text, mac = parts
    expires = int(expires_text)
    if expires < (now if now is not None else time.time()):
        return None
    found = None
    for key, configured_scope in keys_by_id.get(key_id, ()):
        # Every candidate is checked, in constant time, so timing tells nothing about which failed.
        if hmac.compare_digest(_mac(key, key_id, scope, expires), mac) and configured_scope == scope:
            found = (key_id, scope)
    return found


def cookie_from_header(value: str) -> str | None:
    """The session token in a ``Cookie`` header value, or ``None``."""
    for part in value.split(";"):
        name, sep, token = part.strip().partition("=")
        if sep and name == COOKIE and token:
            return token.strip('"')
    return None


def set_cookie_header(token: str, *, secure: bool, ttl_s: int = SESSION_TTL_S) -> str:
    """The ``Set-Cookie`` value that stores ``token`` in the browser."""
    return f"{COOKIE}={token}; Max-Age={ttl_s}; Path=/; HttpOnly; SameSite=Strict" + (
        "; Secure" if secure else ""
    )


def clear_cookie_header(*, secure: bool) -> str:
    """The ``Set-Cookie`` value that removes the session cookie (signing out)."""
    return f"{COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict" + ("; Secure" if secure else "")


def session_principal(ring: KeyRing, token: str) -> Principal | None:
    """The caller of a live session cookie, or ``None`` (expired, tampered, key removed)."""
    found = check(token, ring.by_id)
    if found is None:
        return None
    return Principal(scope=found[1], key_id=found[0], via="session", name=ring.names_by_id.get(found[0]))  # type: ignore[arg-type]


def sign_in(ring: KeyRing, key: str) -> tuple[Principal, str]:
    """Exchange a valid ``key`` for ``(principal, session token)``.

    ``UserError`` 401 for an unknown key, 400 when no keys are configured (nothing to sign in to).
    """
    if not ring:
        raise UserError("this gateway has no API keys configured (AGENTLAKE_API_KEYS): no sign-in is needed")
    principal = ring.principal(key.strip())
    assert principal.key_id is not None
    token = mint(key.strip(), principal.key_id, principal.scope)
    return Principal(
        scope=principal.scope, key_id=principal.key_id, via="session", name=principal.name
    ), token
