"""The gateway's limits at its HTTP edge: request body size, and requests a minute per API key.

Owns the :class:`BodyLimit` ASGI middleware: it reads each request body through the shared
reader (``agentlake.http.body.read_body``: a declared ``Content-Length`` over the limit is
refused without reading a byte, any other body as soon as it passes the limit) and replays
the buffered body to the app, so a route (or a mounted app) sees an ordinary request.

Owns the rate limits: :class:`RateLimits` (token buckets per caller and kind, one set per
process) and the :class:`RateLimit` ASGI middleware, the gateway's outermost, that charges each
request before anything else runs for it (its op is recorded, its key checked, its route found).
A caller is its API key's fingerprint (a dashboard session counts as its key; the middleware
reads the key itself, :func:`edge_caller`), or the client's address when no key is configured,
or none is needed (an open path); a request the key check will refuse (no key, an unknown one)
is not charged. Every request takes a token from
the caller's bucket of ``rate_limit_per_minute``; a request to a route that needs the write
(or admin) scope also from its bucket of ``rate_limit_write_per_minute``, and one that calls a
model (``POST /fill``, ``POST /ask``; each graph chat message on ``/ws`` and each MCP ``ask``
take theirs where they run) from its bucket of ``rate_limit_model_per_minute``. A bucket holds
a minute's worth and refills continuously; an empty one answers 429 with ``Retry-After``
through the one error renderer, and other callers are unaffected. While another caller
has been seen in the last second, a caller has at most ``rate_limit_concurrent`` counted requests
in progress at once, refused ones included (streams and model calls aside), and the rest wait
their turn before they are charged: a burst from one key cannot hold the event loop and every
worker while another key's request waits behind it; and a caller with requests waiting yields
to callers sending one at a time (up to ``YIELD_S``), so those meet at most the rest of one
request of a burst. A caller alone runs all its requests at once (its concurrent reads still
share one lake read). ``/health`` and the observer's ingest routes (``POST /observer/...``,
which answer 503 with ``Retry-After`` when their queue is full or the store cannot commit) are
not counted. The buckets live in the process: N gateway processes allow N times the limit. A
limit of 0 is no limit.

A refused request is not recorded as an op of its own (a flood would otherwise cost a durable
write per refusal): :class:`Refusals` counts a caller's 429s and records them as one op
(``gateway.rate_limited``, failed) per caller every ``REFUSALS_WINDOW_S`` while they last, and at
shutdown.

It does not own the limits' values (``Settings``) or the error shape (``agentlake.http``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, MutableMapping
from datetime import UTC, datetime
from typing import Any, Literal

from starlette.requests import ClientDisconnect
from starlette.routing import Match

from agentlake.errors import UserError
from agentlake.gateway.security import KeyRing, identify, is_open_path, route_scope
from agentlake.http.body import read_body
from agentlake.http.errors import agentlake_error_response, error_response
from agentlake.http.methods import flat_routes
from agentlake.observe import Observer, event, summarize
from agentlake.settings import Settings

log = logging.getLogger(__name__)

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
# A caller with a backlog yields to callers without one at most this long (seconds) at a time.
YIELD_S = 0.1
# A caller's 429s are counted this long (seconds) from the first, then recorded as one op.
REFUSALS_WINDOW_S = 5.0
_REFUSED_REQUESTS = 10  # distinct "METHOD path" named in that op; the rest are counted together


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
    their turn in order: a request that ends hands its place to its caller's next waiting one,
    so one arriving meanwhile cannot go ahead of those already waiting. A caller with requests
    waiting (a backlog) yields to those without: while one of theirs is in progress, its next
    request starts only when that ends, or ``YIELD_S`` after it began to yield, whichever comes
    first; so a key sending one request at a time meets at most the rest of one request of a
    burst, not a stream of them. A caller alone runs all its requests at once (nobody waits
    behind it)."""

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self.size = size
        self.clock = clock
        self.in_progress: dict[str, int] = {}
        self.waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self.seen: dict[str, float] = {}
        self.yielding: set[str] = set()  # callers with a free place left unused for now
        self._timer: asyncio.TimerHandle | None = None

    def contended(self, caller: str) -> bool:
        """Whether another caller was seen within ``CONTENDED_S`` (the idle ones are forgotten)."""
        now = self.clock()
        for other, at in list(self.seen.items()):
            if now - at > CONTENDED_S and not self.in_progress.get(other) and not self.waiting.get(other):
                del self.seen[other]
                self.in_progress.pop(other, None)
                self.waiting.pop(other, None)
        return any(other != caller for other in self.seen)

    def _light_busy(self, caller: str | None) -> bool:
        """Whether a caller other than ``caller`` without a backlog has a request in progress."""
        return any(
            count and other != caller and not self.waiting.get(other)
            for other, count in self.in_progress.items()
        )

    def _hand_on(self, caller: str) -> bool:
        """Give one place of ``caller`` to its next waiting request: whether one was waiting."""
        queue = self.waiting.get(caller)
        while queue:
            turn = queue.popleft()
            if not turn.done():
                turn.set_result(None)
                return True
        return False

    def _admit(self, caller: str, *, overdue: bool = False) -> None:
        """Start ``caller``'s waiting requests on its free places, unless it must yield."""
        while self.waiting.get(caller) and self.in_progress.get(caller, 0) < self.size:
            if not overdue and self._light_busy(caller):
                self.yielding.add(caller)
                if self._timer is None:
                    self._timer = asyncio.get_running_loop().call_later(YIELD_S, self._overdue)
                return
            self.in_progress[caller] = self.in_progress.get(caller, 0) + 1
            if not self._hand_on(caller):
                self.in_progress[caller] -= 1
        self.yielding.discard(caller)

    def _overdue(self) -> None:
        """``YIELD_S`` passed: each yielding caller starts its next request now."""
        self._timer = None
        for caller in list(self.yielding):
            self.yielding.discard(caller)
            self._admit(caller, overdue=True)

    def _release(self, caller: str) -> None:
        """One of ``caller``'s places is free: its next waiting request takes it (or yields);
        when no caller without a backlog is left in progress, the yielding ones go on."""
        self.in_progress[caller] -= 1
        if self.waiting.get(caller):
            self._admit(caller)
        if self.yielding and not self._light_busy(None):
            for other in list(self.yielding):
                self._admit(other)
            if not self.yielding and self._timer is not None:
                self._timer.cancel()
                self._timer = None

    async def run(self, caller: str, call: Callable[[], Any]) -> None:
        self.seen[caller] = self.clock()
        queue = self.waiting.setdefault(caller, deque())
        if (queue or self.in_progress.get(caller, 0) >= self.size) and self.contended(caller):
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            queue.append(turn)
            try:
                await turn  # resolved with a place already counted as this request's
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._release(caller)  # the place it was given passes on
                elif turn in queue:
                    queue.remove(turn)
                raise
        else:
            self.in_progress[caller] = self.in_progress.get(caller, 0) + 1
        while queue and not self.contended(caller):
            # Alone again: the rest of the queue goes in too.
            self.in_progress[caller] += 1
            if not self._hand_on(caller):
                self.in_progress[caller] -= 1
        try:
            await call()
        finally:
            self.seen[caller] = self.clock()
            self._release(caller)


def _streams(scope: dict[str, Any]) -> bool:
    """A WebSocket or a request for server-sent events: open as long as the client likes."""
    if scope["type"] != "http":
        return True
    accept = next((value for name, value in scope.get("headers", []) if name == b"accept"), b"")
    return b"text/event-stream" in accept


def caller_of(scope: MutableMapping[str, Any]) -> str:
    """Who a request's tokens are counted for, once ``Authenticate`` has run: its key's
    fingerprint, else its client address."""
    principal = scope.get("state", {}).get("principal")
    key_id = getattr(principal, "key_id", None)
    if key_id:
        return key_id
    return _client(scope)


def _client(scope: MutableMapping[str, Any]) -> str:
    client = scope.get("client")
    return f"client {client[0]}" if client else "client unknown"


def edge_caller(scope: dict[str, Any], ring: KeyRing) -> str | None:
    """Who a request is charged to before the key check: its key's fingerprint (a dashboard
    session's key), else its client address where no key is needed (none configured, an open
    path); ``None`` where ``Authenticate`` will refuse it (no key or a bad one, 401/403)."""
    if ring:
        try:
            principal = identify(scope, ring)
        except UserError:
            principal = None
        if principal is not None and principal.key_id:
            return principal.key_id
        if not is_open_path(scope.get("path", "")):
            return None
    return _client(scope)


def charge_scope(scope: MutableMapping[str, Any], buckets: Iterable[Bucket], what: str) -> None:
    """Charge the caller of ``scope`` (an HTTP or WebSocket request of the gateway) with the
    limits the :class:`RateLimit` middleware put in its state; nothing without them."""
    limits = scope.get("state", {}).get("rate_limits")
    if limits:
        limits.charge(caller_of(scope), buckets, what)


class _Tally:
    __slots__ = ("count", "first", "last", "requests", "other", "message")

    def __init__(self, now: float) -> None:
        self.count = self.other = 0
        self.first = self.last = now
        self.requests: dict[str, int] = {}
        self.message = ""


class Refusals:
    """The 429s of the :class:`RateLimit` middleware, counted per caller: a caller's first
    refusal opens a tally, and ``window_s`` later every open tally is recorded as one failed op
    (``gateway.rate_limited``, source ``gateway``: the caller, how many of its requests were
    refused by method and path, over how long, the last refusal's message). So a flood costs
    a durable write per caller a window, not one per refused request. :meth:`flush` records
    the open tallies at once (the app's shutdown calls it). Used on the event loop only; the
    ops are committed from a worker thread into ``observer()`` (called then: the gateway opens
    its observer on the first op), tracked in ``pending`` (drained at shutdown)."""

    def __init__(
        self,
        observer: Callable[[], Observer],
        pending: set[asyncio.Future[Any]] | None = None,
        window_s: float | None = None,
    ) -> None:
        self.observer = observer
        self.pending: set[asyncio.Future[Any]] = pending if pending is not None else set()
        self.window_s = window_s
        self._tallies: dict[str, _Tally] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, caller: str, what: str, message: str) -> None:
        """Count one refused request ``what`` ("METHOD path") of ``caller``."""
        now = time.time()
        tally = self._tallies.get(caller)
        if tally is None:
            tally = self._tallies[caller] = _Tally(now)
        tally.count += 1
        tally.last = now
        tally.message = message
        if what in tally.requests or len(tally.requests) < _REFUSED_REQUESTS:
            tally.requests[what] = tally.requests.get(what, 0) + 1
        else:
            tally.other += 1
        if self._timer is None:
            window = REFUSALS_WINDOW_S if self.window_s is None else self.window_s
            # A fresh context: the op belongs to no request's trace.
            self._timer = asyncio.get_running_loop().call_later(
                window, self.flush, context=contextvars.Context()
            )

    def flush(self) -> None:
        """Record the open tallies now, one op per caller (committed from a worker thread)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        tallies, self._tallies = self._tallies, {}
        if not tallies:
            return
        task = asyncio.ensure_future(asyncio.to_thread(self._record, tallies))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    def _record(self, tallies: dict[str, _Tally]) -> None:
        try:
            observer = self.observer()
        except Exception:  # an observer that cannot open: the refusals were answered all the same
            log.warning("could not record %d callers' refused requests", len(tallies), exc_info=True)
            return
        for caller, tally in tallies.items():
            requests = dict(tally.requests)
            if tally.other:
                requests["(others)"] = tally.other
            seconds = tally.last - tally.first
            event(
                "gateway.rate_limited",
                source="gateway",
                observer=observer,
                ts=tally.first,
                success=False,
                duration_ms=seconds * 1000,
                error=f"429 x {tally.count} in {seconds:.1f} s: {tally.message}",
                input_summary=summarize({"caller": caller, "requests": requests}),
                output_summary=summarize(
                    {
                        "status": 429,
                        "refused": tally.count,
                        "first": datetime.fromtimestamp(tally.first, UTC).isoformat(),
                        "last": datetime.fromtimestamp(tally.last, UTC).isoformat(),
                    }
                ),
            )


class RateLimit:
    """ASGI middleware, the gateway's outermost: charges each request to its caller's buckets
    (:func:`edge_caller`, the key read here) before it is recorded, authenticated or routed; an
    empty bucket answers 429 with ``Retry-After`` at once, counted in ``refusals`` instead of
    recorded one op each. While another caller is about, a caller's requests take turns here."""

    def __init__(self, app: Any, limits: RateLimits, keys: KeyRing, refusals: Refusals | None = None) -> None:
        self.app = app
        self.limits = limits
        self.ring = keys
        self.refusals = refusals
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
        buckets = self.buckets(scope)
        caller = edge_caller(scope, self.ring) if buckets else None
        if caller is None:  # not counted, or refused by the key check next
            await self.app(scope, receive, send)
            return
        if self.limits.concurrent and "model" not in buckets and not _streams(scope):
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
        what = f"{scope.get('method', 'GET')} {scope.get('path', '')}"
        try:
            self.limits.charge(caller, buckets, what)
        except UserError as exc:
            if self.refusals is not None:
                self.refusals.add(caller, what, exc.message)
            if scope["type"] == "http" or "websocket.http.response" in scope.get("extensions", {}):
                # The 429 itself; a WebSocket handshake too where the server can answer one.
                await agentlake_error_response(exc)(scope, receive, send)
            else:  # a websocket: refuse the handshake, "try again later"
                await send({"type": "websocket.close", "code": 1013, "reason": exc.message[:120]})
            return
        await self.app(scope, receive, send)
