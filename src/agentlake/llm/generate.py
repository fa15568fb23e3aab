"""``generate`` (one model call, made resilient and accounted) and ``generate_continuable``
(recovery from empty, thinking-only and truncated replies).

``generate``: budget check, circuit breaker, retries with jittered backoff, timeout, one
accounting record. No recovery: what the model said is what you get.

``generate_continuable``:

* empty visible text with thinking, or finish reason ``length`` with nothing usable ->
  the original prompt again with a doubled ``max_tokens``, up to ``llm_max_tokens_cap``
  (and what the context window leaves);
* a structurally incomplete reply (JSON cut off; text cut at ``length``) -> continue from the
  partial, given back as a scratchpad, until it parses, at most ``llm_max_continuations``
  times;
* JSON still cut off after that -> json-repair as the last resort, flagged ``repaired=True``
  and ``complete=False``, never passed off as complete; if even that fails, ``RunError``.

Every request is listed in ``ContinuableResult.calls``. Structured output and tree-split live
in ``structured.py`` and ``treesplit.py``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentlake.errors import AgentlakeError, RunError
from agentlake.llm.accounting import Tally, accounting_scope
from agentlake.llm.budget import assert_context_budget, calibrate, estimate_budget
from agentlake.llm.jsonparse import scan_json, strip_thinking
from agentlake.llm.models import cost_usd
from agentlake.llm.provider import (
    Completion,
    GenerateOptions,
    Message,
    ModelServerUnreachable,
    Provider,
    ProviderConnectionError,
    ProviderTimeoutError,
    Usage,
    coerce_messages,
    current_settings,
    get_provider,
    make_options,
)
from agentlake.llm.resilience import breaker_for, call_with_retries

if TYPE_CHECKING:
    from agentlake.settings import Settings

# A continuation is glued to its partial after dropping an echo of the partial's tail; shorter
# overlaps than this are too likely to be coincidence ("}" or '"') to drop.
MIN_OVERLAP = 8
MAX_OVERLAP_SCAN = 400

CONTINUE_PROMPT = (
    "Your previous reply was cut off before its end. Here is everything you wrote so far, as a "
    "scratchpad:\n<<<\n{partial}\n>>>\nContinue from exactly where it stops. Output only the missing "
    "remainder: do not repeat anything above and add no commentary."
)


def resolve(model: str | Provider, settings: Settings | None = None) -> Provider:
    """A provider object as is; a model string through :func:`get_provider`."""
    if isinstance(model, str):
        return get_provider(model, settings)
    if not hasattr(model, "complete") or not hasattr(model, "capabilities"):
        raise RunError(f"{model!r} is neither a model string nor a Provider")
    return model


def _cost(provider: Provider, usage: Usage) -> float | None:
    info = getattr(provider, "model_info", None)
    if info is None:
        return None

    return cost_usd(info, usage.input_tokens, usage.output_tokens)


def _request(
    provider: Provider, messages: list[Message], options: GenerateOptions, settings: Settings, tally: Tally
) -> Completion:
    """One model call through budget check, breaker and retries, counted in ``tally``."""
    assert_context_budget(provider, messages, options.max_tokens)
    breaker = breaker_for(
        getattr(provider, "breaker_key", None) or f"{provider.name}:{provider.model}",
        failures=settings.llm_breaker_failures,
        cooldown_s=settings.llm_breaker_cooldown_s,
    )
    sent = 0

    def attempt() -> Completion:
        nonlocal sent
        sent += 1
        return provider.complete(messages, options)

    def failed(error: BaseException, will_retry: bool) -> None:
        tally.add_request(provider.name, provider.model, retry=sent > 1, cost_usd=0.0)

    try:
        completion = call_with_retries(
            attempt, breaker, max_retries=settings.llm_max_retries, on_attempt_failed=failed
        )
    except ProviderConnectionError as exc:
        if not exc.hint:  # the connection broke mid-call: a failure while running, not bad config
            raise
        retries = f" after {sent} attempts" if sent > 1 else ""
        raise ModelServerUnreachable(f"{exc.message}{retries}; {exc.hint}") from exc
    except ProviderTimeoutError as exc:
        raise ProviderTimeoutError(
            f"{exc.message}; raise the timeout (timeout=, AGENTLAKE_LLM_TIMEOUT_S) or lower max_tokens",
            timeout_s=exc.timeout_s,
        ) from exc
    except AgentlakeError:
        raise
    except TimeoutError as exc:
        raise ProviderTimeoutError(
            f"{provider.name}:{provider.model} timed out: {exc}", timeout_s=options.timeout or 0.0
        ) from exc
    except Exception as exc:  # a provider plugin's own exception: convert at the edge
        raise RunError(f"{provider.name}:{provider.model} call failed: {type(exc).__name__}: {exc}") from exc
    usage = completion.usage
    calibrate(f"{provider.name}:{provider.model}", messages, usage.input_tokens)
    tally.add_request(
        provider.name,
        provider.model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        thinking_tokens=usage.thinking_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        finish_reason=completion.finish_reason,
        cost_usd=_cost(provider, usage),
        retry=sent > 1,
    )
    return completion


def _prepare(
    model: str | Provider,
    messages: object,
    settings: Settings | None,
    options: GenerateOptions | None,
    overrides: dict,
) -> tuple[Provider, list[Message], GenerateOptions, Settings]:
    settings = settings or current_settings()
    provider = resolve(model, settings)
    msgs = coerce_messages(messages)
    opts = make_options(options, **overrides)
    if opts.timeout is None:
        opts = opts.model_copy(update={"timeout": settings.llm_timeout_s})
    return provider, msgs, opts, settings


def generate(
    model: str | Provider,
    messages: object,
    *,
    settings: Settings | None = None,
    options: GenerateOptions | None = None,
    **option_values: object,
) -> Completion:
    """One model call: budget-checked, through the circuit breaker, retried on connection
    errors / 429 / 5xx, accounted (one ``CallRecord``). No recovery of the reply itself.

    ``messages``: a prompt string or a list of messages. ``option_values``: ``schema``,
    ``think``, ``max_tokens``, ``temperature``, ``timeout``, ``stop``.
    Raises ``UserError`` (unknown provider, missing key, unreachable server, prompt over the
    window) or ``RunError`` (``ProviderHTTPError``, ``ProviderTimeoutError``,
    ``CircuitOpenError``...).
    """
    with accounting_scope("generate") as tally:
        provider, msgs, opts, settings = _prepare(model, messages, settings, options, option_values)
        tally.provider, tally.model = provider.name, provider.model
        return _request(provider, msgs, opts, settings, tally)


# --- generate_continuable -------------------------------------------------------------------


class Attempt(BaseModel):
    """One request made by ``generate_continuable``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["initial", "bigger_budget", "continuation"]
    max_tokens: int
    finish_reason: str
    text_chars: int
    thinking_chars: int
    usage: Usage
    latency_ms: float


class ContinuableResult(BaseModel):
    """The reply after recovery. ``completion.text`` is the whole (glued) text, ``usage`` and
    ``latency_ms`` sum every request. ``complete``: the JSON parses (``expect_json``) or the text
    was not cut at ``length``. ``repaired``: truncated JSON was repaired as a last resort and
    must not be trusted as complete. ``attempts`` counts requests (transport retries included)."""

    model_config = ConfigDict(extra="forbid")

    completion: Completion
    attempts: int = 0
    continuations: int = 0
    budget_retries: int = 0
    repaired: bool = False
    complete: bool = True
    cost_usd: float | None = None
    calls: list[Attempt] = Field(default_factory=list)

    @property
    def text(self) -> str:
        return self.completion.text

    @property
    def thinking(self) -> str:
        return self.completion.thinking

    @property
    def finish_reason(self) -> str:
        return self.completion.finish_reason

    @property
    def usage(self) -> Usage:
        return self.completion.usage


def glue(partial: str, continuation: str) -> str:
    """``partial`` followed by ``continuation``, minus an echo of the partial's tail (at least
    ``MIN_OVERLAP`` characters) that the model repeated before going on."""
    cont = strip_thinking(continuation)
    stripped = cont.lstrip()
    reopened = stripped.startswith("```")
    if reopened:  # the model wrapped its remainder in a fence of its own
        newline = stripped.find("\n")
        cont = stripped[newline + 1 :] if newline != -1 else ""
    if cont.rstrip().endswith("```") and (reopened or "```" not in partial):
        cont = cont.rstrip()[:-3]
    limit = min(len(partial), len(cont), MAX_OVERLAP_SCAN)
    for size in range(limit, MIN_OVERLAP - 1, -1):
        if partial.endswith(cont[:size]):
            return partial + cont[size:]
    return partial + cont


def _whole_json(text: str) -> bool:
    """``text`` is one complete JSON object/array from its start (fences and thinking aside)."""
    body = strip_thinking(text).strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
    return body.lstrip()[:1] in ("{", "[") and scan_json(body).state == "complete"


def _usable(text: str, expect_json: bool) -> bool:
    if not text.strip():
        return False
    return not expect_json or scan_json(text).state != "absent"


def generate_continuable(
    model: str | Provider,
    messages: object,
    *,
    expect_json: bool | None = None,
    max_continuations: int | None = None,
    max_tokens_cap: int | None = None,
    settings: Settings | None = None,
    options: GenerateOptions | None = None,
    **option_values: object,
) -> ContinuableResult:
    """A model call that recovers from the ways replies go wrong (see the module docstring).

    ``expect_json`` (default: a ``schema`` was given) makes "incomplete" mean "the JSON does not
    parse yet" rather than "cut at length". Raises ``RunError`` when it gives up (no usable
    text at the token cap; truncated JSON it cannot continue or repair), with the numbers and
    ``raw_text`` in ``details``; plus everything ``generate`` raises.
    """
    with accounting_scope("generate_continuable") as tally:
        provider, msgs, opts, settings = _prepare(model, messages, settings, options, option_values)
        tally.provider, tally.model = provider.name, provider.model
        expect_json = opts.schema_ is not None if expect_json is None else expect_json
        max_continuations = settings.llm_max_continuations if max_continuations is None else max_continuations
        cap = settings.llm_max_tokens_cap if max_tokens_cap is None else max_tokens_cap
        return _continuable(provider, msgs, opts, settings, tally, expect_json, max_continuations, cap)


def _continuable(
    provider: Provider,
    msgs: list[Message],
    opts: GenerateOptions,
    settings: Settings,
    tally: Tally,
    expect_json: bool,
    max_continuations: int,
    cap: int,
) -> ContinuableResult:
    started = time.perf_counter()
    attempts_before = tally.attempts
    calls: list[Attempt] = []
    total = Usage()
    cost: float | None = 0.0
    budget = opts.max_tokens

    def call(kind: str, messages: list[Message], max_tokens: int) -> Completion:
        nonlocal total, cost
        completion = _request(
            provider, messages, opts.model_copy(update={"max_tokens": max_tokens}), settings, tally
        )
        total = total + completion.usage
        price = _cost(provider, completion.usage)
        cost = None if cost is None or price is None else cost + price
        calls.append(
            Attempt(
                kind=kind,
                max_tokens=max_tokens,
                finish_reason=completion.finish_reason,
                text_chars=len(completion.text),
                thinking_chars=len(completion.thinking),
                usage=completion.usage,
                latency_ms=completion.latency_ms,
            )
        )
        return completion

    def result(
        text: str, thinking: str, finish: str, *, continuations: int, complete: bool, repaired: bool = False
    ) -> ContinuableResult:
        return ContinuableResult(
            completion=Completion(
                text=text,
                thinking=thinking,
                finish_reason=finish,
                usage=total,
                latency_ms=(time.perf_counter() - started) * 1000,
                provider=provider.name,
                model=provider.model,
            ),
            attempts=tally.attempts - attempts_before,
            continuations=continuations,
            budget_retries=sum(1 for c in calls if c.kind == "bigger_budget"),
            repaired=repaired,
            complete=complete,
            cost_usd=cost,
            calls=calls,
        )

    # 1. Until something usable comes back, retry the original prompt with a doubled budget.
    completion = call("initial", msgs, budget)
    while not _usable(completion.text, expect_json) and (
        completion.thinking.strip() or completion.finish_reason == "length"
    ):
        room = estimate_budget(provider, msgs, budget).output_room
        bigger = min(budget * 2, cap, room)
        if bigger <= budget:
            what = "no visible text" if not completion.text.strip() else "no JSON"
            raise RunError(
                f"{provider.name}:{provider.model} returned {what} after {len(calls)} attempts "
                f"(finish_reason={completion.finish_reason}, {completion.usage.thinking_tokens} thinking tokens, "
                f"max_tokens {budget} cannot grow: AGENTLAKE_LLM_MAX_TOKENS_CAP={cap}, room left in the window {room}); "
                "raise the cap, shorten the prompt or turn thinking off (think=False)",
                raw_text=completion.text,
                thinking=completion.thinking[-2000:],
                attempts=len(calls),
            )
        budget = bigger
        completion = call("bigger_budget", msgs, budget)

    text, thinking, finish = completion.text, completion.thinking, completion.finish_reason

    def incomplete(current: str, finish_reason: str) -> bool:
        if expect_json:
            return scan_json(current).state == "incomplete"
        return finish_reason == "length"

    # 2. Continue a structurally incomplete reply from its partial.
    continuations = 0
    while incomplete(text, finish) and continuations < max_continuations:
        continuations += 1
        tally.continuations += 1
        follow = [*msgs, Message(role="user", content=CONTINUE_PROMPT.format(partial=text))]
        room = estimate_budget(provider, follow, budget).output_room
        piece = call("continuation", follow, max(1, min(budget, room)))
        glued = glue(text, piece.text)
        # Gluing wins; only when the glued text is still broken and the model evidently started
        # over (its piece is a whole JSON value on its own) is the piece taken instead.
        restarted = expect_json and scan_json(glued).state != "complete" and _whole_json(piece.text)
        text = piece.text if restarted else glued
        thinking = f"{thinking}\n{piece.thinking}".strip() if piece.thinking else thinking
        finish = piece.finish_reason

    if not incomplete(text, finish):
        complete = not expect_json or scan_json(text).state == "complete"
        return result(text, thinking, finish, continuations=continuations, complete=complete)
    if not expect_json:
        return result(text, thinking, finish, continuations=continuations, complete=False)

    # 3. Last resort: repair the truncated JSON, flagged, never passed off as complete.
    repaired = _repair(text)
    if repaired is None:
        raise RunError(
            f"{provider.name}:{provider.model} reply is still truncated JSON after {continuations} continuations "
            f"(AGENTLAKE_LLM_MAX_CONTINUATIONS={max_continuations}) and cannot be repaired; raise max_tokens or simplify "
            "the requested output",
            raw_text=text,
            attempts=len(calls),
        )
    tally.repaired = True
    return result(repaired, thinking, finish, continuations=continuations, complete=False, repaired=True)


def _repair(text: str) -> str | None:
    import json

    import json_repair

    body = strip_thinking(text)
    start = min((i for i in (body.find("{"), body.find("[")) if i != -1), default=-1)
    if start == -1:
        return None
    try:
        value = json_repair.loads(body[start:])
    except Exception:  # json-repair's failure modes are not a documented exception type
        return None
    if value in ("", None, {}, []):
        return None
    return json.dumps(value, ensure_ascii=False)
