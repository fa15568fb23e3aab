"""Worked examples built from the user's own lake: a count over a real table, column and value.

A small model copies a worked example literally (the built-in one about forklift operators in
TX put "TX" and "12" into answers about stock symbols), so the example a prompt shows is made
from the lake in front of it: the first dataset (by name) with a text column whose values are
listed in the catalog, filtered on its most common value (and on a second listed column's most
common value beside it, when the table has one: a model shown two filters filters on each
value a question names), counted for real. A lake with no listed text values gets a plain row
count. The search example exists only for a dataset with a vector index, and searches for words
taken from one of its own documents.

Owns choosing and computing the examples (cached per lake file and catalog version). It does
not own the prompts they go into (``ask``, the graph's thinker) or the catalog text
(``tools.datasets_text``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentlake.agents.tools import listed_values
from agentlake.errors import AgentlakeError
from agentlake.lake.rewrite import sql_literal
from agentlake.lake.versioned import PerLakeCache, dataset_versions

if TYPE_CHECKING:
    from agentlake.lake import Lake

SEARCH_WORDS = 6


@dataclass(frozen=True)
class WorkedCount:
    """A counting question over the lake, the query that answers it and its real value."""

    question: str
    sql: str
    value: int
    table: str
    named: tuple[tuple[str, str], ...] = ()

    def answer(self) -> str:
        """The answer written from the result, as a model should write it."""
        where = " and ".join(f"{column} {value}" for column, value in self.named)
        return (
            f"{self.value} rows of {self.table} have {where}."
            if where
            else f"{self.table} has {self.value} rows."
        )


@dataclass(frozen=True)
class WorkedSearch:
    """A descriptive question over an indexed dataset and the search that answers it."""

    question: str
    dataset: str
    search_text: str


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"' if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) else name


_counts: PerLakeCache[WorkedCount | None] = PerLakeCache()


def worked_count(lake: Lake, avoid: frozenset[str] = frozenset()) -> WorkedCount | None:
    """The lake's worked count (see the module docstring); ``None`` for a lake with no dataset.
    ``avoid``: tables the example should not be over when another will do (the ones a question
    is about: a small model copies an example's filter on the same column)."""
    versions = dataset_versions(lake)
    version = tuple(sorted((name, str(v)) for name, v in versions.items()))
    key = f"{lake.path}|worked_count|{','.join(sorted(avoid))}"
    return _counts.get(key, version, lambda: _build_count(lake, avoid))


def _build_count(lake: Lake, avoid: frozenset[str] = frozenset()) -> WorkedCount | None:
    names = sorted(info.name for info in lake.datasets())
    if not names:
        return None
    # The tables to avoid last, not never: a lake of one table still has its example.
    datasets = [name for name in names if name not in avoid] + [name for name in names if name in avoid]
    listed = listed_values(lake)
    for table in datasets:
        columns = [column for (name, column), values in listed.items() if name == table and len(values) >= 2]
        if not columns:
            continue
        chosen = columns[:2]
        found = _most_common(lake, table, chosen) or (
            _most_common(lake, table, chosen[:1]) if len(chosen) > 1 else None
        )
        if found is None:
            continue
        named, count = found
        where = " AND ".join(f"{_quote(column)} = {sql_literal(value)}" for column, value in named)
        question = (
            f"How many rows of {table} have "
            + " and ".join(f"{column} {value}" for column, value in named)
            + "?"
        )
        sql = f"SELECT count(*) AS n FROM {_quote(table)} WHERE {where}"
        return WorkedCount(question=question, sql=sql, value=count, table=table, named=tuple(named))
    table = datasets[0]
    try:
        count = int(lake.query(f"SELECT count(*) AS n FROM {_quote(table)}", max_rows=1).rows[0][0])
    except AgentlakeError:
        return None
    return WorkedCount(
        question=f"How many rows does {table} have?",
        sql=f"SELECT count(*) AS n FROM {_quote(table)}",
        value=count,
        table=table,
    )


def _most_common(lake: Lake, table: str, columns: list[str]) -> tuple[list[tuple[str, str]], int] | None:
    """The most common combination of ``columns``' values in ``table`` and its count."""
    cols = ", ".join(_quote(column) for column in columns)
    not_null = " AND ".join(f"{_quote(column)} IS NOT NULL" for column in columns)
    sql = (
        f"SELECT {cols}, count(*) AS n FROM {_quote(table)} WHERE {not_null} "
        f"GROUP BY {cols} ORDER BY n DESC, {cols} LIMIT 1"
    )
    try:
        rows = lake.query(sql, max_rows=1).rows
    except AgentlakeError:
        return None
    if not rows:
        return None
    *values, count = rows[0]
    return [(column, str(value)) for column, value in zip(columns, values, strict=True)], int(count)


@dataclass(frozen=True)
class WorkedRanking:
    """A "which ... most" question over the lake and the grouped query that answers it."""

    question: str
    sql: str


def worked_ranking(lake: Lake, avoid: frozenset[str] = frozenset()) -> WorkedRanking | None:
    """A ranking example (``GROUP BY ... ORDER BY count DESC LIMIT 1``) over a listed text
    column with at least three values, of a table not in ``avoid`` when another will do; a
    small model answers "which city has the most airports" with an ORDER BY on some column
    until it is shown one. ``None`` when no table has such a column."""
    listed = listed_values(lake)
    candidates = sorted(
        ((table, column) for (table, column), values in listed.items() if len(values) >= 3),
        key=lambda pair: (pair[0] in avoid, pair[0], pair[1]),
    )
    if not candidates:
        return None
    table, column = candidates[0]
    sql = (
        f"SELECT {_quote(column)}, count(*) AS n FROM {_quote(table)} "
        f"GROUP BY {_quote(column)} ORDER BY n DESC LIMIT 1"
    )
    return WorkedRanking(question=f"Which {column} has the most rows of {table}?", sql=sql)


def worked_search(lake: Lake, indexed: list[str]) -> WorkedSearch | None:
    """A search example over the first of ``indexed`` (datasets with a vector index) whose
    first document has words to search for; ``None`` when there is none."""
    # Lazy (start-up time): the index module loads numpy and the vector files.
    from agentlake.lake.index import index_info

    for dataset in indexed:
        try:
            column = index_info(lake, dataset).text_column
            rows = lake.query(
                f"SELECT {_quote(column)} FROM {_quote(dataset)} WHERE {_quote(column)} IS NOT NULL LIMIT 1",
                max_rows=1,
            ).rows
        except AgentlakeError:
            continue
        words = re.findall(r"[A-Za-z][A-Za-z-]{2,}", str(rows[0][0]) if rows else "")[:SEARCH_WORDS]
        if len(words) >= 2:
            text = " ".join(words).lower()
            return WorkedSearch(
                question=f"Which {dataset} rows are about {text}?", dataset=dataset, search_text=text
            )
    return None
