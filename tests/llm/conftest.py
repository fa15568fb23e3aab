"""Fixtures for the LLM-layer tests: clean process-wide state, a manual clock, fake servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentlake.llm import CallRecord, ScriptedProvider, add_recorder, reset_llm_state
from agentlake.llm.fakeserver import serve_fake_ollama, serve_fake_openai
from agentlake.llm.resilience import ManualClock, use_clock


@pytest.fixture(autouse=True)
def _clean_llm_state() -> Iterator[None]:
    reset_llm_state()
    yield
    reset_llm_state()


@pytest.fixture
def clock() -> Iterator[ManualClock]:
    """Breakers and backoff run on this clock: sleeps are recorded, not slept."""
    with use_clock(ManualClock()) as manual:
        yield manual


@pytest.fixture
def records() -> Iterator[list[CallRecord]]:
    """Every CallRecord emitted during the test."""
    seen: list[CallRecord] = []
    unsubscribe = add_recorder(seen.append)
    yield seen
    unsubscribe()


@pytest.fixture
def ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedProvider]:
    """A scripted model behind a fake Ollama server; OLLAMA_HOST points at it."""
    provider = ScriptedProvider("qwen3:4b", context_window=8192)
    with serve_fake_ollama(provider) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        yield provider


@pytest.fixture
def openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedProvider]:
    """A scripted model behind a fake OpenAI-compatible server with a key."""
    provider = ScriptedProvider("gpt-4o-mini", context_window=128000)
    with serve_fake_openai(provider, api_key="sk-test-key-0123456789") as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789")
        yield provider
