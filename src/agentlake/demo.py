"""The first-run demo: a 50k-worker lake, its vector index, one SQL answer and one hybrid search.

Owns :func:`run_demo`, the library side of ``agentlake demo`` / ``make demo``: it generates the
workforce dataset if the lake has none (``agentlake.data``), builds or refreshes the index of
``workers.resume_text`` (``agentlake.lake.index``), then runs an example query and an example
hybrid search. It renders nothing; the CLI does. Later scenario work extends the demo here.
"""

from __future__ import annotations

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
