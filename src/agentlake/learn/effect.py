"""Measured effect: did the runs given a lesson do better than comparable runs without it?

Owns run outcomes (``record_outcome``) and the comparison (``measure_effects``). A run's value
is its ``score`` when given, else 1.0 for success and 0.0 for failure. For each run a lesson
was given to, the baseline is the mean value of runs with the same task signature
(``sig_hash``) that were NOT given that lesson; the run is helpful if it beat the baseline,
harmful if it fell short. Each (lesson, run) pair is measured once, when a baseline exists.
Counts come from outcomes only, never from a model's opinion.

Consequences, written to the lesson's history with the numbers:
- each newly helpful run is a confirmation (+0.05), each harmful one a failure (-0.05);
- at >= ``min_runs`` measured runs (the lesson's domain's ``min_runs_for_retire``, else
  ``settings.learn_min_runs_for_retire``), a negative mean effect retires the lesson, a positive
  one activates a pending lesson.

Also owns the citations (a lesson given to or used by a run: ``cite``, ``citation_rows``), the
other side of the comparison. Functions over the lesson tables (``db.LessonTables``: the store or
its ``LessonDB``); writes go through one ``db.Transaction``. It does not own the lesson
lifecycle rules (``curation``) or the tables themselves (``db``, ``schema``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentlake.errors import NotFoundError, UserError
from agentlake.learn.curation import CONFIRM_STEP, FAIL_STEP, with_confidence
from agentlake.learn.db import naive
from agentlake.learn.domain import min_runs_for
from agentlake.learn.model import EffectReport, Lesson, TaskKey

if TYPE_CHECKING:
    from agentlake.learn.db import LessonTables, Transaction

EPSILON = 1e-9
_CITATION_COLUMNS = ("run_id", "lesson_id", "agent_id", "sig_hash", "given_at", "used")


def cite(
    txn: Transaction,
    run_id: str,
    lesson_ids: Sequence[str],
    *,
    used: bool,
    agent_id: str | None = None,
    sig_hash: str | None = None,
) -> None:
    """Record in ``txn`` lessons given to (``used=False``) or used by (``used=True``) a run;
    given lessons are last used now once committed. ``NotFoundError`` for unknown ids (the
    caller's transaction then writes nothing)."""
    if not run_id:
        raise UserError("record_citation needs a run_id")
    ids = list(dict.fromkeys(lesson_ids))
    missing = [lesson_id for lesson_id in ids if lesson_id not in txn.lessons]
    if missing:
        raise NotFoundError(f"unknown lesson id(s) {missing}")
    at = naive(txn.now)
    for lesson_id in ids:
        txn.insert(
            "citations",
            {
                "run_id": run_id,
                "lesson_id": lesson_id,
                "agent_id": agent_id,
                "sig_hash": sig_hash,
                "given_at": at,
                "used": used,
            },
            conflict="ON CONFLICT (run_id, lesson_id) DO UPDATE SET used = citations.used OR excluded.used, "
            "agent_id = coalesce(excluded.agent_id, citations.agent_id), "
            "sig_hash = coalesce(excluded.sig_hash, citations.sig_hash)",
        )
    txn.used += ids


def citation_rows(
    tables: LessonTables, *, run_id: str | None = None, lesson_id: str | None = None
) -> list[dict[str, Any]]:
    """Citation rows (run_id, lesson_id, agent_id, sig_hash, given_at, used)."""
    where, params = [], []
    if run_id:
        where.append("run_id = ?")
        params.append(run_id)
    if lesson_id:
        where.append("lesson_id = ?")
        params.append(lesson_id)
    sql = f"SELECT {', '.join(_CITATION_COLUMNS)} FROM citations"
    if where:
        sql += " WHERE " + " AND ".join(where)
    rows = tables.query(sql + " ORDER BY given_at, run_id, lesson_id", params)
    return [dict(zip(_CITATION_COLUMNS, row, strict=True)) for row in rows]


def record_outcome(
    store: LessonTables, run_id: str, task: TaskKey, success: bool, score: float | None = None
) -> None:
    """Record how a run ended (recording the same run again replaces its outcome)."""
    if not run_id:
        raise UserError("record_outcome needs a run_id")
    if score is not None and not (score == score and abs(score) != float("inf")):
        raise UserError(f"score must be a finite number, got {score!r}")
    with store.transaction() as txn:
        txn.execute(
            "INSERT INTO outcomes (run_id, sig_hash, task, success, score, recorded_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (run_id) DO UPDATE SET sig_hash = excluded.sig_hash, task = excluded.task, "
            "success = excluded.success, score = excluded.score, recorded_at = excluded.recorded_at",
            [run_id, task.sig_hash(), task.model_dump_json(), bool(success), score, naive(txn.now)],
        )


def _value(success: bool, score: float | None) -> float:
    return float(score) if score is not None else (1.0 if success else 0.0)


def measure_effects(
    store: LessonTables, *, min_runs: int | None = None, may_activate: Callable[[Lesson], bool] | None = None
) -> list[EffectReport]:
    """Measure every lesson given to runs with recorded outcomes; update counts and status.

    ``may_activate``: whether a pending lesson may become active (the gatekeeper's: only one
    that passed its replay); ``None``: any. Returns one report per lesson with at least one
    measured run, sorted by lesson id.
    """
    min_runs = store.settings.learn_min_runs_for_retire if min_runs is None else min_runs
    if min_runs < 1:
        raise UserError(f"min_runs must be >= 1, got {min_runs}")
    outcomes = {
        run_id: (sig, _value(success, score))
        for run_id, sig, success, score in store.query(
            "SELECT run_id, sig_hash, success, score FROM outcomes"
        )
    }
    given: dict[str, set[str]] = defaultdict(set)
    for lesson_id, run_id in store.query("SELECT lesson_id, run_id FROM citations"):
        given[lesson_id].add(run_id)
    measured: dict[str, dict[str, float]] = defaultdict(dict)
    for lesson_id, run_id, delta in store.query("SELECT lesson_id, run_id, delta FROM effects"):
        measured[lesson_id][run_id] = delta
    runs_by_sig: dict[str, list[str]] = defaultdict(list)
    for run_id, (sig, _) in outcomes.items():
        runs_by_sig[sig].append(run_id)

    reports: list[EffectReport] = []
    with store.transaction() as txn:
        for lesson_id in sorted(given):
            lesson = txn.get(lesson_id)
            if lesson is None:
                continue
            new: dict[str, tuple[float, float]] = {}
            for run_id in sorted(given[lesson_id]):
                if run_id not in outcomes or run_id in measured[lesson_id]:
                    continue
                sig, value = outcomes[run_id]
                baseline = [outcomes[r][1] for r in runs_by_sig[sig] if r not in given[lesson_id]]
                if not baseline:
                    continue
                new[run_id] = (value - sum(baseline) / len(baseline), sum(baseline) / len(baseline))
            for run_id, (delta, _) in new.items():
                verdict = "helpful" if delta > EPSILON else "harmful" if delta < -EPSILON else "neutral"
                txn.insert(
                    "effects",
                    {
                        "lesson_id": lesson_id,
                        "run_id": run_id,
                        "delta": delta,
                        "verdict": verdict,
                        "measured_at": naive(txn.now),
                    },
                )
                measured[lesson_id][run_id] = delta
            deltas = measured[lesson_id]
            if not deltas:
                continue
            new_helpful = sum(1 for d, _ in new.values() if d > EPSILON)
            new_harmful = sum(1 for d, _ in new.values() if d < -EPSILON)
            if new_helpful or new_harmful:
                updated = lesson.model_copy(
                    update={"helpful": lesson.helpful + new_helpful, "harmful": lesson.harmful + new_harmful}
                )
                if lesson.status in ("pending", "active"):
                    updated = with_confidence(
                        updated, lesson.confidence + CONFIRM_STEP * new_helpful - FAIL_STEP * new_harmful
                    )
                    held = may_activate is not None and not may_activate(lesson)
                    if held and lesson.status == "pending" and updated.status == "active":
                        updated = updated.model_copy(update={"status": "pending"})
                lesson = txn.record(
                    "measure",
                    updated,
                    actor="code",
                    reason=f"{new_helpful} helpful, {len(new) - new_helpful - new_harmful} neutral, {new_harmful} harmful run(s) "
                    "against comparable runs without the lesson",
                    data={"runs": {run_id: round(d, 4) for run_id, (d, _) in sorted(new.items())[:20]}},
                )
            n = len(deltas)
            effect = sum(deltas.values()) / n
            with_values = [outcomes[r][1] for r in deltas if r in outcomes]
            mean_with = sum(with_values) / len(with_values) if with_values else None
            mean_without = mean_with - effect if mean_with is not None else None
            evidence = {
                "runs_with": n,
                "effect": round(effect, 4),
                "mean_with": None if mean_with is None else round(mean_with, 4),
                "mean_without": None if mean_without is None else round(mean_without, 4),
                "min_runs": min_runs,
                "worst_runs": {
                    r: round(d, 4) for r, d in sorted(deltas.items(), key=lambda item: item[1])[:5]
                },
            }
            action = "none"
            runs_needed = min_runs_for(lesson.domain, min_runs)
            evidence["min_runs"] = runs_needed
            if lesson.status in ("pending", "active") and n >= runs_needed and effect < -EPSILON:
                txn.record(
                    "retire",
                    lesson.model_copy(update={"status": "retired"}),
                    actor="code",
                    reason=f"measured harmful: mean effect {effect:+.3f} over {n} runs (min {runs_needed})",
                    data=evidence,
                )
                action = "retired"
            elif (
                lesson.status == "pending"
                and n >= runs_needed
                and effect > EPSILON
                and (may_activate is None or may_activate(lesson))
            ):
                txn.record(
                    "activate",
                    lesson.model_copy(update={"status": "active"}),
                    actor="code",
                    reason=f"measured helpful: mean effect {effect:+.3f} over {n} runs (min {runs_needed})",
                    data=evidence,
                )
                action = "activated"
            current = txn.lessons[lesson_id]
            reports.append(
                EffectReport(
                    lesson_id=lesson_id,
                    runs_with=n,
                    mean_with=mean_with,
                    mean_without=mean_without,
                    effect=effect,
                    helpful=current.helpful,
                    harmful=current.harmful,
                    new_runs=len(new),
                    action=action,
                )
            )
    return reports


def effect_rows(store: LessonTables, lesson_id: str) -> list[dict[str, object]]:
    """The measured runs of one lesson (run_id, delta, verdict, measured_at), oldest first."""
    rows = store.query(
        "SELECT run_id, delta, verdict, measured_at FROM effects WHERE lesson_id = ? ORDER BY measured_at, run_id",
        [lesson_id],
    )
    return [dict(zip(("run_id", "delta", "verdict", "measured_at"), row, strict=True)) for row in rows]
