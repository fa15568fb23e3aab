"""Metrics over event results: fill rate, pass^k, citations, cost, the score and the leaderboard.

Owns the definitions (each documented in docs/scenarios.md) and the leaderboard document
written to ``leaderboard.json``. It reads ``EventResult`` records only, never the lake or the
models, so a leaderboard can be recomputed from any run directory.

Score (0-100), per staffer (and per staffer and batch)::

    score = 100 * (0.6 * fill_rate + 0.3 * pass_k + 0.1 * precision)

- ``fill_rate``: workers the client accepted / workers requested, over every event.
- ``pass_k``: share of distinct (batch, scenario, event) solved (filled == requested) in ALL k
  repetitions; k is the number of repetitions.
- ``precision``: workers accepted / workers submitted (1.0 when nothing was submitted), so a
  staffer that throws names at the client pays for it.

The learning curve's points (``learning_curve_points``) carry a 95% Wilson score interval of
the batch's fill rate over its judged events: the workers of one event are judged together by
one client, so they are not independent trials, and the event is the unit. Counting every
worker as a trial would draw the interval narrower than the data allow.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from agentlake.scenarios.results import EventResult
from agentlake.scenarios.scorecard import wilson_interval

SCORE_WEIGHTS = {"fill_rate": 0.6, "pass_k": 0.3, "precision": 0.1}
SCORE_FORMULA = "score = 100 * (0.6 * fill_rate + 0.3 * pass^k + 0.1 * precision)"


class Metrics(BaseModel):
    """Aggregates over a set of event results (one arm, one batch or all batches).

    ``staffer`` is the arm: the staffer's name, with ``@vague``/``@silent`` under those
    feedback modes (``results.arm_name``).
    """

    staffer: str
    feedback: str = "explicit"
    batch: int | None = None
    events: int
    days: int
    repetitions: int
    requested: int
    filled: int
    fill_rate: float
    event_success_rate: float
    pass_k: float
    pass_k_events: int
    precision: float
    lessons_given_per_run: float
    citations_per_run: float
    turns_per_event: float
    input_tokens: int
    output_tokens: int
    tokens_per_event: float
    cost_usd: float
    latency_ms_mean: float
    latency_ms_p95: float
    rescues_attempted: int
    rescues_succeeded: int
    tiers: str = Field("", description="The overseer tiers the staffer ran, e.g. 'T3 T5' (empty: none).")
    double_bookings_caught: int
    double_bookings_submitted: int
    errors: int
    score: float


def _ratio(num: float, den: float, empty: float = 0.0) -> float:
    return num / den if den else empty


def _p95(values: Sequence[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(0.95 * (len(ordered) - 1)))))
    return ordered[index]


def pass_at_k(results: Iterable[EventResult]) -> tuple[float, int]:
    """(share of events solved in every repetition, number of distinct events).

    An event is identified by (staffer, batch, scenario, event id); its repetitions are the k
    runs of that day. pass^k is stricter than the mean success: one failed repetition fails it.
    """
    solved: dict[tuple[str, int, str, str], bool] = {}
    for result in results:
        key = (result.arm, result.batch, result.scenario, result.event_id)
        solved[key] = solved.get(key, True) and result.success
    if not solved:
        return 0.0, 0
    return sum(solved.values()) / len(solved), len(solved)


def score(fill_rate: float, pass_k: float, precision: float) -> float:
    """The documented score, 0-100 (see the module docstring)."""
    w = SCORE_WEIGHTS
    return round(100 * (w["fill_rate"] * fill_rate + w["pass_k"] * pass_k + w["precision"] * precision), 2)


def compute_metrics(results: Sequence[EventResult], *, staffer: str, batch: int | None = None) -> Metrics:
    """Metrics over ``results`` (already filtered to one staffer, and one batch if ``batch``)."""
    requested = sum(r.requested for r in results)
    filled = sum(r.filled for r in results)
    submitted = sum(len(r.accepted) + len({x.worker_id for x in r.rejections}) for r in results)
    days = {r.day_key for r in results}
    reps = {r.repetition for r in results}
    pk, pk_events = pass_at_k(results)
    precision = _ratio(filled, submitted, empty=1.0)
    fill_rate = _ratio(filled, requested)
    latencies = [r.latency_ms for r in results]
    input_tokens = sum(r.input_tokens for r in results)
    output_tokens = sum(r.output_tokens for r in results)
    return Metrics(
        tiers=" ".join(sorted({tier for r in results for tier in r.tiers})),
        staffer=staffer,
        feedback=results[0].feedback if results else "explicit",
        batch=batch,
        events=len(results),
        days=len(days),
        repetitions=len(reps),
        requested=requested,
        filled=filled,
        fill_rate=round(fill_rate, 4),
        event_success_rate=round(_ratio(sum(r.success for r in results), len(results)), 4),
        pass_k=round(pk, 4),
        pass_k_events=pk_events,
        precision=round(precision, 4),
        lessons_given_per_run=round(_ratio(sum(len(r.lessons_given) for r in results), len(days)), 3),
        citations_per_run=round(_ratio(sum(len(r.lessons_cited) for r in results), len(days)), 3),
        turns_per_event=round(_ratio(sum(r.turns for r in results), len(results)), 3),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        tokens_per_event=round(_ratio(input_tokens + output_tokens, len(results)), 1),
        cost_usd=round(sum(r.cost_usd for r in results), 6),
        latency_ms_mean=round(_ratio(sum(latencies), len(latencies)), 2),
        latency_ms_p95=round(_p95(latencies), 2),
        rescues_attempted=sum(r.rescue_attempted for r in results),
        rescues_succeeded=sum(r.rescue_succeeded for r in results),
        double_bookings_caught=sum(r.double_bookings_caught for r in results),
        double_bookings_submitted=sum(r.double_bookings_submitted for r in results),
        errors=sum(r.error is not None for r in results),
        score=score(fill_rate, pk, precision),
    )


def staffers_in_order(results: Iterable[EventResult]) -> list[str]:
    return list(dict.fromkeys(r.arm for r in results))


def batches_of(results: Iterable[EventResult]) -> list[int]:
    return sorted({r.batch for r in results})


def per_batch(results: Sequence[EventResult]) -> list[Metrics]:
    """Metrics for each (staffer, batch), staffers in first-seen order, batches ascending."""
    groups: dict[tuple[str, int], list[EventResult]] = defaultdict(list)
    for result in results:
        groups[(result.arm, result.batch)].append(result)
    return [
        compute_metrics(groups[(staffer, batch)], staffer=staffer, batch=batch)
        for staffer in staffers_in_order(results)
        for batch in batches_of(results)
        if (staffer, batch) in groups
    ]


def learning_curve(results: Sequence[EventResult]) -> dict[str, list[float]]:
    """Fill rate per batch for each arm: the learning curve."""
    curve: dict[str, list[float]] = {}
    for metrics in per_batch(results):
        curve.setdefault(metrics.staffer, []).append(metrics.fill_rate)
    return curve


class CurvePoint(BaseModel):
    """One point of the learning curve: an arm's fill rate in one batch and its 95% interval."""

    batch: int
    fill_rate: float
    events: int
    low: float
    high: float


def learning_curve_points(results: Sequence[EventResult]) -> dict[str, list[CurvePoint]]:
    """The learning curve with a 95% Wilson score interval at each point (over the batch's
    judged events, see the module docstring), arms in first-seen order, batches ascending."""
    out: dict[str, list[CurvePoint]] = {}
    for m in per_batch(results):
        rate = _ratio(m.filled, m.requested)
        ci = wilson_interval(rate * m.events, m.events)
        out.setdefault(m.staffer, []).append(
            CurvePoint(
                batch=m.batch or 0,
                fill_rate=m.fill_rate,
                events=m.events,
                low=round(ci.low, 4),
                high=round(ci.high, 4),
            )
        )
    return out


def curves_by_feedback(results: Sequence[EventResult]) -> dict[str, dict[str, list[float]]]:
    """The learning curve per feedback mode: {mode: {staffer: fill rate per batch}}."""
    out: dict[str, dict[str, list[float]]] = {}
    for mode in dict.fromkeys(r.feedback for r in results):
        mine = [r for r in results if r.feedback == mode]
        for arm, values in learning_curve(mine).items():
            staffer = next(r.staffer for r in mine if r.arm == arm)
            out.setdefault(mode, {})[staffer] = values
    return out


class LeaderboardRow(BaseModel):
    rank: int
    metrics: Metrics
    first_batch_fill_rate: float
    last_batch_fill_rate: float

    @property
    def gain_points(self) -> float:
        return round(100 * (self.last_batch_fill_rate - self.first_batch_fill_rate), 1)


def leaderboard(results: Sequence[EventResult], *, batch: int | None = None) -> list[LeaderboardRow]:
    """Staffers ranked by score (ties: fill rate, then name), over all batches or one.

    ``first/last_batch_fill_rate`` always come from the whole run so the gain is visible even
    when the ranking is restricted to one batch.
    """
    curve = learning_curve(results)
    chosen = [r for r in results if batch is None or r.batch == batch]
    rows = []
    for staffer in staffers_in_order(chosen):
        mine = [r for r in chosen if r.arm == staffer]
        rows.append((compute_metrics(mine, staffer=staffer, batch=batch), curve.get(staffer, [0.0])))
    rows.sort(key=lambda item: (-item[0].score, -item[0].fill_rate, item[0].staffer))
    return [
        LeaderboardRow(rank=i, metrics=m, first_batch_fill_rate=c[0], last_batch_fill_rate=c[-1])
        for i, (m, c) in enumerate(rows, start=1)
    ]


def event_outcomes(results: Sequence[EventResult]) -> list[dict[str, Any]]:
    """Per (staffer, batch, scenario, event): filled/requested summed over repetitions, and pass^k."""
    groups: dict[tuple[str, int, str, str], list[EventResult]] = defaultdict(list)
    for result in results:
        groups[(result.arm, result.batch, result.scenario, result.event_id)].append(result)
    out = []
    for (staffer, batch, scenario, event_id), items in groups.items():
        rules: dict[str, int] = defaultdict(int)
        for item in items:
            for rejection in item.rejections:
                rules[rejection.rule] += 1
        out.append(
            {
                "staffer": staffer,
                "batch": batch,
                "scenario": scenario,
                "event_id": event_id,
                "kind": items[0].kind,
                "role": items[0].role,
                "at": items[0].at,
                "requested": sum(i.requested for i in items),
                "filled": sum(i.filled for i in items),
                "repetitions": len(items),
                "passed_all": all(i.success for i in items),
                "passed_any": any(i.success for i in items),
                "rejections_by_rule": dict(sorted(rules.items())),
            }
        )
    return out


def leaderboard_document(results: Sequence[EventResult], *, run_id: str | None = None) -> dict[str, Any]:
    """The JSON written to ``leaderboard.json``: ranking, per-batch metrics, curve, per-event."""
    return {
        "run_id": run_id,
        "score_formula": SCORE_FORMULA,
        "batches": batches_of(results),
        "leaderboard": [
            {
                "rank": row.rank,
                "gain_points": row.gain_points,
                **row.metrics.model_dump(),
                "first_batch_fill_rate": row.first_batch_fill_rate,
                "last_batch_fill_rate": row.last_batch_fill_rate,
            }
            for row in leaderboard(results)
        ],
        "per_batch": [m.model_dump() for m in per_batch(results)],
        "learning_curve": learning_curve(results),
        "learning_curve_points": {
            arm: [point.model_dump() for point in points]
            for arm, points in learning_curve_points(results).items()
        },
        "learning_curve_by_feedback": curves_by_feedback(results),
        "events": event_outcomes(results),
    }


LEADERBOARD_COLUMNS = [
    "#",
    "staffer",
    "score",
    "fill",
    "by batch",
    "pass^k",
    "prec",
    "cites/run",
    "turns/ev",
    "tokens/ev",
    "cost $",
    "ms/ev",
    "rescued",
    "dbl-bk caught/sent",
    "tiers",
]


def leaderboard_rows(
    rows: Sequence[LeaderboardRow], curve: dict[str, list[float]] | None = None
) -> list[list[Any]]:
    """Table cells for ``LEADERBOARD_COLUMNS`` (percentages as text, as a person reads them).

    ``curve`` (``learning_curve``) fills "by batch" (fill rate per batch); without it, first and last batch.
    """
    out = []
    for row in rows:
        m = row.metrics
        points = (curve or {}).get(m.staffer) or [row.first_batch_fill_rate, row.last_batch_fill_rate]
        out.append(
            [
                row.rank,
                m.staffer,
                f"{m.score:.1f}",
                f"{100 * m.fill_rate:.1f}%",
                ">".join(f"{100 * v:.0f}" for v in points) + "%",
                f"{100 * m.pass_k:.0f}%",
                f"{100 * m.precision:.0f}%",
                f"{m.citations_per_run:.1f}",
                f"{m.turns_per_event:.1f}",
                f"{m.tokens_per_event:.0f}",
                f"{m.cost_usd:.4f}",
                f"{m.latency_ms_mean:.0f}",
                f"{m.rescues_succeeded}/{m.rescues_attempted}",
                f"{m.double_bookings_caught}/{m.double_bookings_submitted}",
                m.tiers or "-",
            ]
        )
    return out
