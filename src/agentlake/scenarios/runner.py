"""The runner: staffers x scenarios x repetitions, in batches, learning between batches.

Owns a run from start to finish once it is planned (``plan``: everything validated before
anything runs): the run directory, dispatching each batch's days to a backend (on the inline
backend several at once, ``concurrency``, handed back in the order planned), recording every
op in the observer (the parent is the only writer), and, between batches, once the whole
batch has landed, learning: for each staffer with learning on,
``learn.learn_between_batches`` reads the staffer's ops of the batch back from the observer
(by run-id prefix, day by day as planned: their rejections, outcomes and citations) into its OWN lesson store under
``runs/<run_id>/lessons/<staffer>.duckdb`` (with ``database_url`` set: its own schema in
PostgreSQL, ``arm_schema``, which the workers read too), so the next batch retrieves what was learned. Staffers never share a store, so arms cannot
leak into each other. Metrics and the report are computed from the results file at the end,
with the lessons each learning arm ended with (``arm_lessons``, read back from its store).
A day's results, ops and overseer proposals are written as it lands and each arm's learning
when it is done, so an interrupted run resumes (``resume``) without running a day twice.
It does not own a day (``day``), where days run (``backends``) nor the plan (``plan``).
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentlake.errors import NotFoundError, UserError
from agentlake.lake import Lake
from agentlake.learn.loop import learn_between_batches
from agentlake.learn.model import Delta
from agentlake.learn.store import LessonStore, PgSchema
from agentlake.observe import get_observer
from agentlake.scenarios.arm_lessons import ArmLesson, read_arm_lessons
from agentlake.scenarios.backends import make_backend
from agentlake.scenarios.concurrency import day_order
from agentlake.scenarios.day import DayLedger, DayTask, plan_event
from agentlake.scenarios.metrics import leaderboard_document
from agentlake.scenarios.plan import DEFAULT_STAFFERS, Arm, RunPlan, RunRequest, prepare_run
from agentlake.scenarios.pools import ClientPools, PoolChecks
from agentlake.scenarios.profile import StafferProfile
from agentlake.scenarios.recovery import recovery_by_arm, rule_recovery
from agentlake.scenarios.report import write_report
from agentlake.scenarios.results import (
    LEADERBOARD_FILE,
    LEARNING_FILE,
    LESSONS_DIR,
    PLAN_FILE,
    PROPOSALS_FILE,
    RESULTS_FILE,
    append_lines,
    append_results,
    arm_lessons_file,
    arm_schema,
    batch_run_prefix,
    read_json,
    read_lines,
    read_plan,
    read_results,
    resumed_header,
    write_json,
)
from agentlake.scenarios.scenario import BUILTIN, Scenario
from agentlake.scenarios.tiers import gatekeeper, t4_deltas, tier_counts
from agentlake.settings import Settings, load_settings

if TYPE_CHECKING:
    from agentlake.lake import Lake
    from agentlake.observe import Observer
    from agentlake.scenarios.judge import Matching

log = logging.getLogger(__name__)
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")


class Progress(BaseModel):
    """One finished day, for live display."""

    batch: int
    batches: int
    staffer: str
    scenario: str
    repetition: int
    filled: int
    requested: int
    done: int
    total: int
    seconds: float


class BatchLearning(BaseModel):
    """What one learning staffer learned after one batch."""

    staffer: str
    batch: int
    applied: int = Field(description="Lesson changes the extractor applied (added, merged, edited).")
    active: int
    pending: int
    measured: int = Field(description="Lessons with a measured effect so far.")
    tiers: dict[str, int] = Field(
        default_factory=dict,
        description="What the overseer tiers did: t3_proposed, t4_proposed, and the gatekeeper's t5_passed, "
        "t5_refused, t5_waiting.",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="What learning set aside and why (contradictory evidence, rules withheld).",
    )
    finished_at: datetime | None = Field(
        None,
        description="When this learning ended: the lessons created before it and after the previous "
        "batch's were learned from this batch (None in runs from before it was recorded).",
    )


class RunSummary(BaseModel):
    run_id: str
    run_dir: Path
    results: int
    seconds: float
    leaderboard: list[dict[str, Any]]
    learning_curve: dict[str, list[float]]
    learning: list[BatchLearning]
    recovery: list[dict[str, Any]] = Field(
        default_factory=list, description="Each learning arm's recovery of each client's hidden rules."
    )
    report: Path
    ops: int = Field(0, description="Ops the run's days recorded into the observer (every batch, every arm).")
    lessons: dict[str, list[ArmLesson]] = Field(
        default_factory=dict, description="The lessons each learning arm ended the run with."
    )

    @property
    def recovery_by_arm(self) -> dict[str, dict[str, Any]]:
        """Rules recovered by verdict, spurious filters, harmful lessons and pool cost per arm."""
        return recovery_by_arm(self.recovery)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _absolute(settings: Settings) -> Settings:
    """Settings with absolute paths, so workers in other directories (Ray) find the same files."""
    return settings.model_copy(
        update={
            "data_dir": settings.data_dir.expanduser().resolve(),
            "runs_dir": settings.runs_dir.expanduser().resolve(),
        }
    )


def run_scenarios(
    scenarios: Sequence[str | Path] | Sequence[Scenario] | str | Path = BUILTIN,
    staffers: Sequence[str | StafferProfile] | str = DEFAULT_STAFFERS,
    *,
    batches: int = 3,
    repeat: int = 1,
    backend: str = "inline",
    ray_address: str | None = None,
    workers: int | None = None,
    semantic_lessons: bool = False,
    feedback: Sequence[str] | str | None = None,
    concurrency: int | None = None,
    run_id: str | None = None,
    settings: Settings | None = None,
    lake: Lake | None = None,
    observer: Observer | None = None,
    matching: Matching | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    resume: bool = False,
) -> RunSummary:
    """Run ``staffers`` x ``scenarios`` x ``repeat`` repetitions, ``batches`` times, learning
    in between: :func:`run_request` of the ``RunRequest`` these keywords make (it says what
    each means)."""
    request = RunRequest(
        scenarios=scenarios,
        staffers=staffers,
        batches=batches,
        repeat=repeat,
        backend=backend,
        ray_address=ray_address,
        workers=workers,
        semantic_lessons=semantic_lessons,
        feedback=feedback,
        concurrency=concurrency,
    )
    return run_request(
        request,
        run_id=run_id,
        settings=settings,
        lake=lake,
        observer=observer,
        matching=matching,
        on_progress=on_progress,
        resume=resume,
    )


def run_request(
    request: RunRequest,
    *,
    run_id: str | None = None,
    settings: Settings | None = None,
    lake: Lake | None = None,
    observer: Observer | None = None,
    matching: Matching | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    resume: bool = False,
) -> RunSummary:
    """Run ``request`` (see ``RunRequest``). Everything is validated (``prepare_run``) before
    the run directory is created. Results go to ``settings.runs_dir / run_id``. ``lake`` reuses
    an open lake (read-write only with the inline backend); otherwise the lake is opened
    read-only. ``observer`` defaults to the process-wide one. ``resume``: continue the
    interrupted run ``run_id`` (same scenarios, staffers, batches, repetitions and feedback;
    ``UserError`` names what differs): its finished days are kept and not run again, a batch's
    learning that happened is not repeated. Raises ``UserError`` before running, ``RunError``
    while running.
    """
    if resume and run_id is None:
        raise UserError("--resume needs the --run-id of the run to continue")
    settings = _absolute(settings or load_settings())
    plan = prepare_run(request, settings=settings, lake=lake)
    for note in plan.notes:  # one line each (a concurrency capped by memory)
        log.warning("%s", note)
    run_id = run_id or new_run_id()
    if not _RUN_ID.match(run_id):
        raise UserError(f"run id {run_id!r}: use letters, digits, '-', '_' and '.' only")
    run_dir = settings.runs_dir / run_id
    if resume and not (run_dir / PLAN_FILE).is_file():
        raise UserError(f"{run_dir}: no run to resume (no {PLAN_FILE}); start it without --resume")
    if not resume and run_dir.exists() and any(run_dir.iterdir()):
        raise UserError(f"{run_dir} already exists; pick another --run-id, or --resume to continue it")
    return execute_run(
        plan,
        run_dir,
        settings=settings,
        lake=lake,
        observer=observer,
        matching=matching,
        on_progress=on_progress,
        resume=resume,
    )


def execute_run(
    plan: RunPlan,
    run_dir: Path,
    *,
    settings: Settings,
    lake: Lake | None = None,
    observer: Observer | None = None,
    matching: Matching | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    resume: bool = False,
) -> RunSummary:
    """Run a prepared plan into ``run_dir`` (see :func:`run_scenarios`; ``resume`` keeps what an
    earlier, interrupted execution of the same plan finished there)."""
    started = time.perf_counter()
    run_id = run_dir.name
    own_lake = lake is None
    if lake is None:
        lake = Lake.open(settings, read_only=True)
    try:
        (run_dir / LESSONS_DIR).mkdir(parents=True, exist_ok=True)
        header = {
            "run_id": run_id,
            "created_at": datetime.now(UTC).isoformat(),
            "scenarios": [s.scenario for s in plan.scenarios],
            "staffers": [p.model_dump() for p in plan.profiles],
            "batches": plan.batches,
            "repeat": plan.repeat,
            "backend": plan.backend,
            "ray_address": plan.ray_address,
            "workers": plan.workers,
            "concurrency": plan.concurrency,
            "notes": plan.notes,
            "semantic_lessons": plan.semantic_lessons,
            "feedback": plan.feedback,
            "scenario_feedback": {s.scenario: s.feedback for s in plan.scenarios},
            "arms": [
                {"arm": arm.name, "staffer": arm.profile.staffer, "feedback": arm.feedback}
                for arm in plan.arms
            ],
            "lake": str(lake.path),
        }
        done: set[tuple[str, int, str, int]] = set()
        learned: set[tuple[str, int]] = set()
        if resume:
            header = resumed_header(read_plan(run_dir), header, run_dir)
            done, learned = _finished(run_dir, plan)
        for arm in plan.arms:
            where = _lessons_path(run_dir, arm, settings)
            if arm.profile.learning and isinstance(where, PgSchema):
                # Created before batch 1, so every worker finds its arm's store (empty at first)
                # and an unreachable database is refused before any day runs.
                LessonStore.open(settings, path=where, embedder=False).close()
        write_json(run_dir / PLAN_FILE, header)
        if observer is None:
            observer = get_observer(settings)
        engine = make_backend(
            plan.backend,
            workers=plan.workers,
            ray_address=plan.ray_address,
            lake=lake if plan.backend == "inline" else None,
            matching=matching,
            concurrency=plan.concurrency,
        )
        recorded = [0]
        pools = client_pools(lake, plan.scenarios) if any(a.profile.learning for a in plan.arms) else None
        try:
            for batch in range(1, plan.batches + 1):
                _run_batch(
                    plan,
                    batch,
                    run_dir,
                    engine,
                    settings,
                    str(lake.path),
                    observer,
                    on_progress,
                    pools,
                    recorded,
                    done,
                    learned,
                )
        finally:
            engine.close()
        results = read_results(run_dir)
        document = leaderboard_document(results, run_id=run_id)
        # Read back, so a resumed run reports the learning of its earlier execution too.
        learning = [BatchLearning.model_validate(item) for item in read_lines(run_dir / LEARNING_FILE)]
        document["learning"] = [item.model_dump(mode="json") for item in learning]
        recovery = _recovery(plan, run_dir, settings, pools)
        document["rule_recovery"] = recovery
        document["rule_recovery_by_arm"] = recovery_by_arm(recovery)
        lessons = _arm_lessons(plan, run_dir, settings, learning)
        document["lessons"] = {
            arm: [lesson.model_dump(mode="json") for lesson in items] for arm, items in lessons.items()
        }
        write_json(run_dir / LEADERBOARD_FILE, document)
        report = write_report(
            run_dir,
            results,
            plan=header,
            learning=document["learning"],
            recovery=recovery,
            lessons=document["lessons"],
        )
        return RunSummary(
            run_id=run_id,
            run_dir=run_dir,
            results=len(results),
            seconds=round(time.perf_counter() - started, 2),
            leaderboard=document["leaderboard"],
            learning_curve=document["learning_curve"],
            learning=learning,
            recovery=recovery,
            report=report,
            ops=recorded[0],
            lessons=lessons,
        )
    finally:
        if own_lake:
            lake.close()


def _run_batch(
    plan: RunPlan,
    batch: int,
    run_dir: Path,
    engine: Any,
    settings: Settings,
    lake_path: str,
    observer: Observer,
    on_progress: Callable[[Progress], None] | None,
    pools: PoolChecks | None = None,
    recorded: list[int] | None = None,
    done: set[tuple[str, int, str, int]] | frozenset[tuple[str, int, str, int]] = frozenset(),
    learned: set[tuple[str, int]] | frozenset[tuple[str, int]] = frozenset(),
) -> None:
    """Run one batch's days on ``engine``, record their results, ops (``recorded[0]`` counts
    them) and overseer proposals, then let each learning arm learn the batch. Days in ``done``
    (``EventResult.day_key``) and arms' learning in ``learned`` (arm, batch) already happened."""
    tasks = [
        DayTask(
            run_id=run_dir.name,
            batch=batch,
            repetition=rep,
            scenario=scenario,
            profile=arm.profile,
            settings=settings,
            lake_path=lake_path,
            lessons_path=_task_lessons(_lessons_path(run_dir, arm, settings))
            if arm.profile.lessons
            else None,
            semantic_lessons=plan.semantic_lessons,
            feedback=arm.feedback,
        )
        for arm in plan.arms
        for scenario in arm.scenarios
        for rep in range(1, plan.repeat + 1)
        if (arm.name, batch, scenario.scenario, rep) not in done
    ]
    for count, day in enumerate(engine.map(tasks), start=plan.days_per_batch - len(tasks) + 1):
        # Results, ops and proposals are written as each day lands, so a crash keeps what
        # finished and a resumed run learns from the whole batch.
        append_results(run_dir, day.results)
        observer.record_many(day.ops)
        if recorded is not None:
            recorded[0] += len(day.ops)
        if not day.results:
            continue
        first = day.results[0]
        if day.overseer_deltas:
            deltas = [d.model_dump(mode="json") for d in day.overseer_deltas]
            append_lines(run_dir / PROPOSALS_FILE, [{"arm": first.arm, "batch": batch, "deltas": deltas}])
        if on_progress is not None:
            on_progress(
                Progress(
                    batch=batch,
                    batches=plan.batches,
                    staffer=first.arm,
                    scenario=first.scenario,
                    repetition=first.repetition,
                    filled=sum(r.filled for r in day.results),
                    requested=sum(r.requested for r in day.results),
                    done=count,
                    total=plan.days_per_batch,
                    seconds=day.seconds,
                )
            )
    for arm in plan.arms:
        if arm.profile.learning and (arm.name, batch) not in learned:
            learning = _learn(plan, arm, batch, run_dir, settings, observer, pools)
            append_lines(run_dir / LEARNING_FILE, [learning.model_dump(mode="json")])


def _learn(
    plan: RunPlan,
    arm: Arm,
    batch: int,
    run_dir: Path,
    settings: Settings,
    observer: Observer,
    pools: PoolChecks | None = None,
) -> BatchLearning:
    """The arm learns its batch from what the observer recorded (its ops, outcomes and
    citations, by run-id prefix, read day by day in the order the days were planned) plus the
    overseer's proposals (the run's proposals file), into its own store."""
    proposals = [
        Delta.model_validate(delta)
        for line in read_lines(run_dir / PROPOSALS_FILE)
        if line["arm"] == arm.name and line["batch"] == batch
        for delta in line["deltas"]
    ]
    proposals += t4_deltas(arm.profile, settings, observer, f"{run_dir.name}:{arm.name}:*")
    prefix = batch_run_prefix(run_dir.name, arm.name, batch)
    days = [(s.scenario, rep) for s in arm.scenarios for rep in range(1, plan.repeat + 1)]
    report = learn_between_batches(
        _lessons_path(run_dir, arm, settings),
        observer,
        run_id=prefix + "*",
        settings=settings,
        proposals=proposals,
        semantic=plan.semantic_lessons,
        pool_check=pools,
        gate=gatekeeper(arm.profile, settings),
        # The batch's days as planned, whatever ran at once or was resumed (``concurrency``).
        order=day_order(prefix, days),
    )
    return BatchLearning(
        staffer=arm.name,
        batch=batch,
        applied=len(report.applied),
        active=report.lessons.get("active", 0),
        pending=report.lessons.get("pending", 0),
        measured=len(report.effects),
        tiers=tier_counts(proposals, report.gate),
        notes=list(report.notes.get("induction_notes", [])),
        finished_at=datetime.now(UTC),
    )


def _finished(run_dir: Path, plan: RunPlan) -> tuple[set[tuple[str, int, str, int]], set[tuple[str, int]]]:
    """The days an interrupted run finished (``EventResult.day_key``) and the (arm, batch)
    learning it did. A run from before the learning file existed learned batch b if any day of
    a later batch ran: learning is the barrier between batches."""
    results = read_results(run_dir) if (run_dir / RESULTS_FILE).is_file() else []
    done = {r.day_key for r in results}
    learned = {(line["staffer"], line["batch"]) for line in read_lines(run_dir / LEARNING_FILE)}
    latest = max((r.batch for r in results), default=0)
    learned |= {(arm.name, batch) for arm in plan.arms for batch in range(1, latest)}
    return done, learned


def _recovery(
    plan: RunPlan, run_dir: Path, settings: Settings, pools: PoolChecks | None
) -> list[dict[str, Any]]:
    """Each learning arm's lessons at the end against its clients' hidden rules (evaluation
    only: ``recovery``), on the run's order pools."""
    if pools is None:
        return []
    arms = [
        (
            arm.name,
            arm.feedback,
            _lessons_path(run_dir, arm, settings),
            {s.client.id: (pools.by_client[s.client.id], s.client.acceptance) for s in arm.scenarios},
        )
        for arm in plan.arms
        if arm.profile.learning
    ]
    return [found.summary() for found in rule_recovery(arms, settings)]


def _arm_lessons(
    plan: RunPlan, run_dir: Path, settings: Settings, learning: Sequence[BatchLearning]
) -> dict[str, list[ArmLesson]]:
    """The lessons each learning arm ended the run with, each dated by the batch it was
    learned after (``learning``'s times)."""
    return {
        arm.name: read_arm_lessons(
            _lessons_path(run_dir, arm, settings),
            settings,
            learned=[(x.batch, x.finished_at) for x in learning if x.staffer == arm.name and x.finished_at],
        )
        for arm in plan.arms
        if arm.profile.learning
    }


def client_pools(lake: Lake, scenarios: Sequence[Scenario]) -> PoolChecks:
    """Every client's order pools over ``scenarios`` (the pool check learning uses): what a
    learned filter would leave of the candidates for each order the client gives."""
    by_client: dict[str, ClientPools] = {}
    for scenario in sorted(scenarios, key=lambda s: s.date):
        pools = by_client.get(scenario.client.id)
        if pools is None:
            pools = by_client[scenario.client.id] = ClientPools(lake, scenario.client, scenario.date)
        ledger = DayLedger()
        for event in scenario.events:
            ledger.orders[event.id] = plan_event(scenario, event, ledger).order
            pools.add(ledger.orders[event.id])
    return PoolChecks(by_client.values())


def _lessons_path(run_dir: Path, arm: Arm, settings: Settings) -> Path | PgSchema:
    """A learning arm's own store in the run (its file, or with ``database_url`` its schema in
    PostgreSQL); a lessons-only staffer reads the project's store."""
    if arm.profile.learning and settings.database_url is not None:
        return PgSchema(name=arm_schema(run_dir.name, arm.name))
    if arm.profile.learning:
        return arm_lessons_file(run_dir, arm.name)
    return settings.data_dir / settings.learn_file


def _task_lessons(where: Path | PgSchema) -> str | PgSchema:
    return where if isinstance(where, PgSchema) else str(where)


def regenerate_outputs(run_dir: Path, settings: Settings | None = None) -> tuple[Path, Path]:
    """Recompute ``leaderboard.json`` and ``report.html`` from a run's results file.

    What only the run knew is kept from the leaderboard it wrote: its learning, the lessons
    against the hidden rules and the lessons each arm ended with. A run from before the last
    were recorded gets them from its arms' lesson files (``runs/<id>/lessons/<arm>.duckdb``).
    """
    if not (run_dir / "results.jsonl").is_file():
        raise NotFoundError(f"{run_dir}: not a run directory")
    results = read_results(run_dir)
    plan = read_plan(run_dir)
    document = leaderboard_document(results, run_id=plan.get("run_id"))
    before = read_json(run_dir / LEADERBOARD_FILE)
    for key in ("learning", "rule_recovery", "rule_recovery_by_arm", "lessons"):
        if key in before:
            document[key] = before[key]
    if "lessons" not in document:
        document["lessons"] = _lesson_files(run_dir, plan, settings or load_settings())
    write_json(run_dir / LEADERBOARD_FILE, document)
    report = write_report(
        run_dir,
        results,
        plan=plan,
        learning=document.get("learning", []),
        recovery=document.get("rule_recovery", []),
        lessons=document["lessons"],
    )
    return run_dir / LEADERBOARD_FILE, report


def _lesson_files(run_dir: Path, plan: dict[str, Any], settings: Settings) -> dict[str, list[dict[str, Any]]]:
    """The lessons in the lesson files of a run's learning arms (a run whose leaderboard
    predates them); arms whose store is not a file here (PostgreSQL) are left out."""
    learning = [BatchLearning.model_validate(item) for item in read_lines(run_dir / LEARNING_FILE)]
    learners = {p.get("staffer") for p in plan.get("staffers", []) if p.get("learning")}
    out: dict[str, list[dict[str, Any]]] = {}
    for arm in plan.get("arms", []):
        path = arm_lessons_file(run_dir, arm["arm"])
        if arm.get("staffer") in learners and path.is_file():
            learned = [
                (x.batch, x.finished_at) for x in learning if x.staffer == arm["arm"] and x.finished_at
            ]
            lessons = read_arm_lessons(path, settings, learned=learned)
            out[arm["arm"]] = [lesson.model_dump(mode="json") for lesson in lessons]
    return out
