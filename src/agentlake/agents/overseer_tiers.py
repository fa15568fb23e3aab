"""The overseer's model tiers above its code checks (the seed's T3 and T4): they propose, never write.

- T3 (``review_event``): after the client has judged one event, a model (thinking on) reads
  what the client said (the ``fill.judged`` op: who was taken, who was refused and the client's
  words, the submitted workers' facts) beside the overseer's code checks for the event
  (double-booking, certification drift, a thin buffer), and drafts up to ``MAX_IDEAS`` lessons
  for the next orders of that client and role.
- T4 (``synthesise_days``): between batches, a model reads every day judged so far, a line an
  event, and drafts cross-day lessons (the seed's "maintain a buffer of emergency candidates").

A draft is words (trigger, action) and, when the model names one of the domain's filters
(``workforce.learning.MODEL_FILTERS``) with a value that fits, a machine action. Each becomes an
ADD delta, pending, low confidence, source and actor ``overseer``, its reason saying which tier
and model drafted it: the deltas go to the learner (the one writer of lessons) with the day's
other overseer proposals, and the gatekeeper (``learn.gate``) replays them before any activates.
A model that fails or answers nothing usable is logged and skipped: advice never fails a day.
It does not own the code checks (``overseer``), the call (``llm``) nor curation (``learn``).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentlake.errors import AgentlakeError
from agentlake.llm.fence import DATA_RULE, data_block
from agentlake.workforce.learning import MODEL_FILTERS, action_from_filter

if TYPE_CHECKING:
    from agentlake.agents.outcome import Concern
    from agentlake.learn import Delta
    from agentlake.observe.model import ObservedOp
    from agentlake.workforce.order import FillOrder

log = logging.getLogger(__name__)
MAX_IDEAS = 3
MAX_ITEMS = 12  # submitted workers shown to T3
MAX_LINES = 60  # event lines shown to T4
CONFIDENCE = 0.3

FILTER_HELP = (
    "A lesson may name one filter the staffer applies in code, with its value: "
    + ", ".join(MODEL_FILTERS)
    + " (a score's value is the minimum in 0..1, distance_miles the most miles, certification its name, "
    "spare_buffer how many spares; prior_no_show and double_booking need no value). "
    "Leave filter empty for advice in words."
)
T3_INSTRUCTIONS = (
    "You oversee a staffing agency. The client has just judged one order: who it took, who it "
    "refused and what it said, with the facts of each submitted worker, and the checks our code "
    "ran on the fill. Find what went wrong (a refusal's reason, a double-booking, a certification "
    f"spelled another way) and draft at most {MAX_IDEAS} short lessons for this client's next "
    "orders of this role: a trigger (when it applies) and an action (what to do). "
    + FILTER_HELP
    + " Draft none when nothing went wrong.\n"
    + DATA_RULE
)
T4_INSTRUCTIONS = (
    "You oversee a staffing agency across days. Below is every order judged so far, a line each, "
    "grouped by day. Draft at most "
    f"{MAX_IDEAS} lessons that hold across days (a pattern that recurs, e.g. emergencies that run "
    "short for lack of spare candidates): a trigger, an action, and the role and client it is about "
    "if it is about one. " + FILTER_HELP + " Draft none when nothing recurs.\n" + DATA_RULE
)


class TierIdea(BaseModel):
    """One lesson a tier's model drafts."""

    trigger: str = Field(..., min_length=1, max_length=200)
    action: str = Field(..., min_length=1, max_length=300)
    filter: str | None = Field(None, max_length=40)
    value: str | None = Field(None, max_length=80)
    role: str | None = Field(None, max_length=80)
    client_id: str | None = Field(None, max_length=80)


class TierAdvice(BaseModel):
    lessons: list[TierIdea] = Field(default_factory=list, max_length=MAX_IDEAS)


def event_text(order: FillOrder, op: ObservedOp, concerns: Sequence[Concern]) -> str:
    """What T3 reads: the order, what the client said (as the op records it), the workers'
    facts and the code checks' concerns."""
    attrs = op.attributes
    lines = [f"Order: {op.input_summary or order.describe()}"]
    lines.append(
        f"Client: filled {attrs.get('filled', 0)} of {attrs.get('requested', order.count)}; "
        f"took {attrs.get('accepted') or []}; refused {attrs.get('refused') or []}"
    )
    for rejection in (attrs.get("rejections") or [])[:MAX_ITEMS]:
        if isinstance(rejection, dict):
            words = rejection.get("said") or rejection.get("reason") or rejection.get("rule") or ""
            lines.append(f"- refused {rejection.get('worker_id')}: {words}")
    judged = attrs.get("judged") if isinstance(attrs.get("judged"), dict) else {}
    items = judged.get("items") if isinstance(judged, dict) else None
    if isinstance(items, list) and items:
        lines.append("Submitted workers:")
        for item in items[:MAX_ITEMS]:
            if isinstance(item, dict) and isinstance(item.get("values"), dict):
                facts = ", ".join(f"{k} {_shown(v)}" for k, v in sorted(item["values"].items()))
                verdict = "taken" if item.get("accepted") else "refused"
                lines.append(f"- {item.get('id')} ({verdict}): {facts}")
    lines.append("Code checks:")
    lines += [f"- {c.kind}: {c.message}" for c in concerns] or ["- none"]
    return "\n".join(lines)


def review_event(
    model: str,
    order: FillOrder,
    op: ObservedOp,
    concerns: Sequence[Concern],
    *,
    temperature: float | None = None,
) -> list[Delta]:
    """T3: lesson deltas (ADD, pending) the model drafts from one judged event; ``[]`` when it
    fails. The match is the order's client and role, whatever the model says."""
    advice = _ask(model, T3_INSTRUCTIONS, event_text(order, op, concerns), temperature)
    where = order.event_id or op.id
    return [
        _delta(
            idea,
            role=order.role,
            client_id=order.client_id,
            op_id=op.id,
            reason=f"T3: {model} reviewed event {where}",
        )
        for idea in advice
    ]


def days_text(ops: Sequence[ObservedOp]) -> tuple[str, set[str], set[str]]:
    """What T4 reads: the judged ops a line each, grouped by day (batch and scenario); and the
    roles and clients they name."""
    days: dict[tuple[Any, Any], list[str]] = defaultdict(list)
    roles: set[str] = set()
    clients: set[str] = set()
    for op in ops[-MAX_LINES:]:
        attrs = op.attributes
        judged = attrs.get("judged") if isinstance(attrs.get("judged"), dict) else {}
        role = str(judged.get("shape") or "").partition(" in ")[0] if isinstance(judged, dict) else ""
        client = str(attrs.get("client_id") or "")
        roles.add(role)
        clients.add(client)
        said = [
            str(r.get("said") or r.get("reason") or r.get("rule") or "")
            for r in (attrs.get("rejections") or [])[:2]
            if isinstance(r, dict)
        ]
        days[(attrs.get("batch"), attrs.get("scenario"))].append(
            f"- {attrs.get('task_kind', 'order')}: {op.input_summary or role} for {client}: filled "
            f"{attrs.get('filled', 0)} of {attrs.get('requested', 0)}, {attrs.get('buffer', 0)} spares"
            + (f"; said: {'; '.join(s for s in said if s)}" if any(said) else "")
        )
    lines = []
    for (batch, scenario), events in days.items():
        lines.append(f"Day {scenario} (batch {batch}):")
        lines += events
    return "\n".join(lines), roles - {""}, clients - {""}


def synthesise_days(
    model: str, ops: Sequence[ObservedOp], *, temperature: float | None = None
) -> list[Delta]:
    """T4: cross-day lesson deltas the model drafts from the judged ``ops`` so far (oldest first);
    ``[]`` when there are none or it fails. A role or client the ops do not name is dropped."""
    if not ops:
        return []
    text, roles, clients = days_text(ops)
    advice = _ask(model, T4_INSTRUCTIONS, text, temperature)
    days = len({(op.attributes.get("batch"), op.attributes.get("scenario")) for op in ops})
    return [
        _delta(
            idea,
            role=idea.role if idea.role in roles else None,
            client_id=idea.client_id if idea.client_id in clients else None,
            op_id=None,
            reason=f"T4: {model} across {days} day(s)",
        )
        for idea in advice
    ]


def _ask(model: str, instructions: str, text: str, temperature: float | None) -> list[TierIdea]:
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm import generate_structured

    messages = [{"role": "system", "content": instructions}, {"role": "user", "content": data_block(text)}]
    try:
        advice = generate_structured(
            model, messages, TierAdvice, max_tokens=1200, retries=1, temperature=temperature, think=True
        )
    except AgentlakeError as exc:
        log.warning("overseer tier model %s gave no advice: %s", model, exc.message)
        return []
    return advice.lessons[:MAX_IDEAS]


def _delta(
    idea: TierIdea, *, role: str | None, client_id: str | None, op_id: str | None, reason: str
) -> Delta:
    # Lazy (start-up time): the learning layer loads on first use.
    from agentlake.learn import Delta, LessonDraft, LessonMatch

    name = (idea.filter or "").strip().lower().replace(" ", "_") or None
    return Delta(
        op="ADD",
        lesson=LessonDraft(
            trigger=idea.trigger,
            action=idea.action,
            match=LessonMatch(fields={"role": role, "client_id": client_id}),
            machine=action_from_filter(name, idea.value),
            domain="staffing",
            source="overseer",
            confidence=CONFIDENCE,
            evidence_op_ids=[op_id] if op_id else [],
        ),
        reason=reason,
        actor="overseer",
    )


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def tier_of(delta: Delta) -> str | None:
    """Which tier drafted ``delta`` ('T3', 'T4'), by its reason; ``None``: another proposer."""
    head = delta.reason.split(":", 1)[0]
    return head if head in ("T3", "T4") else None
