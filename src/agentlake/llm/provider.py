"""THE extension point of the LLM layer: the ``Provider`` protocol, its types and its registry.

A provider turns a list of :class:`Message` plus :class:`GenerateOptions` into one
:class:`Completion`, and nothing more: no retries, no recovery, no accounting (those wrap it, in
``generate``). It declares what it can do in :class:`Capabilities`. Built-in providers
(``ollama:``, ``ollama-cloud:``, ``openai:``, ``scripted:``, ``function:``, ``llamacpp:``, ``local:``) register through
:func:`register_provider`, the same door a third party uses.

This module also owns the errors a provider raises, so the resilience layer can tell a
retryable failure (connection, 429, 5xx) from one that is not (other 4xx, bad config), and
:func:`timed_completion`, the send-time-read step every HTTP provider's ``complete`` shares.
It does not own any HTTP client or wire format (``ollama.py``/``openai_compat.py`` and their
``*_wire.py`` adapters do).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agentlake.errors import RunError, UnavailableError, UserError
from agentlake.registry import Registry

if TYPE_CHECKING:
    from agentlake.settings import Settings


# --- the types every provider speaks -------------------------------------------------------


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str


class GenerateOptions(BaseModel):
    """Options of one model call. ``schema`` (a JSON schema) asks for constrained JSON output.

    ``think``: ``True``/``False`` turns a thinking model's reasoning on/off; ``None`` leaves the
    server's default. ``timeout`` is seconds for the whole call (``None``: the
    ``llm_timeout_s`` setting, filled in by ``generate``).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: dict | None = Field(None, alias="schema")
    think: bool | None = None
    max_tokens: int = Field(1024, gt=0)
    temperature: float | None = Field(None, ge=0)
    timeout: float | None = Field(None, gt=0)
    stop: list[str] | None = None


class Usage(BaseModel):
    """Tokens of one call. ``output_tokens`` counts every generated token, thinking included;
    ``thinking_tokens`` is the part of it spent on hidden reasoning (as in OpenAI's usage and
    the OpenTelemetry GenAI conventions). ``cached_input_tokens``: the part of
    ``input_tokens`` read from a prompt cache instead of being evaluated again."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)
    thinking_tokens: int = Field(0, ge=0)
    cached_input_tokens: int = Field(0, ge=0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            thinking_tokens=self.thinking_tokens + other.thinking_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
        )


class Completion(BaseModel):
    """What one call returned. ``finish_reason`` is normalised: ``stop``, ``length`` or the
    provider's own word for anything else (``content_filter``, ``tool_calls``...).
    ``prompt_ms``/``generation_ms``: where an in-process provider spent ``latency_ms``
    (evaluating the prompt, generating the reply); ``None`` when the provider cannot tell."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    thinking: str = ""
    finish_reason: str = "stop"
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float = Field(0.0, ge=0)
    prompt_ms: float | None = Field(None, ge=0)
    generation_ms: float | None = Field(None, ge=0)
    provider: str = ""
    model: str = ""


class Capabilities(BaseModel):
    """What a provider+model can do; ``context_window`` is in tokens (input + output)."""

    model_config = ConfigDict(extra="forbid")

    supports_schema: bool = False
    supports_thinking: bool = False
    context_window: int = Field(4096, gt=0)


@runtime_checkable
class Provider(Protocol):
    """One model behind one server (or in-process). ``name`` is the provider prefix
    (``ollama``), ``model`` the model name after it (``qwen3:4b``).

    ``complete`` makes exactly one call. It raises :class:`ProviderError` subclasses for
    failures the caller may retry or count, :class:`~agentlake.errors.UserError` for bad
    configuration (missing key, unknown model), and nothing from third-party libraries.
    """

    name: str
    model: str

    @property
    def capabilities(self) -> Capabilities: ...

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion: ...


# --- what a provider raises ------------------------------------------------------------------


class ProviderError(RunError):
    """A failed model call. ``retryable``: worth retrying with backoff; ``counts_for_breaker``:
    evidence the server is unhealthy (a 400 about our request is not)."""

    retryable = False
    counts_for_breaker = True


class ProviderHTTPError(ProviderError):
    """The server answered with an HTTP error status. 429 and 5xx are retryable; a 429 or 503
    may carry ``retry_after`` seconds (the Retry-After header)."""

    def __init__(
        self, message: str, *, status: int, retry_after: float | None = None, body: str = ""
    ) -> None:
        super().__init__(message, http_status=502 if status >= 500 else status)
        self.status = status
        self.retry_after = retry_after
        self.body = body
        self.retryable = status == 429 or status >= 500
        self.counts_for_breaker = self.retryable


class ProviderConnectionError(ProviderError):
    """The server could not be reached. ``hint`` names the variable or command that fixes it
    (``generate`` raises :class:`ModelServerUnreachable` with it once retries are spent)."""

    retryable = True

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message, http_status=503)
        self.hint = hint


class ProviderTimeoutError(ProviderError):
    """The call took longer than its timeout. Not retried: a model that was too slow once is
    likely too slow again, and retrying multiplies the wait."""

    def __init__(self, message: str, *, timeout_s: float) -> None:
        super().__init__(message, http_status=504)
        self.timeout_s = timeout_s


class ModelServerUnreachable(UserError):
    """A model server is down or misconfigured; the message names the variable to fix."""

    http_status = 503


class CircuitOpenError(UnavailableError):
    """The provider+model circuit breaker is open: calls fail fast until the cooldown ends."""


# --- one call, timed and read: shared by the HTTP providers ----------------------------------

ReplyParser = Callable[[dict[str, Any]], tuple[str, str, str, Usage]]
"""A wire adapter's reader: reply body -> ``(text, thinking, finish_reason, usage)``; raises
``ValueError`` when the body is not a reply of its format."""


def timed_completion(
    send: Callable[[], dict[str, Any]], parse: ReplyParser, *, provider: str, model: str, what: str
) -> Completion:
    """Make one call with ``send()`` (the provider's client), read its reply with ``parse`` (the
    wire adapter's) and return the :class:`Completion`, timed from send to reply.

    ``what`` names the call in errors (``"ollama:qwen3:4b at http://..."``). Whatever ``send``
    raises passes through; a reply ``parse`` cannot read becomes a non-retryable
    :class:`ProviderError` (a server that answers the wrong shape will answer it again).
    """
    started = time.perf_counter()
    reply = send()
    latency_ms = (time.perf_counter() - started) * 1000
    try:
        text, thinking, finish, usage = parse(reply)
    except ValueError as exc:
        raise ProviderError(f"{what} sent an unexpected reply: {exc}") from None
    return Completion(
        text=text,
        thinking=thinking,
        finish_reason=finish,
        usage=usage,
        latency_ms=latency_ms,
        provider=provider,
        model=model,
    )


# --- the registry of provider prefixes -------------------------------------------------------

ProviderFactory = Callable[[str, "Settings"], Provider]

# The built-in prefixes and the modules that register them (loaded on first use).
_BUILTINS = {
    "ollama": "agentlake.llm.ollama",
    "ollama-cloud": "agentlake.llm.ollama",
    "openai": "agentlake.llm.openai_compat",
    "scripted": "agentlake.llm.fakes",
    "function": "agentlake.llm.fakes",
    "llamacpp": "agentlake.llm.gguf_completion",
    "local": "agentlake.llm.local.provider",
}


def _changed() -> None:
    with _lock:
        _cache.clear()


providers: Registry[ProviderFactory] = Registry(
    "provider prefix", "agentlake.providers", builtins=_BUILTINS, on_change=_changed
)
_lock = threading.Lock()


def register_provider(prefix: str, factory: ProviderFactory, *, replace: bool = False) -> None:
    """Make ``"PREFIX:REST"`` model strings resolve through ``factory(REST, settings)``.

    The one door for built-ins and plugins (``agentlake.registry.Registry``; third parties may
    also declare an ``agentlake.providers`` entry point). Raises ``UserError`` for an empty
    prefix, one containing ``:``, or one already registered unless ``replace`` (a plugin that
    overrides a built-in says so).
    """
    providers.register(prefix, factory, replace=replace)


def split_model(model: str) -> tuple[str, str]:
    """``"ollama:qwen3:4b"`` -> ``("ollama", "qwen3:4b")``; raises ``UserError`` naming the
    known prefixes when there is no prefix or an unknown one."""
    prefix, sep, rest = model.partition(":")
    if not sep or not prefix:
        known = ", ".join(f"{p}:" for p in providers.names())
        raise UserError(
            f"model {model!r} has no provider prefix: write PROVIDER:MODEL with PROVIDER one of {known}"
        )
    if prefix not in providers:
        known = ", ".join(f"{p}:" for p in providers.names())
        raise UserError(
            f"unknown provider prefix {prefix!r} in {model!r}: use one of {known} (or register_provider)"
        )
    return prefix, rest


# Providers own HTTP clients; building one per call would cost more than the call's overhead
# budget, so resolved providers are cached per (model string, settings fingerprint).
_cache: dict[tuple[str, str], Provider] = {}
_settings_cache: tuple[tuple, Settings] | None = None


_ENV_NAMES: tuple[str, ...] | None = None


def _env_names() -> tuple[str, ...]:
    global _ENV_NAMES
    if _ENV_NAMES is None:
        # Lazy (start-up time): settings (pydantic-settings) load on first use.
        from agentlake.settings import CONFIG_ENV, Settings

        ecosystem = ("OLLAMA_HOST", "OLLAMA_API_KEY", "OLLAMA_CLOUD_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY")
        names = [f"AGENTLAKE_{field.upper()}" for field in Settings.model_fields]
        _ENV_NAMES = (*names, *ecosystem, *(name.lower() for name in ecosystem), CONFIG_ENV)
    return _ENV_NAMES


def _settings_fingerprint() -> tuple:
    # Only the variables settings read, looked up one by one: iterating all of os.environ
    # (decoding every entry) cost ~0.2 ms per call, a third of the overhead budget.
    from agentlake.settings import CONFIG_ENV, DEFAULT_CONFIG_FILE

    environ = os.environ
    values = tuple(environ.get(name) for name in _env_names())
    config = environ.get(CONFIG_ENV, DEFAULT_CONFIG_FILE)
    try:
        mtime = os.stat(config).st_mtime_ns
    except OSError:
        mtime = None
    return values, os.getcwd(), mtime


def current_settings() -> Settings:
    """The process's settings, re-read only when the environment or config file changed.

    ``load_settings`` costs ~0.6 ms; model calls without explicit settings would pay it every
    time otherwise.
    """
    global _settings_cache
    # Lazy (start-up time): settings (pydantic-settings) load on first use.
    from agentlake.settings import load_settings

    fingerprint = _settings_fingerprint()
    cached = _settings_cache
    if cached is not None and cached[0] == fingerprint:
        return cached[1]
    settings = load_settings()
    _settings_cache = (fingerprint, settings)
    return settings


def get_provider(model: str, settings: Settings | None = None) -> Provider:
    """Resolve a model string (``"ollama:qwen3:4b"``, ``"openai:gpt-4o-mini"``,
    ``"scripted:NAME"``, ``"function:NAME"``, ``"llamacpp:PATH"``, ``"local:NAME"``) to a provider.

    Makes no network call. Raises ``UserError`` for an unknown prefix or bad configuration
    (the message names the variable or option to set).
    """
    if not isinstance(model, str):
        raise UserError(f"model must be a string like 'ollama:qwen3:4b', got {type(model).__name__}")
    prefix, rest = split_model(model)
    if settings is None:
        settings = current_settings()
    key = (
        model,
        settings.model_dump_json(
            include={
                "ollama_host",
                "ollama_cloud_host",
                "openai_base_url",
                "openai_api_key",
                "llm_models_file",
                "model_cache_dir",
                "local_engine",
                "local_context_window",
                "local_threads",
                "local_torch_dtype",
                "local_draft_tokens",
            }
        ),
    )
    for secret in (settings.openai_api_key, settings.ollama_api_key, settings.ollama_cloud_api_key):
        if secret is not None:  # SecretStr dumps masked; the key itself must be part of the cache key
            key = (model, key[1] + "\0" + secret.get_secret_value())
    with _lock:
        cached = _cache.get(key)
    if cached is not None and getattr(cached, "cacheable", True):
        return cached
    provider = providers.get(prefix)(rest, settings)
    if getattr(provider, "cacheable", True):
        with _lock:
            _cache[key] = provider
    return provider


def clear_provider_cache() -> None:
    """Forget resolved providers (and their clients); tests and long-lived servers use it after
    changing configuration in place."""
    global _settings_cache
    with _lock:
        resolved = list(_cache.values())
        _cache.clear()
        _settings_cache = None
    for provider in resolved:
        close = getattr(provider, "close", None)
        if callable(close):
            close()


def coerce_messages(messages: object) -> list[Message]:
    """Accept a prompt string, ``Message`` objects, ``{"role", "content"}`` dicts or
    ``(role, content)`` pairs; raise ``UserError`` for anything else or an empty list."""
    if isinstance(messages, str):
        return [Message(role="user", content=messages)]
    if isinstance(messages, Message):
        return [messages]
    if not isinstance(messages, (list, tuple)) or not messages:
        raise UserError("messages must be a prompt string or a non-empty list of {role, content} messages")
    result: list[Message] = []
    for item in messages:
        try:
            if isinstance(item, Message):
                result.append(item)
            elif isinstance(item, dict):
                result.append(Message(**item))
            elif isinstance(item, (tuple, list)) and len(item) == 2:
                result.append(Message(role=item[0], content=item[1]))
            else:
                raise TypeError(type(item).__name__)
        except (ValueError, TypeError) as exc:
            raise UserError(
                f"bad message {item!r}: a message is {{role: system|user|assistant|tool, content: str}} ({exc})"
            ) from None
    return result


def make_options(options: GenerateOptions | None = None, **overrides: object) -> GenerateOptions:
    """Build ``GenerateOptions`` from keyword arguments (``schema=``, ``max_tokens=``...);
    raise ``UserError`` naming a bad or unknown option."""
    from pydantic import ValidationError

    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        if options is None:
            return GenerateOptions(**given)
        if not given:
            return options
        return GenerateOptions(**{**options.model_dump(by_alias=True), **given})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'options'}: {err['msg']}" for err in exc.errors()
        )
        raise UserError(f"invalid model call options: {problems}") from None


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); ``None`` if absent or
    unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from datetime import UTC, datetime
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def split_think_tags(content: str) -> tuple[str, str]:
    """``(visible, thinking)`` from a reply that inlines its reasoning as ``<think>...</think>``
    (llama.cpp, some vLLM templates). An unclosed ``<think>`` is all thinking: the budget ran out
    while reasoning."""
    stripped = content.lstrip()
    if not stripped.lower().startswith("<think>"):
        return content, ""
    body = stripped[len("<think>") :]
    end = body.lower().find("</think>")
    if end == -1:
        return "", body.strip()
    return body[end + len("</think>") :].lstrip(), body[:end].strip()


def estimate_thinking_tokens(output_tokens: int, text: str, thinking: str) -> int:
    """Split a server's single output count by character share when it reports no thinking
    count of its own (Ollama)."""
    if not thinking or output_tokens <= 0:
        return 0
    share = len(thinking) / max(1, len(thinking) + len(text))
    return min(output_tokens, round(output_tokens * share))
