"""The first-run demo: a 50k-worker lake, its vector index, one SQL answer and one hybrid search.

Owns :func:`run_demo`, the library side of ``agentlake demo`` / ``make demo``: it generates the
workforce dataset if the lake has none (``agentlake.data``), builds or refreshes the index of
``workers.resume_text`` (``agentlake.lake.index``), then runs an example query and an example
hybrid search. It renders nothing; the CLI does.

The main job (``run_main_job``, what ``make demo`` runs) keeps that as its first step, then runs
the built-in scenario pack with the rules baseline (learning on and off) and every LLM staffer
whose model is reachable, over three batches, and writes the leaderboard and the report
(``agentlake.scenarios``); ``--local-llm`` adds the in-process ``local-tiny`` staffer on a
reduced pack.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from agentlake.lake.index import BuildResult
from agentlake.lake.lakehouse import QueryResult
from agentlake.lake.search import Source
from agentlake.settings import Settings, load_settings

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
    from agentlake.data import generate_workforce, load_workforce
    from agentlake.lake import Lake
    from agentlake.lake.index import ensure_index
    from agentlake.lake.search import hybrid_search

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


# --- the main job: staffing days, learning between batches, the leaderboard -----------------

DEMO_STAFFERS = ("rules-learning", "rules-static")
LLM_STAFFERS = ("full", "basic", "minimal", "local", "configured")
LOCAL_STAFFER = "local-tiny"
ADD_AN_LLM = (
    "No LLM staffer ran: start Ollama (`ollama serve`, then `ollama pull qwen3:4b`) or set OPENAI_BASE_URL "
    "and AGENTLAKE_EXECUTOR_MODEL=openai:MODEL, then run `make demo` again."
)


class MainJobResult(BaseModel):
    """The demo's first step (dataset, index, examples) and the scenario runs."""

    model_config = {"arbitrary_types_allowed": True}

    demo: DemoResult
    run: Any
    llm_staffers: list[str]
    skipped: dict[str, list[str]]
    local: Any = None

    @property
    def hint(self) -> str | None:
        """One line on how to add an LLM staffer when none ran."""
        return None if self.llm_staffers else ADD_AN_LLM


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
    """The pack for the local model: each client's first day, first two events (none refers back)."""
    from agentlake.scenarios import load_scenarios

    days = [s for s in load_scenarios("builtin") if s.scenario.endswith("-day1")]
    return [s.model_copy(update={"events": [e for e in s.events if e.ref is None][:2]}) for s in days]


def run_main_job(
    settings: Settings | None = None,
    *,
    workers: int = 50_000,
    seed: int = 7,
    batches: int = 3,
    local_llm: bool = False,
    progress: bool = False,
    on_day: Callable[[Any], None] | None = None,
    on_first_step: Callable[[DemoResult], None] | None = None,
) -> MainJobResult:
    """``make demo``: the issue-2 demo, then the built-in pack with the rules baseline (learning
    on and off) and every reachable LLM staffer over ``batches`` batches, then (``local_llm``)
    the ``local-tiny`` in-process model on a reduced pack.

    ``local_llm`` without the local model installed raises ``UserError`` with the install line
    before anything runs. Results go under ``settings.runs_dir``; the report is written there.
    ``on_first_step`` receives the issue-2 demo's result as soon as it is ready, ``on_day`` each
    finished scenario day.
    """
    from agentlake.errors import UserError
    from agentlake.scenarios.profile import load_profile, unreachable_models
    from agentlake.scenarios.runner import run_scenarios

    settings = settings or load_settings()
    if local_llm:
        problems = unreachable_models(load_profile(LOCAL_STAFFER), settings)
        if problems:
            raise UserError(f"--local-llm: the local model cannot run: {'; '.join(problems)}")
    first = run_demo(settings, workers=workers, seed=seed, progress=progress)
    if on_first_step is not None:
        on_first_step(first)
    llm, skipped = reachable_llm_staffers(settings)
    summary = run_scenarios(
        "builtin", [*DEMO_STAFFERS, *llm], batches=batches, settings=settings, on_progress=on_day
    )
    local = None
    if local_llm:
        local = run_scenarios(
            reduced_pack(),
            [LOCAL_STAFFER, "rules-learning"],
            batches=2,
            settings=settings,
            on_progress=on_day,
        )
    return MainJobResult(demo=first, run=summary, llm_staffers=llm, skipped=skipped, local=local)
