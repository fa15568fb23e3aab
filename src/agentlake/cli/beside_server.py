"""CLI commands beside a running server: when ``agentlake serve`` runs for the data directory it
holds the lake, the lesson store and the observer store open (DuckDB allows one writing process
per file), so commands that would open them go through its HTTP API instead.

Owns finding that server (``serving.running_servers``: the file it announced itself in, stale
ones ignored) and one HTTP request to it, with the key from ``AGENTLAKE_API_KEY`` and the
server's errors turned back into the CLI's (a 4xx -> ``UserError``, exit 2; a 5xx or no answer
-> ``RunError``, exit 1). It does not render: each command renders the response as it renders
its own result, so the output is the same with or without a server. Commands that cannot go
through the server fail on the held file with one line naming it (``serving.held_by``).
"""

from __future__ import annotations

import os
from typing import Any

from agentlake.errors import RunError, UserError
from agentlake.serving import Announcement, running_servers
from agentlake.settings import Settings, load_settings

# Seconds a request may take: a fill with a model may run for minutes; the rest answer fast.
SHORT_TIMEOUT_S = 60.0
LONG_TIMEOUT_S = 1800.0


def running_gateway(settings: Settings | None = None) -> Announcement | None:
    """The ``agentlake serve`` running for this data directory, if any (not this process)."""
    settings = settings or load_settings()
    return next(
        (s for s in running_servers(settings.data_dir) if s.kind == "gateway" and s.pid != os.getpid()),
        None,
    )


def key_headers(settings: Settings | None = None) -> dict[str, str]:
    """The API key header for the running server (``AGENTLAKE_API_KEY``), when one is set."""
    settings = settings or load_settings()
    return {"X-API-Key": settings.api_key.get_secret_value()} if settings.api_key else {}


def call(
    server: Announcement,
    method: str,
    path: str,
    *,
    settings: Settings | None = None,
    json: Any = None,
    params: Any = None,
    timeout_s: float = SHORT_TIMEOUT_S,
) -> Any:
    """One request to ``server``; the decoded JSON body of a 2xx answer.

    Raises ``UserError`` for a 4xx (the server's one-line message; a refused key says which
    variable to set) and ``RunError`` for a 5xx or when the server does not answer."""
    import httpx

    headers = key_headers(settings)
    try:
        response = httpx.request(
            method, server.url + path, json=json, params=params, headers=headers, timeout=timeout_s
        )
    except httpx.HTTPError as exc:
        raise RunError(
            f"{server.describe()} did not answer {method} {path} ({type(exc).__name__}: {exc}); "
            "is it still starting, or stuck? stop it to run this command on the files"
        ) from None
    if response.is_success:
        return response.json()
    message = _message(response)
    if response.status_code in (401, 403):
        raise UserError(
            f"{server.describe()} refused {method} {path}: {message} "
            "(set AGENTLAKE_API_KEY to one of its keys with enough scope)"
        )
    if response.status_code < 500:
        raise UserError(message)
    raise RunError(f"{server.describe()} failed on {method} {path}: {message}")


def _message(response: Any) -> str:
    """The problem's ``detail`` (RFC 9457, as the gateway answers errors)."""
    try:
        return str(response.json()["detail"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}: {response.text[:200]}"
