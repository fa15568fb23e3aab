"""The first-run demo and the main job (``agentlake demo`` / ``make demo``), timed step by step.

Owns :func:`run_demo` (the issue-2 demo: generate the workforce if the lake has none, index
``workers.resume_text``, one SQL answer and one hybrid search) and :func:`run_main_job`, what
``make demo`` runs: the same first steps, then the built-in scenario pack with the rules
baseline (learning on and off) and every LLM staffer whose model is reachable, over three
batches, with the leaderboard and the report (``agentlake.scenarios``); ``--local-llm`` adds the
in-process ``local-tiny`` staffer on a reduced pack.

Embedding 50k resumes is most of a first run's time, so the main job builds the index in a
background thread (:class:`BackgroundIndex`) while the rules staffers, which never search it,
run the pack. Every step reports when it started and how long it took. It renders nothing:
events go to a callback, and the CLI draws them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from agentlake.errors import RunError
from agentlake.lake.index import BuildResult
from agentlake.lake.lakehouse import QueryResult
from agentlake.lake.search import Source
from agentlake.settings import Settings, load_settings

if TYPE_CHECKING:
    from agentlake.lake import Lake

DEMO_SQL = (
    "SELECT role, count(*) AS workers, round(avg(reliability), 2) AS avg_reliability "
    "FROM workers WHERE state = 'OH' GROUP BY role ORDER BY workers DESC, role LIMIT 5"
)
DEMO_QUESTION = "certified welder experienced with MIG and TIG welding"
DEMO_WHERE = "role = 'Welder' AND state = 'OH'"


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
    from agentlake.lake import Lake
    from agentlake.lake.index import ensure_index
    from agentlake.lake.search import hybrid_search
    from agentlake.workforce.generator import generate_workforce, load_workforce

    settings = settings or load_settings()
    with Lake.open(settings) as lake:
        generated = 0
        if "workers" not in {info.name for info in lake.datasets()}:
            workforce = generate_workforce(workers, seed=seed)
            load_workforce(lake, workforce)
            generated = workforce.workers.num_rows
        built = ensure_index(lake, "workers", "resume_text", progress=progress)
        result = lake.query(DEMO_SQL)
        sources = hybrid_search(lake, "workers", DEMO_QUESTION, where=DEMO_WHERE, k=5)
    return DemoResult(
        generated_workers=generated,
        index=built,
        sql=DEMO_SQL,
        sql_result=result,
        question=DEMO_QUESTION,
        where=DEMO_WHERE,
        sources=sources,
    )


# --- the index, built in the background -----------------------------------------------------

# Distinct texts per progress step: ~4 s of model time at 290 resumes/s, so progress moves
# often and a cancel waits at most that long.
EMBED_CHUNK = 1024
IndexPhase = Literal["starting", "embedding", "indexing", "done", "failed", "cancelled"]


class IndexProgress(BaseModel):
    """How far a :class:`BackgroundIndex` is: ``done`` of ``total`` distinct texts have vectors."""

    phase: IndexPhase
    total: int = Field(0, description="Distinct texts to embed (0 until they are counted).")
    done: int = Field(0, description="Distinct texts with a vector so far, cached or embedded.")
    embedded: int = Field(0, description="Texts the model embedded in this build.")
    seconds: float = Field(0.0, description="Since the build started.")
    embed_seconds: float = Field(0.0, description="Spent embedding (the rate's denominator).")

    @property
    def rate(self) -> float:
        """Texts embedded per second (0 before the first chunk)."""
        return self.embedded / self.embed_seconds if self.embed_seconds > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current rate, or None when unknown."""
        return (self.total - self.done) / self.rate if self.rate > 0 else None


class BackgroundIndex:
    """Builds ``dataset``'s vector index over ``column`` in a daemon thread, with progress.

    It first fills the lake's embedding cache chunk by chunk (``embed_texts``), so progress is
    visible and a cancelled build keeps every chunk it finished; then ``ensure_index`` builds
    the index, finding every vector cached. It shares the caller's open read-write lake: its
    writes go through ``Lake.write`` (the one writer) and the caller may keep reading.
    :meth:`result` re-raises what the thread raised (``UserError``/``RunError``).
    """

    def __init__(
        self, lake: Lake, dataset: str, column: str, *, embedder: Any = None, chunk: int = EMBED_CHUNK
    ) -> None:
        self.lake, self.dataset, self.column = lake, dataset, column
        self._embedder = embedder
        self._chunk = max(1, chunk)
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"index-{dataset}", daemon=True)
        self._progress = IndexProgress(phase="starting")
        self._started = 0.0
        self._ended: float | None = None
        self._result: BuildResult | None = None
        self._error: BaseException | None = None

    def start(self) -> BackgroundIndex:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def progress(self) -> IndexProgress:
        """A snapshot of the build's progress (safe from any thread); once it has ended,
        ``seconds`` is how long it ran."""
        with self._lock:
            until = self._ended if self._ended is not None else time.perf_counter()
            return self._progress.model_copy(update={"seconds": round(until - self._started, 3)})

    @property
    def finished(self) -> bool:
        return self._started > 0 and not self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds; True once the build has ended (any way)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def cancel(self) -> None:
        """Stop after the current chunk and wait for the thread (no-op once it ended)."""
        self._cancel.set()
        if self._started:
            self._thread.join()

    def result(self) -> BuildResult | None:
        """The build (None when the index was already fresh); raises the thread's error."""
        if not self.finished:
            raise RunError("the background index build has not finished; wait() for it first")
        if self._error is not None:
            raise self._error
        if self._progress.phase == "cancelled":
            raise RunError(f"the {self.dataset} index build was cancelled; its finished chunks are cached")
        return self._result

    def _set(self, **fields: Any) -> None:
        with self._lock:
            self._progress = self._progress.model_copy(update=fields)

    def _run(self) -> None:
        from agentlake.embed import embed_texts, get_embedder
        from agentlake.lake.catalog import quote_ident
        from agentlake.lake.index import ensure_index

        try:
            embedder = self._embedder or get_embedder(None, self.lake.settings)
            # Load the model here, off the rate's clock; a fresh index needs it too: the example
            # search embeds its question, and then finds it loaded.
            _ = embedder.dimension
            rows = self.lake.read_arrow(
                f"SELECT {quote_ident(self.column)}::VARCHAR AS text FROM {quote_ident(self.dataset)}"
            )
            # ensure_index reads NULL as ""; the same texts here mean it finds all of them cached.
            unique = list(dict.fromkeys(text or "" for text in rows.column("text").to_pylist()))
            self._set(phase="embedding", total=len(unique))
            embedding = 0.0
            for start in range(0, len(unique), self._chunk):
                if self._cancel.is_set():
                    self._set(phase="cancelled")
                    return
                began = time.perf_counter()
                _, stats = embed_texts(embedder, unique[start : start + self._chunk], lake=self.lake)
                if stats.embedded:
                    embedding += time.perf_counter() - began
                with self._lock:
                    p = self._progress
                    self._progress = p.model_copy(
                        update={"done": p.done + stats.unique, "embedded": p.embedded + stats.embedded,
                                "embed_seconds": round(embedding, 3)}
                    )  # fmt: skip
            self._set(phase="indexing")
            self._result = ensure_index(self.lake, self.dataset, self.column, embedder=embedder)
            self._set(phase="done")
        except BaseException as exc:  # handed to the waiting thread by result()
            self._error = exc
            self._set(phase="failed")
        finally:
            with self._lock:
                self._ended = time.perf_counter()


# --- the main job: staffing days, learning between batches, the leaderboard -----------------

DEMO_STAFFERS = ("rules-learning", "rules-static")
LLM_STAFFERS = ("full", "basic", "minimal", "local", "configured")
LOCAL_STAFFER = "local-tiny"
# The local model is slow on a CPU (seconds per call, several calls per event): one batch of
# the reduced pack keeps --local-llm to minutes.
LOCAL_BATCHES = 1
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
    summary: Any  # a runner.RunSummary


class MainJobResult(BaseModel):
    """The demo's first step (dataset, index, examples), the scenario runs and the steps' times."""

    model_config = {"arbitrary_types_allowed": True}

    demo: DemoResult
    run: Any
    llm_staffers: list[str]
    skipped: dict[str, list[str]]
    local: Any = None
    steps: list[StepDone] = Field(default_factory=list)
    seconds: float = 0.0

    @property
    def hint(self) -> str | None:
        """One line on how to add an LLM staffer when none ran (local-tiny counts)."""
        return None if self.llm_staffers or self.local is not None else ADD_AN_LLM


def reachable_llm_staffers(settings: Settings) -> tuple[list[str], dict[str, list[str]]]:
    """The built-in LLM staffers whose models answer now, and why the others cannot run."""
    from agentlake.scenarios.profile import load_profile, unreachable_models

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
    """The pack for the local model: each client's first day, first event only (none refers back)."""
    from agentlake.scenarios import load_scenarios

    days = [s for s in load_scenarios("builtin") if s.scenario.endswith("-day1")]
    return [s.model_copy(update={"events": [e for e in s.events if e.ref is None][:1]}) for s in days]


def _ensure_workforce(lake: Lake, workers: int, seed: int) -> tuple[int, int]:
    """Generate the workforce when the lake has none: (generated, rows now)."""
    from agentlake.workforce.generator import generate_workforce, load_workforce

    known = {info.name: info for info in lake.datasets()}
    if "workers" in known:
        return 0, known["workers"].row_count
    workforce = generate_workforce(workers, seed=seed)
    load_workforce(lake, workforce)
    return workforce.workers.num_rows, workforce.workers.num_rows


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


def _run_summary(summary: Any, staffers: Sequence[str]) -> str:
    return (
        f"{', '.join(staffers)}: {summary.results} judged events; fill rate per batch: "
        + "; ".join(f"{name} {' -> '.join(f'{v:.0%}' for v in curve)}" for name, curve in summary.learning_curve.items())
    )  # fmt: skip


def run_main_job(
    settings: Settings | None = None,
    *,
    workers: int = 50_000,
    seed: int = 7,
    batches: int = 3,
    local_llm: bool = False,
    on_event: Callable[[Any], None] | None = None,
    embedder: Any = None,
) -> MainJobResult:
    """``make demo``: the workforce, its index, the built-in pack and the leaderboard, timed.

    Steps: generate the workforce when the lake has none; start the ``workers.resume_text``
    index in the background; answer the example SQL; run the built-in pack with the rules
    baseline (learning on and off) and every reachable LLM staffer over ``batches`` batches
    (the rules policy never searches the index, so it runs while the index builds; LLM staffers
    call ``hybrid_search``, so the index is finished before them); finish the index; answer the
    example hybrid search; then (``local_llm``) run the in-process ``local-tiny`` model on a
    reduced pack. ``on_event`` receives, as they happen: ``StepDone``, ``Notice``,
    ``SqlExample``, ``SearchExample``, ``RunDone``, ``IndexProgress`` and the runner's per-day
    ``Progress``. ``local_llm`` without the local model raises ``UserError`` with the install
    line before anything runs. Results go under ``settings.runs_dir``. A Ctrl-C while the index
    builds stops it after the current chunk; the vectors made so far stay cached. ``embedder``
    (default: the ``embed_model`` setting) embeds the resumes and the example question.
    """
    from agentlake.errors import UserError
    from agentlake.lake import Lake
    from agentlake.lake.search import hybrid_search
    from agentlake.scenarios.profile import load_profile, unreachable_models
    from agentlake.scenarios.runner import run_scenarios

    settings = settings or load_settings()
    emit = on_event or (lambda event: None)
    if local_llm:
        problems = unreachable_models(load_profile(LOCAL_STAFFER), settings)
        if problems:
            raise UserError(f"--local-llm: the local model cannot run: {'; '.join(problems)}")
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
        generated, rows = _ensure_workforce(lake, workers, seed)
        step("dataset", started, f"generated {generated:,} workers (seed {seed})" if generated
             else f"workers already in the lake ({rows:,} rows)")  # fmt: skip
        index_started = clock()
        build = BackgroundIndex(lake, "workers", "resume_text", embedder=embedder).start()
        try:
            started = clock()
            sql_result = lake.query(DEMO_SQL)
            emit(SqlExample(sql=DEMO_SQL, result=sql_result))
            step("example SQL", started, f"{len(sql_result.rows)} rows")

            started = clock()
            llm, skipped = reachable_llm_staffers(settings)
            step("model check", started, f"LLM staffers ready: {', '.join(llm) or 'none'}")
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
            summary = run_scenarios("builtin", staffers, batches=batches, settings=settings, lake=lake,
                                    on_progress=day)  # fmt: skip
            step("scenario pack", started, _run_summary(summary, staffers))
            emit(RunDone(label="scenario pack", summary=summary))

            if not build.finished:
                p = build.progress()
                emit(Notice(text=(
                    f"the index is still building ({p.done:,}/{p.total:,} resumes have vectors); finishing it now. "
                    "Ctrl-C stops it: the vectors made so far stay cached and the next `make demo` goes on from there"
                )))  # fmt: skip
            built = _finish(build, emit)
            if built is not None:
                # The build found every vector cached because the thread had just embedded them:
                # report the thread's counts, not the cache's.
                made = build.progress().embedded
                built = built.model_copy(update={"embedded": made, "cached": built.index.row_count - made})
            step("index (background)", index_started, _index_summary(built, "workers", "resume_text"),
                 seconds=build.progress().seconds)  # fmt: skip

            started = clock()
            sources = hybrid_search(lake, "workers", DEMO_QUESTION, where=DEMO_WHERE, k=5, embedder=embedder)
            emit(SearchExample(question=DEMO_QUESTION, where=DEMO_WHERE, sources=sources))
            step("example search", started, f"{len(sources)} workers")

            local = None
            if local_llm:
                started = clock()
                pack = reduced_pack()
                local = run_scenarios(pack, [LOCAL_STAFFER, "rules-learning"], batches=LOCAL_BATCHES,
                                      settings=settings, lake=lake, on_progress=emit)  # fmt: skip
                step("local-tiny", started, _run_summary(local, [LOCAL_STAFFER, "rules-learning"]))
                emit(RunDone(label="local-tiny", summary=local))
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
