"""The Ollama providers: owns the HTTP client, base URL, key and server queries of each host.

Two prefixes, two hosts, one process (the seed's split: a local executor, a cloud overseer):

* ``ollama:MODEL``: the ``ollama_host`` setting (``OLLAMA_HOST``, default
  ``http://127.0.0.1:11434``), with the ``ollama_api_key`` setting when that host needs a key.
* ``ollama-cloud:MODEL``: the ``ollama_cloud_host`` setting (default ``https://ollama.com``),
  with the ``ollama_cloud_api_key`` setting (``OLLAMA_CLOUD_KEY`` or ``OLLAMA_API_KEY``).

A key goes only to the host it is for: the cloud's key reaches ``ollama:`` only when
``OLLAMA_HOST`` is the cloud host itself (``OLLAMA_HOST=https://ollama.com``, as before the
split). Keys are sent as ``Authorization: Bearer``; a refused or missing key is a ``UserError``
naming the variables. The context window is what the server reports for the model
(``/api/show``, cached per process per host), else the registry's. Both speak the same wire
format, ``ollama_wire.py``; a third party registers a host of its own the same way.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import httpx

from agentlake.errors import AgentlakeError, UserError
from agentlake.http.client import normalise_url
from agentlake.llm import ollama_wire
from agentlake.llm.budget import estimate_budget
from agentlake.llm.models import ModelInfo, lookup_model
from agentlake.llm.provider import (
    Capabilities,
    Completion,
    GenerateOptions,
    Message,
    ProviderError,
    register_provider,
    timed_completion,
)
from agentlake.llm.transport import request_json

if TYPE_CHECKING:
    from agentlake.settings import Settings

HINT = "start Ollama (`ollama serve`) or set OLLAMA_HOST to where it runs"
KEY_HINT = "set AGENTLAKE_OLLAMA_API_KEY to a valid key for this host"
CLOUD_HINT = "check the network, or set AGENTLAKE_OLLAMA_CLOUD_HOST to where the hosted Ollama runs"
CLOUD_KEY_HINT = "set OLLAMA_CLOUD_KEY (or OLLAMA_API_KEY) to a valid key for this host"
# Ollama allocates the KV cache for num_ctx and reloads the model when num_ctx changes, so a
# stable size is sent (at least 8192, doubled only when a prompt needs more), not the full
# trained window (a 128k window would take gigabytes) nor a per-call size (a reload per call).
MIN_NUM_CTX = 8192
SHOW_TIMEOUT_S = 5.0

_shown: dict[tuple[str, str], dict[str, Any]] = {}
_shown_lock = threading.Lock()


class OllamaServer:
    """One Ollama server: ``show``, ``tags`` (installed models), ``ps`` (loaded models), ``chat``.

    ``prefix`` names its models in messages (``ollama``, ``ollama-cloud``); ``hint`` and
    ``key_hint`` say what fixes an unreachable host and a refused key."""

    def __init__(
        self,
        host: str,
        api_key: str | None = None,
        *,
        prefix: str = "ollama",
        hint: str = HINT,
        key_hint: str = KEY_HINT,
    ) -> None:
        self.host = normalise_url(host, 11434)
        self.prefix, self.hint, self.key_hint = prefix, hint, key_hint
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(
            base_url=self.host, headers=headers, timeout=httpx.Timeout(120.0, connect=10.0)
        )

    def describe(self, model: str | None = None) -> str:
        return f"Ollama at {self.host}" if model is None else f"{self.prefix}:{model} at {self.host}"

    def _status(self, model: str | None) -> Any:
        def mapper(status: int, message: str) -> AgentlakeError | None:
            if status in (401, 403):
                return UserError(
                    f"{self.describe(model)} refused the request (HTTP {status}: {message}): {self.key_hint}"
                )
            if status == 404 and model is not None:
                fix = (
                    f"run `ollama pull {model}`"
                    if self.prefix == "ollama"
                    else "pick a model the host offers"
                )
                return UserError(
                    f"Ollama at {self.host} has no model {model!r} ({message}): {fix} or fix the model name"
                )
            return None

        return mapper

    def show(self, model: str) -> dict[str, Any]:
        """``/api/show`` for ``model``, cached per process per server."""
        key = (self.host, model)
        with _shown_lock:
            if key in _shown:
                return _shown[key]
        body = request_json(
            self.client,
            "POST",
            "/api/show",
            what=self.describe(model),
            hint=self.hint,
            body={"model": model},
            timeout=SHOW_TIMEOUT_S,
            status_error=self._status(model),
        )
        with _shown_lock:
            _shown[key] = body
        return body

    def tags(self, timeout: float = SHOW_TIMEOUT_S) -> list[str]:
        """Names of the installed models."""
        body = request_json(
            self.client,
            "GET",
            "/api/tags",
            what=self.describe(),
            hint=self.hint,
            timeout=timeout,
            status_error=self._status(None),
        )
        return [str(m.get("name") or m.get("model")) for m in body.get("models", []) if isinstance(m, dict)]

    def running(self, timeout: float = SHOW_TIMEOUT_S) -> list[dict[str, Any]]:
        """The models loaded in memory right now, as ``/api/ps`` reports them (``name``,
        ``size``, ``size_vram``, ``expires_at``, ``context_length``, ...)."""
        body = request_json(
            self.client,
            "GET",
            "/api/ps",
            what=self.describe(),
            hint=self.hint,
            timeout=timeout,
            status_error=self._status(None),
        )
        return [m for m in body.get("models", []) if isinstance(m, dict)]

    def ps(self, timeout: float = SHOW_TIMEOUT_S) -> list[str]:
        """Names of the models loaded in memory right now."""
        return [str(m.get("name") or m.get("model")) for m in self.running(timeout)]

    def chat(self, model: str, body: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        return request_json(
            self.client,
            "POST",
            "/api/chat",
            what=self.describe(model),
            hint=self.hint,
            body=body,
            timeout=timeout,
            status_error=self._status(model),
        )

    def close(self) -> None:
        self.client.close()


def server_from_settings(settings: Settings) -> OllamaServer:
    """The ``ollama:`` host, with its key when one is set (the cloud's key when the host is the
    cloud host and has none of its own)."""
    key = settings.ollama_api_key.get_secret_value() if settings.ollama_api_key else None
    is_cloud = normalise_url(settings.ollama_host, 11434) == normalise_url(settings.ollama_cloud_host, 11434)
    if is_cloud:
        if key is None and settings.ollama_cloud_api_key is not None:
            key = settings.ollama_cloud_api_key.get_secret_value()
        return OllamaServer(settings.ollama_host, key, key_hint=CLOUD_KEY_HINT)
    return OllamaServer(settings.ollama_host, key)


def cloud_server_from_settings(settings: Settings) -> OllamaServer:
    """The ``ollama-cloud:`` host with its key; ``UserError`` naming the variables when no key is
    set (a hosted Ollama refuses every call without one)."""
    if settings.ollama_cloud_api_key is None:
        raise UserError(f"ollama-cloud: needs a key for {settings.ollama_cloud_host}: {CLOUD_KEY_HINT}")
    return OllamaServer(
        settings.ollama_cloud_host,
        settings.ollama_cloud_api_key.get_secret_value(),
        prefix="ollama-cloud",
        hint=CLOUD_HINT,
        key_hint=CLOUD_KEY_HINT,
    )


def forget_shown() -> None:
    """Drop cached ``/api/show`` answers (tests, or after pulling a new model version)."""
    with _shown_lock:
        _shown.clear()


class OllamaProvider:
    """``ollama:MODEL`` through Ollama's native ``/api/chat`` on the ``ollama_host``."""

    name = "ollama"
    example = "qwen3:4b"

    def __init__(self, model: str, settings: Settings) -> None:
        if not model:
            raise UserError(f"{self.name}: needs a model name, e.g. {self.name}:{self.example}")
        self.model = model
        self.server = self._server(settings)
        self.breaker_key = f"{self.name}:{model}@{self.server.host}"
        self._registry = lookup_model(self.name, model, settings)
        self._info: ModelInfo | None = None

    @staticmethod
    def _server(settings: Settings) -> OllamaServer:
        return server_from_settings(settings)

    @property
    def model_info(self) -> ModelInfo:
        """Registry facts, with the server's context length and thinking capability once known."""
        if self._info is not None:
            return self._info
        try:
            show = self.server.show(self.model)
        except (ProviderError, UserError):
            return self._registry  # unreachable or unknown model: the chat call will say so
        update: dict[str, Any] = {}
        context = ollama_wire.context_length(show)
        if context:
            update.update(context_window=context, source="server")
        words = ollama_wire.capabilities(show)
        if words:
            update["supports_thinking"] = "thinking" in words
        self._info = self._registry.model_copy(update=update)
        return self._info

    @property
    def capabilities(self) -> Capabilities:
        info = self.model_info
        return Capabilities(
            supports_schema=info.supports_schema,
            supports_thinking=info.supports_thinking,
            context_window=info.context_window,
        )

    def num_ctx(self, messages: list[Message], options: GenerateOptions) -> int:
        window = self.capabilities.context_window
        needed = estimate_budget(self, messages, options.max_tokens).total
        size = MIN_NUM_CTX
        while size < needed:
            size *= 2
        return min(window, size)

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
        body = ollama_wire.chat_request(
            self.model,
            messages,
            options,
            self.num_ctx(messages, options),
            thinking_model=self.capabilities.supports_thinking,
        )
        return timed_completion(
            lambda: self.server.chat(self.model, body, options.timeout),
            ollama_wire.chat_response,
            provider=self.name,
            model=self.model,
            what=self.server.describe(self.model),
        )

    def close(self) -> None:
        self.server.close()


class OllamaCloudProvider(OllamaProvider):
    """``ollama-cloud:MODEL``: the same wire on the ``ollama_cloud_host``, with its key."""

    name = "ollama-cloud"
    example = "gpt-oss:120b"

    @staticmethod
    def _server(settings: Settings) -> OllamaServer:
        return cloud_server_from_settings(settings)


register_provider("ollama", OllamaProvider)
register_provider("ollama-cloud", OllamaCloudProvider)
