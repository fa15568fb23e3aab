"""Resilience around one model request: circuit breakers, retries (the one policy of
``http.retry``), a clock.

A breaker per provider+model (per server for HTTP providers) opens after
``llm_breaker_failures`` consecutive failures that say the server is unhealthy (connection
errors, timeouts, 429, 5xx), rejects calls for ``llm_breaker_cooldown_s``, then lets one
half-open probe through: success closes it, failure re-opens it for another cooldown.
Retries cover connection errors, 429 (honouring Retry-After) and 5xx, never other 4xx; how long
to wait is ``http.retry``'s policy, shared with the embedders.

Time comes from a swappable :class:`Clock` so tests drive cooldowns and backoff without
sleeping (:class:`ManualClock`, :func:`use_clock`). This module does not own the providers
or what a failure means for a reply (``generate`` does).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, Protocol, TypeVar

from agentlake.errors import UserError
from agentlake.http.retry import retrying
from agentlake.llm.provider import CircuitOpenError, ProviderError

T = TypeVar("T")
BreakerState = Literal["closed", "open", "half-open"]


class Clock(Protocol):
    def monotonic(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Real time."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ManualClock:
    """A clock for tests: ``sleep`` advances time instantly and is remembered in ``sleeps``."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += max(0.0, seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


_clock: Clock = SystemClock()


@contextmanager
def use_clock(clock: Clock) -> Iterator[Clock]:
    """Use ``clock`` for breakers and backoff inside the block (tests)."""
    global _clock
    previous, _clock = _clock, clock
    try:
        yield clock
    finally:
        _clock = previous


class CircuitBreaker:
    """Closed -> open after ``failures`` consecutive failures -> half-open after ``cooldown_s``
    (one probe at a time) -> closed on the probe's success, open again on its failure."""

    def __init__(self, key: str, *, failures: int, cooldown_s: float) -> None:
        self.key = key
        self.failures = failures
        self.cooldown_s = cooldown_s
        self.consecutive_failures = 0
        self._state: BreakerState = "closed"
        self._opened_at = 0.0
        self._probe_in_flight = False
        self._lock = threading.Lock()

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._current_state()

    def _current_state(self) -> BreakerState:
        if self._state == "open" and _clock.monotonic() - self._opened_at >= self.cooldown_s:
            return "half-open"
        return self._state

    def before_call(self) -> None:
        """Raise ``CircuitOpenError`` (with the numbers) unless a call may go through now."""
        with self._lock:
            state = self._current_state()
            if state == "closed":
                return
            if state == "half-open" and not self._probe_in_flight:
                self._state = "half-open"
                self._probe_in_flight = True
                return
            retry_in = max(0.0, self.cooldown_s - (_clock.monotonic() - self._opened_at))
            what = "a half-open probe is in flight" if state == "half-open" else f"retry in {retry_in:.1f} s"
            raise CircuitOpenError(
                f"circuit breaker for {self.key} is open after {self.consecutive_failures} consecutive failures; "
                f"{what} (cooldown AGENTLAKE_LLM_BREAKER_COOLDOWN_S={self.cooldown_s:g} s)",
                breaker=self.key,
                retry_in_s=retry_in,
            )

    def on_success(self) -> None:
        with self._lock:
            self._state = "closed"
            self.consecutive_failures = 0
            self._probe_in_flight = False

    def on_failure(self) -> None:
        with self._lock:
            self.consecutive_failures += 1
            if self._state == "half-open" or self.consecutive_failures >= self.failures:
                self._state = "open"
                self._opened_at = _clock.monotonic()
            self._probe_in_flight = False

    def on_neutral(self) -> None:
        """A call that failed for a reason that says nothing about the server (a 400): release
        a half-open probe slot without changing the counts."""
        with self._lock:
            self._probe_in_flight = False


_breakers: dict[str, CircuitBreaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(key: str, *, failures: int, cooldown_s: float) -> CircuitBreaker:
    """The process-wide breaker for ``key`` (created on first use with these settings)."""
    with _breakers_lock:
        breaker = _breakers.get(key)
        if breaker is None:
            breaker = _breakers[key] = CircuitBreaker(key, failures=failures, cooldown_s=cooldown_s)
        else:
            breaker.failures, breaker.cooldown_s = failures, cooldown_s
        return breaker


def reset_breakers() -> None:
    """Forget every breaker (tests)."""
    with _breakers_lock:
        _breakers.clear()


def is_retryable(error: BaseException) -> bool:
    if isinstance(error, ProviderError):
        return error.retryable
    return isinstance(error, ConnectionError)


def counts_for_breaker(error: BaseException) -> bool:
    if isinstance(error, ProviderError):
        return error.counts_for_breaker
    # Bad configuration says nothing about the server's health; anything else a provider
    # raises (a plugin's bug, an in-process provider's ConnectionError) is a failing server.
    return not isinstance(error, UserError)


def call_with_retries(
    call: Callable[[], T],
    breaker: CircuitBreaker,
    *,
    max_retries: int,
    on_attempt_failed: Callable[[BaseException, bool], None] | None = None,
) -> T:
    """Run ``call`` through ``breaker``, retrying retryable failures up to ``max_retries`` times
    (``http.retry``'s policy, on this module's clock).

    ``on_attempt_failed(error, will_retry)`` is told about every failed attempt (for
    accounting). The last error is re-raised as is; an open breaker raises
    ``CircuitOpenError`` without calling.
    """
    failed: list[BaseException] = []  # the attempt that failed and has not been retried yet

    def attempt() -> T:
        breaker.before_call()
        try:
            result = call()
        except Exception as exc:
            if counts_for_breaker(exc):
                breaker.on_failure()
            else:
                breaker.on_neutral()
            failed[:] = [exc]
            raise
        except BaseException:
            breaker.on_neutral()
            raise
        breaker.on_success()
        return result

    def before_wait(error: BaseException) -> None:
        failed.clear()
        if on_attempt_failed is not None:
            on_attempt_failed(error, True)

    policy = retrying(
        max_retries=max_retries,
        retryable=is_retryable,
        what=f"model call ({breaker.key})",
        sleep=lambda seconds: _clock.sleep(seconds),
        before_wait=before_wait,
    )
    try:
        return policy(attempt)
    except BaseException:
        # Not retried: not worth it, retries spent, or a Retry-After too long to wait for.
        if failed and on_attempt_failed is not None:
            on_attempt_failed(failed[0], False)
        raise
