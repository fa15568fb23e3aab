"""One JSON request for the model providers, with httpx's exceptions converted.

Connection failures become ``ProviderConnectionError`` (with the hint naming the variable to
fix), read timeouts ``ProviderTimeoutError``, error statuses ``ProviderHTTPError`` (429/5xx
retryable, Retry-After read) unless the caller maps a status to a ``UserError`` first (401
-> "set OPENAI_API_KEY", 404 -> "pull the model"). No retries here: ``generate`` owns them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from agentlake.errors import AgentlakeError
from agentlake.http.client import error_text
from agentlake.llm.provider import (
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeoutError,
    retry_after_seconds,
)

StatusMapper = Callable[[int, str], AgentlakeError | None]
CONNECT_TIMEOUT_S = 10.0


def request_json(
    client: httpx.Client,
    method: str,
    path: str,
    *,
    what: str,
    hint: str,
    body: dict | None = None,
    timeout: float | None = None,
    status_error: StatusMapper | None = None,
) -> Any:
    """Send one request and return the decoded JSON body.

    ``what`` names the call in messages (``"ollama:qwen3:4b at http://..."``); ``hint`` says how
    to fix an unreachable server. ``status_error(status, message)`` may turn an error status
    into a specific error (returned, then raised); otherwise ``ProviderHTTPError``.
    """
    timeouts = None if timeout is None else httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S))
    try:
        response = client.request(
            method, path, json=body, timeout=timeouts if timeouts is not None else httpx.USE_CLIENT_DEFAULT
        )
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise ProviderConnectionError(
            f"cannot reach {what}: {exc or type(exc).__name__}", hint=hint
        ) from None
    except httpx.TimeoutException as exc:
        raise ProviderTimeoutError(
            f"{what} did not answer within {timeout:g} s", timeout_s=timeout or 0.0
        ) from exc
    except httpx.TransportError as exc:  # the connection broke mid-call: worth a retry, not "unreachable"
        raise ProviderConnectionError(f"connection to {what} failed: {type(exc).__name__}: {exc}") from None
    except httpx.InvalidURL as exc:
        raise ProviderConnectionError(f"invalid URL for {what}: {exc}", hint=hint) from None
    if response.status_code >= 400:
        message = error_text(response)
        if status_error is not None:
            mapped = status_error(response.status_code, message)
            if mapped is not None:
                raise mapped
        raise ProviderHTTPError(
            f"{what} answered HTTP {response.status_code}: {message}",
            status=response.status_code,
            retry_after=retry_after_seconds(response.headers.get("retry-after")),
            body=message,
        )
    try:
        return response.json()
    except ValueError:
        raise ProviderError(
            f"{what} answered with a body that is not JSON: {response.text[:200]!r}"
        ) from None
