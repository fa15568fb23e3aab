"""What every real-model test module shares: the model it runs and its marks (slow, a long
timeout, skipped with the reason and the install command when the 0.5B is not installed)."""

from __future__ import annotations

from typing import Any

import pytest

from agentlake.llm.packaged import PACKAGED_MODELS, installed

MODEL = "local:qwen2.5-coder-0.5b"
# Two numerics of the same model (the transformers engine's int8 and bfloat16 weights): greedy
# decoding may choose differently under each, as it does between CPUs (AVX-512 VNNI or not), so
# a real-model test runs under both and asserts only what holds whatever the model chooses.
NUMERICS = ("int8", "bfloat16")

MARKS = [
    pytest.mark.slow,
    pytest.mark.timeout(1200),  # minutes on a busy 2-core machine; about one on a quiet one
    pytest.mark.skipif(
        not installed(PACKAGED_MODELS["qwen2.5-coder-0.5b"]),
        reason="the 0.5B is not installed (agentlake models install 0.5b; make test installs it)",
    ),
]


class Recorded:
    """A real provider that keeps what it is sent: every call's messages, and each as one text."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[Any]] = []
        self.prompts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(self, messages: list[Any], options: Any) -> Any:
        self.calls.append(list(messages))
        self.prompts.append("\n".join(message.content for message in messages))
        return self.inner.complete(messages, options)
