"""The OpenAI-compatible provider (``openai:MODEL``): owns the HTTP client, base URL and key.

Base URL from the ``openai_base_url`` setting (``OPENAI_BASE_URL``; default
``https://api.openai.com/v1``, which needs ``OPENAI_API_KEY``); any OpenAI-compatible server
works. What a model is (context window, whether it takes ``response_format``) comes from, in
order: the models file (``llm_models_file``), what the server says about it (vLLM's
``max_model_len``, llama.cpp's ``/props``, LM Studio's ``/api/v0/models``, OpenRouter's
``context_length`` and ``supported_parameters``; asked once per server and model), the
built-in registry, then ``[defaults.openai]``: json_schema on, 4,096 tokens. A model marked
``schema = false`` gets prompted JSON from ``generate_structured`` instead. Wire format in
``openai_wire.py``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import httpx

from agentlake.errors import AgentlakeError, UserError
from agentlake.http.client import normalise_url
from agentlake.llm import openai_wire
from agentlake.llm.models import ModelInfo, lookup_model
from agentlake.llm.provider import (
    Capabilities,
    Completion,
    GenerateOptions,
    Message,
    ProviderError,
    ProviderHTTPError,
    register_provider,
    timed_completion,
)
from agentlake.llm.transport import request_json

if TYPE_CHECKING:
    from agentlake.settings import Settings

OFFICIAL_URL = "https://api.openai.com/v1"
HINT = "start the server or set OPENAI_BASE_URL to it (e.g. http://127.0.0.1:8000/v1)"
LIST_TIMEOUT_S = 5.0
FACTS_TIMEOUT_S = 3.0

_facts_lock = threading.Lock()
_facts: dict[tuple[str, str], dict[str, Any]] = {}


class OpenAIServer:
    """One OpenAI-compatible server: ``models`` and ``chat``."""

    def __init__(self, base_url: str, api_key: str | None) -> None:
        self.base_url = normalise_url(base_url)
        self.official = self.base_url.startswith(OFFICIAL_URL)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(
            base_url=self.base_url + "/", headers=headers, timeout=httpx.Timeout(120.0, connect=10.0)
        )

    def describe(self, model: str | None = None) -> str:
        where = f"the OpenAI-compatible server at {self.base_url}"
        return where if model is None else f"openai:{model} at {self.base_url}"

    def _status(self, model: str | None) -> Any:
        def mapper(status: int, message: str) -> AgentlakeError | None:
            if status in (401, 403):
                return UserError(
                    f"{self.describe(model)} refused the key (HTTP {status}: {message}): set OPENAI_API_KEY to a valid key"
                )
            if status == 404 and model is not None:
                return UserError(
                    f"{self.describe(model)} answered 404 ({message}): check the model name and OPENAI_BASE_URL "
                    "(it should end in /v1)"
                )
            return None

        return mapper

    def models(self, timeout: float = LIST_TIMEOUT_S) -> list[str]:
        """Model ids the server offers (``GET /models``)."""
        body = request_json(
            self.client,
            "GET",
            "models",
            what=self.describe(),
            hint=HINT,
            timeout=timeout,
            status_error=self._status(None),
        )
        data = body.get("data", []) if isinstance(body, dict) else []
        return [str(item.get("id")) for item in data if isinstance(item, dict) and item.get("id")]

    def model_facts(self, model: str) -> dict[str, Any]:
        """What the server says about ``model`` (``openai_wire.model_facts``), cached per process
        per server: ``{}`` when it says nothing. Raises ``ProviderError`` when it cannot be
        reached (not cached: it may come up)."""
        key = (self.base_url, model)
        with _facts_lock:
            if key in _facts:
                return _facts[key]
        facts = self._ask_facts(model)
        with _facts_lock:
            _facts[key] = facts
        return facts

    def _ask_facts(self, model: str) -> dict[str, Any]:
        try:
            listed = self._get("models")
        except ProviderHTTPError:
            return {}  # no /models: it says nothing
        data = listed.get("data") if isinstance(listed, dict) else None
        cards = [item for item in data or [] if isinstance(item, dict) and item.get("id") == model]
        card = cards[0] if cards else {}
        root = self.base_url.removesuffix("/v1")
        extra: Any = None
        if openai_wire.is_llamacpp(card):
            extra = self._get_quietly(f"{root}/props")
        elif not openai_wire.model_facts(card).get("context_window"):
            extra = self._get_quietly(f"{root}/api/v0/models/{model}")  # LM Studio's own API
        return openai_wire.model_facts(card, extra if isinstance(extra, dict) else None)

    def _get(self, path: str) -> Any:
        return request_json(
            self.client,
            "GET",
            path,
            what=self.describe(),
            hint=HINT,
            timeout=FACTS_TIMEOUT_S,
            status_error=self._status(None),
        )

    def _get_quietly(self, url: str) -> Any:
        """A metadata route only some servers have: ``None`` when this one answers an error."""
        try:
            return self._get(url)
        except ProviderHTTPError:
            return None

    def chat(self, model: str, body: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        return request_json(
            self.client,
            "POST",
            "chat/completions",
            what=self.describe(model),
            hint=HINT,
            body=body,
            timeout=timeout,
            status_error=self._status(model),
        )

    def close(self) -> None:
        self.client.close()


def server_from_settings(settings: Settings) -> OpenAIServer:
    """The configured server; ``UserError`` when it is OpenAI's own and no key is set."""
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    base = settings.openai_base_url or OFFICIAL_URL
    if base.rstrip("/").startswith(OFFICIAL_URL) and not key:
        raise UserError(
            "openai: models need an API key: set OPENAI_API_KEY, or set OPENAI_BASE_URL to an OpenAI-compatible "
            "server that needs none (e.g. http://127.0.0.1:8000/v1)"
        )
    return OpenAIServer(base, key)


class OpenAIProvider:
    """``openai:MODEL`` through ``/v1/chat/completions``."""

    name = "openai"

    def __init__(self, model: str, settings: Settings) -> None:
        if not model:
            raise UserError("openai: needs a model name, e.g. openai:gpt-4o-mini")
        self.model = model
        self.server = server_from_settings(settings)
        self.breaker_key = f"openai:{model}@{self.server.base_url}"
        self._registry = lookup_model("openai", model, settings)
        self._info: ModelInfo | None = None

    @property
    def model_info(self) -> ModelInfo:
        """The models file's entry when it has one; else what the server says over the
        registry's facts (``source="server"`` when it gave the window)."""
        if self._info is not None:
            return self._info
        if self._registry.source == "config" or self.server.official:
            self._info = self._registry  # the user's word; OpenAI's /models says nothing
            return self._info
        try:
            facts = self.server.model_facts(self.model)
        except (ProviderError, UserError):
            return self._registry  # unreachable: the chat call will say so
        update: dict[str, Any] = {}
        if facts.get("context_window"):
            update.update(context_window=facts["context_window"], source="server")
        if "schema" in facts:
            update["supports_schema"] = facts["schema"]
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

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
        capabilities = self.capabilities
        body = openai_wire.chat_request(
            self.model,
            messages,
            options,
            native_schema=capabilities.supports_schema,
            thinking_model=capabilities.supports_thinking,
            official=self.server.official,
        )
        return timed_completion(
            lambda: self.server.chat(self.model, body, options.timeout),
            openai_wire.chat_response,
            provider=self.name,
            model=self.model,
            what=self.server.describe(self.model),
        )

    def close(self) -> None:
        self.server.close()


def forget_model_facts() -> None:
    """Drop cached answers of what servers say about their models (tests, or after a restart
    of the server with another context length)."""
    with _facts_lock:
        _facts.clear()


register_provider("openai", OpenAIProvider)
