"""A staffer's overseer tiers in a scenario run (profile keys ``t3_review``, ``t4_synthesis``, ``t5_gate``).

T3 runs inside a day, after each judged event (``t3_deltas``, called by ``day.run_day``); T4
between batches, over the arm's judged events so far (``t4_deltas``); T5 is the gatekeeper the
arm's learning cycles run with (``gatekeeper``: between batches and within a day). T3's and
T4's drafts travel with the overseer's other proposals to the learner, which applies them; no
tier writes a lesson. It does not own the tiers' prompts (``agents.overseer_tiers``) nor the
replay (``learn.gate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentlake.agents.outcome import TaskOutcome
    from agentlake.learn import Delta
    from agentlake.learn.gate import Gatekeeper
    from agentlake.observe import Observer
    from agentlake.observe.model import ObservedOp
    from agentlake.scenarios.profile import StafferProfile
    from agentlake.settings import Settings
    from agentlake.workforce.order import FillOrder

JUDGED_ENDPOINT = "fill.judged"


def t3_deltas(
    profile: StafferProfile,
    settings: Settings,
    order: FillOrder,
    op_id: str | None,
    ops: Sequence[ObservedOp],
    outcome: TaskOutcome | None,
) -> list[Delta]:
    """T3's drafts for one judged event (its ``fill.judged`` op among the day's ``ops``); ``[]``
    when the tier is off or the op was not recorded."""
    model = profile.resolved_models(settings).t3
    if not profile.t3_review or not model or op_id is None:
        return []
    op = next((found for found in reversed(ops) if found.id == op_id), None)
    if op is None:
        return []
    # Lazy (start-up time): the tier's model layer loads only for a staffer that runs it.
    from agentlake.agents.overseer_tiers import review_event

    concerns = outcome.concerns if outcome is not None else []
    return review_event(model, order, op, concerns, temperature=settings.overseer_temperature)


def t4_deltas(
    profile: StafferProfile, settings: Settings, observer: Observer, run_prefix: str
) -> list[Delta]:
    """T4's cross-day drafts over the arm's judged events recorded so far (``run_prefix``:
    the arm's run ids' prefix, ending in ``*``); ``[]`` when the tier is off."""
    model = profile.resolved_models(settings).t4
    if not profile.t4_synthesis or not model:
        return []
    from agentlake.agents.overseer_tiers import synthesise_days
    from agentlake.learn import read_ops

    ops = read_ops(observer, run_id=run_prefix, endpoint=JUDGED_ENDPOINT)
    return synthesise_days(model, ops, temperature=settings.overseer_temperature)


def gatekeeper(profile: StafferProfile, settings: Settings) -> Gatekeeper | None:
    """The arm's gatekeeper (T5), or ``None`` when the tier is off."""
    if not profile.t5_gate:
        return None
    from agentlake.learn.gate import Gatekeeper

    model = profile.resolved_models(settings).t5
    return Gatekeeper(model=model, temperature=settings.overseer_temperature)


def tier_counts(proposals: Sequence[Delta], gate: Sequence[dict[str, Any]]) -> dict[str, int]:
    """What the tiers did in one learning: drafts proposed by T3 and T4, and the gatekeeper's
    verdicts (passed, refused, waiting)."""
    from agentlake.agents.overseer_tiers import tier_of

    counts: dict[str, int] = {}
    for delta in proposals:
        tier = tier_of(delta)
        if tier is not None:
            counts[f"{tier.lower()}_proposed"] = counts.get(f"{tier.lower()}_proposed", 0) + 1
    for verdict in gate:
        key = f"t5_{verdict['outcome']}"
        counts[key] = counts.get(key, 0) + 1
    return counts
