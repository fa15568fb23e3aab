"""The overseer tier's optional model (the seed's T3): off unless ``overseer_model`` is set.

At the end of a day the code overseer (``overseer.py``) has its concerns and the day's
outcomes; with a model configured, a summary of them goes to the model, which may draft up to
``MAX_DRAFTS`` cross-day lessons. They are proposed like the code overseer's own: pending,
actor and source ``overseer``, low confidence, so measurement decides whether they stay. A
model that fails or answers nothing usable is logged and skipped: advice never fails a day.
This module owns the prompt and the reply's shape; the call is ``agentlake.llm``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentlake.errors import AgentlakeError
from agentlake.llm.fence import DATA_RULE, data_block

if TYPE_CHECKING:
    from agentlake.agents.outcome import Concern, TaskOutcome

log = logging.getLogger(__name__)
MAX_DRAFTS = 3
MAX_LINES = 40  # outcome and concern lines shown to the model

INSTRUCTIONS = (
    "You oversee a staffing agency's day. Below are the orders filled today and the concerns the "
    "checks raised. Draft at most 3 short lessons that would make tomorrow's fills better: each a "
    "trigger (when it applies) and an action (what to do), with the role and client it is about if "
    "it is about one. Draft none when nothing recurred.\n" + DATA_RULE
)


class LessonIdea(BaseModel):
    trigger: str = Field(..., min_length=1, max_length=200)
    action: str = Field(..., min_length=1, max_length=300)
    role: str | None = Field(None, max_length=80)
    client_id: str | None = Field(None, max_length=80)


class OverseerAdvice(BaseModel):
    lessons: list[LessonIdea] = Field(default_factory=list, max_length=MAX_DRAFTS)


def day_summary(outcomes: Sequence[TaskOutcome], concerns: Sequence[Concern]) -> str:
    lines = ["Orders:"]
    for outcome in outcomes[:MAX_LINES]:
        order = outcome.order
        state = "filled" if outcome.success else "short"
        lines.append(
            f"- {order.count} x {order.role} for {order.client_id or 'a client'} ({order.task_kind}): "
            f"{state}, {len(outcome.proposed)} proposed, {len(outcome.candidates)} spares"
        )
    lines.append("Concerns:")
    lines += [f"- {c.kind} ({c.role}, {c.client_id}): {c.message}" for c in concerns[:MAX_LINES]] or [
        "- none"
    ]
    return "\n".join(lines)


def model_deltas(
    model: str,
    outcomes: Sequence[TaskOutcome],
    concerns: Sequence[Concern],
    *,
    temperature: float | None = None,
) -> list[Any]:
    """Lesson deltas (ADD, pending) the model drafts from the day; ``[]`` when it fails.
    ``temperature``: the ``overseer_temperature`` setting (``None``: the server's default)."""
    # Lazy (start-up time): the learning layer loads on first use; the LLM layer loads on the first model call.
    from agentlake.learn import Delta, LessonDraft, LessonMatch
    from agentlake.llm import generate_structured

    if not outcomes:
        return []
    messages = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": data_block(day_summary(outcomes, concerns))},
    ]
    try:
        advice = generate_structured(
            model, messages, OverseerAdvice, max_tokens=600, retries=1, temperature=temperature, think=True
        )
    except AgentlakeError as exc:
        log.warning("overseer model %s gave no advice: %s", model, exc.message)
        return []
    return [
        Delta(
            op="ADD",
            lesson=LessonDraft(
                trigger=idea.trigger,
                action=idea.action,
                match=LessonMatch(fields={"role": idea.role or None, "client_id": idea.client_id or None}),
                domain="staffing",
                source="overseer",
                confidence=0.3,
            ),
            reason=f"overseer model {model}",
            actor="overseer",
        )
        for idea in advice.lessons[:MAX_DRAFTS]
    ]
