"""Answering a question about the lake with an LLM, citing where every fact came from.

Owns the recipe behind ``POST /ask``, the MCP ``ask`` tool and anything else that wants a
written answer: (1) the model plans, seeing the datasets' real columns: one read-only SQL query
for a structured question (counts, averages, filters, top-N), hybrid search otherwise; (2) the
plan runs through the lake's guarded paths (``Lake.query``, ``lake.search.hybrid_search``), and
a SQL plan that the guard refuses or that fails falls back to search; (3) the model writes the
answer from that evidence only, citing source ids (``[SQL]`` for the query result, ``[W-7995]``
for a worker's profile). An answer that cites nothing gets its sources appended, so no answer
leaves without them.

It does not own model calls (``agentlake.llm``), SQL safety (``agentlake.lake.guard``) or the
search index (``agentlake.lake.search``). No model configured or reachable raises
``UnavailableError``/``ModelServerUnreachable`` (HTTP 503).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field, RootModel, model_validator

from agentlake.agents import render
from agentlake.agents.tools import datasets_text, listed_values
from agentlake.errors import AgentlakeError, UnavailableError, UserError
from agentlake.llm.fence import DATA_RULE, data_block
from agentlake.settings import Settings
from agentlake.workforce.tables import SEARCH_DATASET, WORKERS

if TYPE_CHECKING:
    from agentlake.lake import Lake

MAX_SQL_ROWS = 50
MAX_SOURCE_CHARS = 400

# One worked count, shown to a model before a real question (ask's plan and answer, the graph's
# thinker): constant, so it stays in the model's prefix cache, and over the domain's real table
# (a small model otherwise writes FROM welders for "welders").
EXAMPLE_QUESTION = "How many forklift operators are in TX?"
EXAMPLE_NAMED = [("role", "Forklift Operator"), ("state", "TX")]
EXAMPLE_SQL = f"SELECT count(*) AS n FROM {WORKERS} WHERE role = 'Forklift Operator' AND state = 'TX'"
EXAMPLE_COUNT = 12

PLAN_PROMPT = """\
You plan how to answer a question about an operational database (DuckDB).
Datasets (tables) and their columns:
{catalog}
{data_rule}

Choose ONE route:
- "sql" for structured questions (counts, sums, averages, filters on columns, top-N, lists by
  exact attributes): write ONE read-only DuckDB SELECT (or WITH ... SELECT) over these tables,
  with a LIMIT of at most {max_rows} rows when it returns rows. Compare a column with one of its
  listed values exactly as written: WHERE <column> = '<one of its values, as listed>'.
- "search" for fuzzy or descriptive questions (experience, skills described in words, "who is
  good at ..."): give the dataset, the search text, and optionally a SQL WHERE fragment over
  that dataset's columns (no "WHERE" keyword) to narrow it first.
"""

ANSWER_PROMPT = """\
Answer the question using ONLY the evidence below. Cite the id in square brackets of every
source you rely on, e.g. [SQL] or [W-7995]. If the evidence does not answer the question, say so.
Be brief and concrete.
{data_rule}"""


class SqlPlan(BaseModel):
    """A structured question: one read-only query answers it."""

    route: Literal["sql"]
    sql: str = Field(..., min_length=1, description="One read-only SELECT.")


class SearchPlan(BaseModel):
    """A fuzzy question: hybrid search over a dataset's documents."""

    route: Literal["search"]
    dataset: str = Field(SEARCH_DATASET, description="The dataset to search.")
    search_text: str = Field(..., min_length=1, description="What to look for, in words.")
    where: str | None = Field(None, description="Optional WHERE fragment (no 'WHERE').")


class AskPlan(RootModel[Annotated[SqlPlan | SearchPlan, Field(discriminator="route")]]):
    """What the model decided to look up. One shape per route: under constrained decoding a
    query cannot land in the search text (the 0.5B put its SELECT there when both shapes were
    one). A reply that does it anyway, without native schema support, is taken as the query."""

    @model_validator(mode="before")
    @classmethod
    def _query_in_the_wrong_field(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("route") == "sql" and not data.get("sql"):
            text = str(data.get("search_text") or "")
            if re.match(r"\s*(SELECT|WITH)\b", text, re.IGNORECASE):
                return {"route": "sql", "sql": text}
        return data


class AskSource(BaseModel):
    """One piece of evidence the answer may cite."""

    id: str = Field(..., description="What the answer cites: 'SQL' or a document id like 'W-7995'.")
    kind: Literal["sql", "document"]
    text: str = Field(..., description="The evidence as the model saw it (shortened).")
    key: int | None = Field(None, description="The row's key, for documents.")
    score: float | None = Field(None, description="Search similarity, for documents.")


class Answer(BaseModel):
    """A written answer and the evidence behind it."""

    question: str
    answer: str
    route: Literal["sql", "search"] = Field(..., description="The route that produced the evidence.")
    sql: str | None = Field(None, description="The query that ran (route=sql).")
    where: str | None = Field(None, description="The search filter that ran (route=search).")
    fallback_reason: str | None = Field(None, description="Why a planned SQL query was replaced by search.")
    revision: str | None = Field(
        None,
        description="Why the first planned query was sent back once (it left out a value the question names).",
    )
    sources: list[AskSource]
    cited: list[str] = Field(..., description="Source ids the answer text cites.")
    model: str


def ask(
    question: str,
    *,
    lake: Lake,
    model: str | None = None,
    dataset: str | None = None,
    k: int = 8,
    settings: Settings | None = None,
    embedder: Any = None,
) -> Answer:
    """Answer ``question`` from the lake with ``model`` (default ``settings.executor_model``, then
    ``default_model``: the embedded model).

    ``dataset`` pins the search route's dataset (the plan may otherwise pick one). Raises
    ``UserError`` for an empty question or an unknown dataset, ``UnavailableError`` (503) when no
    model is configured, and what ``agentlake.llm`` raises when the model cannot be reached.
    """
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm import Message, default_model, generate, generate_structured

    settings = settings or lake.settings
    question = " ".join(question.split())
    if not question:
        raise UserError("ask needs a question")
    model = model or default_model(settings, "executor_model")
    if not model:
        raise UnavailableError(
            "no model to answer with: install the embedded models (`make models`), set AGENTLAKE_EXECUTOR_MODEL "
            "(e.g. ollama:qwen3:4b) or pass a model"
        )
    datasets = {info.name: info for info in lake.datasets()}
    if dataset is not None and dataset not in datasets:
        raise UserError(f"unknown dataset {dataset!r}; known datasets: {', '.join(datasets) or 'none yet'}")
    catalog = "\n".join(datasets_text(lake, None, values=True)[1:]) or "(no datasets yet)"
    listed = listed_values(lake)
    named = named_values(question, listed)
    messages = [
        Message(
            role="system",
            content=PLAN_PROMPT.format(
                catalog=data_block(catalog), max_rows=MAX_SQL_ROWS, data_rule=DATA_RULE
            ),
        ),
        *(Message(**shot) for shot in PLAN_SHOTS),
        Message(role="user", content=question + named_values_hint(named, listed, question)),
    ]
    plan = generate_structured(model, messages, AskPlan, settings=settings, max_tokens=800).root
    revision = None
    problem, result, error = _run_plan(plan, named, lake)
    if problem:
        # Sent back once, saying what is wrong: a small model counts "welders in OH" over every
        # worker in OH, or queries a table named after the question's noun ("FROM welders").
        revision = f"the first query {problem}"
        messages += [
            Message(role="assistant", content=plan.model_dump_json(exclude_none=True)),
            Message(
                role="user",
                content=f"Your query {problem}. Write the whole query again"
                + (f", over the tables {', '.join(sorted(datasets))}." if error is not None else "."),
            ),
        ]
        plan = generate_structured(model, messages, AskPlan, settings=settings, max_tokens=800).root
        problem, result, error = _run_plan(plan, named, lake)
    answer = Answer(
        question=question, answer="", route="search", sources=[], cited=[], model=model, revision=revision
    )
    if isinstance(plan, SqlPlan):
        if result is not None:
            answer.route, answer.sql = "sql", plan.sql
            answer.sources = [_sql_source(result)]
        elif error is not None:  # refused or failing SQL: the question still deserves an answer
            answer.fallback_reason = f"the planned SQL did not run ({error.message})"
    if answer.route == "search":
        # A failed query falls back to searching for the question itself.
        searched = plan if isinstance(plan, SearchPlan) else None
        chosen = searched.dataset if searched and searched.dataset in datasets else SEARCH_DATASET
        answer.sources, answer.where = _search(
            lake,
            dataset or chosen,
            searched.search_text if searched else question,
            searched.where if searched else None,
            k,
            embedder,
        )
    # Each source fenced on its own, its id outside: the model cites the id, never obeys the text.
    evidence = (
        "\n".join(f"[{source.id}] {data_block(source.text)}" for source in answer.sources)
        or "(no evidence found)"
    )
    completion = generate(
        model,
        [
            Message(role="system", content=ANSWER_PROMPT.format(data_rule=DATA_RULE)),
            *(Message(**shot) for shot in ANSWER_SHOTS),
            Message(role="user", content=f"Question: {question}\n\nEvidence:\n{evidence}"),
        ],
        settings=settings,
        max_tokens=800,
    )
    answer.answer, answer.cited = _with_citations(completion.text.strip(), answer.sources)
    return answer


# A worked answer before the real one (constant, cached): shown one, the 0.5B gives the value
# the query returned instead of a number of its own.
ANSWER_SHOTS = [
    {"role": "user", "content": f"Question: {EXAMPLE_QUESTION}\n\nEvidence:\n[SQL] "
     + data_block(f"one value: n = {EXAMPLE_COUNT}")},
    {"role": "assistant", "content": f"There are {EXAMPLE_COUNT} forklift operators in TX [SQL]."},
]  # fmt: skip


def named_values(question: str, listed: dict[tuple[str, str], list[str]]) -> list[tuple[str, str]]:
    """``(column, value)`` for each listed column value the question names, in the question's
    order: "welders" names role 'Welder'; a short code names it only written as listed ("OH",
    not "in" for IN); a value inside a longer named one ("Truck Driver" in "CDL-A Truck Driver")
    is left out."""
    found: dict[tuple[str, str], int] = {}
    for (_, column), values in listed.items():
        for value in values:
            if value.isupper() and len(value) <= 3:
                match = re.search(rf"(?<![A-Za-z]){re.escape(value)}(?![A-Za-z])", question)
            else:
                match = re.search(rf"\b{re.escape(value)}(?:s|es)?\b", question, re.IGNORECASE)
            if match and (column, value) not in found:
                found[(column, value)] = match.start()
    kept = [
        key
        for key in found
        if not any(
            key != other and key[0] == other[0] and key[1].lower() in other[1].lower() for other in found
        )
    ]
    return sorted(kept, key=lambda key: found[key])


def named_values_hint(
    named: list[tuple[str, str]], listed: dict[tuple[str, str], list[str]], question: str = ""
) -> str:
    """The line given to a model after a question that names ``named`` values (empty when it
    names none): each as a filter, and the tables in which all of them are column values (only
    those the ``question`` names, when it names some: "workers in CA" is not about clients in
    CA). Constant for a given question, so a worked example can show it too."""
    if not named:
        return ""
    values = "; ".join(f"{column} = '{value}'" for column, value in named)
    tables = [{table for (table, col), found in listed.items() if col == column and value in found}
              for column, value in named]  # fmt: skip
    common = sorted(set.intersection(*tables))
    asked = [table for table in common if re.search(rf"\b{re.escape(table.rstrip('s'))}s?\b", question, re.I)]
    common = asked or common
    where = f" (columns of {' and of '.join(common)})" if common else ""
    return f"\n\nValues the question names (filter on each, exactly as written): {values}{where}"


def unnamed_values(
    sql: str, question: str, named: list[tuple[str, str]], listed: dict[tuple[str, str], list[str]]
) -> str | None:
    """The listed values ``sql`` filters on that the question neither names nor contains
    (``"state = 'TX'"``: a small model copies a worked example's filter), or None."""
    text = question.lower()
    extra = {(column, value) for (_, column), values in listed.items() for value in values
             if (column, value) not in named and value.lower() not in text and compares(sql, column, value)}  # fmt: skip
    return " and ".join(f"{column} = '{value}'" for column, value in sorted(extra)) or None


def missing_values(sql: str, named: list[tuple[str, str]]) -> str | None:
    """What ``sql`` leaves out of the values a question names (``"role = 'Welder'"``), or None
    when it compares every one."""
    missing = [(column, value) for column, value in named if not compares(sql, column, value)]
    return " and ".join(f"{column} = '{value}'" for column, value in missing) or None


def _run_plan(
    plan: SqlPlan | SearchPlan, named: list[tuple[str, str]], lake: Lake
) -> tuple[str | None, Any, AgentlakeError | None]:
    """A SQL plan run through the guard: ``(what is wrong with it, its result, its error)``."""
    if not isinstance(plan, SqlPlan):
        return None, None, None
    try:
        result = lake.query(plan.sql, max_rows=MAX_SQL_ROWS)
    except AgentlakeError as exc:
        return f"did not run: {exc.message}", None, exc
    left = missing_values(plan.sql, named)
    if left:
        return f"leaves out {left}, which the question names", result, None
    return None, result, None


# A worked plan for each route before the real question (constant: it stays in the model's prefix
# cache). Shown one, the 0.5B and the 1.5B filter on every value a question names far more often.
EXAMPLE_HINT = named_values_hint(
    EXAMPLE_NAMED, {(WORKERS, column): [value] for column, value in EXAMPLE_NAMED}
)
PLAN_SHOTS = [
    {"role": "user", "content": EXAMPLE_QUESTION + EXAMPLE_HINT},
    {"role": "assistant", "content": json.dumps({"route": "sql", "sql": EXAMPLE_SQL})},
    {"role": "user", "content": "Who has experience repairing hydraulic presses?"},
    {"role": "assistant", "content": json.dumps({"route": "search", "dataset": WORKERS,
     "search_text": "experience repairing hydraulic presses"})},
]  # fmt: skip


def compares(sql: str, column: str, value: str) -> bool:
    """``sql`` compares ``column`` with ``value``: ``state = 'OH'``, ``w."state" IN ('IN', 'OH')``,
    ``role LIKE 'Welder'`` (not ``city = 'OH'``)."""
    quoted = "'" + value.replace("'", "''") + "'"
    pattern = rf"\b{re.escape(column)}\"?\s*(?:=|==|i?like|in\s*\([^)]*?)\s*{re.escape(quoted)}"
    return re.search(pattern, sql, re.IGNORECASE) is not None


def _sql_source(result: Any) -> AskSource:
    one = render.one_value_text(result.to_dicts())
    if one is not None:
        return AskSource(id="SQL", kind="sql", text=one[:4000])
    header = " | ".join(result.columns)
    lines = [" | ".join("" if value is None else str(value) for value in row) for row in result.rows]
    more = " (more rows exist)" if result.truncated else ""
    text = f"{len(result.rows)} rows{more}: {header}\n" + "\n".join(lines)
    return AskSource(id="SQL", kind="sql", text=text[:4000])


def _search(
    lake: Lake, dataset: str, text: str, where: str | None, k: int, embedder: Any
) -> tuple[list[AskSource], str | None]:
    # Lazy (start-up time): search and its embedder load on the first search.
    from agentlake.lake.search import hybrid_search

    try:
        found = hybrid_search(lake, dataset, text, where=where, k=k, embedder=embedder)
    except UserError:
        if where is None:
            raise
        # A filter the guard refuses (or naming a wrong column) is the model's slip: search unfiltered.
        found, where = hybrid_search(lake, dataset, text, k=k, embedder=embedder), None
    sources = [
        AskSource(
            id=str(hit.doc_id),
            kind="document",
            text=str(hit.chunk_text)[:MAX_SOURCE_CHARS],
            key=int(hit.key),
            score=float(hit.score),
        )
        for hit in found
    ]
    return sources, where


_CITATION = re.compile(r"\[([A-Za-z]+(?:-[A-Za-z0-9]+)?)\]")


def _with_citations(text: str, sources: list[AskSource]) -> tuple[str, list[str]]:
    """The answer text and the source ids it cites; sources are appended when it cites none."""
    known = {source.id for source in sources}
    cited = list(dict.fromkeys(match for match in _CITATION.findall(text) if match in known))
    if not cited and sources:
        cited = [source.id for source in sources]
        text = f"{text}\n\nSources: " + ", ".join(f"[{source_id}]" for source_id in cited)
    return text, cited
