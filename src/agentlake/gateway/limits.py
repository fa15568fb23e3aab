"""The gateway's limits at its HTTP edge: request body size, and requests a minute per API key.

Owns the :class:`BodyLimit` ASGI middleware: it reads each request body through the shared
reader (``agentlake.http.body.read_body``: a declared ``Content-Length`` over the limit is
refused without reading a byte, any other body as soon as it passes the limit) and replays
the buffered body to the app, so a route (or a mounted app) sees an ordinary request.

Owns the rate limits: :class:`RateLimits` (token buckets per caller and kind, one set per
process) and the :class:`RateLimit` ASGI middleware that charges each request after the key
check. A caller is its API key's fingerprint (a dashboard session counts as its key), or the
client's address when no key is configured or none was sent. Every request takes a token from
the caller's bucket of ``rate_limit_per_minute``; a request to a route that needs the write
(or admin) scope also from its bucket of ``rate_limit_write_per_minute``, and one that calls a
model (``POST /fill``, ``POST /ask``; each graph chat message on ``/ws`` and each MCP ``ask``
take theirs where they run) from its bucket of ``rate_limit_model_per_minute``. A bucket holds
a minute's worth and refills continuously; an empty one answers 429 with ``Retry-After``
through the one error renderer, and other callers are unaffected. While another caller
has been seen in the last second, a caller has at most ``rate_limit_concurrent`` counted requests
in progress at once, refused ones included (streams and model calls aside), and the rest wait
their turn before they are charged: a burst from one key cannot hold the event loop and every
worker while another key's request waits behind it. A caller alone runs all its requests at
once (its concurrent reads still share one lake read). ``/health`` and the
observer's ingest routes (``POST /observer/...``, which answer 503 with ``Retry-After`` when
their queue is full or the store cannot commit) are not counted. The buckets live in the process: N gateway processes
allow N times the limit. A limit of 0 is no limit.

It does not own the limits' values (``Settings``) or the error shape (``agentlake.http``).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any, Literal

from starlette.requests import ClientDisconnect
from starlette.routing import Match

from agentlake.errors import UserError
from agentlake.gateway.security import route_scope
from agentlake.http.body import read_body
from agentlake.http.errors import agentlake_error_response, error_response
from agentlake.http.methods import flat_routes
from agentlake.settings import Settings

Bucket = Literal["all", "write", "model"]
SETTING: dict[Bucket, str] = {
    "all": "rate_limit_per_minute",
    "write": "rate_limit_write_per_minute",
    "model": "rate_limit_model_per_minute",
}
_KIND: dict[Bucket, str] = {"all": "", "write": " to write routes", "model": " that call a model"}
# Routes that call a model, by method and path; the write routes are found by their scope.
MODEL_ROUTES = frozenset({("POST", "/fill"), ("POST", "/ask")})
# Not counted: liveness, and the observer's ingest (its own backpressure answers 503).
UNCOUNTED_PATHS = frozenset({"/health"})
UNCOUNTED_POST_PREFIX = "/observer/"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_MAX_CALLERS = 10_000  # buckets kept before full (idle) ones are dropped
# A caller seen this recently (seconds) makes the others take turns: sequential requests keep it.
CONTENDED_S = 1.0


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


class RateLimits:
    """Token buckets per (caller, bucket): each holds ``per_minute`` tokens and refills at
    ``per_minute / 60`` a second. Thread-safe (MCP tools and graph turns charge from worker
    threads). ``clock`` is injectable for tests."""

    def __init__(
        self,
        per_minute: dict[Bucket, int],
        clock: Callable[[], float] = time.monotonic,
        *,
        concurrent: int = 0,
    ) -> None:
        self.per_minute = {bucket: limit for bucket, limit in per_minute.items() if limit > 0}
        self.clock = clock
        self.concurrent = concurrent
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, Bucket], list[float]] = {}  # -> [tokens, at]
        self._turns: dict[int, _Turns] = {}  # by event loop

    @classmethod
    def from_settings(cls, settings: Settings) -> RateLimits:
        return cls(
            {
                "all": settings.rate_limit_per_minute,
                "write": settings.rate_limit_write_per_minute,
                "model": settings.rate_limit_model_per_minute,
            },
            concurrent=settings.rate_limit_concurrent,
        )

    def __bool__(self) -> bool:
        return bool(self.per_minute) or self.concurrent > 0

    def turns(self) -> _Turns:
        """The callers' turns on the running event loop."""
        loop = id(asyncio.get_running_loop())
        turns = self._turns.get(loop)
        if turns is None:
            turns = self._turns[loop] = _Turns(self.concurrent, self.clock)
        return turns

    def take(self, caller: str, buckets: Iterable[Bucket]) -> tuple[float, Bucket | None]:
        """Take one token from each of ``caller``'s ``buckets``: ``(0.0, None)``. When one is
        empty, take none: ``(seconds until it has a token again, that bucket)``."""
        limited = [bucket for bucket in buckets if bucket in self.per_minute]
        if not limited:
            return 0.0, None
        now = self.clock()
        with self._lock:
            refilled: list[tuple[Bucket, list[float]]] = []
            wait, empty = 0.0, None
            for bucket in limited:
                capacity = float(self.per_minute[bucket])
                tokens, at = self._buckets.get((caller, bucket), (capacity, now))
                state = [min(capacity, tokens + (now - at) * capacity / 60.0), now]
                if state[0] < 1.0 and (1.0 - state[0]) * 60.0 / capacity > wait:
                    wait, empty = (1.0 - state[0]) * 60.0 / capacity, bucket
                refilled.append((bucket, state))
            if empty is not None:
                return wait, empty
            for bucket, state in refilled:
                state[0] -= 1.0
                self._buckets[(caller, bucket)] = state
            if len(self._buckets) > _MAX_CALLERS:
                self._forget_idle(now)
        return 0.0, None

    def _forget_idle(self, now: float) -> None:
        """Drop buckets that have refilled (a fresh one is the same); then the oldest half."""
        for key, (tokens, at) in list(self._buckets.items()):
            capacity = self.per_minute.get(key[1], 0)
            if tokens + (now - at) * capacity / 60.0 >= capacity:
                del self._buckets[key]
        if len(self._buckets) > _MAX_CALLERS:
            for key, _ in sorted(self._buckets.items(), key=lambda item: item[1][1])[
                : len(self._buckets) // 2
            ]:
                del self._buckets[key]

    def charge(self, caller: str, buckets: Iterable[Bucket], what: str) -> None:
        """:meth:`take`, or raise ``UserError`` (429, ``retry_after``) naming the limit and its
        setting."""
        wait, empty = self.take(caller, buckets)
        if empty is not None:
            who = "API key" if caller.startswith("key-") else "client"
            raise UserError(
                f"{what}: too many requests from this {who}, more than {self.per_minute[empty]} a minute"
                f"{_KIND[empty]} (setting {SETTING[empty]}, counted per gateway process); "
                f"retry in {math.ceil(wait)} s",
                http_status=429,
                retry_after=math.ceil(wait),
            )


class _Turns:
    """The callers' requests in progress on one event loop. While another caller has been seen
    within ``CONTENDED_S``, a caller has at most ``size`` requests in progress and the rest wait
    their turn in order; a caller alone runs all its requests at once (nobody waits behind it)."""

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self.size = size
        self.clock = clock
        self.in_progress: dict[str, int] = {}
        self.waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self.seen: dict[str, float] = {}

    def contended(self, caller: str) -> bool:
        """Whether another caller was seen within ``CONTENDED_S`` (the idle ones are forgotten)."""
        now = self.clock()
        for other, at in list(self.seen.items()):
            if now - at > CONTENDED_S and not self.in_progress.get(other) and not self.waiting.get(other):
                del self.seen[other]
                self.in_progress.pop(other, None)
                self.waiting.pop(other, None)
        return any(other != caller for other in self.seen)

    def _wake_next(self, caller: str) -> None:
        queue = self.waiting.get(caller)
        while queue:
            turn = queue.popleft()
            if not turn.done():
                turn.set_result(None)
                return

    async def run(self, caller: str, call: Callable[[], Any]) -> None:
        self.seen[caller] = self.clock()
        queue = self.waiting.setdefault(caller, deque())
        while self.in_progress.get(caller, 0) >= self.size and self.contended(caller):
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            queue.append(turn)
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._wake_next(caller)  # the turn it was given passes on
                elif turn in queue:
                    queue.remove(turn)
                raise
        self.in_progress[caller] = self.in_progress.get(caller, 0) + 1
        if queue and not self.contended(caller):
            self._wake_next(caller)  # alone again: the rest of the queue goes in too
        try:
            await call()
        finally:
            self.in_progress[caller] -= 1
            self.seen[caller] = self.clock()
            self._wake_next(caller)


def _streams(scope: dict[str, Any]) -> bool:
    """A WebSocket or a request for server-sent events: open as long as the client likes."""
    if scope["type"] != "http":
        return True
    accept = next((value for name, value in scope.get("headers", []) if name == b"accept"), b"")
    return b"text/event-stream" in accept


def caller_of(scope: MutableMapping[str, Any]) -> str:
    """Who a request's tokens are counted for: its key's fingerprint, else its client address."""
    principal = scope.get("state", {}).get("principal")
    key_id = getattr(principal, "key_id", None)
    if key_id:
        return key_id
    client = scope.get("client")
    return f"client {client[0]}" if client else "client unknown"


def charge_scope(scope: MutableMapping[str, Any], buckets: Iterable[Bucket], what: str) -> None:
    """Charge the caller of ``scope`` (an HTTP or WebSocket request of the gateway) with the
    limits the :class:`RateLimit` middleware put in its state; nothing without them."""
    limits = scope.get("state", {}).get("rate_limits")
    if limits:
        limits.charge(caller_of(scope), buckets, what)


class RateLimit:
    """ASGI middleware charging each request to its caller's buckets (after ``Authenticate``,
    which resolved the caller); an empty bucket answers 429 with ``Retry-After``."""

    def __init__(self, app: Any, limits: RateLimits) -> None:
        self.app = app
        self.limits = limits
        self._write_routes: list[Any] | None = None

    def _needs_write(self, scope: dict[str, Any]) -> bool:
        if self._write_routes is None:  # the app's routes, once it is assembled
            self._write_routes = [
                route
                for route in flat_routes(getattr(scope.get("app"), "routes", []))
                if route_scope(route) in ("write", "admin")
            ]
        return any(route.matches(scope)[0] is Match.FULL for route in self._write_routes)

    def buckets(self, scope: dict[str, Any]) -> tuple[Bucket, ...]:
        """The buckets a request takes a token from; none when it is not counted."""
        method, path = scope.get("method", "GET"), scope.get("path", "")
        if path in UNCOUNTED_PATHS or (method == "POST" and path.startswith(UNCOUNTED_POST_PREFIX)):
            return ()
        if (method, path) in MODEL_ROUTES:
            return ("all", "model")
        if method not in _SAFE_METHODS and self._needs_write(scope):
            return ("all", "write")
        return ("all",)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or not self.limits:
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["rate_limits"] = self.limits  # graph chat messages and MCP tools charge there
        caller, buckets = caller_of(scope), self.buckets(scope)
        if self.limits.concurrent and buckets and "model" not in buckets and not _streams(scope):
            # One caller's requests take their turns, the refused ones too: a burst waits here,
            # not in the workers and the event loop other keys' requests need. A model call
            # (seconds long) takes no turn, so it never holds up the same key's reads.
            await self.limits.turns().run(
                caller, lambda: self._charged(scope, receive, send, caller, buckets)
            )
            return
        await self._charged(scope, receive, send, caller, buckets)

    async def _charged(
        self, scope: dict[str, Any], receive: Any, send: Any, caller: str, buckets: tuple[Bucket, ...]
    ) -> None:
        """The request charged to ``caller``'s ``buckets``: the app's answer, or the 429."""
        try:
            self.limits.charge(caller, buckets, f"{scope.get('method', 'GET')} {scope.get('path', '')}")
        except UserError as exc:
            scope["state"]["error_message"] = exc.message
            if scope["type"] == "http" or "websocket.http.response" in scope.get("extensions", {}):
                # The 429 itself; a WebSocket handshake too where the server can answer one.
                await agentlake_error_response(exc)(scope, receive, send)
            else:  # a websocket: refuse the handshake, "try again later"
                await send({"type": "websocket.close", "code": 1013, "reason": exc.message[:120]})
            return
        await self.app(scope, receive, send)
