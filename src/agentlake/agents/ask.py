"""Answering a question about any lake with an LLM, citing where every fact came from.

Owns the recipe behind ``agentlake ask``, ``POST /ask``, the MCP ``ask`` tool and anything else
that wants a written answer:

1. **plan**: the model sees the datasets' real columns (and the listed values of short text
   columns) and a worked example made from the same lake (``examples``), and chooses one read-only
   SQL query, or a hybrid search over a dataset that has a vector index (the search route is
   offered only when one has; its dataset is one of them).
2. **run**: the plan runs through the lake's guarded paths (``Lake.query``, every attempt
   recorded as a ``tool.sql`` op; ``lake.search.hybrid_search``). A plan that fails (the guard
   refuses it, a column does not exist, a search without an index), returns nothing, leaves out
   a value the question names, or searches where the question counts or averages, is sent back
   to the model ONCE with what went wrong (the real message, the tables and their columns);
   then the answer is written from what did run.
3. **answer**: the model writes the answer from that evidence only, citing source ids (``[SQL]``
   for the query result, a document id for a search hit); an answer that cites nothing gets its
   sources appended. When nothing ran, no model is asked: the answer says so and what was
   tried (``route="none"``), which is an answer, not an error.

Every answer is recorded as one ``ask.answer`` op whose id is the answer's ``id``: feedback on
it (``agentlake feedback ID``) is learned from. It does not own model calls
(``agentlake.llm``), SQL safety (``agentlake.lake.guard``) or the search index
(``agentlake.lake.search``). No model configured or reachable raises
``UnavailableError``/``ModelServerUnreachable`` (HTTP 503).
"""

from __future__ import annotations

import datetime
import json
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, model_validator

from agentlake.agents import render
from agentlake.agents.adapt import adapted
from agentlake.agents.answer_check import code_answer, one_value, shown, states
from agentlake.agents.examples import WorkedCount, worked_count, worked_ranking, worked_search
from agentlake.agents.fixes import find_problems, fix_query
from agentlake.agents.linking import (
    join_hints,
    lake_columns,
    link_datasets,
    named_values,
    named_values_hint,
)
from agentlake.agents.tools import datasets_text, listed_values, searchable
from agentlake.agents.turn import Turn, take
from agentlake.errors import AgentlakeError, UnavailableError, UserError
from agentlake.llm.fence import DATA_RULE, data_block
from agentlake.observe import observe
from agentlake.observe.model import new_op_id
from agentlake.questions.feedback import record_answer
from agentlake.questions.retrieval import (
    QuestionLessons,
    apply_renames,
    lessons_for_question,
    project_lessons,
)
from agentlake.settings import Settings

if TYPE_CHECKING:
    from agentlake.embed import Embedder
    from agentlake.lake import Lake, QueryResult
    from agentlake.learn import LessonStore
    from agentlake.observe import Observer

log = logging.getLogger(__name__)

MAX_SQL_ROWS = 50
MAX_SOURCE_CHARS = 400
MAX_QUESTION_CHARS = 2000
# Listed values shown per column in a table's detail (the rest are counted); named values
# reach the model through the hint whichever they are.
MAX_VALUES_SHOWN = 15
# Fixes code makes by itself to a query the model wrote twice wrong, one after the other.
MAX_REPAIRS = 6

PLAN_PROMPT = """\
You plan how to answer a question about the user's database (DuckDB).
Datasets (tables) and their columns:
{catalog}
{data_rule}

{routes}"""

SQL_ROUTE = """\
"sql" for structured questions (counts, sums, averages, filters on columns, top-N, lists by
  exact attributes): write ONE read-only DuckDB SELECT (or WITH ... SELECT) over these tables,
  with a LIMIT of at most {max_rows} rows when it returns rows. Use only the columns listed.
  Compare a column with one of its listed values exactly as written: WHERE <column> = '<value>'.
  Filter only on what the question asks. Count different values with count(DISTINCT <column>).
  A date column: year(<column>) = 2015, month(<column>) = 3, or <column> BETWEEN DATE '2015-03-01'
  AND DATE '2015-03-31'; days between two dates: <later> - <earlier>."""

SEARCH_ROUTE = """\
"search" for fuzzy or descriptive questions (things described in words): give the dataset (one
  of {indexed}), the search text, and optionally a SQL WHERE fragment over that dataset's
  columns (no "WHERE" keyword) to narrow it first."""

ANSWER_PROMPT = """\
Answer the question using ONLY the evidence below. Cite the id in square brackets of every
source you rely on, e.g. [SQL]. If the evidence does not answer the question, say so.
Be brief and concrete: quote the numbers of the evidence exactly.
{data_rule}"""

# A question that counts, sums, averages or ranks needs every row: a search returns a few.
_AGGREGATE = re.compile(
    r"\b(how many|number of|count|average|mean|median|total|sum|highest|lowest|maximum|minimum|"
    r"max|min|most|least|largest|smallest|percent|percentage|proportion|share)\b",
    re.IGNORECASE,
)


class SqlPlan(BaseModel):
    """A structured question: one read-only query answers it."""

    route: Literal["sql"]
    sql: str = Field(..., min_length=1, description="One read-only SELECT.")

    @model_validator(mode="before")
    @classmethod
    def _query_in_the_wrong_field(cls, data: Any) -> Any:
        # A reply without native schema support may put its query under the search text.
        if isinstance(data, dict) and data.get("route") == "sql" and not data.get("sql"):
            text = str(data.get("search_text") or "")
            if re.match(r"\s*(SELECT|WITH)\b", text, re.IGNORECASE):
                return {"route": "sql", "sql": text}
        return data


class SearchPlan(BaseModel):
    """A fuzzy question: hybrid search over an indexed dataset's documents."""

    route: Literal["search"]
    dataset: str = Field(..., min_length=1, description="The dataset to search (it has a vector index).")
    search_text: str = Field(..., min_length=1, description="What to look for, in words.")
    where: str | None = Field(None, description="Optional WHERE fragment (no 'WHERE').")


Plan = SqlPlan | SearchPlan


class AskSource(BaseModel):
    """One piece of evidence the answer may cite."""

    id: str = Field(..., description="What the answer cites: 'SQL' or a document id like 'W-7995'.")
    kind: Literal["sql", "document"]
    text: str = Field(..., description="The evidence as the model saw it (shortened).")
    key: int | str | None = Field(None, description="The row's key, for documents.")
    score: float | None = Field(None, description="Search similarity, for documents.")


class Answer(BaseModel):
    """A written answer and the evidence behind it."""

    id: str = Field("", description="The answer's id (its ask.answer op): what feedback names.")
    question: str
    answer: str
    route: Literal["sql", "search", "none"] = Field(
        ..., description="The route that produced the evidence; none: nothing ran."
    )
    sql: str | None = Field(None, description="The query that ran (route=sql).")
    dataset: str | None = Field(None, description="The dataset searched (route=search).")
    where: str | None = Field(None, description="The search filter that ran (route=search).")
    fallback_reason: str | None = Field(
        None, description="Why the evidence is not the first plan's: what went wrong with it."
    )
    revision: str | None = Field(
        None,
        description="Why the first plan was sent back once (the error, an empty result, a left-out value).",
    )
    tried: list[str] = Field(default_factory=list, description="Each plan tried and how it ended.")
    sources: list[AskSource]
    cited: list[str] = Field(..., description="Source ids the answer text cites.")
    model: str
    lessons: list[str] = Field(
        default_factory=list, description="The lessons the answer was given (their ids)."
    )
    lessons_cited: list[str] = Field(
        default_factory=list,
        description="The given lessons its query shows it used (a name rewritten, an example followed).",
    )


@dataclass
class _Run:
    """One plan and what running it gave."""

    plan: Plan
    result: QueryResult | None = None  # for sql
    sources: list[AskSource] = field(default_factory=list)
    where: str | None = None
    error: str | None = None  # it did not run
    problem: str | None = None  # what to send back: the error, an empty result, a left-out value
    kind: str | None = None  # the first problem's kind: "error", "aggregate" or one of agents.fixes'
    others: list[str] = field(default_factory=list)  # the kinds of its other problems, in order
    repair: str | None = None  # what code fixed in the query before it ran
    renamed: list[str] = field(default_factory=list)  # rename lessons applied to the query

    @property
    def ran(self) -> bool:
        return self.error is None

    @property
    def noun(self) -> str:
        return "query" if isinstance(self.plan, SqlPlan) else "search"

    def describe(self) -> str:
        what = (
            f"sql: {self.plan.sql}"
            if isinstance(self.plan, SqlPlan)
            else (f"search {self.plan.dataset}: {self.plan.search_text}")
        )
        if self.repair:
            what = f"{what} (repaired by code: {self.repair})"
        if self.error:
            return f"{what} -> failed: {self.error}"
        if isinstance(self.plan, SqlPlan):
            rows = len(self.result.rows) if self.result is not None else 0
            return f"{what} -> {rows} row{'s' if rows != 1 else ''}" + (
                f" ({self.problem})" if self.problem else ""
            )
        return f"{what} -> {len(self.sources)} hits"


@dataclass
class _Asking:
    """What every step of one answer shares."""

    question: str
    lake: Lake
    named: list[tuple[str, str]]
    linked: list[str]
    k: int
    embedder: Embedder | None
    observer: Observer | None
    given: QuestionLessons = field(default_factory=QuestionLessons)
    listed: dict[tuple[str, str], list[str]] = field(default_factory=dict)


def ask(
    question: str,
    *,
    lake: Lake,
    model: str | None = None,
    dataset: str | None = None,
    k: int = 8,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    observer: Observer | None = None,
    lessons: LessonStore | bool | None = True,
) -> Answer:
    """Answer ``question`` from the lake with ``model`` (default ``settings.executor_model``, then
    ``default_model``: the embedded model).

    ``lessons``: the lesson store whose data lessons the answer is given (``True``: the
    project's, when there is one and ``ask_lessons`` is on; ``False``/``None``: none, the
    learning-off twin). They reach the plan as notes and worked examples, and code rewrites the
    names they say are wrong; the answer's op says which were given and cited.

    ``dataset`` pins the search route's dataset (it must have a vector index). Raises
    ``UserError`` for an empty question, an empty lake or an unknown or unindexed pinned
    dataset, ``UnavailableError`` (503) when no model is configured, and what ``agentlake.llm``
    raises when the model cannot be reached. A question the data cannot answer is answered
    saying so (``route="none"``), never raised.
    """
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm import Message, default_model, generate

    settings = settings or lake.settings
    question = " ".join(question.split())
    if not question:
        raise UserError("ask needs a question")
    if len(question) > MAX_QUESTION_CHARS:
        raise UserError(f"the question is {len(question)} characters; ask in at most {MAX_QUESTION_CHARS}")
    datasets = {info.name: info for info in lake.datasets()}
    if not datasets:
        raise UserError(
            "the lake holds no datasets yet: load a file first, e.g. `agentlake ingest data.csv --dataset NAME`"
        )
    model = model or default_model(settings, "executor_model")
    if not model:
        raise UnavailableError(
            "no model to answer with: install the embedded models (`make models`), set AGENTLAKE_EXECUTOR_MODEL "
            "(e.g. ollama:qwen3:4b) or pass a model"
        )
    indexed = searchable(lake)
    if dataset is not None:
        if dataset not in datasets:
            raise UserError(f"unknown dataset {dataset!r}; known datasets: {', '.join(datasets)}")
        if dataset not in indexed:
            raise UserError(
                f"dataset {dataset!r} has no vector index to search: run `agentlake index build {dataset} --column TEXT_COLUMN`"
            )
        indexed = [dataset]
    listed = listed_values(lake)
    context = _Asking(
        question,
        lake,
        named_values(question, listed, lake_columns(lake)),
        link_datasets(question, lake),
        k,
        embedder,
        observer,
        listed=listed,
    )
    store, opened = _lesson_store(lessons, settings)
    try:
        if store is not None:
            context.given = lessons_for_question(store, question, context.linked, project_id=None)
    finally:
        if opened:
            store.close()  # type: ignore[union-attr]
    adapting = (context.given.examples, question, lake, listed)
    # Over another table than the question's when the lake has one: a small model copies an
    # example's filter on the same column ("state = 'AK'" for a question about Hawaii).
    example = worked_count(lake, avoid=frozenset(context.linked))
    messages = [
        Message(role="system", content=plan_system(lake, indexed)),
        *(Message(**shot) for shot in plan_shots(lake, example, indexed, frozenset(context.linked))),
        *(Message(**shot) for shot in lesson_shots(context.given)),
        Message(
            role="user",
            content=plan_question(lake, question, context.linked, context.named, listed, context.given),
        ),
    ]
    # A confirmed query of this question's shape, with its values: code's plan, no model call.
    tried = [_run_plan(SqlPlan(route="sql", sql=sql), context) for sql, _ in adapted(*adapting)]
    first = next((run for run in tried if not run.problem), None)
    if first is not None:
        first.repair = "a confirmed query of an alike question, with this question's values"
    else:
        first = _run_plan(_plan(model, messages, indexed, settings), context)
    runs = [first]
    revision = None
    if first.problem:
        # Fixed by code where code can tell what is meant (agents.fixes), else sent back once,
        # saying what is wrong: a small model counts "welders in OH" over every worker in OH,
        # queries a table named after the question's noun ("FROM welders"), or searches where
        # it should count; then code fixes what the revision still gets wrong.
        runs += _repairs(first, context)
        if runs[-1].problem:
            revision = f"the first {first.noun} {first.problem}"
            messages += [
                Message(role="assistant", content=first.plan.model_dump_json(exclude_none=True)),
                Message(role="user", content=_send_back(first, lake, context.linked)),
            ]
            second = _run_plan(_plan(model, messages, indexed, settings), context, last=True)
            runs.append(second)
            runs += _repairs(second, context)
    chosen = _evidence_run(runs)
    answer = Answer(
        id=new_op_id(),
        question=question,
        answer="",
        route="none",
        sources=[],
        cited=[],
        model=model,
        revision=revision,
        tried=[run.describe() for run in runs],
        lessons=context.given.ids,
    )
    if chosen is not None:
        if chosen is not first:
            answer.fallback_reason = f"the first {first.noun} {first.problem}"
        if isinstance(chosen.plan, SqlPlan):
            assert chosen.result is not None, "a chosen query ran"
            answer.route, answer.sql = "sql", chosen.plan.sql
            answer.sources = [_sql_source(chosen.result, question)]
            answer.lessons_cited = context.given.cited(chosen.plan.sql, chosen.renamed)
        else:
            answer.route, answer.dataset, answer.where = "search", chosen.plan.dataset, chosen.where
            answer.sources = chosen.sources
    if chosen is None:
        answer.answer = "I could not answer this from the data. Tried: " + "; ".join(answer.tried)
    else:
        # Each source fenced on its own, its id outside: the model cites the id, never obeys the text.
        evidence = (
            "\n".join(f"[{source.id}] {data_block(source.text)}" for source in answer.sources)
            or "(no evidence found)"
        )
        completion = generate(
            model,
            [
                Message(role="system", content=ANSWER_PROMPT.format(data_rule=DATA_RULE)),
                *(Message(**shot) for shot in answer_shots(example)),
                Message(role="user", content=f"Question: {question}\n\nEvidence:\n{evidence}"),
            ],
            settings=settings,
            max_tokens=800,
            think=False,
        )
        answer.answer, answer.cited = _with_citations(completion.text.strip(), answer.sources)
        value = one_value(chosen.result.rows) if chosen.result is not None else None
        if answer.route == "sql" and not states(answer.answer, value, question):
            # A model that misreads its one value ("12" for 15): code writes the answer from it.
            answer.answer, answer.cited = code_answer(value, question, "SQL"), ["SQL"]
    _record(answer, runs, context)
    return answer


def plan_system(lake: Lake, indexed: list[str]) -> str:
    """The plan's system prompt: every table's columns and types, and the routes on offer
    (constant while the lake is unchanged, so a model's prefix cache serves it)."""
    catalog = "\n".join(datasets_text(lake, None)[1:]) or "(no datasets yet)"
    routes = (
        "Choose ONE route:\n- "
        + SQL_ROUTE.format(max_rows=MAX_SQL_ROWS)
        + "\n- "
        + SEARCH_ROUTE.format(indexed=", ".join(indexed))
        if indexed
        else "Answer with the route " + SQL_ROUTE.format(max_rows=MAX_SQL_ROWS)
    )
    return PLAN_PROMPT.format(catalog=data_block(catalog), data_rule=DATA_RULE, routes=routes)


def plan_question(
    lake: Lake,
    question: str,
    linked: list[str],
    named: list[tuple[str, str]],
    listed: dict[tuple[str, str], list[str]],
    given: QuestionLessons | None = None,
) -> str:
    """The question as the plan sees it: the question, then the tables it is likely about in
    detail (their columns' listed values and one row), what was learned about them, then the
    values it names."""
    notes = f"\n\n{data_block(given.notes)}" if given is not None and given.notes else ""
    return question + _tables_detail(lake, linked) + notes + named_values_hint(named, listed, question)


def _tables_detail(lake: Lake, tables: list[str]) -> str:
    # No sample row: a small model copies its values into filters the question never asked
    # for ("symbol = 'MSFT' AND date = '2000-01-01'").
    lines = datasets_text(lake, tuple(tables), values=True, max_values=MAX_VALUES_SHOWN)[1:]
    joins = join_hints(lake, tables)
    if joins:
        lines.append("Joins: " + "; ".join(joins))
    return (
        f"\n\nThe tables it is likely about, with their values:\n{data_block(chr(10).join(lines))}"
        if lines
        else ""
    )


def plan_schema(indexed: list[str]) -> dict[str, Any]:
    """The plan's JSON schema: the sql route, and the search route only over ``indexed``
    datasets (under constrained decoding a model cannot pick a dataset without an index)."""
    sql = {
        "type": "object",
        "properties": {
            "route": {"const": "sql"},
            "sql": {"type": "string", "minLength": 1, "maxLength": 2000},
        },
        "required": ["route", "sql"],
        "additionalProperties": False,
    }
    if not indexed:
        return sql
    search = {
        "type": "object",
        "properties": {
            "route": {"const": "search"},
            "dataset": {"type": "string", "enum": list(indexed)},
            "search_text": {"type": "string", "minLength": 1, "maxLength": 300},
            "where": {"type": "string", "maxLength": 300},
        },
        "required": ["route", "dataset", "search_text"],
        "additionalProperties": False,
    }
    return {"anyOf": [sql, search]}


def _plan(model: str, messages: list[Any], indexed: list[str], settings: Settings) -> Plan:
    def validate(value: Any) -> Plan:
        route = value.get("route") if isinstance(value, dict) else None
        if route == "search" and len(indexed) == 1 and not value.get("dataset"):
            value = {**value, "dataset": indexed[0]}  # the one dataset search can use
        if route == "search" and indexed:
            search = SearchPlan.model_validate(value)
            if search.dataset not in indexed:
                raise ValueError(
                    f"dataset {search.dataset!r} has no search index; search one of {', '.join(indexed)}"
                )
            return search
        if route == "search":
            raise ValueError("no dataset has a search index: answer with the sql route")
        return SqlPlan.model_validate(value)

    example = '{"route": "sql", "sql": "SELECT ..."}'
    turn = Turn(model, plan_schema(indexed), validate, "plan", example=example, max_tokens=800, think=False)
    return take(turn, messages, settings).value


def _run_plan(plan: Plan, context: _Asking, *, last: bool = False) -> _Run:
    """Run ``plan``; ``problem`` says what to send back. ``last``: no sending back follows, so
    a search for a counting question runs anyway (some evidence beats none). A query's names
    that a lesson says are wrong are written right first (the run keeps which lessons)."""
    if isinstance(plan, SqlPlan) and context.given.renames:
        sql, renamed = apply_renames(plan.sql, context.given.renames)
        if renamed:
            plan = SqlPlan(route="sql", sql=sql)
            run = _execute(plan, context, last=last)
            run.renamed = renamed
            return run
    return _execute(plan, context, last=last)


def _execute(plan: Plan, context: _Asking, *, last: bool) -> _Run:
    run = _Run(plan=plan)
    lake = context.lake
    if isinstance(plan, SearchPlan):
        if _AGGREGATE.search(context.question) and not last:
            run.kind, run.error = (
                "aggregate",
                "not run: a search returns a few matching rows and cannot count, sum or average",
            )
            run.problem = "searched, but the question counts or aggregates over a table"
            return run
        try:
            run.sources, run.where = _search(
                lake, plan.dataset, plan.search_text, plan.where, context.k, context.embedder
            )
        except AgentlakeError as exc:
            run.kind, run.error, run.problem = "error", exc.message, f"did not run: {exc.message}"
        return run
    with observe("tool.sql", source="agent", input={"query": plan.sql}, observer=context.observer) as op:
        try:
            run.result = lake.query(plan.sql, max_rows=MAX_SQL_ROWS)
        except AgentlakeError as exc:
            op.fail(exc.message)
            op.attributes["rows"] = 0
            run.kind, run.error, run.problem = "error", exc.message, f"did not run: {exc.message}"
            return run
        op.attributes["rows"] = len(run.result.rows)
        op.set_output(_sql_source(run.result).text)
    found = find_problems(
        plan.sql,
        run.result.rows,
        lake=lake,
        question=context.question,
        named=context.named,
        listed=context.listed,
    )
    if found:
        run.kind, run.problem = found[0]
        run.others = [kind for kind, _ in found[1:]]
    return run


def _send_back(run: _Run, lake: Lake, linked: list[str]) -> str:
    """What the model is told about its first plan: the problem and how to fix it, with the
    tables the question is likely about in detail."""
    tables = _tables_detail(lake, linked)
    if run.kind == "aggregate":
        return f"Your plan {run.problem}: a search returns a few rows. Write one SQL query.{tables}"
    if run.kind == "error":
        return f"Your plan {run.problem}. Use only the tables and columns there are.{tables}\n\nWrite the whole plan again."
    if run.kind == "empty":
        return (
            "Your query returned no rows (or only empty values). Check each value you compare with against "
            "the column's listed values and type (a text column holding dates or numbers needs TRY_CAST or "
            f"the text's own format), or widen the filter.{tables}\n\nWrite the whole query again."
        )
    if run.kind == "subject":
        return (
            f"Your query {run.problem}: read that table (joined to the one whose columns the question "
            f"filters on).{tables}\n\nWrite the whole query again."
        )
    if run.kind == "unheld":
        return f"Your query {run.problem}: compare with a value it holds, exactly as written. Write the whole query again."
    if run.kind == "unnamed":
        return (
            f"Your query {run.problem}: keep such a filter only if the question means it (a code the "
            "question describes in words), else drop it. Write the whole query again."
        )
    return f"Your query {run.problem}. Write the whole query again."


def _repairs(run: _Run, context: _Asking) -> list[_Run]:
    """Runs of ``run``'s query as code fixes it (``agents.fixes``: the database's hint, a
    filter the question names or does not, a date, a value the column does not hold); at most
    ``MAX_REPAIRS`` in a row, until one has no problem or no fix applies."""
    repairs: list[_Run] = []
    current = run
    while current.problem and isinstance(current.plan, SqlPlan) and len(repairs) < MAX_REPAIRS:
        # The first problem code can mend: one it cannot (a number the model left out) does
        # not keep the others from being mended.
        fixed = next(
            (
                found
                for kind in [current.kind or "", *current.others]
                if (
                    found := fix_query(
                        current.plan.sql,
                        kind,
                        current.error,
                        lake=context.lake,
                        question=context.question,
                        named=context.named,
                        listed=context.listed,
                        rows=current.result.rows if current.result is not None else None,
                    )
                )
                is not None
            ),
            None,
        )
        if fixed is None:
            break
        sql, what = fixed
        current = _run_plan(SqlPlan(route="sql", sql=sql), context, last=True)
        current.repair = what
        repairs.append(current)
    return repairs


def _evidence_run(runs: list[_Run]) -> _Run | None:
    """The run whose evidence answers: the last without a problem, else the last that ran."""
    clean = [run for run in runs if run.ran and not run.problem]
    if clean:
        return clean[-1]
    ran = [run for run in runs if run.ran]
    return ran[-1] if ran else None


def _record(answer: Answer, runs: list[_Run], context: _Asking) -> None:
    """The answer as one ``ask.answer`` op (its id is the answer's): what the feedback on it
    and the learner read. An answer from nothing that ran states its run failed."""
    attempts = []
    for run in runs:
        item: dict[str, Any] = {"route": run.plan.route}
        if isinstance(run.plan, SqlPlan):
            item["sql"] = run.plan.sql
            item["rows"] = len(run.result.rows) if run.result is not None else 0
        else:
            item.update(dataset=run.plan.dataset, search_text=run.plan.search_text, hits=len(run.sources))
        for name in ("error", "problem", "repair"):
            if getattr(run, name):
                item[name] = getattr(run, name)
        if run.renamed:
            item["renamed"] = run.renamed
        attempts.append(item)
    record_answer(
        answer.id,
        answer.question,
        answer.answer,
        route=answer.route,
        datasets=context.linked,
        attempts=attempts,
        observer=context.observer,
        sql=answer.sql,
        lessons_given=answer.lessons,
        lessons_cited=answer.lessons_cited,
        failure=None if answer.route != "none" else "no plan ran: " + "; ".join(answer.tried),
        dataset=answer.dataset,
        model=answer.model,
        evidence=answer.sources[0].text[:500] if answer.sources else None,
        door="ask",
    )


def plan_shots(
    lake: Lake, example: WorkedCount | None, indexed: list[str], avoid: frozenset[str] = frozenset()
) -> list[dict[str, str]]:
    """A worked plan for each route before the real question, made from this lake: a count
    with the values it names, a ranking (``avoid``: the question's tables, whose filters a small
    model would copy), a search where a dataset has an index. Shown one, the 0.5B and the 1.5B
    filter on every value a question names far more often, and group to rank."""
    shots: list[dict[str, str]] = []
    if example is not None:
        hint = named_values_hint(list(example.named), {(example.table, c): [v] for c, v in example.named})
        shots += [
            {"role": "user", "content": example.question + _tables_detail(lake, [example.table]) + hint},
            {"role": "assistant", "content": json.dumps({"route": "sql", "sql": example.sql})},
        ]
    ranking = worked_ranking(lake, avoid)
    if ranking is not None:
        shots += [
            {"role": "user", "content": ranking.question},
            {"role": "assistant", "content": json.dumps({"route": "sql", "sql": ranking.sql})},
        ]
    search = worked_search(lake, indexed) if indexed else None
    if search is not None:
        shots += [
            {"role": "user", "content": search.question},
            {"role": "assistant", "content": json.dumps(
                {"route": "search", "dataset": search.dataset, "search_text": search.search_text})},
        ]  # fmt: skip
    return shots


def lesson_shots(given: QuestionLessons) -> list[dict[str, str]]:
    """The worked examples lessons give: each alike question a person (or the value they
    expected) confirmed, and the query that answered it, right before the real question."""
    shots: list[dict[str, str]] = []
    for question, sql, _ in given.examples:
        shots += [
            {"role": "user", "content": question},
            {"role": "assistant", "content": json.dumps({"route": "sql", "sql": sql})},
        ]
    return shots


def _lesson_store(lessons: LessonStore | bool | None, settings: Settings) -> tuple[LessonStore | None, bool]:
    """The store lessons come from and whether it was opened here (to be closed): the one
    given, or with ``True`` the project's (``project_lessons``)."""
    if lessons is None or lessons is False:
        return None, False
    if lessons is not True:
        return lessons, False
    store = project_lessons(settings)
    return store, store is not None


def answer_shots(example: WorkedCount | None) -> list[dict[str, str]]:
    """A worked answer before the real one: shown one, the 0.5B gives the value the query
    returned instead of a number of its own."""
    if example is None:
        return []
    return [
        {"role": "user", "content": f"Question: {example.question}\n\nEvidence:\n[SQL] "
         + data_block(f"one value: n = {example.value}")},
        {"role": "assistant", "content": f"{example.answer()[:-1]} [SQL]."},
    ]  # fmt: skip


def _sql_source(result: QueryResult, question: str = "") -> AskSource:
    value = one_value(result.rows)
    one = (
        f"one value: {result.columns[0]} = {shown(value, question)}"
        if isinstance(value, datetime.date)
        else render.one_value_text(result.to_dicts())
    )
    if one is not None:
        return AskSource(id="SQL", kind="sql", text=one[:4000])
    header = " | ".join(result.columns)
    lines = [" | ".join("" if value is None else str(value) for value in row) for row in result.rows]
    more = " (more rows exist)" if result.truncated else ""
    text = f"{len(result.rows)} rows{more}: {header}\n" + "\n".join(lines)
    return AskSource(id="SQL", kind="sql", text=text[:4000])


def _search(
    lake: Lake, dataset: str, text: str, where: str | None, k: int, embedder: Embedder | None
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
            key=hit.key if isinstance(hit.key, (int, str)) else str(hit.key),
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
