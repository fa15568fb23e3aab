"""API keys and scopes: the one parser of a request's key, the key ring and the scope rank.

Owns reading a key from request headers (``X-API-Key``, else ``Authorization: Bearer``:
:func:`parse_key`, with :func:`key_from_headers` and :func:`key_from_scope` as the two ways
to reach the headers), :class:`KeyRing` (the configured ``KEY -> scope`` map, indexed by
digest), the scope order read < write < admin (:data:`RANK`), :class:`Principal` and
:func:`forbid`. The gateway and the observer service check keys with these; the gateway adds
browser sessions and its middleware (``gateway.security``). It does not own the keys
(``Settings.api_keys``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from agentlake.errors import UserError

Scope = Literal["read", "write", "admin"]
RANK: dict[str, int] = {"read": 0, "write": 1, "admin": 2}


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's scope, a fingerprint that is safe to log (never the key) and
    the name of who holds the key, when the configuration gives one (``KEY:SCOPE:NAME``)."""

    scope: Scope
    key_id: str | None  # None when no keys are configured (an open, local service)
    via: Literal["open", "key", "session"] = "key"
    name: str | None = None

    @property
    def who(self) -> str | None:
        """How the caller is shown: the key's name, else its fingerprint (None when open)."""
        return self.name or self.key_id

    def allows(self, needed: Scope) -> bool:
        return RANK[self.scope] >= RANK[needed]


OPEN = Principal(scope="admin", key_id=None, via="open")


def fingerprint(key: str) -> str:
    """A short, non-reversible id of a key for logs and observed ops."""
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:10]


def parse_key(x_api_key: str | None, authorization: str | None) -> str | None:
    """The API key of a request from its two headers: ``X-API-Key`` first, else the token of
    ``Authorization: Bearer <key>``; ``None`` when neither carries one."""
    if x_api_key and x_api_key.strip():
        return x_api_key.strip()
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


def key_from_headers(headers: Any) -> str | None:
    """The API key of a request whose headers are a mapping (Starlette's ``Headers``)."""
    return parse_key(headers.get("x-api-key"), headers.get("authorization"))


def key_from_scope(raw_headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The API key from an ASGI scope's raw ``headers``."""
    x_api_key = authorization = None
    for raw_name, raw_value in raw_headers:
        name = raw_name.lower()
        if name == b"x-api-key":
            x_api_key = raw_value.decode("latin-1")
        elif name == b"authorization":
            authorization = raw_value.decode("latin-1")
    return parse_key(x_api_key, authorization)


class KeyRing:
    """The configured keys, indexed once: a key is resolved with one hash and one dict lookup.

    Keys are looked up by their SHA-256 digest, never compared as strings, so the time a lookup
    takes says nothing about how much of a guessed key was right.
    """

    def __init__(self, keys: dict[str, str], names: dict[str, str] | None = None) -> None:
        self.keys = dict(keys)
        self._by_digest: dict[bytes, Principal] = {}
        self.by_id: dict[str, list[tuple[str, str]]] = {}
        self.names_by_id: dict[str, str] = {}  # key fingerprint -> the name of who holds the key
        for key, scope in self.keys.items():
            key_id = fingerprint(key)
            name = (names or {}).get(key)
            self._by_digest[hashlib.sha256(key.encode()).digest()] = Principal(
                scope=scope,  # type: ignore[arg-type]
                key_id=key_id,
                name=name,
            )
            self.by_id.setdefault(key_id, []).append((key, scope))
            if name:
                self.names_by_id[key_id] = name

    def __bool__(self) -> bool:
        return bool(self.keys)

    def principal(self, key: str | None) -> Principal:
        """The caller holding ``key``; :data:`OPEN` with no keys configured; ``UserError`` 401 otherwise."""
        if not self.keys:
            return OPEN
        if not key:
            raise UserError(
                "an API key is required: send it as the X-API-Key header or 'Authorization: Bearer <key>'",
                http_status=401,
            )
        principal = self._by_digest.get(hashlib.sha256(key.encode()).digest())
        if principal is None:
            raise UserError("unknown API key; check AGENTLAKE_API_KEYS on the server", http_status=401)
        return principal


def forbid(principal: Principal, needed: Scope, what: str) -> None:
    """Raise ``UserError`` (403) unless ``principal`` may do something that needs ``needed``."""
    if not principal.allows(needed):
        raise UserError(
            f"{what} needs a key with scope '{needed}' (this key has '{principal.scope}')", http_status=403
        )


def authorize(headers: Any, ring: KeyRing, needed: Scope, what: str) -> Principal:
    """The caller of a request with ``headers``, who must hold ``needed``: 401 without a valid
    key (when keys are configured), 403 for a lower scope."""
    principal = ring.principal(key_from_headers(headers))
    forbid(principal, needed, what)
    return principal
