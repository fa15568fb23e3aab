"""Providers for tests and demos, shipped in the package: no key, no network, no model.

``ScriptedProvider``: enqueue replies, then inspect what it was asked::

    from agentlake.llm import ScriptedProvider, generate, register_scripted

    executor = ScriptedProvider("executor")
    executor.enqueue('{"action": "search"}')
    executor.enqueue("", thinking="...", finish_reason="length")   # a thinking model out of budget
    executor.enqueue(error=503)                                     # a server error (retried)
    register_scripted("executor", executor)                         # "scripted:executor" now resolves
    generate("scripted:executor", "hi").text
    executor.history[-1]                                            # (messages, options) of the last call

``FunctionProvider``: a Python function decides each reply, from the messages and options::

    reviewer = FunctionProvider(lambda messages, options: "approve" if "ok" in messages[-1].content else "reject")

Both can be served over real HTTP as a fake Ollama or OpenAI-compatible server
(``agentlake.llm.fakeserver``). This module does not own those servers.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from agentlake.errors import RunError, UserError
from agentlake.llm.budget import reset_calibration
from agentlake.llm.models import ModelInfo, clear_registry_cache
from agentlake.llm.provider import (
    Capabilities,
    Completion,
    GenerateOptions,
    Message,
    ProviderHTTPError,
    ProviderTimeoutError,
    Usage,
    clear_provider_cache,
    register_provider,
)
from agentlake.llm.resilience import reset_breakers

_HTTP_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def _estimate(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


@dataclass
class ScriptedReply:
    """One queued reply. ``error``: an exception to raise, or an HTTP status (the provider
    raises ``ProviderHTTPError``; a fake server answers with that status)."""

    text: str = ""
    thinking: str = ""
    finish_reason: str = "stop"
    usage: Usage | None = None
    delay_s: float = 0.0
    error: Exception | int | None = None
    retry_after: float | None = None


class _Recording:
    """History shared by both fakes; thread-safe because fake servers call from many threads."""

    provider_name = "fake"
    name: str
    model: str
    cacheable = False  # re-registering a name must take effect at once

    def __init__(
        self, model: str, context_window: int, supports_schema: bool, supports_thinking: bool
    ) -> None:
        self.name = self.provider_name
        self.model = model
        self._capabilities = Capabilities(
            supports_schema=supports_schema,
            supports_thinking=supports_thinking,
            context_window=context_window,
        )
        # Fakes are free: a known price of 0 keeps cost_usd a number in accounting tests.
        self.model_info = ModelInfo(
            provider=self.provider_name,
            model=model,
            context_window=context_window,
            supports_thinking=supports_thinking,
            supports_schema=supports_schema,
            input_usd_per_mtok=0.0,
            output_usd_per_mtok=0.0,
            known=True,
            source="registry",
        )
        self.history: list[tuple[list[Message], GenerateOptions]] = []
        self.raw_requests: list[dict] = []  # request bodies, appended by the fake servers
        self.raw_authorizations: list[str | None] = []  # and their Authorization headers
        self._lock = threading.Lock()
        self.breaker_key = f"{self.provider_name}:{model}#{id(self):x}"

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    @property
    def calls(self) -> int:
        """How many calls were made."""
        return len(self.history)

    @property
    def last_messages(self) -> list[Message]:
        """Messages of the last call (``RunError`` if there was none)."""
        if not self.history:
            raise RunError(f"{self.name}:{self.model} has not been called")
        return self.history[-1][0]

    def _remember(self, messages: list[Message], options: GenerateOptions) -> int:
        with self._lock:
            self.history.append((list(messages), options))
            return len(self.history)

    def _finish(self, completion: Completion, messages: list[Message], started: float) -> Completion:
        usage = completion.usage
        if usage == Usage():  # fill plausible numbers so accounting tests see real sums
            thinking = _estimate(completion.thinking)
            usage = Usage(
                input_tokens=sum(_estimate(m.content) + 4 for m in messages),
                output_tokens=_estimate(completion.text) + thinking,
                thinking_tokens=thinking,
            )
        return completion.model_copy(
            update={
                "usage": usage,
                "latency_ms": completion.latency_ms or (time.perf_counter() - started) * 1000,
                "provider": completion.provider or self.name,
                "model": completion.model or self.model,
            }
        )


class ScriptedProvider(_Recording):
    """Replies from a queue, in order. Calling it with an empty queue raises ``RunError``
    saying which call had no reply, so a test that under-scripts fails loudly."""

    provider_name = "scripted"

    def __init__(
        self,
        name: str = "scripted",
        *,
        context_window: int = 8192,
        supports_schema: bool = True,
        supports_thinking: bool = True,
    ) -> None:
        super().__init__(name, context_window, supports_schema, supports_thinking)
        self._queue: deque[ScriptedReply] = deque()

    def enqueue(
        self,
        text: str = "",
        *,
        thinking: str = "",
        finish_reason: str = "stop",
        usage: Usage | None = None,
        delay_s: float = 0.0,
        error: Exception | int | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Queue one reply. ``delay_s`` makes it slow (a call whose timeout is shorter raises
        ``ProviderTimeoutError``; a fake server really waits). ``error``: raise this exception,
        or fail with this HTTP status (``retry_after`` seconds for a 429/503's Retry-After)."""
        with self._lock:
            self._queue.append(
                ScriptedReply(text, thinking, finish_reason, usage, delay_s, error, retry_after)
            )

    def enqueue_many(self, *texts: str) -> None:
        """Queue several plain replies."""
        for text in texts:
            self.enqueue(text)

    @property
    def pending(self) -> int:
        """Replies still queued."""
        return len(self._queue)

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
        started = time.perf_counter()
        number = self._remember(messages, options)
        with self._lock:
            if not self._queue:
                raise RunError(
                    f"scripted provider {self.model!r} has no reply queued for call #{number}; enqueue one "
                    f"(last message: {messages[-1].content[:80]!r})"
                )
            reply = self._queue.popleft()
        if reply.delay_s:
            if options.timeout is not None and reply.delay_s > options.timeout:
                time.sleep(options.timeout)
                raise ProviderTimeoutError(
                    f"{self.name}:{self.model} did not answer within {options.timeout:g} s",
                    timeout_s=options.timeout,
                )
            time.sleep(reply.delay_s)
        if isinstance(reply.error, int):
            raise ProviderHTTPError(
                f"{self.name}:{self.model} answered HTTP {reply.error} {_HTTP_REASONS.get(reply.error, '')}".rstrip(),
                status=reply.error,
                retry_after=reply.retry_after,
            )
        if reply.error is not None:
            raise reply.error
        completion = Completion(
            text=reply.text,
            thinking=reply.thinking,
            finish_reason=reply.finish_reason,
            usage=reply.usage or Usage(),
        )
        return self._finish(completion, messages, started)


ReplyFunction = Callable[[list[Message], GenerateOptions], "str | Completion"]


class FunctionProvider(_Recording):
    """``fn(messages, options)`` decides each reply: return the text, or a full ``Completion``
    (thinking, finish reason, usage); raise ``ProviderHTTPError(status=...)`` to fail like a
    server. Calls are recorded in ``history`` like ``ScriptedProvider``'s."""

    provider_name = "function"

    def __init__(
        self,
        fn: ReplyFunction,
        name: str = "function",
        *,
        context_window: int = 8192,
        supports_schema: bool = True,
        supports_thinking: bool = True,
    ) -> None:
        super().__init__(name, context_window, supports_schema, supports_thinking)
        self.fn = fn

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
        started = time.perf_counter()
        self._remember(messages, options)
        reply = self.fn(list(messages), options)
        if isinstance(reply, str):
            reply = Completion(text=reply)
        elif not isinstance(reply, Completion):
            raise RunError(
                f"function provider {self.model!r} returned {type(reply).__name__}; return a str or a Completion"
            )
        return self._finish(reply, messages, started)


_scripted: dict[str, ScriptedProvider | FunctionProvider | object] = {}
_scripted_lock = threading.Lock()


def register_scripted(name: str, provider: object) -> None:
    """Make ``"scripted:NAME"`` and ``"function:NAME"`` resolve to ``provider`` in this process
    (any object with the ``Provider`` shape); registering a name again replaces it."""
    if not name:
        raise UserError("register_scripted needs a non-empty name")
    with _scripted_lock:
        _scripted[name] = provider


def unregister_scripted(name: str) -> None:
    """Forget a name registered with :func:`register_scripted` (no error if unknown)."""
    with _scripted_lock:
        _scripted.pop(name, None)


def _resolve(prefix: str) -> Callable[[str, object], object]:
    def factory(name: str, settings: object) -> object:
        with _scripted_lock:
            provider = _scripted.get(name)
            known = ", ".join(sorted(_scripted)) or "none"
        if provider is None:
            raise UserError(
                f"no provider registered as {prefix}:{name} (registered: {known}); "
                f"call agentlake.llm.register_scripted({name!r}, provider) first"
            )
        return provider

    return factory


register_provider("scripted", _resolve("scripted"))  # type: ignore[arg-type]
register_provider("function", _resolve("function"))  # type: ignore[arg-type]


def reset_llm_state() -> None:
    """Forget process-wide LLM state: circuit breakers, budget calibration, cached providers,
    settings, registry, ``/api/show`` answers and what OpenAI-compatible servers said about
    their models, registered scripted providers. For test fixtures, so one test's failures or
    calibration never leak into the next."""
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm.ollama import forget_shown
    from agentlake.llm.openai_compat import forget_model_facts

    reset_breakers()
    reset_calibration()
    clear_provider_cache()
    clear_registry_cache()
    forget_shown()
    forget_model_facts()
    with _scripted_lock:
        _scripted.clear()
