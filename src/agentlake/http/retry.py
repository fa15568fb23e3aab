"""The one retry policy of agentlake's outgoing calls (model servers, embedding servers), on tenacity.

Owns :func:`retrying` and :func:`backoff_delay`: a failed call is tried again while its error is
worth it (the caller says which: connection errors, 429, 5xx) and fewer than ``max_retries``
retries were made; before retry ``n`` it waits the server's ``Retry-After`` when it sent one,
else a full jitter over an exponential envelope, ``uniform(0, min(cap, base * 2**(n-1)))`` (the
AWS architecture blog's recommendation: concurrent clients do not retry in lockstep). A server
asking for longer than ``MAX_RETRY_AFTER_S`` is not waited for: better to fail with its number
than to hang. Each wait is logged at INFO (``agentlake -v`` shows it). The sleep is the
caller's, so tests drive the policy on a clock that does not sleep.

It owns no circuit breaker and no error texts: the caller converts the last error where the
call entered (``llm.resilience``, ``embed.http``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import cast

import tenacity

from agentlake.errors import RunError

log = logging.getLogger(__name__)

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
MAX_RETRY_AFTER_S = 60.0


def backoff_delay(retry: int, error: BaseException, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``retry`` (1-based) after ``error``.

    ``error.retry_after`` (seconds, from a 429's or 503's Retry-After) wins when set; otherwise
    full jitter over ``min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**(retry-1))``. Raises ``RunError``
    when the server asks for longer than ``MAX_RETRY_AFTER_S``.
    """
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        if retry_after > MAX_RETRY_AFTER_S:
            raise RunError(
                f"{error}; the server asks to retry after {retry_after:g} s, longer than the "
                f"{MAX_RETRY_AFTER_S:g} s agentlake waits: try again later"
            ) from error
        return max(0.0, float(retry_after))
    envelope = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (retry - 1))
    return (rng or random).uniform(0.0, envelope)


def retrying(
    *,
    max_retries: int,
    retryable: Callable[[BaseException], bool],
    what: str,
    sleep: Callable[[float], None] = time.sleep,
    before_wait: Callable[[BaseException], None] | None = None,
) -> tenacity.Retrying:
    """The policy for one call: ``retrying(...)(fn)`` runs ``fn`` and returns its result, or
    raises its last error as is (never tenacity's ``RetryError``).

    ``retryable(error)`` says whether a failure is worth another attempt; ``what`` names the
    call in the log line; ``sleep(seconds)`` waits; ``before_wait(error)`` is told about each
    failure that will be retried, before the wait (accounting).
    """

    def wait(state: tenacity.RetryCallState) -> float:
        assert state.outcome is not None
        return backoff_delay(state.attempt_number, cast(BaseException, state.outcome.exception()))

    def before_sleep(state: tenacity.RetryCallState) -> None:
        assert state.outcome is not None and state.next_action is not None
        error = cast(BaseException, state.outcome.exception())  # retried: the attempt failed
        if before_wait is not None:
            before_wait(error)
        log.info(
            "%s failed (%s); retry %d of %d in %.2f s",
            what,
            error,
            state.attempt_number,
            max_retries,
            state.next_action.sleep,
        )

    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(max_retries + 1),
        retry=tenacity.retry_if_exception(retryable),
        wait=wait,
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
