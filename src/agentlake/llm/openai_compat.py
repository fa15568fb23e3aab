"""The OpenAI-compatible provider (``openai:MODEL``): owns the HTTP client, base URL and key.

Base URL from the ``openai_base_url`` setting (``OPENAI_BASE_URL``; default
``https://api.openai.com/v1``, which needs ``OPENAI_API_KEY``); any OpenAI-compatible server
works. Schema-constrained output (``response_format`` json_schema) is sent only for models the
registry marks ``schema = true``; others get prompted JSON from ``generate_structured``.
Wire format in ``openai_wire.py``.
"""

from __future__ import annotations

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
    register_provider,
    timed_completion,
)
from agentlake.llm.transport import request_json

if TYPE_CHECKING:
    from agentlake.settings import Settings

OFFICIAL_URL = "https://api.openai.com/v1"
HINT = "start the server or set OPENAI_BASE_URL to it (e.g. http://127.0.0.1:8000/v1)"
LIST_TIMEOUT_S = 5.0


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
        self.model_info: ModelInfo = lookup_model("openai", model, settings)
        self._capabilities = Capabilities(
            supports_schema=self.model_info.supports_schema,
            supports_thinking=self.model_info.supports_thinking,
            context_window=self.model_info.context_window,
        )

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
        body = openai_wire.chat_request(
            self.model,
            messages,
            options,
            native_schema=self._capabilities.supports_schema,
            thinking_model=self._capabilities.supports_thinking,
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


register_provider("openai", OpenAIProvider)
