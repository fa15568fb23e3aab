"""Queries code writes whole, for the shapes of question it reads without the model.

A small model rarely writes a ``HAVING``, an anti-join or a share right. For a question of one
of these shapes, code writes the query from the question's words, the catalog and the values
it names (``agents.linking.named_values``):

- groups with a bound on their rows: "how many states have more than 100 airports", "how
  many cities in Florida have at least 3 airports" (the named values kept), "on how many
  different days did 5 or more people die" (a day of the date), "in how many months did the
  total precipitation exceed 50 mm" (a sum per period);
- rows of one table whose key no row of another holds: "how many customers have never placed
  an order";
- a share of one named value, of the rows or of the amount the question names, over the
  dates it names: "what percentage of the penguins were measured on Dream island", "what
  share of Iowa's net generation came from renewables in 2013".

``agents.fix_words`` puts such a query in place of the model's when their values differ (or
when the model's did not run), and leaves a query that gives the same value alone.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from agentlake.agents.fix_compare import digits, named_measure
from agentlake.agents.fix_dates import is_date, named_dates, quote
from agentlake.agents.linking import named_tables, words
from agentlake.errors import AgentlakeError
from agentlake.lake.repair import table_types
from agentlake.lake.rewrite import sql_literal

if TYPE_CHECKING:
    from agentlake.lake import Lake

_GROUP_BOUNDS = {
    "more than": ">", "over": ">", "greater than": ">", "fewer than": "<", "less than": "<", "under": "<",
    "at least": ">=", "at most": "<=", "exactly": "=", "exceed": ">", "exceeds": ">", "exceeded": ">",
}  # fmt: skip
# A key a question states: a number ("order 100250") or a code in capitals ("the airport SEA", "C0071").
SHARE = re.compile(r"\b(?:what|which)\s+(?:percentage|percent|share|proportion|fraction)\b", re.IGNORECASE)


# --- groups with a bound on their rows ------------------------------------------------------------


_GROUP_OF = re.compile(r"\bhow many (?:different |distinct |unique )?((?:[a-z]+ ?){1,3})", re.IGNORECASE)
_GROUP_BOUND = re.compile(
    r"\b(more than|over|greater than|exceeds?|exceeded|fewer than|less than|under|at least|at most|exactly)\s+"
    r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+([a-z]+)"
    r"|\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+or\s+(more|fewer|less)\s+([a-z]+)",
    re.IGNORECASE,
)
# Nouns that are the rows of the table a question is about ("at least 3 people died").
_ROW_NOUNS = frozenset("people persons person rows records entries times deaths victims".split())
_PERIOD_PARTS = {"day": "day", "month": "month", "year": "year", "week": "week"}


def _filters(question: str, lake: Lake, table: str, named: list[tuple[str, str]]) -> list[str]:
    """The filters on ``table`` of the values and dates ``question`` names: each named value
    of a column of the table, each named date on its one date column."""
    types = table_types(lake, table)
    columns = {c.casefold(): c for c in types}
    found = [
        f"{quote(columns[c.casefold()])} = {sql_literal(v)}" for c, v in named if c.casefold() in columns
    ]
    dates = [c for c, kind in types.items() if is_date(kind)]
    if len(dates) == 1:
        found += [condition for date in named_dates(question) for condition in date.conditions(dates[0])]
    return found


def group_count(question: str, lake: Lake, named: list[tuple[str, str]] | None = None) -> str | None:
    """The query for "how many <groups> have more than N <rows>" ("How many cities in Florida
    have at least 3 airports?", "On how many different days did 5 or more people die?"): the
    groups of the rows' table (a column of it, a day, month or year of its date, or another
    table's key it holds) whose rows meet the bound, over the rows with the values the question
    names, counted; None when the question is not of that shape or names no such table and
    column."""
    group, bound = _GROUP_OF.search(question), _GROUP_BOUND.search(question)
    if group is None or bound is None or bound.start() < group.end() - len(group.group(1)):
        return None
    if bound.group(1):
        op, number, rows = _GROUP_BOUNDS[bound.group(1).casefold()], bound.group(2), bound.group(3)
    else:
        op = ">=" if bound.group(5).casefold() == "more" else "<="
        number, rows = bound.group(4), bound.group(6)
    number = digits(number)
    infos = {info.name: info for info in lake.datasets()}
    table = next(iter(named_tables(rows, list(infos))), None)
    if table is None and rows.casefold() in _ROW_NOUNS:
        table = next(iter(named_tables(question, list(infos))), None)
    counted, measure = "count(*)", None
    if table is None:  # "in how many months did the total precipitation exceed 50 mm": a sum per period
        measured = [
            (name, m) for name, info in infos.items() if (m := named_measure(question, dict(info.columns)))
        ]
        subjects = named_tables(question, list(infos))
        if len(measured) > 1:
            measured = [(name, m) for name, m in measured if name in subjects]
        if len(measured) != 1:
            return None
        table, measure = measured[0]
        counted = f"sum({quote(measure)})"
    types = table_types(lake, table)
    dates = [c for c, kind in types.items() if is_date(kind)]
    key = None
    for word in reversed(group.group(1).split()):
        said = words(word)
        if not said:
            continue
        key = next((quote(c) for c in types if words(c) == said), None)
        part = _PERIOD_PARTS.get(next(iter(said)))
        if key is None and part and len(dates) == 1:
            key = f"date_trunc('{part}', {quote(dates[0])})"
        owner = next(iter(named_tables(word, list(infos))), None)
        owned = infos[owner].key if owner is not None and owner != table else None
        if key is None and owned and owned.casefold() in {c.casefold() for c in types}:
            key = quote(owned)
        if key is not None:
            break
    if key is None or (measure is not None and not key.startswith("date_trunc")):
        return None
    kept = " AND ".join([f"{key} IS NOT NULL", *_filters(question, lake, table, named or [])])
    return (
        f"SELECT count(*) AS n FROM (SELECT {key} FROM {quote(table)} WHERE {kept} "
        f"GROUP BY {key} HAVING {counted} {op} {number})"
    )


def share_query(question: str, lake: Lake, named: list[tuple[str, str]]) -> str | None:
    """The query for "what percentage of <rows or an amount> ... <one named value>": the rows
    holding the value in percent of the rows (or the sum of the measure the question names, in
    percent of its whole sum) of the table that has its column (the table the question names
    first, where several have it), over the dates the question names; else None."""
    if not SHARE.search(question) or not named:
        return None
    infos = lake.datasets()
    # Each table holding the column of exactly one named value: the share's candidates.
    candidates = []
    for info in infos:
        columns = {c.casefold() for c, _ in info.columns}
        held = [(c, v) for c, v in named if c.casefold() in columns]
        if len(held) == 1:
            measure = named_measure(question, dict(info.columns))
            candidates.append((info.name, held[0], measure))
    said = named_tables(question, [info.name for info in infos])
    for keep in (lambda c: c[0] in said, lambda c: c[2] is not None):
        if len(candidates) > 1 and any(keep(c) for c in candidates):
            candidates = [c for c in candidates if keep(c)]
    if len(candidates) != 1:
        return None
    table, (column, value), measure = candidates[0]
    literal = sql_literal(value)
    amount = f"sum({quote(measure)})" if measure else "count(*)"
    part = (
        f"sum({quote(measure)}) FILTER (WHERE {quote(column)} = {literal})"
        if measure
        else (f"count(*) FILTER (WHERE {quote(column)} = {literal})")
    )
    dated = _filters(question, lake, table, [])
    where = f" WHERE {' AND '.join(dated)}" if dated else ""
    return f"SELECT 100.0 * {part} / {amount} AS percent FROM {quote(table)}{where}"


_NEVER = re.compile(
    r"\bhow many ([a-z]+)\s+(?:have|has|had|did|do|does)?\s*(?:never|not)\s+[a-z]+\s+(?:an?|any)\s+([a-z]+)"
    r"|\bhow many ([a-z]+)\s+(?:have|has|had)\s+no\s+([a-z]+)"
    r"|\bhow many ([a-z]+)\s+(?:are\s+|were\s+)?without\s+(?:an?y?\s+)?([a-z]+)",
    re.IGNORECASE,
)


def never_count(question: str, lake: Lake) -> str | None:
    """The query for "how many customers have never placed an order" (or "have no orders",
    "without orders"): the rows of the first table whose key no row of the second holds,
    counted; None when the question is not of that shape or the tables share no key."""
    match = _NEVER.search(question)
    if match is None:
        return None
    groups, rows = [part for part in match.groups() if part]
    infos = {info.name: info for info in lake.datasets()}
    owner = next(iter(named_tables(groups, list(infos))), None)
    table = next(iter(named_tables(rows, list(infos))), None)
    key = infos[owner].key if owner else None
    if owner is None or table is None or owner == table or not key:
        return None
    if key.casefold() not in {c.casefold() for c, _ in infos[table].columns}:
        return None
    return (
        f"SELECT count(*) AS n FROM {quote(owner)} WHERE {quote(key)} NOT IN "
        f"(SELECT {quote(key)} FROM {quote(table)} WHERE {quote(key)} IS NOT NULL)"
    )


def whole_query(question: str, lake: Lake, named: list[tuple[str, str]]) -> tuple[str, str] | None:
    """A query code writes whole from ``question`` when it has one of the shapes code reads
    (groups with a bound on their rows, rows of one table without rows in another, a share of
    one named value); else None."""
    if grouped := group_count(question, lake, named):
        return grouped, "wrote the count of groups whose rows meet the question's bound"
    if never := never_count(question, lake):
        return never, "wrote the count of rows no row of the other table holds the key of"
    if share := share_query(question, lake, named):
        return share, "wrote the share of the rows holding the value the question names"
    return None


def other_than_whole(
    sql: str, question: str, lake: Lake, rows: list[Any], named: list[tuple[str, str]]
) -> tuple[str, str] | None:
    """``whole_query``'s query and what it does, when ``question`` has a shape code reads and
    ``sql``'s value (the first of ``rows``) is not that query's; else None."""
    whole = whole_query(question, lake, named)
    if whole is None:
        return None
    try:
        wanted = lake.query(whole[0], max_rows=1).rows
    except AgentlakeError:
        return None
    got = rows[0][0] if rows and rows[0] else None
    value = wanted[0][0] if wanted and wanted[0] else None
    if value is None or (isinstance(got, (int, float)) and abs(float(got) - float(value)) < 1e-9):
        return None
    return whole


def settled(sql: str, question: str, lake: Lake, rows: list[Any], named: list[tuple[str, str]]) -> bool:
    """Whether ``question`` has a shape code writes whole and ``sql``'s value (the first of
    ``rows``) is that query's: no other check may then change it."""
    return (
        whole_query(question, lake, named) is not None
        and other_than_whole(sql, question, lake, rows, named) is None
    )
