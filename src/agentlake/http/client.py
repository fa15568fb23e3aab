"""The client side of the HTTP edge: base URLs as users write them, error text as servers send it.

Owns :func:`normalise_url` (``host:port`` or ``http://host`` -> ``http://host[:port]``, the
forms OLLAMA_HOST takes in the wild) and :func:`error_text` (the message of an error answer:
``{"error": {"message"}}`` as agentlake, Ollama and OpenAI send it, an RFC 9457 problem's
``detail``, else the text), shared by
the model providers (``llm``), the HTTP embedders (``embed``) and the observer client
(``observe``). It owns no client and no retries.
"""

from __future__ import annotations

import httpx

MAX_ERROR_CHARS = 300


def error_text(response: httpx.Response, limit: int = MAX_ERROR_CHARS) -> str:
    """The server's error message of ``response``, at most ``limit`` characters."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:limit]
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            error = error.get("message") or error
        if error:
            return str(error)[:limit]
        if isinstance(body.get("detail"), str) and body["detail"]:
            return body["detail"][:limit]
    return response.text[:limit]


def normalise_url(url: str, default_port: int | None = None) -> str:
    """``host:port`` or ``http://host`` -> ``http://host[:port]`` without a trailing slash;
    ``0.0.0.0`` (a bind address) becomes ``127.0.0.1``."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    if default_port is not None:
        scheme, _, rest = url.partition("://")
        hostport, slash, path = rest.partition("/")
        if ":" not in hostport.split("]")[-1]:
            hostport = f"{hostport}:{default_port}"
        url = f"{scheme}://{hostport}{slash}{path}"
    return url.replace("://0.0.0.0", "://127.0.0.1")
