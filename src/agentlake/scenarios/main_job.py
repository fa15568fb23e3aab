"""The main job (``agentlake demo`` / ``make demo``) and the first-run demo, timed step by step.

Owns :func:`run_main_job`, what ``make demo`` runs: generate the workforce if the lake has
none, index the workers' resumes, one SQL answer, then the built-in scenario pack with the
rules baseline (learning on and off) and every LLM staffer whose model is reachable, over
three batches, with the leaderboard and the report (``runner``), one hybrid search at the end;
then an embedded LLM staffer (``qwen-0.5b-learning`` by default: Qwen2.5-Coder 0.5B in this
process, no server) beside ``rules-learning`` on a reduced pack (each client's first event of
its first day) over the same batches, with its learning curve. :func:`run_demo` is the short
first run (dataset, index, the two examples) without the pack.

With a time budget (``make demo``: 10 minutes from when make started, the install included) the
embedded staffer, the one step that can run less, runs the batches that fit and says so.

Embedding 50k resumes is most of a first run's time, so the main job builds the index in a
background thread (``agentlake.lake.background_index``) while the rules staffers, which never
search it, run the pack. Every step reports when it started and how long it took. It renders
nothing: events go to a callback, and the CLI draws them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentlake.errors import UserError
from agentlake.lake import Lake
from agentlake.lake.background_index import BackgroundIndex
from agentlake.lake.index import BuildResult, ensure_index
from agentlake.lake.lakehouse import QueryResult
from agentlake.lake.search import Source, hybrid_search
from agentlake.scenarios import load_scenarios
from agentlake.scenarios.profile import load_profile, unreachable_models
from agentlake.scenarios.runner import RunSummary, run_scenarios
from agentlake.settings import Settings, load_settings
from agentlake.workforce.generator import ensure_workforce
from agentlake.workforce.tables import (
    EXAMPLE_QUESTION,
    EXAMPLE_SQL,
    EXAMPLE_WHERE,
    SEARCH_COLUMN,
    SEARCH_DATASET,
)

if TYPE_CHECKING:
    from agentlake.embed import Embedder

DEMO_SQL, DEMO_QUESTION, DEMO_WHERE = EXAMPLE_SQL, EXAMPLE_QUESTION, EXAMPLE_WHERE


class DemoResult(BaseModel):
    """What the demo did and found."""

    generated_workers: int
    index: BuildResult | None
    sql: str
    sql_result: QueryResult
    question: str
    where: str
    sources: list[Source]


def run_demo(
    settings: Settings | None = None, *, workers: int = 50_000, seed: int = 7, progress: bool = False
) -> DemoResult:
    """Make sure the lake has the workforce and a fresh index, then query and search it.

    Generates ``workers`` workers (seed ``seed``) only when the lake has no ``workers``
    dataset, so a second run is quick. Raises what the steps raise (``UserError``/``RunError``).
    """
    settings = settings or load_settings()
    with Lake.open(settings) as lake:
        generated, _ = ensure_workforce(lake, workers, seed)
        built = ensure_index(lake, SEARCH_DATASET, SEARCH_COLUMN, progress=progress)
        result = lake.query(DEMO_SQL)
        sources = hybrid_search(lake, SEARCH_DATASET, DEMO_QUESTION, where=DEMO_WHERE, k=5)
    return DemoResult(
        generated_workers=generated,
        index=built,
        sql=DEMO_SQL,
        sql_result=result,
        question=DEMO_QUESTION,
        where=DEMO_WHERE,
        sources=sources,
    )


# --- the main job: staffing days, learning between batches, the leaderboard -----------------

DEMO_STAFFERS = ("rules-learning", "rules-static")
LLM_STAFFERS = ("full", "basic", "minimal", "local", "configured")
# The embedded staffer of the main job: the 0.5B, because a fill costs it ~3 model calls of a few
# seconds on a 2-core CPU, so the reduced pack over three batches fits the demo's minutes.
EMBEDDED_STAFFER = "qwen-0.5b-learning"
EMBEDDED_PACK = "each client's first event of its first day"
# Seconds a batch of the embedded staffer on the reduced pack takes on 2 free cores (make demo,
# 2026-11-28: 73 s for 3 batches); on a busier machine it takes about (load + 0.5) / cores times
# as long (64 s at load 4.6 on 2 cores). What a budget (``budget_s``) plans with.
EMBEDDED_BATCH_S = 25.0
ADD_AN_LLM = (
    "No LLM staffer ran: start Ollama (`ollama serve`, then `ollama pull qwen3:4b`) or set OPENAI_BASE_URL "
    "and AGENTLAKE_EXECUTOR_MODEL=openai:MODEL, then run `make demo` again."
)


class StepDone(BaseModel):
    """One step of the main job: when it started (seconds into the job), how long it took, what it did."""

    name: str
    started_s: float
    seconds: float
    summary: str


class Notice(BaseModel):
    """A sentence the job wants the user to read now (what it waits for, and why)."""

    text: str


class SqlExample(BaseModel):
    sql: str
    result: QueryResult


class SearchExample(BaseModel):
    question: str
    where: str
    sources: list[Source]


class RunDone(BaseModel):
    """A scenario run finished: its leaderboard and report can be shown."""

    model_config = {"arbitrary_types_allowed": True}

    label: str
    summary: RunSummary


class MainJobResult(BaseModel):
    """The demo's first step (dataset, index, examples), the scenario runs and the steps' times."""

    model_config = {"arbitrary_types_allowed": True}

    demo: DemoResult
    run: RunSummary
    llm_staffers: list[str]
    skipped: dict[str, list[str]]
    local: RunSummary | None = None
    steps: list[StepDone] = Field(default_factory=list)
    seconds: float = 0.0

    @property
    def hint(self) -> str | None:
        """One line on how to add an LLM staffer when none ran (the embedded one counts)."""
        return None if self.llm_staffers or self.local is not None else ADD_AN_LLM


def reachable_llm_staffers(settings: Settings) -> tuple[list[str], dict[str, list[str]]]:
    """The built-in LLM staffers whose models answer now, and why the others cannot run."""
    ready: list[str] = []
    skipped: dict[str, list[str]] = {}
    for name in LLM_STAFFERS:
        problems = unreachable_models(load_profile(name), settings, timeout_s=1.0)
        if problems:
            skipped[name] = problems
        else:
            ready.append(name)
    return ready, skipped


def reduced_pack() -> list[Any]:
    """The pack for the embedded model: each client's first day, first event only (none refers back)."""
    days = [s for s in load_scenarios("builtin") if s.scenario.endswith("-day1")]
    return [s.model_copy(update={"events": [e for e in s.events if e.ref is None][:1]}) for s in days]


def batch_seconds(load: float, cores: int) -> float:
    """About how long a batch of the embedded staffer takes at ``load`` (1-minute load average)."""
    return EMBEDDED_BATCH_S * max(1.0, (load + 0.5) / max(1, cores))


def batches_that_fit(batches: int, left_s: float, load: float, cores: int) -> int:
    """How many of ``batches`` batches of the embedded staffer fit in ``left_s`` seconds (0 to ``batches``)."""
    return max(0, min(batches, int(left_s // batch_seconds(load, cores))))


def _budget_notice(staffer: str, batches: int, fit: int, left_s: float) -> str:
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    why = (
        f"{max(0.0, left_s):.0f} s of the budget left, and a batch takes about "
        f"{batch_seconds(load, cores):.0f} s here (load {load:.1f} on {cores} cores)"
    )
    if fit == 0:
        return f"{staffer} is skipped: {why}; `agentlake demo --budget-s 0` runs it"
    return (
        f"{staffer} runs {fit} batch(es) instead of {batches}: {why}; "
        "`agentlake demo --budget-s 0` runs them all"
    )


def _finish(build: BackgroundIndex, emit: Callable[[Any], None]) -> BuildResult | None:
    while not build.wait(timeout=1.0):
        emit(build.progress())
    emit(build.progress())
    return build.result()


def _index_summary(built: BuildResult | None, dataset: str, column: str) -> str:
    if built is None:
        return f"{dataset}.{column} up to date: nothing to embed"
    graph = ", HNSW graph" if built.ann else ""
    return f"indexed {dataset}.{column}: {built.embedded:,} embedded, {built.cached:,} cached{graph}"


def _run_summary(summary: RunSummary, staffers: Sequence[str]) -> str:
    return f"{', '.join(staffers)}: {summary.results} judged events; fill rate per batch: " + "; ".join(
        f"{name} {' -> '.join(f'{v:.0%}' for v in curve)}" for name, curve in summary.learning_curve.items()
    )


def run_main_job(
    settings: Settings | None = None,
    *,
    workers: int = 50_000,
    seed: int = 7,
    batches: int = 3,
    llm_staffer: str | None = EMBEDDED_STAFFER,
    require_llm_staffer: bool = False,
    on_event: Callable[[Any], None] | None = None,
    embedder: Embedder | None = None,
    budget_s: float | None = None,
) -> MainJobResult:
    """``make demo``: the workforce, its index, the built-in pack and the leaderboard, timed.

    Steps: generate the workforce when the lake has none; start the ``workers.resume_text``
    index in the background; answer the example SQL; run the built-in pack with the rules
    baseline (learning on and off) and every reachable LLM staffer over ``batches`` batches
    (the rules policy never searches the index, so it runs while the index builds; LLM staffers
    call ``hybrid_search``, so the index is finished before them); finish the index; answer the
    example hybrid search; then run ``llm_staffer`` (an embedded model's profile; ``None``: none)
    beside ``rules-learning`` on the reduced pack over ``batches`` batches. When its model is
    not installed it is skipped with a notice saying how to install it, or, with
    ``require_llm_staffer``, refused with ``UserError`` before anything runs. ``on_event``
    receives, as they happen: ``StepDone``, ``Notice``, ``SqlExample``, ``SearchExample``,
    ``RunDone``, ``IndexProgress`` and the runner's per-day ``Progress``. Results go under
    ``settings.runs_dir``. A Ctrl-C while the index builds stops it after the current chunk; the
    vectors made so far stay cached. ``embedder`` (default: the ``embed_model`` setting) embeds
    the resumes and the example question. ``budget_s`` (None or 0: none) is the seconds the job
    may take: the embedded staffer, the one step that can run less, runs only the batches that
    fit in what is left (``batches_that_fit``, at the load of the moment), and a ``Notice`` says
    so; the step's summary too.
    """
    settings = settings or load_settings()
    emit = on_event or (lambda event: None)
    embedded: str | None = None
    if llm_staffer:
        profile = load_profile(llm_staffer)
        problems = unreachable_models(profile, settings)
        if problems and require_llm_staffer:
            raise UserError(f"{profile.staffer}: its model cannot run: {'; '.join(problems)}")
        if problems:
            emit(Notice(text=f"{profile.staffer} is skipped: {'; '.join(problems)}"))
        else:
            embedded = llm_staffer
    begun = time.perf_counter()
    steps: list[StepDone] = []

    def clock() -> float:
        return time.perf_counter() - begun

    def step(name: str, started: float, summary: str, seconds: float | None = None) -> None:
        took = clock() - started if seconds is None else seconds
        steps.append(
            StepDone(name=name, started_s=round(started, 2), seconds=round(took, 2), summary=summary)
        )
        emit(steps[-1])

    with Lake.open(settings) as lake:
        started = clock()
        generated, rows = ensure_workforce(lake, workers, seed)
        step(
            "dataset",
            started,
            f"generated {generated:,} workers (seed {seed})"
            if generated
            else f"workers already in the lake ({rows:,} rows)",
        )
        index_started = clock()
        build = BackgroundIndex(lake, SEARCH_DATASET, SEARCH_COLUMN, embedder=embedder).start()
        try:
            started = clock()
            sql_result = lake.query(DEMO_SQL)
            emit(SqlExample(sql=DEMO_SQL, result=sql_result))
            step("example SQL", started, f"{len(sql_result.rows)} rows")

            started = clock()
            llm, skipped = reachable_llm_staffers(settings)
            step(
                "model check",
                started,
                f"LLM staffers on model hosts: {', '.join(llm) or 'none reachable'}",
            )
            if llm and not build.finished:
                emit(
                    Notice(
                        text="LLM staffers search the index (hybrid_search): finishing it before the scenario pack"
                    )
                )
                _finish(build, emit)

            def day(progress: Any) -> None:
                emit(progress)
                if not build.finished:
                    emit(build.progress())

            staffers = [*DEMO_STAFFERS, *llm]
            started = clock()
            summary = run_scenarios(
                "builtin", staffers, batches=batches, settings=settings, lake=lake, on_progress=day
            )
            step("scenario pack", started, _run_summary(summary, staffers))
            emit(RunDone(label="scenario pack", summary=summary))

            if not build.finished:
                p = build.progress()
                emit(
                    Notice(
                        text=(
                            f"the index is still building ({p.done:,}/{p.total:,} resumes have vectors); finishing it now. "
                            "Ctrl-C stops it: the vectors made so far stay cached and the next `make demo` goes on from there"
                        )
                    )
                )
            built = _finish(build, emit)
            if built is not None:
                # The build found every vector cached because the thread had just embedded them:
                # report the thread's counts, not the cache's.
                made = build.progress().embedded
                built = built.model_copy(update={"embedded": made, "cached": built.index.row_count - made})
            step(
                "index (background)",
                index_started,
                _index_summary(built, SEARCH_DATASET, SEARCH_COLUMN),
                seconds=build.progress().seconds,
            )

            started = clock()
            sources = hybrid_search(
                lake, SEARCH_DATASET, DEMO_QUESTION, where=DEMO_WHERE, k=5, embedder=embedder
            )
            emit(SearchExample(question=DEMO_QUESTION, where=DEMO_WHERE, sources=sources))
            step("example search", started, f"{len(sources)} workers")

            local = None
            fit = batches
            if embedded and budget_s:
                left = budget_s - clock()
                fit = batches_that_fit(batches, left, os.getloadavg()[0], os.cpu_count() or 1)
                if fit < batches:
                    emit(Notice(text=_budget_notice(embedded, batches, fit, left)))
                if fit == 0:
                    step(embedded, clock(), "skipped: it did not fit in the budget", seconds=0.0)
            if embedded and fit:
                started = clock()
                emit(
                    Notice(
                        text=f"{embedded} (an embedded model, in this process) staffs {EMBEDDED_PACK}, "
                        f"{fit} batch(es), beside rules-learning"
                    )
                )
                arms = [embedded, "rules-learning"]
                local = run_scenarios(
                    reduced_pack(), arms, batches=fit, settings=settings, lake=lake, on_progress=emit
                )
                cut = f" ({fit} of {batches} batches: the budget)" if fit < batches else ""
                step(embedded, started, _run_summary(local, arms) + cut)
                emit(RunDone(label=f"{embedded} on {EMBEDDED_PACK}", summary=local))
        finally:
            build.cancel()
    first = DemoResult(
        generated_workers=generated,
        index=built,
        sql=DEMO_SQL,
        sql_result=sql_result,
        question=DEMO_QUESTION,
        where=DEMO_WHERE,
        sources=sources,
    )
    return MainJobResult(
        demo=first,
        run=summary,
        llm_staffers=llm,
        skipped=skipped,
        local=local,
        steps=steps,
        seconds=round(clock(), 2),
    )
