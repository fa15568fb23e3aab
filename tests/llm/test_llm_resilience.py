"""Retries, backoff, Retry-After, timeouts and the circuit breaker, over real HTTP where it matters."""

from __future__ import annotations

import time

import pytest

from agentlake.errors import RunError
from agentlake.http.retry import BACKOFF_CAP_S, backoff_delay
from agentlake.llm import (
    CallRecord,
    CircuitOpenError,
    ModelServerUnreachable,
    ProviderHTTPError,
    ProviderTimeoutError,
    ScriptedProvider,
    generate,
)
from agentlake.llm.resilience import ManualClock


def test_5xx_is_retried_with_jittered_backoff_over_http(
    ollama: ScriptedProvider, clock: ManualClock, records: list[CallRecord]
) -> None:
    ollama.enqueue(error=500)
    ollama.enqueue(error=503)
    ollama.enqueue("recovered")
    assert generate("ollama:qwen3:4b", "hi").text == "recovered"
    assert len(clock.sleeps) == 2
    assert all(0 <= s <= BACKOFF_CAP_S for s in clock.sleeps)
    assert records[-1].attempts == 3
    assert records[-1].retries == 2
    assert records[-1].success


def test_429_honours_retry_after(openai: ScriptedProvider, clock: ManualClock) -> None:
    openai.enqueue(error=429, retry_after=7)
    openai.enqueue("after the wait")
    assert generate("openai:gpt-4o-mini", "hi").text == "after the wait"
    assert clock.sleeps == [7.0]


def test_retry_after_beyond_what_we_wait_fails_with_the_number(
    ollama: ScriptedProvider, clock: ManualClock
) -> None:
    ollama.enqueue(error=429, retry_after=3600)
    with pytest.raises(RunError, match="retry after 3600 s"):
        generate("ollama:qwen3:4b", "hi")
    assert clock.sleeps == []


def test_other_4xx_is_never_retried(ollama: ScriptedProvider, clock: ManualClock) -> None:
    ollama.enqueue(error=400)
    ollama.enqueue("never sent")
    with pytest.raises(ProviderHTTPError) as caught:
        generate("ollama:qwen3:4b", "hi")
    assert caught.value.status == 400
    assert ollama.calls == 1
    assert clock.sleeps == []


def test_retries_give_up_after_the_setting(
    ollama: ScriptedProvider, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLAKE_LLM_MAX_RETRIES", "2")
    for _ in range(3):
        ollama.enqueue(error=502)
    with pytest.raises(ProviderHTTPError, match="HTTP 502"):
        generate("ollama:qwen3:4b", "hi")
    assert ollama.calls == 3
    assert len(clock.sleeps) == 2


def test_dropped_connection_is_retried(ollama: ScriptedProvider, clock: ManualClock) -> None:
    ollama.enqueue(error=ConnectionResetError("boom"))
    ollama.enqueue("second try")
    assert generate("ollama:qwen3:4b", "hi").text == "second try"
    assert len(clock.sleeps) == 1


def test_unreachable_server_names_the_variable(monkeypatch: pytest.MonkeyPatch, clock: ManualClock) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    with pytest.raises(ModelServerUnreachable, match="OLLAMA_HOST") as caught:
        generate("ollama:qwen3:4b", "hi")
    assert caught.value.exit_code == 2
    assert len(clock.sleeps) == 3  # connection errors are retried before giving up


def test_slow_reply_past_the_timeout(ollama: ScriptedProvider) -> None:
    ollama.enqueue("too late", delay_s=3)
    started = time.perf_counter()
    with pytest.raises(ProviderTimeoutError, match=r"within 0.3 s.*AGENTLAKE_LLM_TIMEOUT_S"):
        generate("ollama:qwen3:4b", "hi", timeout=0.3)
    assert time.perf_counter() - started < 2.5  # not retried: a slow model stays slow
    assert ollama.calls == 1


def test_breaker_opens_fails_fast_and_recovers_through_a_half_open_probe(
    clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLAKE_LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("AGENTLAKE_LLM_BREAKER_FAILURES", "3")
    monkeypatch.setenv("AGENTLAKE_LLM_BREAKER_COOLDOWN_S", "30")
    provider = ScriptedProvider("breaker")
    for _ in range(3):
        provider.enqueue(error=503)
    for _ in range(3):
        with pytest.raises(ProviderHTTPError):
            generate(provider, "hi")
    with pytest.raises(CircuitOpenError, match=r"open after 3 consecutive failures; retry in 30.0 s"):
        generate(provider, "hi")
    assert provider.calls == 3  # failed fast, without calling the model

    clock.advance(31)  # cooldown over: one half-open probe goes through; it fails -> open again
    provider.enqueue(error=500)
    with pytest.raises(ProviderHTTPError):
        generate(provider, "probe")
    with pytest.raises(CircuitOpenError):
        generate(provider, "still open")
    assert provider.calls == 4

    clock.advance(31)  # the next probe succeeds -> closed
    provider.enqueue_many("recovered", "closed again")
    assert generate(provider, "probe again").text == "recovered"
    assert generate(provider, "normal").text == "closed again"


def test_a_400_does_not_count_towards_the_breaker(
    clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLAKE_LLM_BREAKER_FAILURES", "2")
    provider = ScriptedProvider("bad-request")
    for _ in range(4):
        provider.enqueue(error=400)
    for _ in range(4):
        with pytest.raises(ProviderHTTPError):
            generate(provider, "hi")
    provider.enqueue("still closed")
    assert generate(provider, "hi").text == "still closed"


def test_backoff_is_jittered_under_an_exponential_cap() -> None:
    error = ProviderHTTPError("x", status=503)
    delays = [backoff_delay(3, error) for _ in range(200)]
    assert max(delays) <= 2.0
    assert min(delays) >= 0
    assert len(set(delays)) > 100


def test_a_connection_that_keeps_breaking_is_a_run_error_not_bad_config(
    ollama: ScriptedProvider, clock: ManualClock
) -> None:
    from agentlake.llm import ProviderConnectionError

    for _ in range(4):
        ollama.enqueue(error=ConnectionResetError("dropped"))
    with pytest.raises(ProviderConnectionError, match="connection to ollama:qwen3:4b") as caught:
        generate("ollama:qwen3:4b", "hi")
    assert caught.value.exit_code == 1
    assert ollama.calls == 4
