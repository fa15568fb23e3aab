"""Context budgets: will this prompt plus this many output tokens fit the model's window?

A tokenizer-free estimate (UTF-8 bytes / ``BYTES_PER_TOKEN`` plus per-message overhead),
calibrated per provider+model against the input tokens providers report, so it tightens as
calls are made. :func:`assert_context_budget` fails loudly with every number (estimate,
window, safety margin, overflow); nothing is ever sent to be silently truncated.

This module does not shorten prompts: ``generate_tree_split`` splits inputs that do not fit.
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from agentlake.errors import UserError
from agentlake.llm.provider import Message, Provider, coerce_messages, get_provider

if TYPE_CHECKING:
    from agentlake.settings import Settings

# ~4 bytes/token for English prose with modern BPE vocabularies, ~3 for JSON, code and digits;
# 3.2 over-estimates most text a little, which is the safe side before calibration.
BYTES_PER_TOKEN = 3.2
TOKENS_PER_MESSAGE = 4  # role markers and separators of chat templates
TOKENS_PER_PROMPT = 3
MIN_MARGIN = 32
MARGIN_FRACTION = 0.05
# Calibration only learns from prompts big enough that template overhead does not dominate,
# and is clamped so one odd report cannot make the estimate reckless.
CALIBRATE_MIN_TOKENS = 64
CALIBRATION_RANGE = (0.5, 2.0)
CALIBRATION_WEIGHT = 0.3

_calibration: dict[str, float] = {}
_calibration_lock = threading.Lock()


class ContextOverflowError(UserError):
    """The prompt plus the output budget does not fit the model's context window."""


class BudgetEstimate(BaseModel):
    """The numbers of one budget check, all in tokens."""

    model_config = ConfigDict(extra="forbid")

    model: str
    input_tokens: int
    max_tokens: int
    safety_margin: int
    context_window: int
    window_known: bool = True
    calibration: float = 1.0

    @property
    def total(self) -> int:
        return self.input_tokens + self.max_tokens + self.safety_margin

    @property
    def overflow(self) -> int:
        return max(0, self.total - self.context_window)

    @property
    def fits(self) -> bool:
        return self.overflow == 0

    @property
    def output_room(self) -> int:
        """Largest ``max_tokens`` that would fit with this prompt."""
        return max(0, self.context_window - self.input_tokens - self.safety_margin)


def raw_estimate(messages: list[Message]) -> int:
    """Uncalibrated token estimate of ``messages``."""
    total = TOKENS_PER_PROMPT
    for message in messages:
        total += TOKENS_PER_MESSAGE + math.ceil(len(message.content.encode("utf-8")) / BYTES_PER_TOKEN)
    return total


def text_tokens(text: str, key: str | None = None) -> int:
    """Estimated tokens of a bare text (calibrated for ``key`` = ``provider:model`` if known)."""
    factor = _calibration.get(key, 1.0) if key else 1.0
    return math.ceil(math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN) * factor)


def calibrate(key: str, messages: list[Message], reported_input_tokens: int) -> None:
    """Learn from a provider's reported input tokens for ``messages`` (called by ``generate``)."""
    estimate = raw_estimate(messages)
    if estimate < CALIBRATE_MIN_TOKENS or reported_input_tokens <= 0:
        return
    ratio = min(max(reported_input_tokens / estimate, CALIBRATION_RANGE[0]), CALIBRATION_RANGE[1])
    with _calibration_lock:
        previous = _calibration.get(key)
        _calibration[key] = ratio if previous is None else previous + CALIBRATION_WEIGHT * (ratio - previous)


def reset_calibration() -> None:
    with _calibration_lock:
        _calibration.clear()


def safety_margin(window: int) -> int:
    return max(MIN_MARGIN, math.ceil(window * MARGIN_FRACTION))


def estimate_budget(provider: Provider, messages: list[Message], max_tokens: int) -> BudgetEstimate:
    """The numbers of a budget check, without raising."""
    key = f"{provider.name}:{provider.model}"
    factor = _calibration.get(key, 1.0)
    window = provider.capabilities.context_window
    info = getattr(provider, "model_info", None)
    return BudgetEstimate(
        model=key,
        input_tokens=math.ceil(raw_estimate(messages) * factor),
        max_tokens=max_tokens,
        safety_margin=safety_margin(window),
        context_window=window,
        window_known=True if info is None else bool(info.known or info.source == "server"),
        calibration=round(factor, 4),
    )


def assert_context_budget(
    provider_or_model: Provider | str, messages: object, max_tokens: int, *, settings: Settings | None = None
) -> BudgetEstimate:
    """Check that ``messages`` plus ``max_tokens`` output tokens fit the model's window.

    Returns the :class:`BudgetEstimate`. Raises :class:`ContextOverflowError` (a ``UserError``)
    with the estimate, the window, the safety margin and the overflow, and what to change.
    """
    provider = (
        get_provider(provider_or_model, settings) if isinstance(provider_or_model, str) else provider_or_model
    )
    estimate = estimate_budget(provider, coerce_messages(messages), max_tokens)
    if estimate.fits:
        return estimate
    unknown = (
        ""
        if estimate.window_known
        else f" ({estimate.context_window:,} is a conservative default for a model the registry does not know: "
        "set its context_window in the file named by AGENTLAKE_LLM_MODELS_FILE)"
    )
    raise ContextOverflowError(
        f"prompt too long for {estimate.model}: estimated {estimate.input_tokens:,} input tokens + "
        f"{estimate.max_tokens:,} max_tokens + {estimate.safety_margin:,} safety margin = {estimate.total:,} > "
        f"context window {estimate.context_window:,}{unknown}, over by {estimate.overflow:,}; shorten the prompt, "
        "lower max_tokens (--max-tokens) or split the input (generate_tree_split)",
        estimated_input_tokens=estimate.input_tokens,
        max_tokens=estimate.max_tokens,
        safety_margin=estimate.safety_margin,
        context_window=estimate.context_window,
        overflow=estimate.overflow,
    )
