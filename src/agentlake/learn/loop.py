"""Running the loop: ops -> extractor -> curated deltas, on demand and on a schedule.

Owns ``learn_from_ops`` (one extraction over given ops, idempotent by op id), ``learn_cycle``
(extraction + measured effects + decay/expiry + promotion, what the schedule and
``agentlake lessons learn`` run), ``read_recent_ops`` (from the observer) and
``LearningScheduler`` (a daemon thread long-running services start; a failing cycle is
logged and counted, never raised into the host). It does not own the rules (``curation``),
the extractors (``extract``/``heuristic``/``llm_extractor``) or the op store (``observe``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentlake.learn.extractor import ExtractContext, Extractor, get_extractor
from agentlake.learn.model import DEFAULT_PROJECT, AppliedDelta, EffectReport, LessonEvent

if TYPE_CHECKING:
    from agentlake.learn.store import LessonStore
    from agentlake.observe.model import ObservedOp
    from agentlake.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_OPS_LIMIT = 2000


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """'30m', '2h', '7d', '90s' (ago) or an ISO time -> an aware datetime; ``None`` stays ``None``.

    Raises ``UserError`` showing the accepted forms.
    """
    import re
    from datetime import UTC, timedelta

    from agentlake.errors import UserError

    if text is None or not text.strip():
        return None
    text = text.strip()
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhdw])", text)
    if found:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[found.group(2)]
        return (now or datetime.now(UTC)) - timedelta(**{unit: float(found.group(1))})
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise UserError(
            f"cannot read --since {text!r}: use 30m, 2h, 7d or an ISO time like 2026-11-21T08:00"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _resolve(extractor: str | Extractor | None, settings: Settings) -> Extractor:
    if extractor is None or isinstance(extractor, str):
        return get_extractor(extractor, settings)
    return extractor


def learn_from_ops(
    store: LessonStore,
    ops: Sequence[ObservedOp],
    *,
    extractor: str | Extractor | None = None,
    settings: Settings | None = None,
    project_id: str | None = None,
    context: ExtractContext | None = None,
) -> list[AppliedDelta]:
    """Extract deltas from the ops not learned from before and apply them by curation.

    ``extractor``: a registered name (default ``settings.learn_extractor``) or an instance
    (keep one instance across calls so the LLM extractor's breaker remembers). Ops already
    learned from are skipped, so feeding overlapping windows never double-counts. The ops'
    ids are marked learned in the same transaction as the deltas.
    """
    settings = settings or store.settings
    fresh = store.unlearned([op.id for op in ops])
    new_ops = [op for op in ops if op.id in fresh]
    if not new_ops:
        return []
    context = context or ExtractContext(project_id=project_id or DEFAULT_PROJECT)
    deltas = _resolve(extractor, settings).extract(new_ops, context)
    return store.propose(deltas, learned_op_ids=[op.id for op in new_ops])


class CycleReport(BaseModel):
    """What one learning cycle did."""

    ops_read: int = 0
    ops_new: int = 0
    extractor: str = ""
    applied: list[AppliedDelta] = Field(default_factory=list)
    effects: list[EffectReport] = Field(default_factory=list)
    maintenance: list[LessonEvent] = Field(default_factory=list)
    promotions: list[LessonEvent] = Field(default_factory=list)
    notes: dict[str, Any] = Field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Outcomes of the applied deltas, e.g. {'added': 3, 'confirmed': 5}."""
        counts: dict[str, int] = {}
        for applied in self.applied:
            counts[applied.outcome] = counts.get(applied.outcome, 0) + 1
        return counts


def learn_cycle(
    store: LessonStore,
    ops: Sequence[ObservedOp],
    *,
    extractor: str | Extractor | None = None,
    project_id: str | None = None,
    measure: bool = True,
    maintain: bool = True,
    promote: bool = True,
) -> CycleReport:
    """One full cycle: learn from ``ops``, measure effects, decay/expire, promote."""
    from agentlake.learn.effect import measure_effects

    instance = _resolve(extractor, store.settings)
    context = ExtractContext(project_id=project_id or DEFAULT_PROJECT)
    report = CycleReport(ops_read=len(ops), extractor=instance.name)
    report.ops_new = len(store.unlearned([op.id for op in ops]))
    report.applied = learn_from_ops(store, ops, extractor=instance, context=context)
    if measure:
        report.effects = measure_effects(store)
    if maintain:
        report.maintenance = store.maintain()
    if promote:
        report.promotions = store.promote()
    report.notes = dict(context.notes)
    return report


def read_recent_ops(
    settings: Settings | None = None,
    *,
    since: datetime | None = None,
    limit: int = DEFAULT_OPS_LIMIT,
    source: Any = None,
) -> list[ObservedOp]:
    """The newest ``limit`` ops (since ``since``), oldest first, from ``source``.

    ``source``: anything with ``query(**filters)`` (an ``Observer``, ``OpStore``, remote sink);
    by default ``agentlake.observe.open_reader`` (the store file read-only, or the running
    observer service when another process holds the file), closed afterwards.
    """
    from agentlake.errors import UserError

    if limit < 1:
        raise UserError(f"limit must be >= 1, got {limit}")
    owned = source is None
    if owned:
        from agentlake.observe import open_reader

        source = open_reader(settings)
    try:
        filters: dict[str, Any] = {"limit": limit}
        if since is not None:
            filters["since"] = since
        ops = list(source.query(**filters))
    finally:
        if owned and hasattr(source, "close"):
            source.close()
    return sorted(ops, key=lambda op: (op.ts, op.id))


class LearningScheduler:
    """Runs :func:`learn_cycle` every ``settings.learn_interval_s`` in a daemon thread.

    ``ops_source``: what ops are read from (``query(**filters)``), e.g. the process's
    ``Observer``. Each cycle reads the ops since the newest one seen before. ``run_once`` runs
    a cycle now (tests, ``lessons learn``). A failing cycle is logged, counted in ``errors``
    and retried next interval; it never raises into the host.
    """

    def __init__(
        self,
        store: LessonStore,
        ops_source: Any,
        *,
        interval_s: float | None = None,
        extractor: str | Extractor | None = None,
        project_id: str | None = None,
        limit: int = DEFAULT_OPS_LIMIT,
    ) -> None:
        self.store = store
        self.ops_source = ops_source
        self.interval_s = interval_s if interval_s is not None else store.settings.learn_interval_s
        self.extractor = _resolve(extractor, store.settings)  # one instance: its breaker persists
        self.project_id = project_id
        self.limit = limit
        self.cycles = 0
        self.errors = 0
        self.last_error: str | None = None
        self.last_report: CycleReport | None = None
        self._since: datetime | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._run_lock = threading.Lock()
        self.on_cycle: Callable[[CycleReport], None] | None = None

    def run_once(self) -> CycleReport | None:
        """One cycle now; ``None`` if it failed (see ``last_error``)."""
        with self._run_lock:
            try:
                ops = read_recent_ops(
                    self.store.settings, since=self._since, limit=self.limit, source=self.ops_source
                )
                report = learn_cycle(self.store, ops, extractor=self.extractor, project_id=self.project_id)
            except Exception as exc:  # the host must survive a bad cycle
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"[:500]
                log.exception("learning cycle failed")
                return None
            if ops:
                self._since = ops[-1].ts
            self.cycles += 1
            self.last_report = report
        if self.on_cycle is not None:
            try:
                self.on_cycle(report)
            except Exception:
                log.exception("learning cycle callback failed")
        return report

    def start(self) -> LearningScheduler:
        """Start the thread (idempotent); the first cycle runs after one interval."""
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="learning-scheduler", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.run_once()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current cycle; waits up to ``timeout`` seconds."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()
