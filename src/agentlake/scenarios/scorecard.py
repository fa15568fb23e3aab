"""The A/B scorecard: two staffers of one run compared metric by metric, with confidence intervals.

Owns the statistics: Wilson score intervals for each arm's event success rate, and a seeded
bootstrap for everything else (fill rate, pass^k, turns, tokens, cost, latency) and for every
difference B - A. When both arms ran the same event instances (same batch, scenario,
repetition, event) the bootstrap resamples PAIRS, which removes the scenarios' own difficulty
from the noise; otherwise each arm is resampled on its own. It reads ``EventResult`` only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, overload

import numpy as np
from pydantic import BaseModel

from agentlake.errors import UserError
from agentlake.scenarios.results import EventResult

Direction = Literal["higher", "lower"]


class Interval(BaseModel):
    low: float
    high: float


class ScoreRow(BaseModel):
    metric: str
    better: Direction
    a: float
    b: float
    a_ci: Interval
    b_ci: Interval
    diff: float
    diff_ci: Interval
    verdict: str


class Scorecard(BaseModel):
    a: str
    b: str
    batch: int | None
    paired: bool
    confidence: float
    resamples: int
    a_events: int
    b_events: int
    rows: list[ScoreRow]


def wilson_interval(successes: float, trials: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion; (0, 1) with no trials.

    ``successes`` may be fractional: a proportion observed over ``trials`` units, as the
    learning curve's fill rate over a batch's judged events (``metrics.learning_curve_points``).
    """
    if trials == 0:
        return Interval(low=0.0, high=1.0)
    z = _z(confidence)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return Interval(low=max(0.0, centre - half), high=min(1.0, centre + half))


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


# A metric is (numerator, denominator) per unit; its value is sum(num) / sum(den).
_Extract = Callable[[EventResult], tuple[float, float]]
_METRICS: list[tuple[str, Direction, _Extract]] = [
    ("fill_rate", "higher", lambda r: (r.filled, r.requested)),
    ("event_success_rate", "higher", lambda r: (float(r.success), 1.0)),
    ("precision", "higher", lambda r: (r.filled, len(r.accepted) + len({x.worker_id for x in r.rejections}))),
    ("citations_per_event", "higher", lambda r: (len(r.lessons_cited), 1.0)),
    ("turns_per_event", "lower", lambda r: (r.turns, 1.0)),
    ("tokens_per_event", "lower", lambda r: (r.input_tokens + r.output_tokens, 1.0)),
    ("cost_usd_per_event", "lower", lambda r: (r.cost_usd, 1.0)),
    ("latency_ms_mean", "lower", lambda r: (r.latency_ms, 1.0)),
    ("double_bookings_submitted_per_event", "lower", lambda r: (r.double_bookings_submitted, 1.0)),
]


def _instance_key(r: EventResult) -> tuple[int, str, int, str]:
    return (r.batch, r.scenario, r.repetition, r.event_id)


def _arrays(results: Sequence[EventResult], extract: _Extract) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.array([extract(r) for r in results], dtype=float).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


@overload
def _ratio(num: np.ndarray, den: np.ndarray) -> float: ...
@overload
def _ratio(num: np.ndarray, den: np.ndarray, idx: np.ndarray) -> np.ndarray: ...
def _ratio(num: np.ndarray, den: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray | float:
    if idx is None:
        total = den.sum()
        return float(num.sum() / total) if total else 0.0
    totals = den[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num[idx].sum(axis=1) / totals
    return np.where(totals > 0, out, 0.0)


def _percentile(samples: np.ndarray, confidence: float) -> Interval:
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return Interval(low=round(float(low), 6), high=round(float(high), 6))


def _verdict(diff: Interval, better: Direction, a: str, b: str) -> str:
    if diff.low > 0:
        winner = b if better == "higher" else a
    elif diff.high < 0:
        winner = a if better == "higher" else b
    else:
        return "no clear difference"
    return f"{winner} better"


def compare(
    results: Sequence[EventResult],
    a: str,
    b: str,
    *,
    batch: int | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Scorecard:
    """Compare staffer ``b`` against ``a`` (differences are B - A).

    ``batch`` restricts both arms to one batch (e.g. the last, after learning). Raises
    ``UserError`` when a staffer has no results (naming the staffers the run has).
    """
    if not 0.5 <= confidence < 1:
        raise UserError("confidence must be in [0.5, 1), e.g. 0.95")
    chosen = [r for r in results if batch is None or r.batch == batch]
    known = sorted({r.arm for r in results})
    arm_a = [r for r in chosen if r.arm == a]
    arm_b = [r for r in chosen if r.arm == b]
    for name, arm in ((a, arm_a), (b, arm_b)):
        if not arm:
            where = f" in batch {batch}" if batch is not None else ""
            raise UserError(
                f"no results for staffer {name!r}{where}; this run has {', '.join(known) or 'no staffers'}"
            )
    keys_a = {_instance_key(r): r for r in arm_a}
    keys_b = {_instance_key(r): r for r in arm_b}
    paired = set(keys_a) == set(keys_b) and len(keys_a) == len(arm_a) and len(keys_b) == len(arm_b)
    if paired:
        order = sorted(keys_a)
        arm_a, arm_b = [keys_a[k] for k in order], [keys_b[k] for k in order]
    rng = np.random.default_rng(seed)
    idx_a = rng.integers(0, len(arm_a), size=(resamples, len(arm_a)))
    idx_b = idx_a if paired else rng.integers(0, len(arm_b), size=(resamples, len(arm_b)))
    rows = []
    for metric, better, extract in _METRICS:
        num_a, den_a = _arrays(arm_a, extract)
        num_b, den_b = _arrays(arm_b, extract)
        boot_a, boot_b = _ratio(num_a, den_a, idx_a), _ratio(num_b, den_b, idx_b)
        value_a, value_b = _ratio(num_a, den_a), _ratio(num_b, den_b)
        if metric == "event_success_rate":
            a_ci = wilson_interval(int(num_a.sum()), len(arm_a), confidence)
            b_ci = wilson_interval(int(num_b.sum()), len(arm_b), confidence)
        else:
            a_ci, b_ci = _percentile(boot_a, confidence), _percentile(boot_b, confidence)
        diff_ci = _percentile(boot_b - boot_a, confidence)
        rows.append(
            ScoreRow(
                metric=metric,
                better=better,
                a=round(value_a, 6),
                b=round(value_b, 6),
                a_ci=a_ci,
                b_ci=b_ci,
                diff=round(value_b - value_a, 6),
                diff_ci=diff_ci,
                verdict=_verdict(diff_ci, better, a, b),
            )
        )
    rows.insert(2, _pass_k_row(arm_a, arm_b, a, b, confidence, resamples, seed))
    return Scorecard(
        a=a,
        b=b,
        batch=batch,
        paired=paired,
        confidence=confidence,
        resamples=resamples,
        a_events=len(arm_a),
        b_events=len(arm_b),
        rows=rows,
    )


def _pass_k_row(
    arm_a: Sequence[EventResult],
    arm_b: Sequence[EventResult],
    a: str,
    b: str,
    confidence: float,
    resamples: int,
    seed: int,
) -> ScoreRow:
    """pass^k resamples whole events (all their repetitions), paired by event when both arms have it."""

    def solved(arm: Sequence[EventResult]) -> dict[tuple[int, str, str], bool]:
        out: dict[tuple[int, str, str], bool] = {}
        for r in arm:
            key = (r.batch, r.scenario, r.event_id)
            out[key] = out.get(key, True) and r.success
        return out

    sa, sb = solved(arm_a), solved(arm_b)
    paired = set(sa) == set(sb)
    keys_a = sorted(sa)
    keys_b = keys_a if paired else sorted(sb)
    va = np.array([sa[k] for k in keys_a], dtype=float)
    vb = np.array([sb[k] for k in keys_b], dtype=float)
    rng = np.random.default_rng(seed + 1)
    ia = rng.integers(0, len(va), size=(resamples, len(va)))
    ib = ia if paired else rng.integers(0, len(vb), size=(resamples, len(vb)))
    boot_a, boot_b = va[ia].mean(axis=1), vb[ib].mean(axis=1)
    diff_ci = _percentile(boot_b - boot_a, confidence)
    return ScoreRow(
        metric="pass_k",
        better="higher",
        a=round(float(va.mean()), 6),
        b=round(float(vb.mean()), 6),
        a_ci=wilson_interval(int(va.sum()), len(va), confidence),
        b_ci=wilson_interval(int(vb.sum()), len(vb), confidence),
        diff=round(float(vb.mean() - va.mean()), 6),
        diff_ci=diff_ci,
        verdict=_verdict(diff_ci, "higher", a, b),
    )
