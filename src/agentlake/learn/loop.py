"""Running the loop: recorded ops -> outcomes, citations and lessons, on demand and on a schedule.

There is one loop, and it reads what the witness recorded. ``learn_cycle`` is one turn of it
over given ops: the outcomes and citations the ops state (``record_outcomes``, the op
convention below), the judged evidence they state (``evidence.record_evidence``), extraction (``learn_from_ops``, idempotent by op id), deltas proposed
directly (the overseer's), the gatekeeper's replay when the cycle is gated (``gate``), measured
effects, decay/expiry and promotion. ``learn_recorded``
is "learn now from these recorded ops": it reads them from the observer (``read_ops``, by
filters such as a run-id prefix) and runs the cycle; ``learn_between_batches``
is that over one arm's batch of a scenario run, into the arm's own store. The
``LearningScheduler`` (a daemon thread long-running services start) and ``agentlake lessons
learn`` run the same cycle over recent ops (``read_recent_ops``); a failing scheduled cycle
is logged and counted, never raised into the host.

The outcome convention: an op whose ``attributes.outcome`` is ``{"task": <TaskKey
fields>, "success": bool, "score": float | None}`` states how run ``run_id``
ended; its ``attributes.lessons_given`` and ``lessons_cited`` are the lessons the run was
given and said it used (``outcome_attributes`` builds it). Citations of lessons the store
does not hold are skipped. It does not own the rules (``curation``), the extractors
(``extractor``/``heuristic``/``induction``/``llm_extractor``) or the op store (``observe``).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentlake.errors import UserError
from agentlake.learn.effect import measure_effects, record_outcome
from agentlake.learn.evidence import record_evidence
from agentlake.learn.extractor import ExtractContext, Extractor, PoolChecker, get_extractor
from agentlake.learn.gate import Gatekeeper, Verdict
from agentlake.learn.model import (
    DEFAULT_PROJECT,
    AppliedDelta,
    Delta,
    EffectReport,
    LessonEvent,
    TaskKey,
)
from agentlake.learn.store import LessonStore, PgSchema
from agentlake.observe import open_reader

if TYPE_CHECKING:
    from agentlake.lake import Lake
    from agentlake.observe import OpReader
    from agentlake.observe.model import ObservedOp
    from agentlake.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_OPS_LIMIT = 2000
# Ops read per query when reading everything a filter matches (the observer service's page cap).
READ_PAGE = 1000
# Pages the scheduler reads in one cycle; a busier log is read on over the next cycles.
MAX_PAGES = 50
OUTCOME = "outcome"


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """'30m', '2h', '7d', '90s' (ago) or an ISO time -> an aware datetime; ``None`` stays ``None``.

    Raises ``UserError`` showing the accepted forms.
    """
    import re
    from datetime import UTC, timedelta

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


def learnable_ops(ops: Sequence[ObservedOp], settings: Settings) -> list[ObservedOp]:
    """The ops lessons may be learned from: those whose origin (``ObservedOp.origin``: the door
    an op came through, else its source) is in ``learn_sources`` and whose endpoint matches
    ``learn_endpoints`` (a trailing ``*`` matches a prefix). Outside traces (``otlp``), events
    posted from outside (``external``) and everything recorded while serving a gateway or MCP
    request, bad requests included, teach nothing unless those settings name them."""
    sources = {part.strip() for part in settings.learn_sources.split(",") if part.strip()}
    exact, prefixes = set(), []
    for part in (part.strip() for part in settings.learn_endpoints.split(",")):
        if part.endswith("*"):
            prefixes.append(part[:-1])
        elif part:
            exact.add(part)
    starts = tuple(prefixes)
    return [
        op for op in ops if op.origin in sources and (op.endpoint in exact or op.endpoint.startswith(starts))
    ]


def learn_from_ops(
    store: LessonStore,
    ops: Sequence[ObservedOp],
    *,
    extractor: str | Extractor | None = None,
    settings: Settings | None = None,
    project_id: str | None = None,
    context: ExtractContext | None = None,
    hold: bool = False,
) -> list[AppliedDelta]:
    """Extract deltas from the ops not learned from before and apply them by curation.

    ``extractor``: a registered name (default ``settings.learn_extractor``) or an instance
    (keep one instance across calls so the LLM extractor's breaker remembers). Ops already
    learned from are skipped, so feeding overlapping windows never double-counts. The ops'
    ids are marked learned in the same transaction as the deltas. ``hold``: no lesson they
    add or change may activate (a gated cycle: the gatekeeper decides).
    """
    settings = settings or store.settings
    fresh = store.unlearned([op.id for op in ops])
    new_ops = [op for op in ops if op.id in fresh]
    if not new_ops:
        return []
    context = context or ExtractContext(project_id=project_id or DEFAULT_PROJECT)
    deltas = _resolve(extractor, settings).extract(new_ops, context)
    return store.propose(held(deltas) if hold else deltas, learned_op_ids=[op.id for op in new_ops])


def held(deltas: Sequence[Delta]) -> list[Delta]:
    """``deltas`` that may not activate a lesson (``Delta.activate`` false)."""
    return [delta.model_copy(update={"activate": False}) for delta in deltas]


def outcome_attributes(task: TaskKey, success: bool, score: float | None = None) -> dict[str, Any]:
    """The ``attributes.outcome`` of an op that states how its run ended (see the module docstring)."""
    return {OUTCOME: {"task": task.model_dump(mode="json"), "success": bool(success), "score": score}}


def record_outcomes(store: LessonStore, ops: Sequence[ObservedOp]) -> int:
    """Record the outcomes and citations the ops state; returns how many outcomes were recorded.

    Recording the same op again replaces its outcome and adds no citation twice, so feeding
    overlapping windows is safe.
    """
    stated = [op for op in ops if isinstance(op.attributes.get(OUTCOME), dict) and op.run_id]
    if not stated:
        return 0
    known = {lesson.id for lesson in store.list()}
    for op in stated:
        run, outcome = str(op.run_id), op.attributes[OUTCOME]
        given = [i for i in op.attributes.get("lessons_given") or [] if i in known]
        cited = [i for i in op.attributes.get("lessons_cited") or [] if i in known]
        if given:
            store.record_citations(run, given, used=False)
        if cited:
            store.record_citations(run, cited, used=True)
        task = TaskKey.model_validate(outcome.get("task") or {})
        record_outcome(store, run, task, bool(outcome.get("success")), score=outcome.get("score"))
    return len(stated)


class CycleReport(BaseModel):
    """What one learning cycle did."""

    ops_read: int = 0
    ops_ignored: int = Field(
        0, description="Ops read but not learned from: their source or endpoint is not a learning one."
    )
    ops_new: int = 0
    outcomes: int = Field(0, description="Runs whose outcome the ops stated.")
    extractor: str = ""
    applied: list[AppliedDelta] = Field(default_factory=list)
    effects: list[EffectReport] = Field(default_factory=list)
    maintenance: list[LessonEvent] = Field(default_factory=list)
    promotions: list[LessonEvent] = Field(default_factory=list)
    gate: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The gatekeeper's verdicts of a gated cycle: lesson_id, outcome (passed, refused, "
        "waiting) and reason.",
    )
    lessons: dict[str, int] = Field(
        default_factory=dict, description="Lessons by status after the cycle, when counted."
    )
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
    proposals: Sequence[Delta] = (),
    measure: bool = True,
    maintain: bool = True,
    promote: bool = True,
    pool_check: PoolChecker | None = None,
    lake: Lake | None = None,
    gate: Gatekeeper | None = None,
) -> CycleReport:
    """One full cycle over ``ops``: record the outcomes, citations and judged evidence they
    state, extract and curate lessons, apply ``proposals`` (deltas proposed directly, e.g. by
    the overseer), then, when ``gate`` is given, hold what changed pending and let the
    gatekeeper replay it (``gate.Gatekeeper``), then measure effects (activating only what
    passed, when gated), decay/expire and promote (each switchable).
    ``pool_check`` is the domain's count of what a filter leaves of a scope's candidates
    (``ExtractContext.pool_check``); ``lake`` the data lessons are about, for extractors that
    check what they learn (``ExtractContext.lake``). Only the ops :func:`learnable_ops` admits
    are read (the others are counted in ``ops_ignored``)."""
    instance = _resolve(extractor, store.settings)
    project = project_id or DEFAULT_PROJECT
    context = ExtractContext(project_id=project, store=store, pool_check=pool_check, lake=lake)
    report = CycleReport(ops_read=len(ops), extractor=instance.name)
    read = len(ops)
    ops = learnable_ops(ops, store.settings)
    report.ops_ignored = read - len(ops)
    # Outcomes first, so measurement sees this cycle's runs; evidence before extraction, so
    # induction sees everything judged so far.
    report.outcomes = record_outcomes(store, ops)
    record_evidence(store, ops, project)
    report.ops_new = len(store.unlearned([op.id for op in ops]))
    report.applied = learn_from_ops(store, ops, extractor=instance, context=context, hold=gate is not None)
    if proposals:
        report.applied += store.propose(held(proposals) if gate is not None else proposals)
    # A lesson these ops taught may have been given to later runs among them before this store
    # knew it (an arm that learns within the day, in its own copy): cite it now, or those
    # runs would count as the baseline without it when its effect is measured.
    record_outcomes(store, ops)
    if gate is not None:
        report.gate = [_verdict_row(v) for v in gate.review(store)]
    if measure:
        report.effects = measure_effects(store, may_activate=gate.may_activate if gate is not None else None)
    if maintain:
        report.maintenance = store.maintain()
    if promote:
        report.promotions = store.promote()
    report.notes = dict(context.notes)
    return report


def _verdict_row(verdict: Verdict) -> dict[str, Any]:
    return {"lesson_id": verdict.lesson_id, "outcome": verdict.outcome, "reason": verdict.reason}


def read_recent_ops(
    settings: Settings | None = None,
    *,
    since: datetime | None = None,
    limit: int = DEFAULT_OPS_LIMIT,
    source: OpReader | None = None,
) -> list[ObservedOp]:
    """The newest ``limit`` ops (since ``since``), oldest first, from ``source``.

    ``source``: an ``OpReader`` (an ``Observer``, ``OpStore``, remote sink);
    by default ``agentlake.observe.open_reader`` (the store file read-only, or the running
    observer service when another process holds the file), closed afterwards.
    """
    if limit < 1:
        raise UserError(f"limit must be >= 1, got {limit}")
    owned = source is None
    reader = open_reader(settings) if source is None else source
    try:
        filters: dict[str, Any] = {"since": since} if since is not None else {}
        ops: list[ObservedOp] = []
        # A page at a time: the observer service answers at most READ_PAGE ops a request.
        while len(ops) < limit:
            want = min(READ_PAGE, limit - len(ops))
            page = list(reader.query(**filters, limit=want, offset=len(ops)))
            ops += page
            if len(page) < want:
                break
    finally:
        if owned and hasattr(reader, "close"):
            reader.close()
    return sorted(ops, key=lambda op: (op.ts, op.id))


def read_ops(source: OpReader, **filters: Any) -> list[ObservedOp]:
    """Every op ``source`` (an ``Observer``, ``OpStore`` or sink) holds that matches ``filters``
    (those of ``OpStore.query``), oldest first, read a page at a time."""
    ops: list[ObservedOp] = []
    while True:
        page = list(source.query(**filters, order="asc", limit=READ_PAGE, offset=len(ops)))
        ops += page
        if len(page) < READ_PAGE:
            return ops


def learn_recorded(
    store: LessonStore,
    source: OpReader,
    *,
    proposals: Sequence[Delta] = (),
    extractor: str | Extractor | None = None,
    project_id: str | None = None,
    measure: bool = True,
    maintain: bool = True,
    promote: bool = True,
    pool_check: PoolChecker | None = None,
    gate: Gatekeeper | None = None,
    order: Callable[[ObservedOp], Any] | None = None,
    **filters: Any,
) -> CycleReport:
    """Learn now from what the witness recorded: the ops of ``source`` matching ``filters``
    (e.g. ``run_id="<run>:<arm>:b2:*"``), through one :func:`learn_cycle` (gated by ``gate``);
    oldest first, or sorted stably by ``order`` (work that ran at once, learned in the order it
    was planned)."""
    ops = read_ops(source, **filters)
    if order is not None:
        ops.sort(key=order)
    return learn_cycle(
        store,
        ops,
        extractor=extractor,
        project_id=project_id,
        proposals=proposals,
        measure=measure,
        maintain=maintain,
        promote=promote,
        pool_check=pool_check,
        gate=gate,
    )


def learn_between_batches(
    path: Path | PgSchema,
    source: OpReader,
    *,
    run_id: str,
    settings: Settings,
    proposals: Sequence[Delta] = (),
    semantic: bool = False,
    pool_check: PoolChecker | None = None,
    gate: Gatekeeper | None = None,
    order: Callable[[ObservedOp], Any] | None = None,
) -> CycleReport:
    """Learn an arm's batch into its own lesson store at ``path`` (a file, or a schema in
    PostgreSQL; opened and closed here).

    ``run_id`` selects the batch's ops in ``source`` (a run-id prefix such as
    ``"<run>:<arm>:b2:*"``), read in ``order`` (see :func:`learn_recorded`); ``proposals``
    are the overseer's deltas of the batch. The
    cycle measures effects but neither decays nor promotes (a batch is minutes, not weeks).
    ``semantic=False`` curates by lesson identity only (no embedding model), like retrieval.
    ``gate``: the arm's gatekeeper (its T5 tier), or none. The report counts the store's lessons
    by status afterwards.
    """
    with LessonStore.open(settings, path=path, embedder=None if semantic else False) as store:
        report = learn_recorded(
            store,
            source,
            proposals=proposals,
            maintain=False,
            promote=False,
            pool_check=pool_check,
            gate=gate,
            order=order,
            run_id=run_id,
        )
        counts: dict[str, int] = {}
        for lesson in store.list():
            counts[lesson.status] = counts.get(lesson.status, 0) + 1
        report.lessons = counts
    return report


class CycleStatus(BaseModel):
    """One scheduled cycle in a line: what it read and what it changed (``GET /learn/status``)."""

    at: datetime
    ops_read: int = Field(0, description="Ops read from the log in this cycle.")
    learnable: int = Field(0, description="Of those, the ones lessons may be learned from.")
    added: int = 0
    revised: int = Field(0, description="Lessons confirmed, merged or edited.")
    retired: int = 0
    outcomes: int = 0
    cursor: int = Field(0, description="The log's commit sequence read up to after the cycle.")
    error: str | None = None

    def line(self) -> str:
        """The status line the learner logs per cycle."""
        if self.error:
            return f"learn: cycle failed at op seq {self.cursor}: {self.error}"
        return (
            f"learn: {self.ops_read} ops read ({self.learnable} learnable) up to seq {self.cursor}; "
            f"lessons {self.added} added, {self.revised} revised, {self.retired} retired; {self.outcomes} outcomes"
        )


def read_after(
    source: OpReader, seq: int, *, page: int = READ_PAGE, pages: int = MAX_PAGES
) -> tuple[list[ObservedOp], int]:
    """The ops ``source`` committed after ``seq``, oldest first, at most ``pages`` pages of
    ``page``; and the sequence read up to (``seq`` when there are none)."""
    ops: list[ObservedOp] = []
    last = seq
    for _ in range(pages):
        found = list(source.query(after_seq=last, order="asc", limit=page))
        if not found:
            break
        ops += found
        last = max(op.seq or last for op in found)
        if len(found) < page:
            break
    return ops, last


class LearningScheduler:
    """Runs :func:`learn_cycle` every ``settings.learn_interval_s`` in a daemon thread.

    ``ops_source``: what ops are read from (``query(**filters)``), e.g. the process's
    ``Observer``. Each cycle reads the ops committed after the cursor, in commit order, a page
    at a time (at most ``max_pages`` pages a cycle; the next cycle goes on), so no op is skipped
    however many arrive, and moves the cursor, kept in the lesson store (a restart goes on where
    it stopped). ``lake``: the data lessons are about, for extractors that check what they learn.
    Each cycle logs one status line and is kept in ``history`` (the last ``HISTORY``). ``run_once``
    runs a cycle now (``lessons learn`` beside a server, tests). A failing cycle is logged,
    counted in ``errors`` and retried next interval; it never raises into the host.
    """

    HISTORY = 20

    def __init__(
        self,
        store: LessonStore,
        ops_source: OpReader,
        *,
        interval_s: float | None = None,
        extractor: str | Extractor | None = None,
        project_id: str | None = None,
        page: int = READ_PAGE,
        max_pages: int = MAX_PAGES,
        lake: Lake | None = None,
        source_name: str = "observer",
    ) -> None:
        self.store = store
        self.ops_source = ops_source
        self.interval_s = interval_s if interval_s is not None else store.settings.learn_interval_s
        self.extractor = _resolve(extractor, store.settings)  # one instance: its breaker persists
        self.project_id = project_id
        self.page = page
        self.max_pages = max_pages
        self.lake = lake
        self.source_name = source_name
        self.cycles = 0
        self.errors = 0
        self.ops_read = 0
        self.last_error: str | None = None
        self.history: deque[CycleStatus] = deque(maxlen=self.HISTORY)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._run_lock = threading.Lock()
        self.on_cycle: Callable[[CycleReport], None] | None = None

    @property
    def cursor(self) -> int:
        """The op log's commit sequence read up to."""
        return self.store.learn_cursor(self.source_name)

    def run_once(self) -> CycleReport | None:
        """One cycle now; ``None`` if it failed (see ``last_error``)."""
        with self._run_lock:
            cursor = 0
            try:
                cursor = self.store.learn_cursor(self.source_name)
                ops, last = read_after(self.ops_source, cursor, page=self.page, pages=self.max_pages)
                report = learn_cycle(
                    self.store, ops, extractor=self.extractor, project_id=self.project_id, lake=self.lake
                )
                if last != cursor:
                    self.store.set_learn_cursor(self.source_name, last)
            except Exception as exc:  # the host must survive a bad cycle
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"[:500]
                log.exception("learning cycle failed")
                status = CycleStatus(at=datetime.now(UTC), cursor=cursor, error=self.last_error)
                self.history.append(status)
                return None
            self.cycles += 1
            self.ops_read += len(ops)
            counts = report.counts()
            status = CycleStatus(
                at=datetime.now(UTC),
                ops_read=report.ops_read,
                learnable=report.ops_read - report.ops_ignored,
                added=counts.get("added", 0),
                revised=sum(counts.get(kind, 0) for kind in ("confirmed", "merged", "edited")),
                retired=counts.get("retired", 0)
                + sum(1 for effect in report.effects if effect.action == "retired"),
                outcomes=report.outcomes,
                cursor=last,
            )
            self.history.append(status)
        if status.ops_read:
            log.info(status.line())
        if self.on_cycle is not None:
            try:
                self.on_cycle(report)
            except Exception:
                log.exception("learning cycle callback failed")
        return report

    def status(self) -> dict[str, Any]:
        """Whether it runs, its interval, cursor and counts, and the last cycles, newest last."""
        return {
            "running": self.running,
            "interval_s": self.interval_s,
            "cursor": self.history[-1].cursor if self.history else None,
            "cycles": self.cycles,
            "errors": self.errors,
            "ops_read": self.ops_read,
            "last_error": self.last_error,
            "history": [item.model_dump(mode="json") for item in self.history],
        }

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
